package runtime_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// An orchestration's trace runs again on every turn's replay; it must reach
// the log once (issue 24: a message repeated by replay is logged once).
func TestATraceRepeatedByReplayIsLoggedOnce(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Step", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterOrchestration("Steps", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.TraceInfo("steps started")
			for _, s := range []string{"a", "b", "c"} {
				if _, err := ctx.ScheduleActivity("Step", s).Get(); err != nil {
					return "", err
				}
				ctx.TraceWarn("step " + s + " done")
			}
			return "done", nil
		}))
	var logs lockedBuffer
	env := runtimetest.New(t, reg, runtimetest.WithOptions(runtime.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	env.Run("Steps", "").AssertCompleted("done")
	for _, msg := range []string{"steps started", "step a done", "step b done", "step c done"} {
		if n := strings.Count(logs.String(), `msg="`+msg+`"`); n != 1 {
			t.Errorf("%q logged %d times, want once; log:\n%s", msg, n, logs.String())
		}
	}
}
