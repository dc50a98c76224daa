package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// raceReplayCases ports the provider side of duroxide's
// src/provider_validation/race_replay.rs (added after 0.1.26): what each of
// its runtime-level scenarios needs the provider to store and return. The
// scenarios themselves run the runtime and are not ported here; see
// README.md for the table.
var raceReplayCases = []Case{
	{"test_duplicate_start_preserves_pinned_handler", DuplicateStartPreservesPinnedHandler},
	{"test_continue_as_new_duplicate_start", ContinueAsNewDuplicateStart},
	{"test_queue_race_cancellation_replay", QueueRaceCancellationReplay},
	{"test_continue_as_new_queue_race_replay", ContinueAsNewQueueRaceReplay},
	{"test_queue_replay_version_stamp_roundtrip", QueueReplayVersionStampRoundtrip},
}

// stamped returns ev with its duroxide_version replaced by stamp.
func stamped(ev duroxide.Event, stamp string) duroxide.Event {
	ev.DuroxideVersion = stamp
	return ev
}

// seedTurn enqueues startItem(instance), fetches it and acks it with
// history, orchestrator items and metadata, failing t on error.
func seedTurn(t *testing.T, p duroxide.Provider, instance string, history []duroxide.Event, orchItems []duroxide.WorkItem, md duroxide.ExecutionMetadata) {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	require.NoError(t, p.AckOrchestrationItem(t.Context(), item.LockToken, 1, history, nil, orchItems, md, nil), "seed acknowledgement")
}

// messageSummary names a turn's messages, in order, for assertions.
func messageSummary(items []duroxide.WorkItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch k := it.Kind.(type) {
		case duroxide.QueueMessageItem:
			out[i] = "QueueMessage:" + k.Data
		case duroxide.TimerFiredItem:
			out[i] = fmt.Sprintf("TimerFired:%d", k.ID)
		case duroxide.StartOrchestrationItem:
			out[i] = "StartOrchestration:" + k.Orchestration
		case duroxide.ContinueAsNewItem:
			out[i] = "ContinueAsNew:" + k.Orchestration
		case duroxide.ActivityCompletedItem:
			out[i] = fmt.Sprintf("ActivityCompleted:%d", k.ID)
		default:
			out[i] = string(it.Type())
		}
	}
	return out
}

// DuplicateStartPreservesPinnedHandler is the provider side of duroxide's
// test_duplicate_start_preserves_pinned_handler: a turn that records a
// running execution of Original 1.0.0 and enqueues, in the same ack, a
// duplicate StartOrchestration naming another handler and an activity
// completion. The next fetch returns both messages in the order the ack
// enqueued them, and still names the instance Original 1.0.0: a start
// message never renames a running instance (the runtime then drops it).
func DuplicateStartPreservesPinnedHandler(t *testing.T, f Factory) {
	for _, duplicate := range []string{"Original", "WrongHandler"} {
		t.Run(duplicate, func(t *testing.T) {
			p := f.NewProvider(t)
			inst := "provider-pinned-handler-" + duplicate
			history := []duroxide.Event{
				duroxide.NewEvent(1, inst, 1, nil, duroxide.OrchestrationStarted{Name: "Original", Version: "1.0.0", Input: "original-input"}),
				duroxide.NewEvent(2, inst, 1, nil, duroxide.ActivityScheduled{Name: "tick", Input: "v1"}),
			}
			messages := []duroxide.WorkItem{
				{Kind: duroxide.StartOrchestrationItem{Instance: inst, Orchestration: duplicate, Input: "wrong-input", ExecutionID: 1}},
				{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "ok"}},
			}
			md := orchMetadata("Original", "1.0.0")
			md.Status = duroxide.StringPtr(duroxide.StatusRunning)
			seedTurn(t, p, inst, history, messages, md)

			item := fetchOrch(t, p, longLock)
			require.Equal(t, inst, item.Instance)
			require.Equal(t, "Original", item.OrchestrationName, "a duplicate start must not rename the running instance")
			require.Equal(t, "1.0.0", item.Version)
			require.Equal(t, uint64(1), item.ExecutionID)
			require.Equal(t, []string{"StartOrchestration:" + duplicate, "ActivityCompleted:2"}, messageSummary(item.Messages))
			require.Equal(t, history, item.History)
		})
	}
}

// ContinueAsNewDuplicateStart is the provider side of duroxide's
// test_continue_as_new_duplicate_start, for the stamps it uses (0.1.30 and
// 0.1.31): an ack whose metadata carries a status only (no orchestration
// name or version, as that test's seeding acks) is accepted; the history
// reads back exactly as written, stamp included; and the next fetch
// returns the duplicate start, the ContinueAsNew and the queue message the
// ack enqueued, in that order, with the execution it continued as its
// history.
func ContinueAsNewDuplicateStart(t *testing.T, f Factory) {
	for _, stamp := range []string{"0.1.30", "0.1.31"} {
		t.Run(stamp, func(t *testing.T) {
			p := f.NewProvider(t)
			inst := "provider-can-duplicate-parent::can-child-" + stamp
			history := []duroxide.Event{
				stamped(duroxide.NewEvent(1, inst, 1, nil, duroxide.OrchestrationStarted{Name: "Transition", Version: "1.0.0"}), stamp),
				duroxide.NewEvent(2, inst, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
			}
			messages := []duroxide.WorkItem{
				{Kind: duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "WrongHandler", Input: "duplicate", ExecutionID: 1}},
				{Kind: duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Transition", Input: "next", Version: duroxide.StringPtr("1.0.0"),
					CarryForwardEvents: []duroxide.NameData{{Name: "q", Data: "carried"}}}},
				{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "late"}},
			}
			seedTurn(t, p, inst, history, messages, duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})

			got, err := p.ReadWithExecution(t.Context(), inst, 1)
			require.NoError(t, err)
			require.Equal(t, history, got, "read_with_execution returns what was written")
			item := fetchOrch(t, p, longLock)
			require.Equal(t, inst, item.Instance)
			require.Equal(t, []string{"StartOrchestration:WrongHandler", "ContinueAsNew:Transition", "QueueMessage:late"}, messageSummary(item.Messages))
			require.Equal(t, uint64(1), item.ExecutionID, "the successor starts when the runtime acks it")
			require.Equal(t, history, item.History)
			require.Equal(t, stamp, item.History[0].DuroxideVersion, "a fetch never restamps history")
		})
	}
}

