package runtime

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Replay-engine tests on constructed histories (duroxide's
// tests/replay_engine): fresh execution, replay with completions,
// nondeterminism, composition, waits, panics.

func oneActivity(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivity(name, input).Get()
	}
}

func TestFreshExecutionSchedulesActivity(t *testing.T) {
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, oneActivity("Task", "x")))
	if len(e.historyDelta) != 1 {
		t.Fatalf("delta = %v", deltaTypes(e))
	}
	got := e.historyDelta[0]
	k, ok := got.Kind.(duroxide.ActivityScheduled)
	if !ok || got.EventID != 2 || k.Name != "Task" || k.Input != "x" || got.SourceEventID != nil {
		t.Fatalf("scheduled event = %+v", got)
	}
	if len(e.pendingActions) != 1 || e.pendingActions[0].schedulingEventID != 2 {
		t.Fatalf("pending actions = %+v", e.pendingActions)
	}
}

func TestFreshExecutionWithNewStartedEventIsNotReplay(t *testing.T) {
	// The dispatcher puts a new OrchestrationStarted in the baseline without
	// persisting it: the code must see IsReplaying() == false.
	e := newReplayEngine(testInstance, 1, []duroxide.Event{startedEv(1)}, 0, nil, nil)
	var replaying []bool
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		replaying = append(replaying, ctx.IsReplaying())
		return "ok", nil
	}), "ok")
	if !slices.Equal(replaying, []bool{false}) {
		t.Fatalf("IsReplaying = %v", replaying)
	}
}

func TestIsReplayingFlipsAtPersistedBoundary(t *testing.T) {
	// Persisted: started, scheduled. New this turn: the completion.
	e := engineFor(startedEv(1), actSched(2, "A", ""))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "r")})
	var seen []bool
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		seen = append(seen, ctx.IsReplaying())
		r, err := ctx.ScheduleActivity("A", "").Get()
		seen = append(seen, ctx.IsReplaying())
		return r, err
	}), "r")
	if !slices.Equal(seen, []bool{true, false}) {
		t.Fatalf("IsReplaying = %v, want [true false]", seen)
	}
}

func TestReplayWithCompletionCompletes(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Task", "x"), actDone(3, 2, "result"))
	wantCompleted(t, run(e, oneActivity("Task", "x")), "result")
	if len(e.historyDelta) != 0 || len(e.pendingActions) != 0 {
		t.Fatalf("replay must add nothing: delta=%v actions=%d", deltaTypes(e), len(e.pendingActions))
	}
}

func TestCompletionMessageBecomesEventAndResolves(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Task", "x"))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "done")})
	wantCompleted(t, run(e, oneActivity("Task", "x")), "done")
	if len(e.historyDelta) != 1 || e.historyDelta[0].EventID != 3 || *e.historyDelta[0].SourceEventID != 2 {
		t.Fatalf("delta = %+v", e.historyDelta)
	}
}

func TestActivityFailureReachesCodeAsTaskFailedError(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Task", ""), actFailed(3, 2, "boom"))
	var got error
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		_, got = ctx.ScheduleActivity("Task", "").Get()
		return "handled", nil
	}), "handled")
	var tf *TaskFailedError
	if !errors.As(got, &tf) || got.Error() != "boom" || tf.Details.Application == nil {
		t.Fatalf("error = %#v", got)
	}
}

func TestOrchestrationErrorFailsWithApplicationError(t *testing.T) {
	e := engineFor(startedEv(1))
	r := run(e, func(*OrchestrationContext, string) (string, error) { return "", errors.New("bad input") })
	a := r.details.Application
	if r.kind != turnFailed || a == nil || a.Kind.Name != duroxide.AppErrorOrchestrationFailed || a.Message != "bad input" {
		t.Fatalf("got %s", describeTurn(r))
	}
}

func TestSequentialProgressSchedulesNextStep(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", "in"), actDone(3, 2, "a-out"))
	wantContinue(t, run(e, func(ctx *OrchestrationContext, in string) (string, error) {
		a, err := ctx.ScheduleActivity("A", "in").Get()
		if err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("B", a).Get()
	}))
	k, ok := e.historyDelta[0].Kind.(duroxide.ActivityScheduled)
	if len(e.historyDelta) != 1 || !ok || k.Name != "B" || k.Input != "a-out" || e.historyDelta[0].EventID != 4 {
		t.Fatalf("delta = %+v", e.historyDelta)
	}
}

