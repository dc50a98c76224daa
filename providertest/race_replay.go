package providertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The race_replay group: duroxide main's runtime-level checks of the races
// around continue-as-new and duplicate starts (src/provider_validation/
// race_replay.rs). Each case seeds a provider with hand-written history and
// queue messages through the Provider API, runs this module's runtime over
// it, and checks what the instance ends with. They need a runtime, so they
// live here, where providertest may use duroxide/runtime; the provider must
// pass the rest of the suite first.
var raceReplayCases = []Case{
	{"test_duplicate_start_preserves_pinned_handler", DuplicateStartPreservesPinnedHandler},
	{"test_continue_as_new_unregistered_backoff", ContinueAsNewUnregisteredBackoff},
	{"test_continue_as_new_duplicate_start", ContinueAsNewDuplicateStart},
	{"test_continue_as_new_transition_delivery", ContinueAsNewTransitionDelivery},
	{"test_continue_as_new_queue_race_replay", ContinueAsNewQueueRaceReplay},
	{"test_positional_wait_race_replay", PositionalWaitRaceReplay},
	{"test_queue_race_cancellation_replay", QueueRaceCancellationReplay},
	{"test_queue_replay_version_stamp_roundtrip", QueueReplayVersionStampRoundtrip},
	{"test_legacy_queue_race_decision_preserved", LegacyQueueRaceDecisionPreserved},
}

// raceStamps are the version stamps upstream runs its continue-as-new race
// tests under (stamped on the seeded executions' OrchestrationStarted, and
// pinned): 0.1.30, whose executions keep the legacy race rules, and 0.1.31,
// the race cut-over. The successor an execution continues into is stamped
// by the runtime that starts it, whatever its predecessor's stamp.
var raceStamps = []string{"0.1.30", "0.1.31"}

// raceWait is how long a case waits for an instance to finish; the work
// takes a few seconds at most (a 2 s delayed start and the deferral
// backoff), so reaching it means the instance was left stuck.
const raceWait = 30 * time.Second

// raceOptions are the runtime options of the race cases: duroxide's
// dispatcher_min_poll_interval of 10 ms, and the unregistered-handler
// backoff (which also paces the inputs waiting in a continue-as-new
// window) between base and max.
// DUROXIDE_STICKY=off turns the runtime's sticky cache off, so that the
// suite runs both ways (README's "Sticky executions").
func raceOptions(base, max time.Duration) runtime.Options {
	o := runtime.Options{
		PollInterval:        10 * time.Millisecond,
		UnregisteredBackoff: runtime.UnregisteredBackoff{Base: base, Max: max},
	}
	if os.Getenv("DUROXIDE_STICKY") == "off" {
		o.StickyCacheSize = -1
	}
	return o
}

// startRuntime starts a runtime over p with reg and opts and shuts it down
// when the test ends (or earlier, through the returned stop).
func startRuntime(t testing.TB, p duroxide.Provider, reg *runtime.Registry, opts runtime.Options) (stop func()) {
	t.Helper()
	rt, err := runtime.Start(context.Background(), p, reg, opts)
	require.NoError(t, err, "runtime.Start")
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = rt.Shutdown(ctx)
		}
	}
	t.Cleanup(stop)
	return stop
}

// seedTurn stores one acknowledged turn of a fresh instance: it enqueues
// start_item, fetches it and acks execution 1 with history, the
// orchestrator items (enqueued atomically with it) and metadata.
func seedTurn(t testing.TB, p duroxide.Provider, instance string, history []duroxide.Event, orchItems []duroxide.WorkItem, md duroxide.ExecutionMetadata) {
	t.Helper()
	seedStartTurn(t, p, startItem(instance), 1, history, orchItems, md)
}

// started returns event 1 of execution 1: OrchestrationStarted of name
// 1.0.0 with input and no parent.
func started(instance, name, input string) duroxide.Event {
	return duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: name, Version: "1.0.0", Input: input})
}

// continuedAsNew returns event 2 of execution 1: OrchestrationContinuedAsNew
// with input.
func continuedAsNew(instance, input string) duroxide.Event {
	return duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: input})
}

