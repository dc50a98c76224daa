package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelloWorldRunsWithNoEnvironment runs the program as README's first
// command does (go run ./examples/hello_world), with no COSMOS_ variable
// set: it starts the embedded emulator in its process through the public
// recipe ("Run your service locally"), and its orchestration completes.
func TestHelloWorldRunsWithNoEnvironment(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run the program with")
	}
	cmd := exec.CommandContext(t.Context(), goBin, "run", ".")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSMOS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/hello_world: %v\n%s", err, out)
	}
	for _, want := range []string{
		"hello_world: running on the embedded Cosmos DB emulator at http://127.0.0.1:",
		`completed: "Hello, World!"`,
		"4 OrchestrationCompleted",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}
