package cdbtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cdb "github.com/duroxide-go/duroxide-cdb"
)

// outsideModuleTest is the test file of the module built by
// TestAModuleOutsideTheRepositoryTestsItsOrchestrations: what a user of the
// project writes.
const outsideModuleTest = `package shop

import (
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

func TestGreeting(t *testing.T) {
	p := cdbtest.NewProvider(t)
	reg := runtime.NewRegistry()
	if err := reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterOrchestration("Hello", func(ctx *runtime.OrchestrationContext, name string) (string, error) {
		return ctx.ScheduleActivity("Greet", name).Get()
	}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rt, err := runtime.Start(ctx, p, reg, runtime.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	c := runtime.NewClient(p)
	if err := c.StartOrchestration(ctx, "hello-1", "Hello", "outside"); err != nil {
		t.Fatal(err)
	}
	st, err := c.WaitForOrchestration(ctx, "hello-1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != runtime.StatusCompleted || st.Output != "Hello, outside!" {
		t.Fatalf("got %s %q", st.Kind, st.Output)
	}
	t.Log("orchestration completed on the embedded emulator")
}
`

// The "done when": a module outside this repository, using the
// project as a dependency (here through a replace directive to this
// checkout), runs an orchestration test on the embedded emulator with no
// Cosmos DB environment at all. The outside module gets its other modules
// as a user's does: go mod tidy downloads what is missing from the module
// cache through the user's GOPROXY (and GOFLAGS, GONOSUMDB... as set); when
// they cannot be downloaded (no network, GOPROXY=off with an incomplete
// cache) the test is skipped with the reason on one line.
func TestAModuleOutsideTheRepositoryTestsItsOrchestrations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a separate module with the go command (-short)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the outside module: %v", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod := "module example.com/shop\n\ngo 1.26\n\nrequire github.com/duroxide-go/duroxide-cdb v0.0.0\n\n" +
		"replace github.com/duroxide-go/duroxide-cdb => " + repo + "\n"
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"go.mod":       []byte(goMod),
		"go.sum":       sum, // the project's checksums: no checksum database lookup for its modules
		"shop_test.go": []byte(outsideModuleTest),
		"doc.go":       []byte("// Package shop is a user's service.\npackage shop\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(t.Context(), goBin, args...)
		cmd.Dir = dir
		cmd.Env = outsideEnv()
		return cmd.CombinedOutput()
	}
	// What a user runs after adding the dependency: it completes go.mod
	// and go.sum, downloading the modules the cache lacks.
	if out, err := goCmd("mod", "tidy"); err != nil {
		if line := moduleDownloadFailure(string(out)); line != "" {
			proxy, _ := goCmd("env", "GOPROXY")
			t.Skipf("cannot download the outside module's dependencies (is the module proxy reachable? GOPROXY=%s): %s",
				strings.TrimSpace(string(proxy)), line)
		}
		t.Fatalf("go mod tidy in the outside module: %v\n%s", err, out)
	}
	// -mod=readonly overrides a -mod in the user's GOFLAGS: the tidy
	// go.mod needs no change, and the build downloads nothing more.
	out, err := goCmd("test", "-mod=readonly", "-count=1", "-v", "./...")
	if err != nil {
		t.Fatalf("go test in the outside module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestGreeting") ||
		!strings.Contains(string(out), "orchestration completed on the embedded emulator") {
		t.Fatalf("the outside module's test did not pass:\n%s", out)
	}
}

// outsideEnv is this process's environment without any Cosmos DB variable
// (so the outside test must use the embedded emulator) and outside any
// workspace; the module settings (GOPROXY, GOFLAGS, GOMODCACHE, GONOSUMDB,
// ...) are the user's.
func outsideEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case cdb.EnvEndpoint, cdb.EnvKey, cdb.EnvDatabase, cdb.EnvContainer, "GOWORK":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOWORK=off")
}

// moduleDownloadSigns are what the go command prints when it cannot reach
// a module proxy, version control host or checksum database, or may not
// (GOPROXY=off).
var moduleDownloadSigns = []string{
	"disabled by GOPROXY=off",
	"dial tcp",
	"no such host",
	"connection refused",
	"connection reset",
	"network is unreachable",
	"i/o timeout",
	"TLS handshake timeout",
	"proxyconnect",
	"server misbehaving",
	"502 Bad Gateway",
	"503 Service Unavailable",
	"504 Gateway Timeout",
}

// moduleDownloadFailure returns the first line of a go command's output
// that says a module could not be downloaded, or "" when none does (the
// failure is something else: a compile error, a bad go.mod).
func moduleDownloadFailure(out string) string {
	for _, line := range strings.Split(out, "\n") {
		for _, sign := range moduleDownloadSigns {
			if strings.Contains(line, sign) {
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}

func TestModuleDownloadFailuresAreToldFromOtherGoCommandErrors(t *testing.T) {
	t.Parallel()
	const (
		offLine     = "github.com/go-logr/logr@v1.2.2: module lookup disabled by GOPROXY=off"
		noHostLine  = `go: github.com/google/uuid@v1.6.0: Get "https://proxy.golang.org/github.com/google/uuid/@v/v1.6.0.mod": dial tcp: lookup proxy.golang.org: no such host`
		refusedLine = `go: example.com/m@v1.0.0: Get "http://127.0.0.1:1/example.com/m/@v/v1.0.0.mod": dial tcp 127.0.0.1:1: connect: connection refused`
	)
	for _, c := range []struct{ out, want string }{
		{"go: github.com/go-logr/stdr@v1.2.2 requires\n\t" + offLine + "\n", offLine},
		{"go: downloading github.com/google/uuid v1.6.0\n" + noHostLine + "\n", noHostLine},
		{refusedLine + "\n", refusedLine},
		{"go: example.com/shop imports\n\texample.com/absent: cannot find module providing package example.com/absent\n", ""},
		{"# example.com/shop\n./shop_test.go:9:2: undefined: runtime.Missing\n", ""},
		{"go: errors parsing go.mod:\ngo.mod:3: unknown directive: requir\n", ""},
	} {
		if got := moduleDownloadFailure(c.out); got != c.want {
			t.Errorf("moduleDownloadFailure(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