// successorStart returns the ContinueAsNew message of instance's Transition
// orchestration with input "next", carrying the queue event q="carried".
func successorStart(instance, orchestration string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
		Instance: instance, Orchestration: orchestration, Input: "next", Version: duroxide.StringPtr("1.0.0"),
		CarryForwardEvents: []duroxide.NameData{{Name: "q", Data: "carried"}},
	}}
}

// waitStatus waits for instance to finish and returns its status, failing
// t when it does not within raceWait.
func waitStatus(t testing.TB, p duroxide.Provider, instance string) runtime.OrchestrationStatus {
	t.Helper()
	st, err := runtime.NewClient(p).WaitForOrchestration(t.Context(), instance, raceWait)
	require.NoError(t, err, "%s did not finish", instance)
	return st
}

// requireCompletedWith fails t unless st is Completed with output.
func requireCompletedWith(t testing.TB, st runtime.OrchestrationStatus, output string, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, runtime.StatusCompleted, st.Kind, append([]any{"status %+v (%s)"}, st, st.Err())...)
	require.Equal(t, output, st.Output, msgAndArgs...)
}

// readExecution reads one execution's history, failing t on error.
func readExecution(t testing.TB, p duroxide.Provider, instance string, executionID uint64) []duroxide.Event {
	t.Helper()
	h, err := p.ReadWithExecution(t.Context(), instance, executionID)
	require.NoError(t, err, "read_with_execution(%s, %d)", instance, executionID)
	return h
}

// dequeueTwice is an orchestration body reading two values of queue q and
// returning them joined by a comma.
func dequeueTwice(ctx *runtime.OrchestrationContext) (string, error) {
	first, err := ctx.DequeueEvent("q").Get()
	if err != nil {
		return "", err
	}
	second, err := ctx.DequeueEvent("q").Get()
	if err != nil {
		return "", err
	}
	return first + "," + second, nil
}

// DuplicateStartPreservesPinnedHandler is duroxide's test_duplicate_start_preserves_pinned_handler: a duplicate client start that
// lands in a running instance's batch, naming the same or another
// orchestration with another input, changes nothing: the instance goes on
// with the handler, version and input of its history.
func DuplicateStartPreservesPinnedHandler(t *testing.T, f Factory) {
	for _, duplicate := range []string{"Original", "WrongHandler"} {
		t.Run(duplicate, func(t *testing.T) {
			p := f.NewProvider(t)
			instance := "provider-pinned-handler-" + duplicate
			seedTurn(t, p, instance,
				[]duroxide.Event{
					duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: "Original", Version: "1.0.0", Input: "original-input"}),
					duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "tick", Input: "v1"}),
				},
				[]duroxide.WorkItem{
					{Kind: duroxide.StartOrchestrationItem{Instance: instance, Orchestration: duplicate, Input: "wrong-input", ExecutionID: 1}},
					{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: "ok"}},
				},
				duroxide.ExecutionMetadata{
					Status: duroxide.StringPtr(duroxide.StatusRunning), OrchestrationName: duroxide.StringPtr("Original"),
					OrchestrationVersion: duroxide.StringPtr("1.0.0"),
				})
			reg := runtime.NewRegistry()
			require.NoError(t, reg.RegisterOrchestrationVersion("Original", "1.0.0", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
				if _, err := ctx.ScheduleActivity("tick", "v1").Get(); err != nil {
					return "", err
				}
				return "v1:" + input, nil
			}))
			require.NoError(t, reg.RegisterOrchestrationVersion("Original", "2.0.0", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				_, err := ctx.ScheduleActivity("tick", "v2").Get()
				return "v2", err
			}))
			require.NoError(t, reg.RegisterOrchestration("WrongHandler", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				_, err := ctx.ScheduleActivity("tick", "wrong").Get()
				return "wrong", err
			}))
			startRuntime(t, p, reg, raceOptions(0, 0))
			requireCompletedWith(t, waitStatus(t, p, instance), "v1:original-input", "a duplicate client start must be inert")
		})
	}
}

