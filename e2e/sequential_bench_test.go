package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// BenchmarkSequentialActivities runs one orchestration that calls N
// activities one after the other (each returns its input plus one) on a
// runtime with the samples' options over a fresh container of the
// embedded emulator (or COSMOS_ENDPOINT), and reports the time per
// activity (ms/activity): issue 26's target is N=2000 within 1.2x of
// N=200. Every turn after the first is one activity's completion, so
// without the sticky cache (DUROXIDE_STICKY=off) each turn replays the
// whole history and the time per activity grows with N. Run it with
// -benchtime=1x:
//
//	go test ./e2e -run '^$' -bench SequentialActivities -benchtime=1x
func BenchmarkSequentialActivities(b *testing.B) {
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ctx, client := startBenchRuntime(b, "Inc", func(_ *runtime.ActivityContext, i int) (int, error) {
				return i + 1, nil
			}, "Sequence", sequenceOfActivities)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				instance := fmt.Sprintf("seq-%d-%d", n, i)
				if err := runtime.StartOrchestrationTyped(ctx, client, instance, "Sequence", n); err != nil {
					b.Fatal(err)
				}
				got, err := runtime.WaitForOrchestrationTyped[int](ctx, client, instance, 30*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("result = %d, want %d", got, n)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*n), "ms/activity")
		})
	}
}

// sequenceOfActivities calls the "Inc" activity n times, one after the
// other, starting from 0, and returns the last result (n).
func sequenceOfActivities(ctx *runtime.OrchestrationContext, n int) (int, error) {
	x := 0
	for range n {
		f, err := runtime.ScheduleActivityTyped(ctx, "Inc", x)
		if err != nil {
			return 0, err
		}
		if x, err = runtime.Await[int](f); err != nil {
			return 0, err
		}
	}
	return x, nil
}
