package runtime

import (
	"slices"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func extCancelled(id, source uint64) duroxide.Event {
	return ev(id, src(source), duroxide.ExternalSubscribedCancelled{Reason: reasonDroppedFuture})
}

// legacy stamps every event of h 0.1.30 (the legacy race rules).
func legacy(h ...duroxide.Event) []duroxide.Event {
	for i := range h {
		h[i].DuroxideVersion = "0.1.30"
	}
	return h
}

func TestAnEventRaisedBeforeItsWaitIsReportedDroppedNoWaitPending(t *testing.T) {
	t.Parallel()
	got := DroppedExternalEvents([]duroxide.Event{
		startedEv(1), actSched(2, "Pay", ""), extEvent(3, "shipped", "box"), actDone(4, 2, "paid"),
		extSubscribed(5, "shipped"), extEvent(6, "shipped", "second"),
	})
	want := []DroppedEvent{{ExecutionID: 1, EventID: 3, Name: "shipped", Reason: DroppedNoWaitPending}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestEventsBeyondTheWaitsOfTheirNameAreDroppedAndOthersAreNot(t *testing.T) {
	t.Parallel()
	got := DroppedExternalEvents([]duroxide.Event{
		startedEv(1), extSubscribed(2, "a"), extSubscribed(3, "a"), extSubscribed(4, "b"),
		extEvent(5, "a", "1"), extEvent(6, "a", "2"), extEvent(7, "a", "3"), extEvent(8, "b", "1"),
	})
	want := []DroppedEvent{{ExecutionID: 1, EventID: 7, Name: "a", Reason: DroppedNoWaitPending}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestAnEventOfAWaitCancelledUnreadIsDroppedUnderTheRaceRulesOnly(t *testing.T) {
	t.Parallel()
	h := []duroxide.Event{
		startedEv(1), extSubscribed(2, "a"), timerCreated(3, 10), timerFired(4, 3, 10), extEvent(5, "a", "late"),
		extCancelled(6, 2), extSubscribed(7, "a"),
	}
	got := DroppedExternalEvents(h)
	want := []DroppedEvent{{ExecutionID: 1, EventID: 5, Name: "a", Reason: DroppedWaitCancelled}}
	if !slices.Equal(got, want) {
		t.Fatalf("0.1.31: got %+v, want %+v", got, want)
	}
	// Under the legacy rules the arrival moves on to the next wait (7).
	if got := DroppedExternalEvents(legacy(slices.Clone(h)...)); len(got) != 0 {
		t.Fatalf("0.1.30: got %+v, want none", got)
	}
	// After the cancellation is recorded, an event finds no wait.
	got = DroppedExternalEvents(append(h[:6:6], extEvent(7, "a", "later")))
	want = append(want, DroppedEvent{ExecutionID: 1, EventID: 7, Name: "a", Reason: DroppedNoWaitPending})
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestEachExecutionStartsWithNoWaits(t *testing.T) {
	t.Parallel()
	second := func(e duroxide.Event) duroxide.Event { e.ExecutionID = 2; return e }
	got := DroppedExternalEvents([]duroxide.Event{
		startedEv(1), extSubscribed(2, "a"),
		second(startedEv(1)), second(extEvent(2, "a", "x")),
	})
	want := []DroppedEvent{{ExecutionID: 2, EventID: 2, Name: "a", Reason: DroppedNoWaitPending}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// The engine skips (and counts) the same event the history rule reports,
// and only in the turn that appends it, not when it replays it.
func TestTheEngineDropsWhatTheHistoryRuleReports(t *testing.T) {
	t.Parallel()
	code := func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.ScheduleActivity("Pay", "").Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleWait("shipped").Get()
	}
	persisted := []duroxide.Event{startedEv(1), actSched(2, "Pay", "")}
	e := newReplayEngine(testInstance, 1, persisted, len(persisted), nil, nil)
	e.historyDelta = []duroxide.Event{extEvent(3, "shipped", "box"), actDone(4, 2, "paid")}
	e.nextEventID = 5
	wantContinue(t, run(e, code))
	if !slices.Equal(e.droppedEvents, []string{"shipped"}) {
		t.Fatalf("engine dropped %q, want [shipped]", e.droppedEvents)
	}
	all := append(slices.Clone(persisted), e.historyDelta...)
	rule := DroppedExternalEvents(all)
	if len(rule) != 1 || rule[0].EventID != 3 {
		t.Fatalf("rule reports %+v, want event 3", rule)
	}
	// Replayed, the event is skipped again but not counted again.
	e = engineFor(all...)
	wantContinue(t, run(e, code))
	if len(e.droppedEvents) != 0 {
		t.Fatalf("replay counted %q", e.droppedEvents)
	}
}