// ContinueAsNewUnregisteredBackoff is duroxide's test_continue_as_new_unregistered_backoff: during a rolling upgrade a runtime
// that lacks the successor's orchestration hides the ContinueAsNew behind
// its backoff; a queue event sent meanwhile waits and reaches the
// successor, after the carried one, once a runtime that has it runs.
func ContinueAsNewUnregisteredBackoff(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const instance = "provider-can-unregistered-backoff"
	seedTurn(t, p, instance,
		[]duroxide.Event{started(instance, "RollingSuccessor", "old"), continuedAsNew(instance, "next")},
		[]duroxide.WorkItem{successorStart(instance, "RollingSuccessor")},
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})

	opts := raceOptions(2*time.Second, 2*time.Second)
	opts.OrchestrationConcurrency = 1
	stopOld := startRuntime(t, p, runtime.NewRegistry(), opts)
	// The old runtime fetches the successor's start and hides it behind its
	// backoff: until then a fetch of ours may see it (and gives it back).
	require.Eventually(t, func() bool {
		item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
		if err != nil || item == nil {
			return err == nil
		}
		_ = p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, true)
		return false
	}, 10*time.Second, 20*time.Millisecond, "the runtime without the orchestration never hid its start")
	stopOld()
	requireNoOrch(t, p, longLock, "the start must be delayed by the unregistered-handler backoff, not merely locked")
	require.Len(t, readExecution(t, p, instance, 1), 2)

	require.NoError(t, runtime.NewClient(p).EnqueueEvent(t.Context(), instance, "q", "late"), "input during the successor's backoff")
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("RollingSuccessor", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() != 2 {
			return "", fmt.Errorf("ran execution %d, want 2", ctx.ExecutionID())
		}
		return dequeueTwice(ctx)
	}))
	startRuntime(t, p, reg, raceOptions(250*time.Millisecond, time.Second))
	requireCompletedWith(t, waitStatus(t, p, instance), "carried,late", "the successor and the window's input must survive the backoff")
}

// ContinueAsNewDuplicateStart is duroxide's test_continue_as_new_duplicate_start: a start that precedes the
// ContinueAsNew in queue order (a client's duplicate, or another
// orchestration's call of the same id) never replaces the durable
// successor; a colliding parent call fails with "already exists".
func ContinueAsNewDuplicateStart(t *testing.T, f Factory) {
	for _, stamp := range raceStamps {
		for _, collision := range []bool{false, true} {
			t.Run(fmt.Sprintf("stamp=%s/collision=%v", stamp, collision), func(t *testing.T) {
				t.Parallel()
				continueAsNewDuplicateStart(t, f, stamp, collision)
			})
		}
	}
}

// continueAsNewDuplicateStart is one case of ContinueAsNewDuplicateStart:
// the seeded executions are stamped stamp; collision adds the parent whose
// call of the same id collides.
func continueAsNewDuplicateStart(t *testing.T, f Factory, stamp string, collision bool) {
	p := f.NewProvider(t)
	const parent = "provider-can-duplicate-parent"
	instance := parent + "::can-child"
	if collision {
		seedTurn(t, p, parent,
			[]duroxide.Event{
				stamped(started(parent, "CollisionParent", ""), stamp),
				duroxide.NewEvent(2, parent, 1, nil, duroxide.SubOrchestrationScheduled{Name: "Transition", Instance: instance, Input: "duplicate"}),
			}, nil, duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusRunning)})
	}
	dup := duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "WrongHandler", Input: "duplicate", ExecutionID: 1}
	if collision {
		dup.ParentInstance, dup.ParentID, dup.ParentExecutionID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(2), duroxide.Uint64Ptr(1)
	}
	seedTurn(t, p, instance,
		[]duroxide.Event{stamped(started(instance, "Transition", ""), stamp), continuedAsNew(instance, "next")},
		[]duroxide.WorkItem{
			{Kind: dup},
			successorStart(instance, "Transition"),
			{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}},
		},
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})

	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Transition", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() != 2 {
			return "", fmt.Errorf("ran execution %d, want 2", ctx.ExecutionID())
		}
		return dequeueTwice(ctx)
	}))
	require.NoError(t, reg.RegisterOrchestration("CollisionParent", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		v, err := ctx.ScheduleSubOrchestrationWithID("Transition", instance, "duplicate").Get()
		if err == nil {
			return "", fmt.Errorf("collision unexpectedly resolved: %s", v)
		}
		return err.Error(), nil
	}))
	require.NoError(t, reg.RegisterOrchestration("WrongHandler", func(*runtime.OrchestrationContext, string) (string, error) {
		return "wrong", nil
	}))
	startRuntime(t, p, reg, raceOptions(0, 0))
	requireCompletedWith(t, waitStatus(t, p, instance), "carried,late", "the successor must not be lost behind a duplicate start")
	if collision {
		st := waitStatus(t, p, parent)
		require.Equal(t, runtime.StatusCompleted, st.Kind, "the colliding parent must be told: %+v", st)
		require.Contains(t, st.Output, "already exists")
		require.NotContains(t, st.Output, "is terminal")
	}
	old := readExecution(t, p, instance, 1)
	require.Len(t, old, 2, "a duplicate start must not change execution 1")
	require.Equal(t, stamp, old[0].DuroxideVersion, "execution 1 keeps its stamp")
	next := readExecution(t, p, instance, 2)
	require.NotEmpty(t, next)
	s, ok := next[0].Kind.(duroxide.OrchestrationStarted)
	require.True(t, ok, "execution 2 starts with %T", next[0].Kind)
	require.Equal(t, "Transition", s.Name)
	require.Equal(t, "next", s.Input)
	require.Equal(t, duroxide.DuroxideVersion, next[0].DuroxideVersion, "the successor is stamped by the runtime that starts it")
}

