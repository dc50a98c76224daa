package runtime

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Turn-level tests: what the dispatcher acks for a fetched item (duroxide's
// process_orchestration_item and run_single_execution_atomic).

func testProcessor(t *testing.T, register func(r *Registry)) *turnProcessor {
	t.Helper()
	reg := NewRegistry()
	register(reg)
	return &turnProcessor{
		registry: reg, maxAttempts: 3, backoff: UnregisteredBackoff{Base: time.Second, Max: time.Minute},
		supported:  duroxide.DefaultCapabilityFilter(),
		parentExec: func(string, uint64, string) uint64 { return 1 },
		logger:     (&Options{}).mustDefaults().Logger,
	}
}

func (o *Options) mustDefaults() Options {
	d, err := o.withDefaults()
	if err != nil {
		panic(err)
	}
	return d
}

func item(instance string, execID uint64, history []duroxide.Event, msgs ...duroxide.WorkItem) *duroxide.OrchestrationItem {
	return &duroxide.OrchestrationItem{Instance: instance, ExecutionID: execID, History: history, Messages: msgs, AttemptCount: 1}
}

func startMsg(instance, name, input string) duroxide.WorkItem {
	return msg(duroxide.StartOrchestrationItem{Instance: instance, Orchestration: name, Input: input, ExecutionID: 1})
}

func types(events []duroxide.Event) []duroxide.EventType {
	out := make([]duroxide.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type()
	}
	return out
}

func TestTurnStartsNewInstance(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("Hello", func(ctx *OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Greet", in).Get()
		})
	})
	d := p.decide(item("i1", 1, nil, startMsg("i1", "Hello", "world")))
	if d.abandon {
		t.Fatalf("abandoned: %s", d.reason)
	}
	a := d.ack
	if !slices.Equal(types(a.historyDelta), []duroxide.EventType{duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeActivityScheduled}) {
		t.Fatalf("delta = %v", types(a.historyDelta))
	}
	st := a.historyDelta[0].Kind.(duroxide.OrchestrationStarted)
	if st.Name != "Hello" || st.Version != "1.0.0" || st.Input != "world" || a.historyDelta[0].EventID != 1 {
		t.Fatalf("started = %+v", st)
	}
	md := a.metadata
	if md.Status != nil || *md.OrchestrationName != "Hello" || *md.OrchestrationVersion != "1.0.0" ||
		md.PinnedDuroxideVersion == nil || md.PinnedDuroxideVersion.String() != duroxide.DuroxideVersion {
		t.Fatalf("metadata = %+v", md)
	}
	if len(a.workerItems) != 1 {
		t.Fatalf("worker items = %+v", a.workerItems)
	}
	w := a.workerItems[0].Kind.(duroxide.ActivityExecuteItem)
	if w.Instance != "i1" || w.ExecutionID != 1 || w.ID != 2 || w.Name != "Greet" || w.Input != "world" {
		t.Fatalf("activity item = %+v", w)
	}
}

func TestTurnCompletesAndCancelsInflightActivities(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.ScheduleActivity("Background", "")
			return "done", nil
		})
	})
	d := p.decide(item("i", 1, nil, startMsg("i", "O", "")))
	a := d.ack
	want := []duroxide.EventType{duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeActivityScheduled,
		duroxide.EventTypeActivityCancelRequested, duroxide.EventTypeOrchestrationCompleted}
	if !slices.Equal(types(a.historyDelta), want) {
		t.Fatalf("delta = %v", types(a.historyDelta))
	}
	if *a.metadata.Status != duroxide.StatusCompleted || *a.metadata.Output != "done" {
		t.Fatalf("metadata = %+v", a.metadata)
	}
	if len(a.workerItems) != 0 || !slices.Equal(a.cancelledActivities, []duroxide.ScheduledActivityIdentifier{{Instance: "i", ExecutionID: 1, ActivityID: 2}}) {
		t.Fatalf("worker=%v cancelled=%v", a.workerItems, a.cancelledActivities)
	}
}

