package runtime_test

import (
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// approval waits a timer, sets its custom status, then races an external
// event against a one-hour timeout. Its tests run on runtimetest's virtual
// clock, so that the hour-long branch takes milliseconds.
func approval(ctx *runtime.OrchestrationContext, _ string) (string, error) {
	if _, err := ctx.ScheduleTimer(50 * time.Millisecond).Get(); err != nil {
		return "", err
	}
	ctx.SetCustomStatus("waiting")
	w, data, _ := ctx.Select(ctx.ScheduleWait("Approve"), ctx.ScheduleTimer(time.Hour))
	if w != 0 {
		return "timeout", nil
	}
	return "approved:" + data, nil
}

func approvalRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Approval", approval))
	return reg
}

func TestAnEventRaisedWhileWaitingWinsTheTimeoutWithoutCancellingItsWait(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	inst := env.Start("appr-1", "Approval", "")
	inst.RaiseEvent("Approve", "yes") // waits for the subscription, skipping the 50 ms timer
	inst.AssertCompleted("approved:yes")
	if st := inst.Status(); st.CustomStatus == nil || *st.CustomStatus != "waiting" {
		t.Fatalf("custom status = %v, want waiting", st.CustomStatus)
	}
	inst.AssertTimers(50*time.Millisecond, time.Hour)
	for _, ev := range inst.History() {
		if ev.Type() == duroxide.EventTypeExternalSubscribedCancelled {
			t.Fatalf("the won wait must not be cancelled:\n%s", runtimetest.FormatHistory(inst.History(), -1))
		}
	}
}

func TestTheTimeoutWinsWhenNoEventComes(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	start := env.Clock().Now()
	inst := env.Run("Approval", "")
	inst.AssertCompleted("timeout")
	if skipped := env.Clock().Now().Sub(start); skipped < time.Hour {
		t.Fatalf("virtual time moved %v, want at least the hour's timeout", skipped)
	}
}