func TestDuplicateAndForeignCompletionsAreDropped(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, "first"))
	e.prepCompletions([]duroxide.WorkItem{
		actDoneMsg(2, "again"), // already in history
		msg(duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 7, ID: 2, Result: "other execution"}),
		msg(duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: duroxide.ApplicationError(duroxide.AppErrorActivityFailed, "late")}),
	})
	if len(e.historyDelta) != 0 {
		t.Fatalf("duplicates appended: %v", deltaTypes(e))
	}
	wantCompleted(t, run(e, oneActivity("A", "")), "first")
}

func TestDuplicateWithinOneBatchIsDropped(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "one"), actDoneMsg(2, "two")})
	if len(e.historyDelta) != 1 {
		t.Fatalf("delta = %v", deltaTypes(e))
	}
	wantCompleted(t, run(e, oneActivity("A", "")), "one")
}

func TestNondeterminismScheduleMismatches(t *testing.T) {
	cases := []struct {
		name    string
		history []duroxide.Event
		fn      OrchestrationFunc
	}{
		{"activity vs timer", []duroxide.Event{startedEv(1), actSched(2, "Task", "input")},
			func(ctx *OrchestrationContext, _ string) (string, error) { return ctx.ScheduleTimer(time.Minute).Get() }},
		{"timer vs activity", []duroxide.Event{startedEv(1), timerCreated(2, 1000)}, oneActivity("Task", "input")},
		{"activity name", []duroxide.Event{startedEv(1), actSched(2, "ActivityA", "input")}, oneActivity("ActivityB", "input")},
		{"activity input", []duroxide.Event{startedEv(1), actSched(2, "Task", "input-x")}, oneActivity("Task", "input-y")},
		{"external name", []duroxide.Event{startedEv(1), extSubscribed(2, "EventX")},
			func(ctx *OrchestrationContext, _ string) (string, error) { return ctx.ScheduleWait("EventY").Get() }},
		{"session", []duroxide.Event{startedEv(1), actSched(2, "Task", "i")},
			func(ctx *OrchestrationContext, _ string) (string, error) {
				return ctx.ScheduleActivityOnSession("Task", "i", "s1").Get()
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantNondeterminism(t, run(engineFor(c.history...), c.fn), "schedule mismatch")
		})
	}
}

func TestHistoryScheduleWithoutActionWhenCodeReturnsEarly(t *testing.T) {
	// Code that returns before reaching a recorded schedule is fine: the
	// original code may have scheduled without awaiting.
	e := engineFor(startedEv(1), actSched(2, "Task", "input"))
	wantCompleted(t, run(e, func(*OrchestrationContext, string) (string, error) { return "done", nil }), "done")
}

func TestHistoryScheduleWithoutActionMidway(t *testing.T) {
	// History recorded A and B scheduled together; the code now waits on A
	// before scheduling B, so B's schedule has no action to match.
	e := engineFor(startedEv(1), actSched(2, "A", ""), actSched(3, "B", ""))
	wantNondeterminism(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.ScheduleActivity("A", "").Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("B", "").Get()
	}), "history schedule but no emitted action")
}

func TestNondeterminismCompletionWithoutSchedule(t *testing.T) {
	e := engineFor(startedEv(1))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(999, "r")})
	wantNondeterminism(t, run(e, func(*OrchestrationContext, string) (string, error) { return "done", nil }), "no matching schedule")
}

func TestNondeterminismCompletionKindMismatch(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Task", "input"))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(2)})
	wantNondeterminism(t, run(e, oneActivity("Task", "input")), "completion kind mismatch")

	e = engineFor(startedEv(1), timerCreated(2, 1000))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "r")})
	wantNondeterminism(t, run(e, oneActivity("Task", "input")), "completion kind mismatch")
}