func TestTurnTimerBecomesDelayedTimerFired(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleTimer(2 * time.Second).Get()
		})
	})
	before := uint64(time.Now().UnixMilli())
	a := p.decide(item("i", 1, nil, startMsg("i", "O", ""))).ack
	tf := a.orchestratorItems[0].Kind.(duroxide.TimerFiredItem)
	created := a.historyDelta[1].Kind.(duroxide.TimerCreated)
	if tf.ID != 2 || tf.FireAtMs != created.FireAtMs || tf.FireAtMs < before+2000 {
		t.Fatalf("timer item %+v, created %+v", tf, created)
	}
}

func TestTurnSubOrchestrationStartAndCompletionToParent(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("Parent", func(ctx *OrchestrationContext, in string) (string, error) {
			a := ctx.ScheduleSubOrchestration("Child", in)
			b := ctx.ScheduleSubOrchestrationWithID("Child", "explicit-id", in)
			rs := ctx.Join(a, b)
			return rs[0].Value + rs[1].Value, nil
		})
		_ = r.RegisterOrchestration("Child", func(ctx *OrchestrationContext, in string) (string, error) { return "c:" + in, nil })
	})
	a := p.decide(item("P", 1, nil, startMsg("P", "Parent", "x"))).ack
	sched := a.historyDelta[1].Kind.(duroxide.SubOrchestrationScheduled)
	if sched.Instance != "sub::2" {
		t.Fatalf("generated child id = %q", sched.Instance)
	}
	var children []duroxide.StartOrchestrationItem
	for _, w := range a.orchestratorItems {
		children = append(children, w.Kind.(duroxide.StartOrchestrationItem))
	}
	if len(children) != 2 || children[0].Instance != "P::sub::2" || *children[0].ParentInstance != "P" || *children[0].ParentID != 2 ||
		children[1].Instance != "explicit-id" || *children[1].ParentID != 3 {
		t.Fatalf("child starts = %+v", children)
	}

	// The child runs and reports to its parent.
	childStart := msg(duroxide.StartOrchestrationItem{Instance: "P::sub::2", Orchestration: "Child", Input: "x",
		ParentInstance: duroxide.StringPtr("P"), ParentID: duroxide.Uint64Ptr(2), ExecutionID: 1})
	ca := p.decide(item("P::sub::2", 1, nil, childStart)).ack
	done := ca.orchestratorItems[0].Kind.(duroxide.SubOrchCompletedItem)
	if done.ParentInstance != "P" || done.ParentID != 2 || done.ParentExecutionID != 1 || done.Result != "c:x" {
		t.Fatalf("completion to parent = %+v", done)
	}
	if *ca.metadata.ParentInstanceID != "P" {
		t.Fatalf("child metadata = %+v", ca.metadata)
	}
}

