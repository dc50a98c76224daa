package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// scenarioResult is one line of node/scenarios.js's output.
type scenarioResult struct {
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
}

// TestNodeSDKScenarios runs every scenario of node/scenarios.js through
// @azure/cosmos against an HTTPS emulator and reports each as a subtest.
func TestNodeSDKScenarios(t *testing.T) {
	node, npm := lookTools(t)
	dir, err := filepath.Abs("node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@azure", "cosmos", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}

	srv, err := emulator.Start(emulator.Options{TLS: true, PhysicalPartitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	certFile := filepath.Join(t.TempDir(), "emulator.pem")
	if err := os.WriteFile(certFile, srv.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "scenarios.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"COSMOS_ENDPOINT="+srv.Endpoint(),
		"COSMOS_KEY="+srv.Key(),
		"NODE_EXTRA_CA_CERTS="+certFile,
		"NODE_TLS_REJECT_UNAUTHORIZED=1",
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()

	var results []scenarioResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r scenarioResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Scenario == "" {
			t.Logf("node: %s", sc.Bytes())
			continue
		}
		results = append(results, r)
	}
	if runErr != nil || len(results) == 0 {
		t.Fatalf("node scenarios.js: %v (%d results)\nstderr:\n%s", runErr, len(results), stderr.String())
	}
	for _, r := range results {
		t.Run(r.Scenario, func(t *testing.T) {
			if !r.OK {
				t.Error(r.Error)
			}
		})
	}
}

// lookTools finds node and npm. Without them the test is skipped, unless CI
// is "true", where it fails.
func lookTools(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode == nil && errNpm == nil {
		return node, npm
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but node or npm is missing (node: %v, npm: %v)", errNode, errNpm)
	}
	t.Skipf("node or npm not installed (node: %v, npm: %v); CI=true makes this a failure", errNode, errNpm)
	return "", ""
}
