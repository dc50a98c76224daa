package runtime

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// External events, queue (persistent) events, custom status and KV on the
// replay engine.

func waitFor(name string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) { return ctx.ScheduleWait(name).Get() }
}

func TestExternalEventAfterSubscriptionResolves(t *testing.T) {
	e := engineFor(startedEv(1), extSubscribed(2, "Approve"))
	e.prepCompletions([]duroxide.WorkItem{msg(duroxide.ExternalRaisedItem{Instance: testInstance, Name: "Approve", Data: "yes"})})
	wantCompleted(t, run(e, waitFor("Approve")), "yes")
	got := e.historyDelta[0]
	if k, ok := got.Kind.(duroxide.ExternalEvent); !ok || k.Data != "yes" || got.SourceEventID != nil || got.EventID != 3 {
		t.Fatalf("event = %+v", got)
	}
}

func TestExternalEventBeforeSubscriptionIsSkipped(t *testing.T) {
	e := engineFor(startedEv(1), extEvent(2, "Approve", "early"), extSubscribed(3, "Approve"))
	// The early event is in history but matches no waiting subscription.
	e2 := engineFor(startedEv(1), extEvent(2, "Approve", "early"))
	wantContinue(t, run(e2, waitFor("Approve")))
	if len(e2.historyDelta) != 1 || e2.historyDelta[0].Type() != duroxide.EventTypeExternalSubscribed {
		t.Fatalf("delta = %v", deltaTypes(e2))
	}
	wantContinue(t, run(e, waitFor("Approve")))
}

func TestExternalEventsArePositional(t *testing.T) {
	e := engineFor(startedEv(1), extSubscribed(2, "Ev"), extEvent(3, "Ev", "first"), extSubscribed(4, "Ev"), extEvent(5, "Ev", "second"))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		a, _ := ctx.ScheduleWait("Ev").Get()
		b, _ := ctx.ScheduleWait("Ev").Get()
		return a + "," + b, nil
	}), "first,second")
}

func TestCancelledSubscriptionDoesNotTakeAnArrival(t *testing.T) {
	// The first wait lost a select (cancelled); the event raised later goes
	// to the second subscription.
	e := engineFor(startedEv(1), extSubscribed(2, "Ev"), timerCreated(3, 1), timerFired(4, 3, 1),
		ev(5, src(2), duroxide.ExternalSubscribedCancelled{Reason: "dropped_future"}), extSubscribed(6, "Ev"), extEvent(7, "Ev", "data"))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		w, _, _ := ctx.Select(ctx.ScheduleWait("Ev"), ctx.ScheduleTimer(time.Second))
		if w != 1 {
			return "wrong winner", nil
		}
		return ctx.ScheduleWait("Ev").Get()
	}), "data")
}

func TestQueueMessageBufferedBeforeSubscription(t *testing.T) {
	e := engineFor(startedEv(1))
	e.prepCompletions([]duroxide.WorkItem{
		msg(duroxide.QueueMessageItem{Instance: testInstance, Name: "inbox", Data: "m1"}),
		msg(duroxide.QueueMessageItem{Instance: testInstance, Name: "inbox", Data: "m2"}),
	})
	// Both dequeues resolve in this very turn (quiescence loop).
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		a, _ := ctx.DequeueEvent("inbox").Get()
		b, _ := ctx.DequeueEvent("inbox").Get()
		return a + b, nil
	}), "m1m2")
	want := []duroxide.EventType{duroxide.EventTypeQueueEventDelivered, duroxide.EventTypeQueueEventDelivered,
		duroxide.EventTypeQueueSubscribed, duroxide.EventTypeQueueSubscribed}
	if got := deltaTypes(e); !slices.Equal(got, want) {
		t.Fatalf("delta = %v", got)
	}
}

func TestQueueFIFOAcrossTurns(t *testing.T) {
	e := engineFor(startedEv(1), queueSubscribed(2, "q"), queueDelivered(3, "q", "a"), queueDelivered(4, "q", "b"), queueSubscribed(5, "q"))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		a, _ := ctx.DequeueEvent("q").Get()
		b, _ := ctx.DequeueEvent("q").Get()
		return a + b, nil
	}), "ab")
}

func TestCustomStatusRecordedAndReplayed(t *testing.T) {
	fn := func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("step1")
		if _, err := ctx.ScheduleActivity("A", "").Get(); err != nil {
			return "", err
		}
		s, _ := ctx.CustomStatus()
		ctx.ResetCustomStatus()
		_, ok := ctx.CustomStatus()
		return s + map[bool]string{true: ":set", false: ":cleared"}[ok], nil
	}
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, fn))
	if got := deltaTypes(e); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeCustomStatusUpdated, duroxide.EventTypeActivityScheduled}) {
		t.Fatalf("delta = %v", got)
	}
	e = engineFor(startedEv(1), ev(2, nil, duroxide.CustomStatusUpdated{Status: duroxide.StringPtr("step1")}), actSched(3, "A", ""), actDone(4, 3, "r"))
	wantCompleted(t, run(e, fn), "step1:cleared")
	last := e.historyDelta[0]
	if k, ok := last.Kind.(duroxide.CustomStatusUpdated); !ok || k.Status != nil {
		t.Fatalf("reset must record a nil status: %+v", last)
	}
}