func TestTurnContinueAsNewCarriesQueueAndStatus(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("Loop", func(ctx *OrchestrationContext, in string) (string, error) {
			ctx.SetCustomStatus("gen:" + in)
			return "", ctx.ContinueAsNew(in + "+")
		})
	})
	history := []duroxide.Event{
		ev(1, nil, duroxide.OrchestrationStarted{Name: "Loop", Version: "1.0.0", Input: "a"}),
	}
	a := p.decide(item("L", 1, history,
		msg(duroxide.QueueMessageItem{Instance: "L", Name: "q", Data: "pending"}))).ack
	want := []duroxide.EventType{duroxide.EventTypeQueueEventDelivered, duroxide.EventTypeCustomStatusUpdated, duroxide.EventTypeOrchestrationContinuedAsNew}
	if !slices.Equal(types(a.historyDelta), want) {
		t.Fatalf("delta = %v", types(a.historyDelta))
	}
	if *a.metadata.Status != duroxide.StatusContinuedAsNew || *a.metadata.Output != "a+" {
		t.Fatalf("metadata = %+v", a.metadata)
	}
	can := a.orchestratorItems[0].Kind.(duroxide.ContinueAsNewItem)
	if can.Input != "a+" || can.Orchestration != "Loop" || *can.InitialCustomStatus != "gen:a" ||
		!slices.Equal(can.CarryForwardEvents, []duroxide.NameData{{Name: "q", Data: "pending"}}) {
		t.Fatalf("CAN item = %+v", can)
	}

	// Processing the ContinueAsNew item opens execution 2.
	prev := append(history, a.historyDelta...)
	d := p.decide(item("L", 1, prev, msg(can)))
	if d.ack.executionID != 2 {
		t.Fatalf("next execution = %d", d.ack.executionID)
	}
	st := d.ack.historyDelta[0]
	k := st.Kind.(duroxide.OrchestrationStarted)
	if st.EventID != 1 || st.ExecutionID != 2 || k.Input != "a+" || *k.InitialCustomStatus != "gen:a" || len(k.CarryForwardEvents) != 1 {
		t.Fatalf("new start = %+v", st)
	}
	if d.ack.historyDelta[1].Type() != duroxide.EventTypeQueueEventDelivered {
		t.Fatalf("carried message must be delivered first: %v", types(d.ack.historyDelta))
	}
}

func TestTurnCancelCascadesToChildren(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("Parent", func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.ScheduleActivity("Work", "")
			return ctx.ScheduleSubOrchestration("Child", "").Get()
		})
	})
	history := []duroxide.Event{
		ev(1, nil, duroxide.OrchestrationStarted{Name: "Parent", Version: "1.0.0"}),
		actSched(2, "Work", ""),
		subSched(3, "Child", "sub::3", ""),
	}
	a := p.decide(item("P", 1, history, msg(duroxide.CancelInstanceItem{Instance: "P", Reason: "user"}))).ack
	// As in duroxide, the dispatcher records the terminal cancellation of
	// in-flight activities after the terminal event.
	want := []duroxide.EventType{duroxide.EventTypeOrchestrationCancelRequested, duroxide.EventTypeOrchestrationFailed, duroxide.EventTypeActivityCancelRequested}
	if got := types(a.historyDelta); !slices.Equal(got, want) {
		t.Fatalf("delta = %v", got)
	}
	if *a.metadata.Output != "canceled: user" || *a.metadata.Status != duroxide.StatusFailed {
		t.Fatalf("metadata = %+v", a.metadata)
	}
	cancel := a.orchestratorItems[0].Kind.(duroxide.CancelInstanceItem)
	if cancel.Instance != "P::sub::3" || cancel.Reason != "parent canceled" {
		t.Fatalf("cascade = %+v", cancel)
	}
	if len(a.cancelledActivities) != 1 || a.cancelledActivities[0].ActivityID != 2 {
		t.Fatalf("cancelled activities = %+v", a.cancelledActivities)
	}
}

func TestTurnTerminalInstanceDropsMessages(t *testing.T) {
	p := testProcessor(t, func(*Registry) {})
	history := []duroxide.Event{startedEv(1), ev(2, nil, duroxide.OrchestrationCompleted{Output: "x"})}
	d := p.decide(item("i", 1, history, msg(duroxide.ExternalRaisedItem{Instance: "i", Name: "late"})))
	if d.abandon || len(d.ack.historyDelta) != 0 || d.ack.metadata.Status != nil {
		t.Fatalf("decision = %+v", d)
	}
}

func TestTurnUnregisteredOrchestrationBacksOff(t *testing.T) {
	p := testProcessor(t, func(*Registry) {})
	it := item("i", 1, nil, startMsg("i", "Missing", ""))
	it.AttemptCount = 3
	d := p.decide(it)
	if !d.abandon || d.delay != 4*time.Second {
		t.Fatalf("decision = %+v", d)
	}
}

