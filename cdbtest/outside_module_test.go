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
// checkout, resolved offline from the module cache), runs an orchestration
// test on the embedded emulator with no Cosmos DB environment at all.
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
		"go.sum":       sum, // the project's checksums cover every module the test needs
		"shop_test.go": []byte(outsideModuleTest),
		"doc.go":       []byte("// Package shop is a user's service.\npackage shop\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), goBin, "test", "-count=1", "-v", "./...")
	cmd.Dir = dir
	cmd.Env = outsideEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in the outside module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestGreeting") ||
		!strings.Contains(string(out), "orchestration completed on the embedded emulator") {
		t.Fatalf("the outside module's test did not pass:\n%s", out)
	}
}

// outsideEnv is this process's environment without any Cosmos DB variable
// (so the outside test must use the embedded emulator), with module
// downloads off (offline: every dependency comes from the module cache) and
// go.mod updates allowed.
func outsideEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case cdb.EnvEndpoint, cdb.EnvKey, cdb.EnvDatabase, cdb.EnvContainer, "GOPROXY", "GOFLAGS", "GOWORK":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off")
}
