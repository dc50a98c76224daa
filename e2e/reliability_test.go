package e2e_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// TestKillRuntimeMidFanOut is the reliability test of the runtime on Cosmos
// DB: a fan-out of 20 activities runs on a runtime whose context is
// cancelled (no Shutdown: a crash) when half of them are done; a new
// runtime, on a new provider over the same container, finishes the
// orchestration, and every activity result is recorded exactly once.
func TestKillRuntimeMidFanOut(t *testing.T) {
	t.Parallel()
	const fanOut = 20
	var executions atomic.Int64
	registry := func(stallAfter int64) *runtime.Registry {
		reg := runtime.NewRegistry()
		must(t,
			runtime.RegisterActivityTyped(reg, "Work", func(ctx *runtime.ActivityContext, n int) (int, error) {
				if executions.Add(1) > stallAfter {
					<-ctx.Done() // stalls until the runtime is killed
					return 0, ctx.Err()
				}
				return n * 10, nil
			}),
			runtime.RegisterOrchestrationTyped(reg, "FanOut", fanOutSum))
		return reg
	}
	opts := options()
	opts.WorkerConcurrency = 4
	opts.OrchestratorLockTimeout = time.Second
	opts.WorkerLockTimeout = time.Second

	cfg := providerConfig()
	first := openProvider(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	killCtx, kill := context.WithCancel(ctx)
	if _, err := runtime.Start(killCtx, first, registry(fanOut/2), opts); err != nil {
		t.Fatal(err)
	}
	client := runtime.NewClient(first)
	must(t, runtime.StartOrchestrationTyped(ctx, client, "fan-kill", "FanOut", fanOut))
	deadline := time.Now().Add(waitTimeout)
	for executions.Load() <= fanOut/2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if executions.Load() <= fanOut/2 {
		t.Fatal("the first runtime never got half way")
	}
	kill()
	_ = first.Close()
	before := executions.Load()

	second := openProvider(t, cfg)
	rt, err := runtime.Start(ctx, second, registry(1<<62), opts)
	must(t, err)
	defer func() { _ = rt.Shutdown(ctx) }()
	client = runtime.NewClient(second)
	sum, err := runtime.WaitForOrchestrationTyped[int](ctx, client, "fan-kill", waitTimeout)
	must(t, err)
	wantEqual(t, "sum", sum, 1900)
	if executions.Load() == before {
		t.Fatal("the second runtime ran no activity: the kill came too late to test anything")
	}

	history, err := second.Read(ctx, "fan-kill")
	must(t, err)
	completions := map[uint64]int{}
	for _, ev := range history {
		switch ev.Type() {
		case duroxide.EventTypeActivityCompleted:
			completions[*ev.SourceEventID]++
		case duroxide.EventTypeActivityFailed:
			t.Fatalf("no activity may fail: %+v", ev)
		}
	}
	if len(completions) != fanOut {
		t.Fatalf("%d activities have a result, want %d", len(completions), fanOut)
	}
	for id, n := range completions {
		if n != 1 {
			t.Fatalf("activity %d recorded %d times", id, n)
		}
	}
	t.Logf("activity executions: %d before the kill, %d in all", before, executions.Load())
}