// ContinueAsNewTransitionDelivery is duroxide's test_continue_as_new_transition_delivery: inputs that arrive after an
// execution ended with continue-as-new, while its successor's start is
// still hidden (here: enqueued with a 2 s delay), wait for it and reach
// the successor exactly once; stale completions of the old execution are
// dropped, a completion addressed to the successor that it never scheduled
// is nondeterminism, and a cancel reaches the successor.
func ContinueAsNewTransitionDelivery(t *testing.T, f Factory) {
	for _, stamp := range raceStamps {
		for _, shape := range []string{"queue", "race", "mixed-stale", "signal", "cancel", "future-completion", "stale-only"} {
			t.Run(stamp+"/"+shape, func(t *testing.T) {
				t.Parallel()
				continueAsNewTransitionDelivery(t, f, stamp, shape)
			})
		}
	}
}

// continueAsNewTransitionDelivery is one case of
// ContinueAsNewTransitionDelivery: the predecessor is stamped and pinned
// stamp.
func continueAsNewTransitionDelivery(t *testing.T, f Factory, stamp, shape string) {
	p := f.NewProvider(t)
	instance := "provider-can-window-" + stamp + "-" + shape
	late := duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}}
	inputs := []duroxide.WorkItem{late}
	switch shape {
	case "mixed-stale":
		inputs = append(inputs,
			duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 99, Result: "stale"}},
			duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: 100, FireAtMs: 1}},
			duroxide.WorkItem{Kind: duroxide.SubOrchCompletedItem{ParentInstance: instance, ParentExecutionID: 1, ParentID: 101, Result: "stale"}})
	case "future-completion":
		inputs = []duroxide.WorkItem{{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 2, ID: 99, Result: "unmatched"}}}
	case "stale-only":
		inputs = []duroxide.WorkItem{{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 99, Result: "unmatched"}}}
	case "signal":
		inputs = append(inputs, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: "signal", Data: "answer"}})
	case "cancel":
		inputs = append(inputs, duroxide.WorkItem{Kind: duroxide.CancelInstanceItem{Instance: instance, Reason: "requested-during-CAN"}})
	}
	v := duroxide.MustParseVersion(stamp)
	seedTurn(t, p, instance,
		[]duroxide.Event{stamped(started(instance, "Transition", "old"), stamp), continuedAsNew(instance, "next")},
		inputs,
		duroxide.ExecutionMetadata{
			Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew), Output: duroxide.StringPtr("next"),
			OrchestrationName: duroxide.StringPtr("Transition"), OrchestrationVersion: duroxide.StringPtr("1.0.0"),
			PinnedDuroxideVersion: &v,
		})
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), successorStart(instance, "Transition"), 2*time.Second), "the delayed successor start")

	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Transition", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() == 1 {
			return "", ctx.ContinueAsNew("next")
		}
		switch shape {
		case "stale-only":
			return ctx.DequeueEvent("q").Get()
		case "signal":
			answer, err := ctx.ScheduleWait("signal").Get()
			if err != nil {
				return "", err
			}
			values, err := dequeueTwice(ctx)
			return values + "|" + answer, err
		}
		var values []string
		for len(values) < 2 {
			if shape != "race" {
				v, err := ctx.DequeueEvent("q").Get()
				if err != nil {
					return "", err
				}
				values = append(values, v)
				continue
			}
			winner, v, err := ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(10*time.Millisecond))
			if err != nil {
				return "", err
			}
			if winner == 0 {
				values = append(values, v)
			}
		}
		return strings.Join(values, ","), nil
	}))
	// Waiting inputs back off like an unregistered handler; the 2 s
	// hidden start arrives well inside the default poison budget.
	startRuntime(t, p, reg, raceOptions(250*time.Millisecond, time.Second))
	st := waitStatus(t, p, instance)

	old := readExecution(t, p, instance, 1)
	require.Len(t, old, 2, "waiting inputs must not change execution 1")
	require.Equal(t, stamp, old[0].DuroxideVersion, "execution 1 keeps its stamp")
	successor := readExecution(t, p, instance, 2)
	require.NotEmpty(t, successor, "the successor never started")
	require.Equal(t, duroxide.DuroxideVersion, successor[0].DuroxideVersion, "the successor is stamped by the runtime that starts it")

	switch shape {
	case "future-completion":
		require.Equal(t, runtime.StatusFailed, st.Kind, "a completion the successor never scheduled must be nondeterminism, not acked away: %+v", st)
		require.NotNil(t, st.Details.Configuration, "details: %+v", st.Details)
		require.Equal(t, duroxide.ConfigErrorNondeterminism, st.Details.Configuration.Kind)
		return
	case "stale-only":
		requireCompletedWith(t, st, "carried", "a batch of stale completions must not hold the successor back")
		return
	case "cancel":
		require.Equal(t, runtime.StatusFailed, st.Kind, "a cancel of the instance must reach the successor: %+v", st)
		require.NotNil(t, st.Details.Application)
		require.Equal(t, duroxide.AppErrorCancelled, st.Details.Application.Kind.Name)
		require.Equal(t, "requested-during-CAN", st.Details.Application.Kind.Reason)
		return
	case "signal":
		requireCompletedWith(t, st, "carried,late|answer", "the window's signal must reach the successor's wait")
		n := 0
		for _, ev := range successor {
			if k, ok := ev.Kind.(duroxide.ExternalEvent); ok && k.Name == "signal" && k.Data == "answer" {
				n++
			}
		}
		require.Equal(t, 1, n, "the window's signal must reach the successor exactly once")
	default:
		requireCompletedWith(t, st, "carried,late", "the carried input must precede the window's input")
	}
	var delivered []string
	for _, ev := range successor {
		if k, ok := ev.Kind.(duroxide.QueueEventDelivered); ok && k.Name == "q" {
			delivered = append(delivered, k.Data)
		}
	}
	require.Equal(t, []string{"carried", "late"}, delivered, "no loss or duplication")
	if shape == "mixed-stale" {
		for _, ev := range successor {
			switch ev.Kind.(type) {
			case duroxide.ActivityCompleted, duroxide.TimerFired, duroxide.SubOrchestrationCompleted:
				require.False(t, ev.SourceEventID != nil && *ev.SourceEventID >= 99,
					"a stale completion of execution 1 was applied to the successor: %+v", ev)
			}
		}
	}
}

