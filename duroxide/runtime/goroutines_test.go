package runtime_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Goroutine hygiene: every goroutine a Runtime starts (dispatchers, the
// session manager, lock renewals, activity and orchestration goroutines)
// must be gone once Shutdown returns or the context given to Start is
// cancelled. The runtime tests do not run in parallel, so the process's
// goroutine count before Start is the baseline. The workload's suspended
// orchestrations sit in the runtime's sticky cache, their goroutines
// parked, so these tests also check that shutting down ends them (with
// DUROXIDE_STICKY=off they are unwound after each turn instead).

// goroutineSettle bounds the wait for goroutines that are already on their
// way out (a goroutine that has closed its last channel may still be
// unwinding); it is generous because a leak never settles at all.
const goroutineSettle = 10 * time.Second

// goroutineWorkload starts a runtime on e with ctx and leaves it busy: one
// orchestration completed, one suspended on an external event, one on a
// durable timer, and one whose session activity is running (it returns
// when its context is cancelled) when the function returns.
func goroutineWorkload(t *testing.T, e *env, ctx context.Context) *runtime.Runtime {
	t.Helper()
	running := make(chan struct{}, 1)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Quick", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterActivity("Blocks", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			running <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}),
		reg.RegisterOrchestration("Done", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Quick", in).Get()
		}),
		reg.RegisterOrchestration("Waits", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleWait("never").Get()
		}),
		reg.RegisterOrchestration("Sleeps", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleTimer(time.Hour).Get()
		}),
		reg.RegisterOrchestration("Busy", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivityOnSession("Blocks", "", "s1").Get()
		}))
	// A short grace period: the cancellation of ctx (a crash) then
	// cancels the running activity at once, not after the default 5 s.
	opts := fastOptions()
	opts.ShutdownGracePeriod = 100 * time.Millisecond
	rt, err := runtime.Start(ctx, e.provider, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.run("g-done", "Done", "x"), "x")
	for instance, name := range map[string]string{"g-waits": "Waits", "g-sleeps": "Sleeps", "g-busy": "Busy"} {
		if err := e.client.StartOrchestration(e.ctx, instance, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	<-running
	return rt
}

// requireGoroutinesBackTo waits, up to goroutineSettle, until the process
// has no more goroutines than baseline, and fails with every stack
// otherwise.
func requireGoroutinesBackTo(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(goroutineSettle)
	n := goruntime.NumGoroutine()
	for n > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n = goruntime.NumGoroutine()
	}
	if n > baseline {
		buf := make([]byte, 1<<20)
		buf = buf[:goruntime.Stack(buf, true)]
		t.Fatalf("%d goroutines still running, %d before Start:\n%s", n, baseline, buf)
	}
}

func TestShutdownStopsEveryGoroutine(t *testing.T) {
	e := newEnv(t)
	baseline := goruntime.NumGoroutine()
	rt := goroutineWorkload(t, e, context.Background())
	if goruntime.NumGoroutine() <= baseline {
		t.Fatal("the runtime started no goroutine: the check below would prove nothing")
	}
	// The running activity only returns when cancelled: Shutdown's context
	// ends first, which cancels it and abandons its work item.
	ctx, cancel := context.WithTimeout(e.ctx, 100*time.Millisecond)
	defer cancel()
	if err := rt.Shutdown(ctx); err == nil {
		t.Fatal("Shutdown returned nil although an activity outlived its context")
	}
	requireGoroutinesBackTo(t, baseline)
	if err := rt.Shutdown(e.ctx); err != nil {
		t.Fatalf("a second Shutdown: %v", err)
	}
	requireGoroutinesBackTo(t, baseline)
}

func TestContextCancellationStopsEveryGoroutine(t *testing.T) {
	e := newEnv(t)
	baseline := goruntime.NumGoroutine()
	ctx, kill := context.WithCancel(e.ctx)
	goroutineWorkload(t, e, ctx)
	kill() // a crash: no Shutdown
	requireGoroutinesBackTo(t, baseline)
}

// TestShutdownReturnsWhenOrchestrationCodeBlocks checks that Shutdown
// returns, with an error wrapping its context's, when orchestration code
// blocks on something other than its futures (which nothing can
// interrupt), and that the runtime's goroutines end once that code returns.
// It used to wait for ever.
func TestShutdownReturnsWhenOrchestrationCodeBlocks(t *testing.T) {
	e := newEnv(t)
	baseline := goruntime.NumGoroutine()
	entered, release := make(chan struct{}), make(chan struct{})
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Blocks", func(*runtime.OrchestrationContext, string) (string, error) {
		close(entered)
		<-release // wrong in orchestration code, and unstoppable
		return "", nil
	}))
	// Shutdown gives up 200 ms after its context ends rather than 5 s:
	// what is checked is that it returns at all.
	rt, err := runtime.Start(e.ctx, e.provider, reg, runtime.WithCleanupHeadroom(fastOptions(), 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, "g-blocked", "Blocks", ""); err != nil {
		t.Fatal(err)
	}
	<-entered
	ctx, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if err := rt.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	close(release)
	requireGoroutinesBackTo(t, baseline)
}
