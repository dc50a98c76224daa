package doccheck

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The package map's import rules, written here so that they check
// themselves (the design notes this repository was built from keep the
// same table). For each package, by path relative to the module ("." for
// the root, a trailing "/..." for a subtree): the module packages it may
// import from its own code (code) and from its tests (tests, in addition),
// and the outside modules its own code may import (external, by prefix;
// the standard library is always allowed). Test code may import any
// outside module. testify is refused in non-test code everywhere but where
// testifyInCode says why.
type importRule struct {
	pkg      string
	code     []string
	tests    []string
	external []string
}

const module = "github.com/duroxide-go/duroxide-cdb"

var (
	azure = "github.com/Azure/azure-sdk-for-go/sdk/"
	otel  = "go.opentelemetry.io/otel"
)

var importRules = []importRule{
	// The provider: never the runtime, the suite or the test kit (its
	// external tests take their account from the test kit).
	{pkg: ".", code: []string{"duroxide", "internal/..."},
		tests:    []string{".", "cdbtest", "emulator", "providertest", "providertest/..."},
		external: []string{azure, "github.com/google/uuid", "go.uber.org/zap", otel}},
	// Machinery of the provider, one package per concept: never the root
	// (they return values to it and take narrow interfaces it
	// implements). Each names what it may use, so that the layers stay
	// visible: internal/cosmos and internal/docs at the bottom (what the
	// root and the machinery share), the concepts above them.
	{pkg: "internal/cosmos", external: []string{azure}},
	{pkg: "internal/docs", code: []string{"duroxide"}},
	{pkg: "internal/candidates"},
	{pkg: "internal/locks"},
	{pkg: "internal/fetchtrace"},
	{pkg: "internal/pkheader", external: []string{azure}},
	{pkg: "internal/changefeed", tests: []string{"emulator"}, external: []string{azure}},
	{pkg: "internal/statuswatch", code: []string{"duroxide"}},
	{pkg: "internal/held", code: []string{"duroxide", "internal/candidates", "internal/docs"}},
	// The leases in the container log their heartbeat with the
	// provider's zap logger and name their owner with a uuid.
	{pkg: "internal/leases", code: []string{"internal/cosmos"},
		external: []string{azure, "github.com/google/uuid", "go.uber.org/zap"}},
	// The store's health logs outages with the provider's zap logger and
	// describes their causes with internal/cosmos.
	{pkg: "internal/storehealth", code: []string{"internal/cosmos"}, external: []string{"go.uber.org/zap"}},
	// Running the test binary again as a child process that a test kills:
	// the standard library only, for the tests of any package.
	{pkg: "internal/childproc"},
	// Any other internal package (test helpers, the house rules' tests,
	// machinery not listed above yet): the module's own lower packages,
	// and the provider's logger and ids.
	{pkg: "internal/...", code: []string{"duroxide", "internal/..."}, tests: []string{"emulator", "internal/..."},
		external: []string{azure, "github.com/google/uuid", "go.uber.org/zap"}},
	// duroxide's API: nothing of the project, standard library only.
	{pkg: "duroxide", tests: []string{"duroxide"}},
	// Its client's polling tests run on cdb too (client_poll_test.go,
	// through the test kit); they would sit better in e2e.
	{pkg: "duroxide/runtime", code: []string{"duroxide"},
		tests:    []string{"duroxide/runtime", "duroxide/runtime/runtimetest", ".", "cdbtest", "providertest/memory"},
		external: []string{otel}},
	// Users' tests of their orchestrations: the replayer, and an
	// environment on the in-memory provider by default.
	{pkg: "duroxide/runtime/runtimetest", code: []string{"duroxide", "duroxide/runtime", "providertest/memory"},
		tests: []string{"duroxide/runtime/runtimetest"}},
	// The validation suite, the reference provider, the stress harness.
	{pkg: "providertest", code: []string{"duroxide", "duroxide/runtime", "providertest/memory"}, tests: []string{"providertest", "internal/testparallel"}},
	{pkg: "providertest/memory", code: []string{"duroxide"}},
	{pkg: "providertest/stress", code: []string{"duroxide", "duroxide/runtime"}, tests: []string{"providertest/memory"}},
	// The emulator speaks HTTP with the standard library only.
	{pkg: "emulator", tests: []string{"emulator", "internal/childproc"}},
	{pkg: "emulator/...", tests: []string{"emulator"}},
	// The test kit.
	{pkg: "cdbtest", code: []string{".", "emulator", "duroxide"}, tests: []string{"cdbtest", "duroxide/runtime"},
		external: []string{azure, "github.com/google/uuid"}},
	// Commands. cdb-stress runs the runtime on cdb and, for comparison, on
	// the in-memory reference provider, on emulators from the test kit;
	// cdb-admin's tests create the instances they inspect with the runtime;
	// cdb-admin reads histories with the runtime's rules (dropped events).
	{pkg: "cmd/cdb-emulator", code: []string{"emulator"}, tests: []string{"internal/childproc"}},
	// Test binaries whose tests mostly wait set their -parallel default
	// with internal/testparallel.
	{pkg: "cmd/cdb-stress", code: []string{".", "cdbtest", "duroxide", "duroxide/runtime", "emulator", "providertest/memory", "providertest/stress"},
		tests: []string{"internal/testparallel"}, external: []string{azure, "github.com/google/uuid"}},
	{pkg: "cmd/cdb-admin", code: []string{".", "duroxide", "duroxide/runtime", "dashboard"}, tests: []string{"duroxide/runtime", "emulator", "cdbtest"},
		external: []string{azure}},
	// The dashboard: any ProviderAdmin and Client; the root only for the
	// health and cost page of a *cdb.Provider. Its tests run it on cdb.
	{pkg: "dashboard", code: []string{"duroxide", "duroxide/runtime", "."},
		tests: []string{"dashboard", "cdbtest", "emulator", "providertest/..."}},
	// Examples and the end-to-end tests use everything public.
	{pkg: "examples/...", code: []string{".", "duroxide", "duroxide/runtime", "duroxide/runtime/runtimetest", "emulator", "cdbtest", "examples/internal/..."},
		external: []string{azure, "github.com/google/uuid", otel}},
	{pkg: "e2e", tests: []string{".", "duroxide", "duroxide/runtime", "emulator", "cdbtest", "providertest/...", "internal/childproc", "internal/testparallel"}},
}