// ContinueAsNewQueueRaceReplay is duroxide's test_continue_as_new_queue_race_replay: continue-as-new carries every queue
// event no wait consumed when it arrives in the turn that continues, after
// a wait for it lost a select ("can") or after another wait took the first
// ("can-drain"). Upstream's "can-held" shapes keep a losing future alive
// across the select (Rust's select2(&mut held, ..)); Select here cancels
// its losers, so they have no Go form.
func ContinueAsNewQueueRaceReplay(t *testing.T, f Factory) {
	for _, shape := range []string{"can", "can-drain"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			p := f.NewProvider(t)
			instance := "provider-combined-race-" + shape
			incoming := []duroxide.WorkItem{
				{Kind: duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: 3, FireAtMs: 1000}},
				{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "m1"}},
			}
			if shape == "can-drain" {
				incoming = append(incoming, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "m2"}})
			}
			seedTurn(t, p, instance,
				[]duroxide.Event{
					started(instance, "CombinedRace", shape),
					duroxide.NewEvent(2, instance, 1, nil, duroxide.QueueSubscribed{Name: "q"}),
					duroxide.NewEvent(3, instance, 1, nil, duroxide.TimerCreated{FireAtMs: 1000}),
				},
				incoming, orchMetadata("CombinedRace", "1.0.0"))
			reg := runtime.NewRegistry()
			require.NoError(t, reg.RegisterOrchestration("CombinedRace", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
				if ctx.ExecutionID() > 1 {
					return ctx.DequeueEvent("q").Get()
				}
				if _, _, err := ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(10*time.Millisecond)); err != nil {
					return "", err
				}
				if input == "can-drain" {
					if _, err := ctx.DequeueEvent("q").Get(); err != nil {
						return "", err
					}
				}
				return "", ctx.ContinueAsNew(input)
			}))
			startRuntime(t, p, reg, raceOptions(0, 0))
			want := "m1"
			if shape == "can-drain" {
				want = "m2"
			}
			requireCompletedWith(t, waitStatus(t, p, instance), want, "unread arrivals must be carried across continue-as-new")
		})
	}
}