func TestTurnPoisonAfterMaxAttempts(t *testing.T) {
	p := testProcessor(t, func(*Registry) {})
	it := item("child", 1, nil, msg(duroxide.StartOrchestrationItem{Instance: "child", Orchestration: "Missing", Input: "in",
		ParentInstance: duroxide.StringPtr("parent"), ParentID: duroxide.Uint64Ptr(7), ExecutionID: 1}))
	it.AttemptCount = 4
	it.OrchestrationName = "Missing"
	d := p.decide(it)
	if !d.poison || d.abandon {
		t.Fatalf("decision = %+v", d)
	}
	if got := types(d.ack.historyDelta); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeOrchestrationFailed}) {
		t.Fatalf("delta = %v", got)
	}
	failed := d.ack.historyDelta[1].Kind.(duroxide.OrchestrationFailed).Details
	if failed.Poison == nil || failed.Poison.AttemptCount != 4 || failed.Poison.MaxAttempts != 3 || failed.Poison.MessageType.Orchestration == nil {
		t.Fatalf("details = %+v", failed)
	}
	notify := d.ack.orchestratorItems[0].Kind.(duroxide.SubOrchFailedItem)
	if notify.ParentInstance != "parent" || notify.ParentID != 7 || notify.Details.Poison == nil {
		t.Fatalf("parent notification = %+v", notify)
	}
}

func TestTurnPoisonWithUndecodableHistory(t *testing.T) {
	p := testProcessor(t, func(*Registry) {})
	it := item("i", 2, nil)
	it.HistoryError = duroxide.StringPtr("unknown variant `Future`")
	d := p.decide(it)
	if !d.abandon || d.delay != time.Second {
		t.Fatalf("first attempts are abandoned: %+v", d)
	}
	it.AttemptCount = 4
	d = p.decide(it)
	if !d.poison || len(d.ack.historyDelta) != 1 || d.ack.historyDelta[0].EventID != 99999 || d.ack.executionID != 2 {
		t.Fatalf("decision = %+v", d)
	}
}

func TestTurnIncompatiblePinnedVersionAbandoned(t *testing.T) {
	p := testProcessor(t, func(*Registry) {})
	newer := startedEv(1)
	newer.DuroxideVersion = "9.0.0"
	d := p.decide(item("i", 1, []duroxide.Event{newer}, timerMsg(2)))
	if !d.abandon || !strings.Contains(d.reason, "incompatible") {
		t.Fatalf("decision = %+v", d)
	}
}

func TestTurnLimitViolationFailsOrchestration(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
			ctx.SetKVValue("big", strings.Repeat("x", duroxide.MaxKVValueBytes+1))
			return ctx.ScheduleActivity("A", "").Get()
		})
	})
	a := p.decide(item("i", 1, nil, startMsg("i", "O", ""))).ack
	if *a.metadata.Status != duroxide.StatusFailed || !strings.Contains(*a.metadata.Output, "KV value for key 'big'") {
		t.Fatalf("metadata = %+v", a.metadata)
	}
	if len(a.workerItems) != 0 {
		t.Fatalf("work of a failed turn must be dropped: %+v", a.workerItems)
	}
}

func TestTurnVersionResolution(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		for _, v := range []string{"1.0.0", "2.0.0"} {
			_ = r.RegisterOrchestrationVersion("V", v, func(ctx *OrchestrationContext, _ string) (string, error) {
				return ctx.OrchestrationVersion(), nil
			})
		}
	})
	latest := p.decide(item("a", 1, nil, startMsg("a", "V", ""))).ack
	exact := p.decide(item("b", 1, nil, msg(duroxide.StartOrchestrationItem{Instance: "b", Orchestration: "V", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1}))).ack
	if *latest.metadata.Output != "2.0.0" || *exact.metadata.Output != "1.0.0" {
		t.Fatalf("latest=%s exact=%s", *latest.metadata.Output, *exact.metadata.Output)
	}
	p.registry.SetVersionPolicy("V", ExactVersion(duroxide.MustParseVersion("1.0.0")))
	pinned := p.decide(item("c", 1, nil, startMsg("c", "V", ""))).ack
	if *pinned.metadata.Output != "1.0.0" {
		t.Fatalf("policy-pinned = %s", *pinned.metadata.Output)
	}
}