func TestInitialCustomStatusFromContinueAsNew(t *testing.T) {
	start := ev(1, nil, duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0", InitialCustomStatus: duroxide.StringPtr("carried")})
	wantCompleted(t, run(engineFor(start), func(ctx *OrchestrationContext, _ string) (string, error) {
		s, _ := ctx.CustomStatus()
		return s, nil
	}), "carried")
}

func TestKVSetGetClear(t *testing.T) {
	e := newReplayEngine(testInstance, 1, []duroxide.Event{startedEv(1)}, 1,
		map[string]duroxide.KvEntry{"old": {Value: "v0", LastUpdatedAtMs: 5}, "keep": {Value: "k", LastUpdatedAtMs: 99}}, nil)
	before := uint64(time.Now().UnixMilli())
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		v0, _ := ctx.KVValue("old")
		ctx.SetKVValue("a", "1")
		a, _ := ctx.KVValue("a")
		n := ctx.PruneKVValuesUpdatedBefore(10) // clears "old"
		ctx.ClearKVValue("a")
		_, stillA := ctx.KVValue("a")
		return v0 + a + map[bool]string{true: "!", false: "."}[stillA] + string(rune('0'+n)) + ctx.KVAllKeys()[0], nil
	}), "v01.1keep")
	want := []duroxide.EventType{duroxide.EventTypeKeyValueSet, duroxide.EventTypeKeyValueCleared, duroxide.EventTypeKeyValueCleared}
	if got := deltaTypes(e); !slices.Equal(got, want) {
		t.Fatalf("delta = %v", got)
	}
	set := e.historyDelta[0].Kind.(duroxide.KeyValueSet)
	if set.Key != "a" || set.Value != "1" || set.LastUpdatedAtMs < before {
		t.Fatalf("KeyValueSet = %+v (want stamped at or after %d)", set, before)
	}
}

func TestKVReplayMismatchIsNondeterminism(t *testing.T) {
	e := engineFor(startedEv(1), ev(2, nil, duroxide.KeyValueSet{Key: "k", Value: "old", LastUpdatedAtMs: 1}), timerCreated(3, 1))
	wantNondeterminism(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("k", "new")
		return ctx.ScheduleTimer(time.Second).Get()
	}), "kv set mismatch")
}

func TestKVReplayIgnoresTimestamp(t *testing.T) {
	e := engineFor(startedEv(1), ev(2, nil, duroxide.KeyValueSet{Key: "k", Value: "v", LastUpdatedAtMs: 1}), timerCreated(3, 1))
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("k", "v")
		return ctx.ScheduleTimer(time.Second).Get()
	}))
	if len(e.historyDelta) != 0 {
		t.Fatalf("replay added %v", deltaTypes(e))
	}
}

func TestGetKVValueFromInstanceUsesSystemActivity(t *testing.T) {
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.GetKVValueFromInstance("other<1>", "key&").Get()
	}))
	k := e.historyDelta[0].Kind.(duroxide.ActivityScheduled)
	if k.Name != "__duroxide_syscall:get_kv_value" || k.Input != `{"instance_id":"other<1>","key":"key&"}` {
		t.Fatalf("scheduled = %+v", k)
	}
	for _, c := range []struct {
		in     string
		v      string
		exists bool
	}{{"null", "", false}, {`"x"`, "x", true}} {
		v, ok, err := DecodeKVValue(c.in)
		if err != nil || v != c.v || ok != c.exists {
			t.Errorf("DecodeKVValue(%s) = %q %v %v", c.in, v, ok, err)
		}
	}
}

func TestSystemActivitiesForGUIDAndTime(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "__duroxide_syscall:new_guid", ""), actDone(3, 2, "g-1"),
		actSched(4, "__duroxide_syscall:utc_now_ms", ""), actDone(5, 4, "1700000000123"))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.NewGUID() + "@" + ctx.UtcNow().Format(time.RFC3339Nano), nil
	}), "g-1@2023-11-14T22:13:20.123Z")
}

func TestARecordedSystemActivityFailureFailsTheOrchestrationNamingIt(t *testing.T) {
	t.Parallel()
	e := engineFor(startedEv(1), actSched(2, "__duroxide_syscall:utc_now_ms", ""), actFailed(3, 2, "clock broke"))
	r := run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.UtcNow().String(), nil
	})
	if r.kind != turnFailed || r.details.Application == nil || r.details.Application.Kind.Name != duroxide.AppErrorPanicked ||
		!strings.Contains(r.details.Application.Message, "utc_now: the history records a failed system activity: clock broke") {
		t.Fatalf("want a Panicked failure naming utc_now, got %s", describeTurn(r))
	}
	e = engineFor(startedEv(1), actSched(2, "__duroxide_syscall:new_guid", ""), actFailed(3, 2, "no entropy"))
	r = run(e, func(ctx *OrchestrationContext, _ string) (string, error) { return ctx.NewGUID(), nil })
	if r.kind != turnFailed || r.details.Application == nil || !strings.Contains(r.details.Application.Message, "new_guid: the history records a failed system activity: no entropy") {
		t.Fatalf("want a Panicked failure naming new_guid, got %s", describeTurn(r))
	}
}
