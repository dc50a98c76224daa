package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// timeoutThenReadTheLoser races an approval against an hour's timeout and
// then reads the losing wait, as Temporal code reads a cancelled future.
func timeoutThenReadTheLoser(ctx *runtime.OrchestrationContext, _ string) (string, error) {
	wait := ctx.ScheduleWait("Approve")
	w, _, err := ctx.Select(wait, ctx.ScheduleTimer(time.Hour))
	if err != nil || w != 1 {
		return "", errors.New("the timer should win")
	}
	_, err = wait.Get()
	if !errors.Is(err, runtime.ErrCanceled) {
		return "", errors.New("Get on the loser returned " + errString(err))
	}
	// Join settles at once too.
	if r := ctx.Join(wait); !errors.Is(r[0].Err, runtime.ErrCanceled) {
		return "", errors.New("Join on the loser returned " + errString(r[0].Err))
	}
	// A cancelled activity's Await too.
	act := ctx.ScheduleActivity("Slow", "")
	act.Cancel()
	if _, err := runtime.Await[string](act); !errors.Is(err, runtime.ErrCanceled) {
		return "", errors.New("Await on a cancelled activity returned " + errString(err))
	}
	return "timed out; loser canceled", nil
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

func TestGetOnASelectLoserReturnsErrCanceledAtOnceAndReplaysTheSame(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Loser", timeoutThenReadTheLoser))
	mustRegister(t, reg.RegisterActivity("Slow", func(*runtime.ActivityContext, string) (string, error) { return "slow", nil }))
	env := runtimetest.New(t, reg)
	inst := env.Run("Loser", "")
	inst.AssertCompleted("timed out; loser canceled")
	// The recorded history replays against the same code without a
	// nondeterminism error: the cancellation is the code's own decision.
	h := runtimetest.History{InstanceID: inst.ID, Executions: []runtimetest.Execution{{ExecutionID: 1, Events: inst.History()}}}
	if err := runtimetest.Replay(reg, h); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
