package conformance_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPythonSDKScenarios runs every scenario of python/scenarios.py through
// the Python SDK azure-cosmos 3.x (Debian's python3-azure-cosmos 3.1.1, which
// runs cross-partition queries from the plan in the gateway's 400/1004
// refusal) against an HTTPS emulator and reports each as a subtest. It is
// skipped, with one line, when no python3 on PATH or at /usr/bin/python3 can
// import that SDK.
func TestPythonSDKScenarios(t *testing.T) {
	t.Parallel()
	python := pythonWithCosmos3(t)
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range scenarioEmulators {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			srv, certFile := e.start(t)
			runScenarios(t, dir, []string{
				"COSMOS_ENDPOINT=" + srv.Endpoint(),
				"COSMOS_KEY=" + srv.Key(),
				"COSMOS_CONSISTENCY=" + string(srv.Consistency()),
				"COSMOS_CA_CERT=" + certFile,
				"PYTHONDONTWRITEBYTECODE=1", // nothing written into the checkout
			}, python, "scenarios.py")
		})
	}
}

// pythonWithCosmos3 returns a python3 that imports azure-cosmos 3.x (its
// azure.cosmos.execution_context package; 4.x renamed it), or skips.
func pythonWithCosmos3(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, p := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := exec.CommandContext(ctx, p, "-c", "import azure.cosmos.cosmos_client, azure.cosmos.execution_context").Run()
		cancel()
		if err == nil {
			return p
		}
	}
	t.Skip("skipping the Python SDK scenarios: no python3 with azure-cosmos 3.x (apt-get install python3-azure-cosmos)")
	return ""
}
