package e2e_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Samples of duroxide's tests/e2e_samples.rs: activities, control flow,
// errors, races, system activities.

// sample_hello_world_fs: one activity called twice.
func TestSampleHelloWorld(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Hello", func(ctx *runtime.ActivityContext, in string) (string, error) {
			ctx.TraceInfo("Hello activity started")
			return fmt.Sprintf("Hello, %s!", in), nil
		}),
		reg.RegisterOrchestration("HelloWorld", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			ctx.TraceInfo("hello_world started")
			if _, err := ctx.ScheduleActivity("Hello", "Rust").Get(); err != nil {
				return "", err
			}
			return ctx.ScheduleActivity("Hello", in).Get()
		}))
	s.start(reg, options())
	s.expectOutput("inst-sample-hello-1", "HelloWorld", "World", "Hello, World!")
}

// sample_basic_control_flow_fs: branch on an activity's result.
func TestSampleBasicControlFlow(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("GetFlag", func(*runtime.ActivityContext, string) (string, error) { return "yes", nil }),
		reg.RegisterActivity("SayYes", func(*runtime.ActivityContext, string) (string, error) { return "picked_yes", nil }),
		reg.RegisterActivity("SayNo", func(*runtime.ActivityContext, string) (string, error) { return "picked_no", nil }),
		reg.RegisterOrchestration("ControlFlow", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			flag, err := ctx.ScheduleActivity("GetFlag", "").Get()
			if err != nil {
				return "", err
			}
			ctx.TraceInfo("control_flow flag decided = " + flag)
			if flag == "yes" {
				return ctx.ScheduleActivity("SayYes", "").Get()
			}
			return ctx.ScheduleActivity("SayNo", "").Get()
		}))
	s.start(reg, options())
	s.expectOutput("inst-sample-cflow-1", "ControlFlow", "", "picked_yes")
}

// sample_loop_fs: an accumulator built by a loop of activities.
func TestSampleLoop(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Append", func(_ *runtime.ActivityContext, in string) (string, error) { return in + "x", nil }),
		reg.RegisterOrchestration("LoopOrchestration", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			acc := "start"
			for i := range 3 {
				var err error
				if acc, err = ctx.ScheduleActivity("Append", acc).Get(); err != nil {
					return "", err
				}
				ctx.TraceInfo(fmt.Sprintf("loop iteration %d completed acc=%s", i, acc))
			}
			return acc, nil
		}))
	s.start(reg, options())
	s.expectOutput("inst-sample-loop-1", "LoopOrchestration", "", "startxxx")
}

// sample_error_handling_fs: compensate for a failed activity.
func TestSampleErrorHandling(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Fragile", func(_ *runtime.ActivityContext, in string) (string, error) {
			if in == "bad" {
				return "", errors.New("boom")
			}
			return "ok", nil
		}),
		reg.RegisterActivity("Recover", func(*runtime.ActivityContext, string) (string, error) { return "recovered", nil }),
		reg.RegisterOrchestration("ErrorHandling", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			v, err := ctx.ScheduleActivity("Fragile", "bad").Get()
			if err == nil {
				return v, nil
			}
			ctx.TraceWarn("fragile failed error=" + err.Error())
			return ctx.ScheduleActivity("Recover", "").Get()
		}))
	s.start(reg, options())
	s.expectOutput("inst-sample-err-1", "ErrorHandling", "", "recovered")
}

// slowActivity returns result after 30s unless it is cancelled first; it
// stands for duroxide's sleeping activities (300-500ms there), made long
// enough that the race it loses cannot depend on the machine's speed.
func slowActivity(result string) runtime.ActivityFunc {
	return func(ctx *runtime.ActivityContext, _ string) (string, error) {
		select {
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
		}
		return result, nil
	}
}

// quickCancelOptions renews activity locks every 500ms, so that a losing
// activity learns of its cancellation quickly.
func quickCancelOptions() runtime.Options {
	o := options()
	o.WorkerLockTimeout = time.Second
	return o
}

// sample_timeout_with_timer_race_fs: a long activity loses to a timer and
// the orchestration fails with "timeout".
func TestSampleTimeoutWithTimerRace(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("LongOp", slowActivity("done")),
		reg.RegisterOrchestration("TimeoutSample", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			winner, out, err := ctx.Select(ctx.ScheduleActivity("LongOp", ""), ctx.ScheduleTimer(100*time.Millisecond))
			if winner == 1 {
				return "", errors.New("timeout")
			}
			return out, err
		}))
	s.start(reg, quickCancelOptions())
	s.startOrchestration("inst-timeout-sample", "TimeoutSample", "")
	wantEqual(t, "error", s.failed("inst-timeout-sample").DisplayMessage(), "timeout")
}

// sample_select2_activity_vs_external_fs: an external event beats a slow
// activity; the winner's index picks the branch.
func TestSampleSelectActivityVsExternal(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Sleep", slowActivity("slept")),
		reg.RegisterOrchestration("Select2ActVsEvt", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			winner, out, err := ctx.Select(ctx.ScheduleActivity("Sleep", ""), ctx.ScheduleWait("Go"))
			if err != nil {
				return "", err
			}
			if winner == 0 {
				return "activity:" + out, nil
			}
			return "event:" + out, nil
		}))
	s.start(reg, quickCancelOptions())
	s.startOrchestration("inst-s2-mixed", "Select2ActVsEvt", "")
	s.waitForSubscription("inst-s2-mixed", "Go")
	must(t, s.client.RaiseEvent(s.ctx, "inst-s2-mixed", "Go", "ok"))
	wantEqual(t, "output", s.completed("inst-s2-mixed"), "event:ok")
}