func TestCorruptedHistory(t *testing.T) {
	wantNondeterminism(t, run(engineFor(), oneActivity("A", "")), "corrupted history: empty")
	wantNondeterminism(t, run(engineFor(actSched(1, "A", "")), oneActivity("A", "")), "first event must be OrchestrationStarted")
}

func TestSystemErrorInActivityFailureAbortsTurn(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""))
	infra := duroxide.ErrorDetails{Infrastructure: &duroxide.InfrastructureDetails{Operation: "read", Message: "disk"}}
	e.prepCompletions([]duroxide.WorkItem{msg(duroxide.ActivityFailedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Details: infra})})
	r := run(e, oneActivity("A", ""))
	if r.kind != turnFailed || r.details.Infrastructure == nil {
		t.Fatalf("got %s", describeTurn(r))
	}
	if len(e.historyDelta) != 1 || e.historyDelta[0].Type() != duroxide.EventTypeActivityFailed {
		t.Fatalf("the failure stays in history for audit: %v", deltaTypes(e))
	}
}

func TestPanicFailsWithPanicked(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, "r"))
	r := run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		_, _ = ctx.ScheduleActivity("A", "").Get()
		panic("kaboom")
	})
	a := r.details.Application
	if r.kind != turnFailed || a == nil || a.Kind.Name != duroxide.AppErrorPanicked || a.Message != "kaboom" {
		t.Fatalf("got %s", describeTurn(r))
	}
}

// TestPanicWhileWaitingReleasesTheContext checks that a panic raised while
// a wait polls its futures (under the context's lock) fails the turn as
// Panicked instead of leaving the lock held, which used to hang the engine
// (and with it the dispatcher goroutine and Shutdown) for ever.
func TestPanicWhileWaitingReleasesTheContext(t *testing.T) {
	e := engineFor(startedEv(1))
	r := run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		bad := &Future{ctx: ctx, check: func(*ctxState) (completion, bool) { panic("poll exploded") }}
		return bad.Get()
	})
	a := r.details.Application
	if r.kind != turnFailed || a == nil || a.Kind.Name != duroxide.AppErrorPanicked || a.Message != "poll exploded" {
		t.Fatalf("got %s", describeTurn(r))
	}
}

// TestNilFuturesAreErrors checks that a nil *Future (the one a typed
// Schedule* helper returns beside its error) gives an error from Get,
// Await, Join and Select instead of a panic.
func TestNilFuturesAreErrors(t *testing.T) {
	e := engineFor(startedEv(1))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		var nilFuture *Future
		if _, err := nilFuture.Get(); !errors.Is(err, errNilFuture) {
			return "", fmt.Errorf("Get: %v", err)
		}
		if _, err := Await[int](nil); !errors.Is(err, errNilFuture) {
			return "", fmt.Errorf("Await: %v", err)
		}
		if nilFuture.IsReady() {
			return "", errors.New("a nil future is ready")
		}
		nilFuture.Cancel()
		if rs := ctx.Join(nilFuture); len(rs) != 1 || !errors.Is(rs[0].Err, errNilFuture) {
			return "", fmt.Errorf("Join: %v", rs)
		}
		if w, _, err := ctx.Select(ctx.ScheduleTimer(time.Hour), nilFuture); w != -1 || !errors.Is(err, errNilFuture) {
			return "", fmt.Errorf("Select: %d %v", w, err)
		}
		return "ok", nil
	}), "ok")
}

func TestTerminalHistoryIsContinue(t *testing.T) {
	e := engineFor(startedEv(1), ev(2, nil, duroxide.OrchestrationCompleted{Output: "x"}))
	called := false
	wantContinue(t, run(e, func(*OrchestrationContext, string) (string, error) { called = true; return "", nil }))
	if called {
		t.Fatal("a terminated execution must not run")
	}
}

func TestAbortedTurnUnwindsOrchestrationGoroutine(t *testing.T) {
	e := engineFor(startedEv(1))
	deferred := make(chan struct{})
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		defer close(deferred)
		return ctx.ScheduleTimer(time.Hour).Get()
	}))
	select {
	case <-deferred:
	default:
		t.Fatal("the suspended orchestration's defers did not run when the turn ended")
	}
}