// testifyInCode lists the packages whose non-test code may import testify,
// and why.
var testifyInCode = map[string]string{
	// The validation suite is a library of test functions (ported from
	// duroxide's provider_validation); only tests import it, and no
	// binary links it. Its assertions still use testify; moving them to
	// the testing package alone is left to do.
	"providertest": "the validation suite's assertions",
}

// matches reports whether pkg (relative path) is named by pattern.
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func anyMatch(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if matches(p, pkg) {
			return true
		}
	}
	return false
}

// rel returns an import path relative to the module ("." for the root)
// and whether it is in the module.
func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// TestImportsFollowThePackageMap checks every package's imports, test code
// included, against importRules, with go list.
func TestImportsFollowThePackageMap(t *testing.T) {
	t.Parallel()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath, Dir           string
			Standard                  bool
			Imports                   []string
			TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkg, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		seen++
		var rule *importRule
		for i := range importRules {
			if matches(importRules[i].pkg, pkg) {
				rule = &importRules[i]
				break
			}
		}
		if rule == nil {
			t.Errorf("package %s has no import rule: add it to importRules", pkg)
			continue
		}
		check := func(imp string, inTest bool) {
			if r, ok := rel(imp); ok {
				if r == pkg || anyMatch(rule.code, r) || (inTest && anyMatch(rule.tests, r)) {
					return
				}
				where := "its code"
				if inTest {
					where = "its tests"
				}
				t.Errorf("%s: %s imports %s, which the package map does not allow", pkg, where, r)
				return
			}
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				return // the standard library
			}
			if strings.HasPrefix(imp, "github.com/stretchr/testify") {
				if !inTest && testifyInCode[pkg] == "" {
					t.Errorf("%s: its code imports %s; testify belongs in test code (binaries must not link it)", pkg, imp)
				}
				return
			}
			if inTest {
				return
			}
			for _, e := range rule.external {
				if strings.HasPrefix(imp, e) {
					return
				}
			}
			t.Errorf("%s: its code imports %s, outside the modules the package map allows it", pkg, imp)
		}
		for _, imp := range p.Imports {
			check(imp, false)
		}
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			check(imp, true)
		}
	}
	if seen < 10 {
		t.Fatalf("go list found only %d packages of the module", seen)
	}
}
