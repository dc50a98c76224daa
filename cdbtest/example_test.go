package cdbtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// greeter registers the orchestration the examples run: HelloWorld calls the
// activity Greet once and returns its result.
func greeter() *runtime.Registry {
	reg := runtime.NewRegistry()
	_ = reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	})
	_ = reg.RegisterOrchestration("HelloWorld", func(ctx *runtime.OrchestrationContext, name string) (string, error) {
		return ctx.ScheduleActivity("Greet", name).Get()
	})
	return reg
}

// exampleT stands in for the *testing.T a real test passes (examples have
// none): it prints failures and runs cleanups when finish is called.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()                        {}
func (*exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// In a test, pass the test's *testing.T:
//
//	func TestHelloWorld(t *testing.T) {
//		p := cdbtest.NewProvider(t)
//		...
//	}
func ExampleNewProvider() {
	t := &exampleT{}
	defer t.finish()

	p := cdbtest.NewProvider(t) // fresh container, closed by t's cleanup
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt, err := runtime.Start(ctx, p, greeter(), runtime.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("start runtime: %v", err)
	}
	defer func() { _ = rt.Shutdown(ctx) }()

	client := runtime.NewClient(p)
	if err := client.StartOrchestration(ctx, "hello-1", "HelloWorld", "World"); err != nil {
		t.Fatalf("start: %v", err)
	}
	st, err := client.WaitForOrchestration(ctx, "hello-1", 30*time.Second)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	fmt.Println(st.Kind, st.Output)
	// Output: Completed Hello, World!
}

// Two replicas of a service share one container: open an Account and give
// both providers the same Config. On the embedded emulator, the Account
// also exposes the emulator's request counters and fault injection.
func ExampleAccount() {
	t := &exampleT{}
	defer t.finish()

	account := cdbtest.NewAccount(t)
	cfg := account.Config()
	first := account.NewProvider(t, cfg)
	second := account.NewProvider(t, cfg)
	fmt.Println(first.Container().ID() == second.Container().ID())
	if emu := account.Emulator(); emu != nil { // nil when COSMOS_ENDPOINT is set
		_ = emu.Counters() // requests per operation kind
	}
	// Output: true
}
