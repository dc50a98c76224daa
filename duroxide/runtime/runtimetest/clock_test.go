package runtimetest_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// approval registers "Approve": it waits for event "approval" against a
// timeout, after an optional delay, and says which came first.
func approval(t *testing.T, delay, timeout time.Duration) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("Approve", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if delay > 0 {
			if _, err := ctx.ScheduleTimer(delay).Get(); err != nil {
				return "", err
			}
		}
		winner, v, err := ctx.Select(ctx.ScheduleWait("approval"), ctx.ScheduleTimer(timeout))
		if err != nil {
			return "", err
		}
		if winner == 1 {
			return "timed out", nil
		}
		return "approved by " + v, nil
	}))
	return reg
}

func TestTimeSkippingFiresADayLongTimerAtOnce(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Remind", func(_ *runtime.ActivityContext, in string) (string, error) { return "reminded " + in, nil }))
	must(t, reg.RegisterOrchestration("RemindTomorrow", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		if _, err := ctx.ScheduleTimer(24 * time.Hour).Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("Remind", input).Get()
	}))
	env := runtimetest.New(t, reg)
	start := env.Clock().Now()
	inst := env.Run("RemindTomorrow", "ann")
	inst.AssertCompleted("reminded ann")
	inst.AssertTimers(24 * time.Hour)
	jumps, skipped := env.Clock().Skipped()
	if jumps != 1 || skipped < 23*time.Hour || env.Clock().Now().Sub(start) < 24*time.Hour {
		t.Fatalf("%d jumps, %v skipped", jumps, skipped)
	}
	if calls := env.ActivityCalls("Remind"); len(calls) != 1 {
		t.Fatalf("%+v", calls)
	}
}

func TestARaisedEventBeatsALongTimeoutAndTheTimeoutFiresWithoutOne(t *testing.T) {
	t.Parallel()
	reg := approval(t, 0, 72*time.Hour)

	env := runtimetest.New(t, reg)
	inst := env.Start("approve-1", "Approve", "")
	inst.RaiseEvent("approval", "ann")
	inst.Wait()
	inst.AssertCompleted("approved by ann")
	if jumps, _ := env.Clock().Skipped(); jumps != 0 {
		t.Errorf("%d jumps over a timer the event beat", jumps)
	}

	env = runtimetest.New(t, reg)
	env.Run("Approve", "").AssertCompleted("timed out")
	if jumps, skipped := env.Clock().Skipped(); jumps != 1 || skipped < 71*time.Hour {
		t.Errorf("%d jumps, %v", jumps, skipped)
	}
}

func TestRaiseEventSkipsTheTimersBeforeTheSubscription(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approval(t, time.Hour, 72*time.Hour))
	inst := env.Start("approve-1", "Approve", "")
	inst.RaiseEvent("approval", "bob")
	inst.Wait()
	inst.AssertCompleted("approved by bob")
	if jumps, _ := env.Clock().Skipped(); jumps != 1 {
		t.Errorf("%d jumps, want the hour's only", jumps)
	}
}

func TestTimeSkipsThroughRetryBackoffsChildrenAndContinueAsNew(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Charge", func(*runtime.ActivityContext, string) (string, error) { return "charged", nil }))
	must(t, reg.RegisterOrchestration("Nightly", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		night, _ := strconv.Atoi(input)
		if _, err := ctx.ScheduleTimer(24 * time.Hour).Get(); err != nil {
			return "", err
		}
		if night < 3 {
			return "", ctx.ContinueAsNew(strconv.Itoa(night + 1))
		}
		return "nights " + input, nil
	}))
	must(t, reg.RegisterOrchestration("Pay", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		out, err := ctx.ScheduleActivityWithRetry("Charge", "", runtime.RetryPolicy{
			MaxAttempts: 5, Backoff: runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: 10 * time.Minute},
		}).Get()
		if err != nil {
			return "", err
		}
		nights, err := ctx.ScheduleSubOrchestration("Nightly", "1").Get()
		return out + ", " + nights, err
	}))
	env := runtimetest.New(t, reg)
	env.MockActivity("Charge").FailsFirst(2, errors.New("busy"))
	inst := env.Run("Pay", "")
	inst.AssertCompleted("charged, nights 3")
	if jumps, skipped := env.Clock().Skipped(); jumps != 5 || skipped < 72*time.Hour {
		t.Errorf("%d jumps, %v skipped; want 2 backoffs and 3 nights", jumps, skipped)
	}
}

func TestTimeDoesNotSkipWhileAnActivityRuns(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Slow", func(*runtime.ActivityContext, string) (string, error) {
		time.Sleep(30 * time.Millisecond) // long enough for several skip checks
		return "slow", nil
	}))
	must(t, reg.RegisterOrchestration("Race", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		winner, _, err := ctx.Select(ctx.ScheduleActivity("Slow", ""), ctx.ScheduleTimer(time.Hour))
		return strconv.Itoa(winner), err
	}))
	env := runtimetest.New(t, reg)
	env.Run("Race", "").AssertCompleted("0")
}

func TestWithRealTimeTimersWaitTheirDelay(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approval(t, 0, 20*time.Millisecond), runtimetest.WithRealTime())
	if env.Clock() != nil {
		t.Fatal("a clock in real time")
	}
	env.Run("Approve", "").AssertCompleted("timed out")
}