// QueueRaceCancellationReplay is the provider side of duroxide's
// test_queue_race_cancellation_replay: ReadWithExecution returns a
// history exactly as written, every field of every event included (event
// and source event ids, timestamps, the 0.1.31 stamp of a newer runtime),
// and the next fetch returns it the same way.
func QueueRaceCancellationReplay(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "provider-queue-race-q1"
	ev := func(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
		e := duroxide.NewEvent(id, inst, 1, source, kind)
		e.TimestampMs = 1_700_000_000_000 + id
		return e
	}
	history := []duroxide.Event{
		stamped(ev(1, nil, duroxide.OrchestrationStarted{Name: "QueueRace", Version: "1.0.0", Input: "q1"}), "0.1.31"),
		ev(2, nil, duroxide.QueueSubscribed{Name: "q"}),
		ev(3, nil, duroxide.QueueSubscribed{Name: "q"}),
		ev(4, nil, duroxide.TimerCreated{FireAtMs: 1000}),
		ev(5, duroxide.Uint64Ptr(4), duroxide.TimerFired{FireAtMs: 1000}),
		ev(6, nil, duroxide.QueueEventDelivered{Name: "q", Data: "first"}),
		ev(7, nil, duroxide.QueueEventDelivered{Name: "q", Data: "second"}),
		ev(8, duroxide.Uint64Ptr(2), duroxide.QueueSubscriptionCancelled{Reason: "dropped_future"}),
		ev(9, nil, duroxide.ActivityScheduled{Name: "checkpoint", Input: "first,second"}),
	}
	completion := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 9, Result: "ok"}}
	seedTurn(t, p, inst, history, []duroxide.WorkItem{completion}, orchMetadata("QueueRace", "1.0.0"))

	got, err := p.ReadWithExecution(t.Context(), inst, 1)
	require.NoError(t, err)
	require.Equal(t, history, got, "the provider must preserve full event metadata and the semantic version stamp")
	item := fetchOrch(t, p, longLock)
	require.Equal(t, history, item.History, "the fetch returns the history as written")
}

// ContinueAsNewQueueRaceReplay is the provider side of duroxide's
// test_continue_as_new_queue_race_replay: the messages of a fetched turn
// are listed in the order they were enqueued, whatever their visibility
// times. A TimerFired whose fire time is long past (visible at once, and
// visible "earlier" than anything else) stays where it was enqueued:
// before the queue messages an ack enqueued after it, and after the queue
// message an ack or a client enqueued before it.
func ContinueAsNewQueueRaceReplay(t *testing.T, f Factory) {
	timer := func(inst string, id uint64) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: id, FireAtMs: 1000}}
	}
	queued := func(inst, data string) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: data}}
	}
	for _, shape := range []string{"timer-first", "timer-between", "timer-last", "client-then-timer"} {
		t.Run(shape, func(t *testing.T) {
			p := f.NewProvider(t)
			inst := "provider-combined-race-" + shape
			history := []duroxide.Event{
				stamped(duroxide.NewEvent(1, inst, 1, nil, duroxide.OrchestrationStarted{Name: "CombinedRace", Version: "1.0.0", Input: shape}), "0.1.31"),
				duroxide.NewEvent(2, inst, 1, nil, duroxide.QueueSubscribed{Name: "q"}),
				duroxide.NewEvent(3, inst, 1, nil, duroxide.TimerCreated{FireAtMs: 1000}),
			}
			var acked []duroxide.WorkItem
			var want []string
			switch shape {
			case "timer-first":
				acked = []duroxide.WorkItem{timer(inst, 3), queued(inst, "m1"), queued(inst, "m2")}
				want = []string{"TimerFired:3", "QueueMessage:m1", "QueueMessage:m2"}
			case "timer-between":
				acked = []duroxide.WorkItem{queued(inst, "m1"), timer(inst, 3), queued(inst, "m2")}
				want = []string{"QueueMessage:m1", "TimerFired:3", "QueueMessage:m2"}
			case "timer-last":
				acked = []duroxide.WorkItem{queued(inst, "m1"), queued(inst, "m2"), timer(inst, 3)}
				want = []string{"QueueMessage:m1", "QueueMessage:m2", "TimerFired:3"}
			case "client-then-timer":
				want = []string{"QueueMessage:m1", "TimerFired:3"}
			}
			seedTurn(t, p, inst, history, acked, orchMetadata("CombinedRace", "1.0.0"))
			if shape == "client-then-timer" {
				enqueueOrch(t, p, queued(inst, "m1"))
				enqueueOrch(t, p, timer(inst, 3))
			}
			item := fetchOrch(t, p, longLock)
			require.Equal(t, inst, item.Instance)
			require.Equal(t, want, messageSummary(item.Messages), "messages in enqueue order")
		})
	}
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
