package runtimetest_test

import (
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// BenchmarkThirtyDayTimerThreeMocksAndAnEvent measures issue 27's target:
// a test of an orchestration with a 30-day timer, three mocked activities
// and an event, from New to the asserted result, in wall time per test
// (target: under 50 ms).
func BenchmarkThirtyDayTimerThreeMocksAndAnEvent(b *testing.B) {
	reg := runtime.NewRegistry()
	if err := reg.RegisterOrchestration("Subscription", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		for _, step := range []string{"Reserve", "Charge"} {
			if _, err := ctx.ScheduleActivity(step, in).Get(); err != nil {
				return "", err
			}
		}
		if _, err := ctx.ScheduleTimer(30 * 24 * time.Hour).Get(); err != nil {
			return "", err
		}
		answer, err := ctx.ScheduleWait("renew").Get()
		if err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("Notify", answer).Get()
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		env := runtimetest.New(b, reg)
		env.MockActivity("Reserve").Returns("reserved")
		env.MockActivity("Charge").Returns("charged")
		env.MockActivity("Notify").Returns("notified")
		inst := env.Start("sub-1", "Subscription", "plan-a")
		inst.RaiseEvent("renew", "yes")
		inst.Wait()
		inst.AssertCompleted("notified")
	}
}
