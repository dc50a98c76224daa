package runtime

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Edge cases of the replay engine (duroxide's tests/replay_engine:
// event_allocation, edge_cases, partial_completion, sub_orchestration).

func TestEventIDsContinueFromTheLastEvent(t *testing.T) {
	e := engineFor(startedEv(1), actSched(5, "Task", "input"))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(5, "result")})
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.ScheduleActivity("Task", "input").Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("Next", "next").Get()
	}))
	var ids []uint64
	for _, ev := range e.historyDelta {
		ids = append(ids, ev.EventID)
	}
	if !slices.Equal(ids, []uint64{6, 7}) {
		t.Fatalf("ids = %v", ids)
	}
}

func TestHandlerInvokedOncePerTurn(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, "a"), timerCreated(4, 1), timerFired(5, 4, 1))
	calls := 0
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		calls++
		a, _ := ctx.ScheduleActivity("A", "").Get()
		_, _ = ctx.ScheduleTimer(0).Get()
		return a, nil
	}), "a")
	if calls != 1 {
		t.Fatalf("handler ran %d times", calls)
	}
}

func TestPendingSchedulesStayPending(t *testing.T) {
	cases := map[string]struct {
		history []duroxide.Event
		fn      OrchestrationFunc
	}{
		"activity": {[]duroxide.Event{startedEv(1), actSched(2, "A", "")}, oneActivity("A", "")},
		"timer": {[]duroxide.Event{startedEv(1), timerCreated(2, 9)}, func(ctx *OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleTimer(time.Second).Get()
		}},
		"wait": {[]duroxide.Event{startedEv(1), extSubscribed(2, "E")}, waitFor("E")},
		"child": {[]duroxide.Event{startedEv(1), subSched(2, "C", "sub::2", "")}, func(ctx *OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleSubOrchestration("C", "").Get()
		}},
	}
	for name, c := range cases {
		e := engineFor(c.history...)
		if r := run(e, c.fn); r.kind != turnContinue || len(e.historyDelta) != 0 || len(e.pendingActions) != 0 {
			t.Errorf("%s: %s, delta %v, %d actions", name, describeTurn(r), deltaTypes(e), len(e.pendingActions))
		}
	}
}

func TestSecondEventOfSameNameIsNotConsumed(t *testing.T) {
	e := engineFor(startedEv(1), extSubscribed(2, "Event"), extEvent(3, "Event", "first-data"), extEvent(4, "Event", "second-data"))
	wantCompleted(t, run(e, waitFor("Event")), "first-data")
}

func TestEmptyPayloads(t *testing.T) {
	e := engineFor(startedEv(1), extSubscribed(2, "E"), extEvent(3, "E", ""))
	wantCompleted(t, run(e, waitFor("E")), "")
	e = engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, ""))
	wantCompleted(t, run(e, oneActivity("A", "")), "")
}

func TestSubOrchestrationResultsAndIDs(t *testing.T) {
	fn := func(ctx *OrchestrationContext, _ string) (string, error) {
		gen := ctx.ScheduleSubOrchestration("C", "g")
		exp := ctx.ScheduleSubOrchestrationWithID("C", "fixed", "x")
		rs := ctx.Join(gen, exp)
		var tf *TaskFailedError
		if !errors.As(rs[1].Err, &tf) {
			return "", errors.New("the explicit child should have failed")
		}
		return rs[0].Value + "+" + tf.Error(), nil
	}
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, fn))
	var instances []string
	for _, a := range e.pendingActions {
		instances = append(instances, a.instance)
	}
	if !slices.Equal(instances, []string{"sub::2", "fixed"}) {
		t.Fatalf("child ids = %v", instances)
	}

	e = engineFor(startedEv(1), subSched(2, "C", "sub::2", "g"), subSched(3, "C", "fixed", "x"))
	e.prepCompletions([]duroxide.WorkItem{
		msg(duroxide.SubOrchFailedItem{ParentInstance: testInstance, ParentExecutionID: 1, ParentID: 3, Details: duroxide.ApplicationError(duroxide.AppErrorOrchestrationFailed, "child broke")}),
		msg(duroxide.SubOrchCompletedItem{ParentInstance: testInstance, ParentExecutionID: 1, ParentID: 2, Result: "ok"}),
	})
	wantCompleted(t, run(e, fn), "ok+child broke")
}

func TestSubOrchestrationNameMismatchIsNondeterminism(t *testing.T) {
	e := engineFor(startedEv(1), subSched(2, "Old", "sub::2", ""))
	wantNondeterminism(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleSubOrchestration("New", "").Get()
	}), "schedule mismatch")
}

func TestContinueAsNewEndsTheTurn(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, "a"))
	r := run(e, func(ctx *OrchestrationContext, in string) (string, error) {
		a, _ := ctx.ScheduleActivity("A", "").Get()
		return "", ctx.ContinueAsNewVersioned("2.0.0", in+a)
	})
	if r.kind != turnContinueAsNew || r.input != "inputa" || r.version == nil || *r.version != "2.0.0" {
		t.Fatalf("got %s", describeTurn(r))
	}
}

func TestDetachedStartReplaysAndChecksItsInstance(t *testing.T) {
	fn := func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.ScheduleOrchestration("Worker", "w-1", "in")
		return ctx.ScheduleTimer(time.Second).Get()
	}
	e := engineFor(startedEv(1), ev(2, nil, duroxide.OrchestrationChained{Name: "Worker", Instance: "w-1", Input: "in"}), timerCreated(3, 1))
	wantContinue(t, run(e, fn))
	e = engineFor(startedEv(1), ev(2, nil, duroxide.OrchestrationChained{Name: "Worker", Instance: "w-2", Input: "in"}), timerCreated(3, 1))
	wantNondeterminism(t, run(e, fn), "schedule mismatch")
}

func TestCancelRequestWinsOverOutput(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""))
	e.prepCompletions([]duroxide.WorkItem{
		msg(duroxide.CancelInstanceItem{Instance: testInstance, Reason: "stop"}),
		msg(duroxide.CancelInstanceItem{Instance: testInstance, Reason: "again"}),
	})
	r := run(e, oneActivity("A", ""))
	if r.kind != turnCancelled || r.reason != "stop" {
		t.Fatalf("got %s", describeTurn(r))
	}
	if got := deltaTypes(e); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeOrchestrationCancelRequested}) {
		t.Fatalf("a second cancel must be dropped: %v", got)
	}
}