// QueueRaceCancellationReplay is duroxide's
// test_queue_race_cancellation_replay over its shapes q1, q2 and q6: a
// history of queue waits that lost a select to a timer (stamped 0.1.31,
// with the deliveries and the dropped_future cancellations that left)
// reads back, and is fetched, exactly as written, every field of every
// event included, and the runtime replays it and completes with the values the waits took in
// order. q1 and q2 race two waits and a timer (Rust's select3); q6 races a
// wait and a short timer inside a select with a long timer (Rust's nested
// select2), which Go's flat Select over the same three futures, in the same
// order, schedules and cancels the same way.
func QueueRaceCancellationReplay(t *testing.T, f Factory) {
	for _, shape := range []string{"q1", "q2", "q6"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
			queueRaceCancellationReplay(t, f, shape)
		})
	}
}

// queueRaceCancellationReplay is one shape of QueueRaceCancellationReplay.
func queueRaceCancellationReplay(t *testing.T, f Factory, shape string) {
	p := f.NewProvider(t)
	inst := "provider-queue-race-" + shape
	ev := func(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
		e := duroxide.NewEvent(id, inst, 1, source, kind)
		e.TimestampMs = 1_700_000_000_000 + id
		return e
	}
	subscribed := func(id uint64) duroxide.Event { return ev(id, nil, duroxide.QueueSubscribed{Name: "q"}) }
	delivered := func(id uint64, data string) duroxide.Event {
		return ev(id, nil, duroxide.QueueEventDelivered{Name: "q", Data: data})
	}
	cancelled := func(id, source uint64) duroxide.Event {
		return ev(id, duroxide.Uint64Ptr(source), duroxide.QueueSubscriptionCancelled{Reason: "dropped_future"})
	}
	history := []duroxide.Event{stamped(ev(1, nil, duroxide.OrchestrationStarted{Name: "QueueRace", Version: "1.0.0", Input: shape}), "0.1.31")}
	switch shape {
	case "q1":
		history = append(history, subscribed(2), subscribed(3),
			ev(4, nil, duroxide.TimerCreated{FireAtMs: 1000}), ev(5, duroxide.Uint64Ptr(4), duroxide.TimerFired{FireAtMs: 1000}),
			delivered(6, "first"), delivered(7, "second"), subscribed(8), subscribed(9), cancelled(10, 2), cancelled(11, 3))
	case "q2":
		history = append(history, subscribed(2), subscribed(3),
			ev(4, nil, duroxide.TimerCreated{FireAtMs: 1000}),
			delivered(5, "first"), delivered(6, "second"), subscribed(7), cancelled(8, 3))
	case "q6":
		history = append(history, subscribed(2),
			ev(3, nil, duroxide.TimerCreated{FireAtMs: 1000}), ev(4, nil, duroxide.TimerCreated{FireAtMs: 1100}),
			ev(5, duroxide.Uint64Ptr(4), duroxide.TimerFired{FireAtMs: 1100}),
			delivered(6, "first"), subscribed(7), cancelled(8, 2))
	}
	want := "first,second"
	if shape == "q6" {
		want = "first"
	}
	checkpoint := uint64(len(history) + 1)
	history = append(history, ev(checkpoint, nil, duroxide.ActivityScheduled{Name: "checkpoint", Input: want}))
	completion := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: checkpoint, Result: "ok"}}
	seedTurn(t, p, inst, history, []duroxide.WorkItem{completion}, orchMetadata("QueueRace", "1.0.0"))
	require.Equal(t, history, readExecution(t, p, inst, 1), "the provider must preserve full event metadata and the semantic version stamp")
	item := fetchOrch(t, p, longLock)
	require.Equal(t, history, item.History, "the fetch returns the history as written")
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, true), "release the inspection fetch")

	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("QueueRace", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		var values []string
		if input == "q6" {
			_, _, _ = ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(10*time.Millisecond), ctx.ScheduleTimer(100*time.Millisecond))
			v, err := ctx.DequeueEvent("q").Get()
			if err != nil {
				return "", err
			}
			values = append(values, v)
		} else {
			w, v, err := ctx.Select(ctx.DequeueEvent("q"), ctx.DequeueEvent("q"), ctx.ScheduleTimer(10*time.Millisecond))
			if err != nil {
				return "", err
			}
			if w < 2 {
				values = append(values, v)
			}
			for len(values) < 2 {
				v, err := ctx.DequeueEvent("q").Get()
				if err != nil {
					return "", err
				}
				values = append(values, v)
			}
		}
		out := strings.Join(values, ",")
		if _, err := ctx.ScheduleActivity("checkpoint", out).Get(); err != nil {
			return "", err
		}
		return out, nil
	}))
	startRuntime(t, p, reg, raceOptions(0, 0))
	requireCompletedWith(t, waitStatus(t, p, inst), want, "%s: the recorded race must replay to the values the waits took", shape)
	require.Equal(t, history, readExecution(t, p, inst, 1)[:len(history)], "the replay must not rewrite the recorded history")
}