// dtf_legacy_gabbar_greetings_fs: two activities joined.
func TestSampleGreetingsJoin(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Greetings", func(_ *runtime.ActivityContext, in string) (string, error) { return "Hello, " + in + "!", nil }),
		reg.RegisterOrchestration("Greetings", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			rs := ctx.Join(ctx.ScheduleActivity("Greetings", "Gabbar"), ctx.ScheduleActivity("Greetings", "Samba"))
			var vals []string
			for _, r := range rs {
				if r.Err != nil {
					return "", r.Err
				}
				vals = append(vals, r.Value)
			}
			return strings.Join(vals, ", "), nil
		}))
	s.start(reg, options())
	s.expectOutput("inst-dtf-greetings", "Greetings", "", "Hello, Gabbar!, Hello, Samba!")
}

// sample_system_activities_fs: UtcNow and NewGUID.
func TestSampleSystemActivities(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("SystemActivities", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		now, guid := ctx.UtcNow(), ctx.NewGUID()
		return fmt.Sprintf("n=%d,g=%s", now.UnixMilli(), guid), nil
	}))
	s.start(reg, options())
	before := time.Now().UnixMilli()
	s.startOrchestration("inst-system-acts", "SystemActivities", "")
	out := s.completed("inst-system-acts")
	m := regexp.MustCompile(`^n=(\d+),g=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output %q", out)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n < before || n > time.Now().UnixMilli() {
		t.Fatalf("recorded time %d outside the run [%d, now]", n, before)
	}
}

// sample_status_polling_fs: wait for a timer-driven orchestration.
func TestSampleStatusPolling(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("StatusSample", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.ScheduleTimer(20 * time.Millisecond).Get(); err != nil {
			return "", err
		}
		return "done", nil
	}))
	s.start(reg, options())
	s.expectOutput("inst-status-sample", "StatusSample", "", "done")
}

// sample_basic_error_handling_fs: an activity error fails the orchestration.
func TestSampleBasicErrorHandling(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ValidateInput", func(_ *runtime.ActivityContext, in string) (string, error) {
			if in == "" {
				return "", errors.New("Input cannot be empty")
			}
			return "Valid: " + in, nil
		}),
		reg.RegisterOrchestration("BasicErrorHandling", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("ValidateInput", in).Get()
		}))
	s.start(reg, options())
	s.expectOutput("inst-basic-error-1", "BasicErrorHandling", "test", "Valid: test")
	s.startOrchestration("inst-basic-error-2", "BasicErrorHandling", "")
	if msg := s.failed("inst-basic-error-2").DisplayMessage(); !strings.Contains(msg, "Input cannot be empty") {
		t.Fatalf("error = %q", msg)
	}
}

// processAndFormat is sample_nested_function_error_handling_fs's helper: a
// plain function that schedules activities and propagates errors.
func processAndFormat(ctx *runtime.OrchestrationContext, data string) (string, error) {
	processed, err := ctx.ScheduleActivity("ProcessData", data).Get()
	if err != nil {
		return "", err
	}
	return ctx.ScheduleActivity("FormatOutput", processed).Get()
}

func processDataActivity(_ *runtime.ActivityContext, in string) (string, error) {
	if strings.Contains(in, "error") {
		return "", errors.New("Processing failed")
	}
	return "Processed: " + in, nil
}

// sample_nested_function_error_handling_fs.
func TestSampleNestedFunctionErrorHandling(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ProcessData", processDataActivity),
		reg.RegisterActivity("FormatOutput", func(_ *runtime.ActivityContext, in string) (string, error) { return "Final: " + in, nil }),
		reg.RegisterOrchestration("NestedErrorHandling", processAndFormat))
	s.start(reg, options())
	s.expectOutput("inst-nested-error-1", "NestedErrorHandling", "test", "Final: Processed: test")
	s.startOrchestration("inst-nested-error-2", "NestedErrorHandling", "error")
	if msg := s.failed("inst-nested-error-2").DisplayMessage(); !strings.Contains(msg, "Processing failed") {
		t.Fatalf("error = %q", msg)
	}
}

// sample_error_recovery_fs: log the error with an activity, then fail with
// context.
func TestSampleErrorRecovery(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ProcessData", processDataActivity),
		reg.RegisterActivity("LogError", func(_ *runtime.ActivityContext, e string) (string, error) { return "Logged: " + e, nil }),
		reg.RegisterOrchestration("ErrorRecovery", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			res, err := ctx.ScheduleActivity("ProcessData", in).Get()
			if err == nil {
				return res, nil
			}
			_, _ = ctx.ScheduleActivity("LogError", err.Error()).Get()
			return "", fmt.Errorf("Failed to process '%s': %w", in, err)
		}))
	s.start(reg, options())
	s.expectOutput("inst-recovery-1", "ErrorRecovery", "test", "Processed: test")
	s.startOrchestration("inst-recovery-2", "ErrorRecovery", "error")
	msg := s.failed("inst-recovery-2").DisplayMessage()
	if !strings.Contains(msg, "Failed to process 'error'") || !strings.Contains(msg, "Processing failed") {
		t.Fatalf("error = %q", msg)
	}
}
