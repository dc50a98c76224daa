package conformance_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestNodeSDKScenarios runs every scenario of node/scenarios.js through
// @azure/cosmos against an HTTPS emulator and reports each as a subtest.
// @azure/cosmos is installed by `npm ci` into the user cache (see
// nodeModules), never into the checkout; the test is skipped, with one line,
// when node or npm is missing or the npm registry cannot be reached for the
// first install.
func TestNodeSDKScenarios(t *testing.T) {
	t.Parallel()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("skipping the Node SDK scenarios: node or npm is not installed")
	}
	src, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	modules := nodeModules(t, npm, src)

	// Run a copy of the script from a temporary directory: node resolves
	// @azure/cosmos through NODE_PATH, never through a node_modules left in
	// the checkout by a hand run.
	script, err := os.ReadFile(filepath.Join(src, "scenarios.js"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scenarios.js"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range scenarioEmulators {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			srv, certFile := e.start(t)
			runScenarios(t, dir, []string{
				"NODE_PATH=" + modules,
				"COSMOS_ENDPOINT=" + srv.Endpoint(),
				"COSMOS_KEY=" + srv.Key(),
				"COSMOS_CONSISTENCY=" + string(srv.Consistency()),
				"NODE_EXTRA_CA_CERTS=" + certFile,
				"NODE_TLS_REJECT_UNAUTHORIZED=1",
			}, node, "scenarios.js")
		})
	}
}

// nodeModules returns the node_modules directory of the packages pinned by
// src/package.json and src/package-lock.json. They are installed once with
// `npm ci` into <user cache>/duroxide-cdb/conformance-node/<hash of both
// files>/ (os.UserCacheDir, else the temporary directory), so reruns cost
// nothing and the checkout is never written. The install happens in a
// temporary sibling directory renamed into place, so concurrent test
// processes never see half an install. When nothing is installed yet and
// `npm ping` cannot reach the registry, the test is skipped with one line;
// an install that fails with the registry reachable fails the test.
func nodeModules(t *testing.T, npm, src string) string {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(pkg)
	h.Write([]byte{0})
	h.Write(lock)
	key := hex.EncodeToString(h.Sum(nil))[:16]
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "duroxide-cdb", "conformance-node")
	dir := filepath.Join(parent, key)
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "@azure", "cosmos", "package.json")); err == nil {
		return modules
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ping := exec.CommandContext(ctx, npm, "ping", "--fetch-retries=0", "--fetch-timeout=20000")
	if out, err := ping.CombinedOutput(); err != nil {
		t.Skipf("skipping the Node SDK scenarios: the npm registry is unreachable (npm ping: %s)", summaryLine(out, "FetchError", "npm error code"))
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, key+".installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
	install.Dir = tmp
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci into %s: %v\n%s", tmp, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process installed the same lock file meanwhile.
		if _, statErr := os.Stat(filepath.Join(modules, "@azure", "cosmos", "package.json")); statErr != nil {
			t.Fatalf("installing into %s: %v", dir, err)
		}
	}
	t.Logf("installed @azure/cosmos into %s", dir)
	return modules
}