// QueueReplayVersionStampRoundtrip ports duroxide's
// test_queue_replay_version_stamp_roundtrip (the whole test: it is a
// provider test): an event stamped by an older runtime (0.1.30) reads back
// with its stamp, and a fetch returns it unstamped by the provider.
func QueueReplayVersionStampRoundtrip(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "queue-version-roundtrip"
	event := stamped(startedEvent(inst, 1, 1, testOrch, testOrchVersion), "0.1.30")
	seedTurn(t, p, inst, []duroxide.Event{event}, nil, orchMetadata(testOrch, testOrchVersion))
	got, err := p.ReadWithExecution(ctx, inst, 1)
	require.NoError(t, err)
	require.Equal(t, []duroxide.Event{event}, got)

	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: inst, Name: "fetch-stamp", Data: "wake"}})
	item := fetchOrch(t, p, longLock)
	require.Equal(t, "0.1.30", item.History[0].DuroxideVersion, "the fetch path restamped history")
	require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true), "release the stamp probe's lock")
}

// PositionalWaitRaceReplay is duroxide's test_positional_wait_race_replay:
// a wait that wins a select against a long timer, then a second wait on the
// same event name, each answered once the orchestration subscribed; the
// history the provider recorded replays, twice, through the runtime's own
// replay engine (Registry.Replay) exactly as the live run went.
func PositionalWaitRaceReplay(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const instance = "provider-live-signal"
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("LiveSignalRace", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		winner, first, err := ctx.Select(ctx.ScheduleWait("s"), ctx.ScheduleTimer(30*time.Second))
		if err != nil {
			return "", err
		}
		if winner == 1 {
			first = "timeout"
		}
		second, err := ctx.ScheduleWait("s").Get()
		return first + ":" + second, err
	}))
	startRuntime(t, p, reg, raceOptions(0, 0))
	client := runtime.NewClient(p)
	require.NoError(t, client.StartOrchestration(t.Context(), instance, "LiveSignalRace", ""))
	subscribed := func(n int) func() bool {
		return func() bool {
			h, err := p.Read(t.Context(), instance)
			require.NoError(t, err)
			got := 0
			for _, ev := range h {
				if k, ok := ev.Kind.(duroxide.ExternalSubscribed); ok && k.Name == "s" {
					got++
				}
			}
			return got >= n
		}
	}
	require.Eventually(t, subscribed(1), raceWait, 20*time.Millisecond, "the first subscription never appeared")
	require.NoError(t, client.RaiseEvent(t.Context(), instance, "s", "one"))
	require.Eventually(t, subscribed(2), raceWait, 20*time.Millisecond, "the second subscription never appeared")
	require.NoError(t, client.RaiseEvent(t.Context(), instance, "s", "two"))
	requireCompletedWith(t, waitStatus(t, p, instance), "one:two")

	history := readExecution(t, p, instance, 1)
	for range 2 {
		require.NoError(t, reg.Replay(instance, history), "the recorded history must replay as it ran live")
	}
}

