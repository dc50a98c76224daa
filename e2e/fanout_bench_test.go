package e2e_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// BenchmarkFanOut runs one orchestration that schedules N activities which
// return at once, joins them and returns their sum, on a runtime with two
// orchestration and two worker dispatchers (the defaults) over a fresh
// container. It reports the time per activity (ms/activity) and the peak
// heap in use during the run, sampled every 50 ms (MB-peak-heap), the
// figures of README's limits section; run it with -benchtime=1x:
//
//	go test ./e2e -run '^$' -bench FanOut -benchtime=1x
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ctx, client := startBenchRuntime(b, "Work", func(_ *runtime.ActivityContext, i int) (int, error) {
				return i, nil
			}, "FanOut", fanOutSum)
			want := n * (n - 1) / 2
			peak := samplePeakHeap(ctx)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				instance := fmt.Sprintf("fan-%d-%d", n, i)
				if err := runtime.StartOrchestrationTyped(ctx, client, instance, "FanOut", n); err != nil {
					b.Fatal(err)
				}
				sum, err := runtime.WaitForOrchestrationTyped[int](ctx, client, instance, 30*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if sum != want {
					b.Fatalf("sum = %d, want %d", sum, want)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*n), "ms/activity")
			b.ReportMetric(float64(peak())/(1<<20), "MB-peak-heap")
		})
	}
}

// startBenchRuntime registers activity and orchestration on a runtime
// with the samples' options over a fresh container, and returns a context
// of 30 minutes and a client; the runtime shuts down when b ends.
func startBenchRuntime(b *testing.B, activity string, act func(*runtime.ActivityContext, int) (int, error),
	orchestration string, orch func(*runtime.OrchestrationContext, int) (int, error)) (context.Context, *runtime.Client) {
	b.Helper()
	p := newProvider(b)
	reg := runtime.NewRegistry()
	if err := errors.Join(runtime.RegisterActivityTyped(reg, activity, act), runtime.RegisterOrchestrationTyped(reg, orchestration, orch)); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	rt, err := runtime.Start(ctx, p, reg, options())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Shutdown(ctx) })
	return ctx, runtime.NewClient(p)
}

// samplePeakHeap samples the heap in use every 50 ms until the returned
// function is called, which stops sampling and returns the largest sample
// in bytes.
func samplePeakHeap(ctx context.Context) func() uint64 {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan uint64)
	go func() {
		var peak uint64
		var m goruntime.MemStats
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			goruntime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-ctx.Done():
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		cancel()
		return <-done
	}
}