func TestUnmatchedQueueMessages(t *testing.T) {
	cases := []struct {
		name    string
		history []duroxide.Event
		want    []duroxide.NameData
	}{
		{"arrivals only", []duroxide.Event{queueDelivered(1, "X", "a"), queueDelivered(2, "X", "b"), queueDelivered(3, "Y", "c")},
			[]duroxide.NameData{{Name: "X", Data: "a"}, {Name: "X", Data: "b"}, {Name: "Y", Data: "c"}}},
		{"per name", []duroxide.Event{queueSubscribed(1, "X"), queueSubscribed(2, "Y"), queueDelivered(3, "X", "x1"), queueDelivered(4, "X", "x2"), queueDelivered(5, "Y", "y1")},
			[]duroxide.NameData{{Name: "X", Data: "x2"}}},
		{"cancelled sub", []duroxide.Event{queueSubscribed(1, "X"), queueSubscribed(2, "X"), ev(3, src(2), duroxide.QueueSubscriptionCancelled{Reason: "dropped_future"}),
			queueDelivered(4, "X", "a"), queueDelivered(5, "X", "b")}, []duroxide.NameData{{Name: "X", Data: "b"}}},
		{"fifo with partial consumption", []duroxide.Event{queueSubscribed(1, "A"), queueDelivered(2, "B", "b1"), queueDelivered(3, "A", "a1"), queueDelivered(4, "A", "a2"), queueDelivered(5, "B", "b2")},
			[]duroxide.NameData{{Name: "B", Data: "b1"}, {Name: "A", Data: "a2"}, {Name: "B", Data: "b2"}}},
		{"more subs than arrivals", []duroxide.Event{queueSubscribed(1, "X"), queueSubscribed(2, "X"), queueDelivered(3, "X", "only")}, nil},
	}
	for _, c := range cases {
		if got := unmatchedQueueMessages(c.history); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v want %v", c.name, got, c.want)
		}
	}
}

func TestOutstandingSchedules(t *testing.T) {
	h := []duroxide.Event{
		actSched(1, "a", ""), actDone(2, 1, "ok"), actSched(3, "a", ""),
		extSubscribed(4, "ev"), extEvent(5, "ev", "d"), extSubscribed(6, "ev2"),
		queueSubscribed(7, "X"), queueDelivered(8, "X", "x"), queueSubscribed(9, "Y"),
		subSched(10, "c", "c1", ""), subDone(11, 10, "done"), subSched(12, "c", "c2", ""),
	}
	out := outstandingSchedules(h)
	if !slices.Equal(out.activities, []uint64{3}) || !slices.Equal(out.externalWaits, []uint64{6}) ||
		!slices.Equal(out.queueSubscriptions, []uint64{9}) || len(out.subOrchestrations) != 1 || out.subOrchestrations[0].instance != "c2" {
		t.Fatalf("outstanding = %+v", out)
	}
}

func TestTurnTerminalBreadcrumbsForOpenWaits(t *testing.T) {
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
			w := ctx.ScheduleWait("never")
			_ = w
			return "", ctx.ContinueAsNew("next")
		})
	})
	a := p.decide(item("i", 1, nil, startMsg("i", "O", ""))).ack
	want := []duroxide.EventType{duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeExternalSubscribed,
		duroxide.EventTypeExternalSubscribedCancelled, duroxide.EventTypeOrchestrationContinuedAsNew}
	if got := types(a.historyDelta); !slices.Equal(got, want) {
		t.Fatalf("delta = %v", got)
	}
	if r := a.historyDelta[2].Kind.(duroxide.ExternalSubscribedCancelled).Reason; r != "orchestration_terminal" {
		t.Fatalf("reason = %q", r)
	}
	for i, e := range a.historyDelta {
		if e.EventID != uint64(i+1) {
			t.Fatalf("event ids must be contiguous: %v", a.historyDelta)
		}
	}
}