// LegacyQueueRaceDecisionPreserved is duroxide's
// test_legacy_queue_race_decision_preserved: an execution whose
// OrchestrationStarted the provider returns stamped 0.1.30 keeps the
// legacy race cancellation, one stamped 0.1.31 uses the immediate one, and
// the two decide the same race differently. Two queue waits each race a
// timer; the first timer fires, then a message arrives, then the second
// timer fires, all in one fetched turn. Under the legacy rules the dropped
// first wait still holds the message's position until the turn ends, so
// the second wait times out; under 0.1.31 it is cancelled when dropped and
// the second wait takes the message.
func LegacyQueueRaceDecisionPreserved(t *testing.T, f Factory) {
	for _, c := range []struct{ stamp, want string }{{"0.1.30", "second-timeout"}, {"0.1.31", "first"}} {
		t.Run(c.stamp, func(t *testing.T) {
			p := f.NewProvider(t)
			instance := "provider-legacy-decision-" + c.stamp
			ev := func(id uint64, kind duroxide.EventKind) duroxide.Event {
				return duroxide.NewEvent(id, instance, 1, nil, kind)
			}
			history := []duroxide.Event{
				stamped(ev(1, duroxide.OrchestrationStarted{Name: "LegacyCompetition", Version: "1.0.0"}), c.stamp),
				ev(2, duroxide.QueueSubscribed{Name: "q"}),
				ev(3, duroxide.QueueSubscribed{Name: "q"}),
				ev(4, duroxide.TimerCreated{FireAtMs: 1}),
				ev(5, duroxide.TimerCreated{FireAtMs: 1}),
			}
			fired := func(id uint64) duroxide.WorkItem {
				return duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: id, FireAtMs: 1}}
			}
			seedTurn(t, p, instance, history, []duroxide.WorkItem{
				fired(4), {Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "first"}}, fired(5),
			}, orchMetadata("LegacyCompetition", "1.0.0"))

			reg := runtime.NewRegistry()
			require.NoError(t, reg.RegisterOrchestration("LegacyCompetition", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				first, second := ctx.DequeueEvent("q"), ctx.DequeueEvent("q")
				t0, t1 := ctx.ScheduleTimer(30*time.Second), ctx.ScheduleTimer(60*time.Second)
				if _, _, err := ctx.Select(first, t0); err != nil {
					return "", err
				}
				winner, value, err := ctx.Select(second, t1)
				if err != nil {
					return "", err
				}
				if winner == 1 {
					value = "second-timeout"
				}
				if _, err := ctx.ScheduleActivity("checkpoint", value).Get(); err != nil {
					return "", err
				}
				return value, nil
			}))
			require.NoError(t, reg.RegisterActivity("checkpoint", func(_ *runtime.ActivityContext, input string) (string, error) {
				return input, nil
			}))
			startRuntime(t, p, reg, raceOptions(0, 0))
			requireCompletedWith(t, waitStatus(t, p, instance), c.want, "%s: the race decision of the stamp's policy", c.stamp)
			got := readExecution(t, p, instance, 1)
			require.Equal(t, c.stamp, got[0].DuroxideVersion, "the execution's stamp changed")
		})
	}
}
