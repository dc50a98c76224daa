package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// queueSemanticsCases ports duroxide's src/provider_validation/queue_semantics.rs; see README.md for
// the table from each Rust test to its Go function.
var queueSemanticsCases = []Case{
	{"test_worker_queue_fifo_ordering", WorkerQueueFIFOOrdering},
	{"test_worker_peek_lock_semantics", WorkerPeekLockSemantics},
	{"test_worker_ack_atomicity", WorkerAckAtomicity},
	{"test_timer_delayed_visibility", TimerDelayedVisibility},
	{"test_lost_lock_token_handling", LostLockTokenHandling},
	{"test_worker_item_immediate_visibility", WorkerItemImmediateVisibility},
	{"test_worker_delayed_visibility_skips_future_items", WorkerDelayedVisibilitySkipsFutureItems},
	{"test_orphan_queue_messages_dropped", OrphanQueueMessagesDropped},
	{"test_fetch_lists_messages_in_enqueue_order", FetchListsMessagesInEnqueueOrder},
}

// WorkerQueueFIFOOrdering checks that worker items are fetched in enqueue
// order and that the queue is then empty (duroxide's
// test_worker_queue_fifo_ordering).
func WorkerQueueFIFOOrdering(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	for i := range uint64(5) {
		lockingEnqueueWorker(t, p, lockingActivityExecute("instance-A", 1, i, fmt.Sprintf("Activity%d", i), fmt.Sprintf("input%d", i)))
	}
	for i := range uint64(5) {
		item := lockingFetchWork(t, p, longLock)
		a, ok := item.Item.Kind.(duroxide.ActivityExecuteItem)
		require.True(t, ok, "expected ActivityExecute, got %s", item.Item.Type())
		require.Equal(t, i, a.ID, "fetch %d", i)
		require.Equal(t, fmt.Sprintf("Activity%d", i), a.Name, "fetch %d", i)
	}
	lockingRequireNoWork(t, p, longLock, "the queue should be empty")
}

// WorkerPeekLockSemantics checks that a fetched worker item stays queued but
// invisible until acked, and is gone after the ack (duroxide's
// test_worker_peek_lock_semantics).
func WorkerPeekLockSemantics(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockingEnqueueWorker(t, p, lockingActivityExecute("instance-A", 1, 1, "Activity1", "input1"))

	item := lockingFetchWork(t, p, longLock)
	require.Equal(t, duroxide.WorkItemActivityExecute, item.Item.Type())
	lockingRequireNoWork(t, p, longLock, "a locked item must not be fetched again")

	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("instance-A", 1, 1, "result1"))
	lockingRequireNoWork(t, p, longLock, "the queue should be empty after the ack")
}

// WorkerAckAtomicity checks that AckWorkItem removes the worker item and
// enqueues its completion on the orchestrator queue (duroxide's
// test_worker_ack_atomicity).
func WorkerAckAtomicity(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	multiExecTurn(t, p, "instance-A", 1, []duroxide.Event{startedEvent("instance-A", duroxide.InitialEventID, 1, testOrch, testOrchVersion)})
	lockingEnqueueWorker(t, p, lockingActivityExecute("instance-A", 1, 1, "Activity1", "input1"))

	item := lockingFetchWork(t, p, longLock)
	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("instance-A", 1, 1, "result1"))

	lockingRequireNoWork(t, p, longLock, "the worker queue should be empty")
	orch := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", orch.Instance)
	require.Len(t, orch.Messages, 1)
	require.Equal(t, duroxide.WorkItemActivityCompleted, orch.Messages[0].Type(),
		"the orchestrator queue should hold the completion")
}

// TimerDelayedVisibility checks that a TimerFired enqueued with a delay is
// not fetchable before the delay passed and is afterwards (duroxide's
// test_timer_delayed_visibility; the delay is the factory's lock timeout
// instead of a fixed 5 s, duroxide's default lock timeout).
func TimerDelayedVisibility(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	multiExecTurn(t, p, "instance-A", 1, []duroxide.Event{startedEvent("instance-A", duroxide.InitialEventID, 1, testOrch, testOrchVersion)})

	delay := f.LockTimeout()
	timer := duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: "instance-A", ExecutionID: 1, ID: 1}}
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), timer, delay))
	requireNoOrch(t, p, longLock, "the timer must not be visible yet")

	time.Sleep(delay + lockingExpiryMargin)

	item := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", item.Instance)
	require.Len(t, item.Messages, 1)
	require.Equal(t, duroxide.WorkItemTimerFired, item.Messages[0].Type())
}

// LostLockTokenHandling checks that a worker item whose lock token was lost
// is redelivered after the lock expired (duroxide's
// test_lost_lock_token_handling).
func LostLockTokenHandling(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("instance-A", 1, 1, "Activity1", "input1"))

	lockingFetchWork(t, p, lockTimeout) // the token is dropped: a crashed worker
	lockingRequireNoWork(t, p, lockTimeout, "the item is locked")

	sleepPastLockTimeout(f)

	item := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, duroxide.WorkItemActivityExecute, item.Item.Type(), "the item should be redelivered")
}

// WorkerItemImmediateVisibility checks that a newly enqueued worker item is
// fetchable at once (duroxide's test_worker_item_immediate_visibility).
func WorkerItemImmediateVisibility(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-immediate-vis", 1, 1, "TestActivity", "test"))

	item, err := p.FetchWorkItem(t.Context(), lockTimeout, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, item, "a newly enqueued worker item should be immediately visible")
	a, ok := item.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected ActivityExecute, got %s", item.Item.Type())
	require.Equal(t, "TestActivity", a.Name)

	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("test-immediate-vis", 1, 1, "done"))
}

// WorkerDelayedVisibilitySkipsFutureItems checks that a worker item
// abandoned with a delay is skipped, though unlocked, in favour of the next
// item until the delay passed (duroxide's
// test_worker_delayed_visibility_skips_future_items; the delay is half the
// lock timeout instead of a fixed 500 ms).
func WorkerDelayedVisibilitySkipsFutureItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-delayed-vis", 1, 1, "Activity1", "first"))
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-delayed-vis", 1, 2, "Activity2", "second"))

	item1 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint64(1), lockingExecuteID(t, item1.Item))

	delay := lockTimeout / 2
	require.NoError(t, p.AbandonWorkItem(t.Context(), item1.LockToken, delay, false))

	// The second item's lock must outlast the wait for the first's delay
	// and the fetch after it, also on a loaded machine: a long one.
	item2 := lockingFetchWork(t, p, longLock)
	require.Equal(t, uint64(2), lockingExecuteID(t, item2.Item), "should skip the delayed item and fetch the second")
	lockingRequireNoWork(t, p, lockTimeout, "no item should be available: the first is delayed, the second locked")

	time.Sleep(delay + lockingExpiryMargin)

	item3 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint64(1), lockingExecuteID(t, item3.Item), "the first item should be visible after the delay")

	lockingAckWork(t, p, item2.LockToken, lockingActivityCompleted("test-delayed-vis", 1, 2, "done"))
	lockingAckWork(t, p, item3.LockToken, lockingActivityCompleted("test-delayed-vis", 1, 1, "done"))
}

// OrphanQueueMessagesDropped checks that QueueMessage items for an instance
// that was never started are dropped by the fetch (not left to be fetched
// again), while those for an existing instance are delivered (duroxide's
// test_orphan_queue_messages_dropped).
func OrphanQueueMessagesDropped(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	queueMessage := func(instance, data string) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "ConfigUpdate", Data: data}}
	}

	// Part 1: messages for an instance that does not exist are dropped.
	enqueueOrch(t, p, queueMessage("orphan-test", "v1"))
	enqueueOrch(t, p, queueMessage("orphan-test", "v2"))
	requireNoOrch(t, p, 5*time.Second, "expected no item for orphan queue messages")
	requireNoOrch(t, p, 5*time.Second, "orphan messages should have been deleted, not left in the queue")

	// Part 2: messages for an existing instance are kept.
	createInstance(t, p, "orphan-test-existing")
	enqueueOrch(t, p, queueMessage("orphan-test-existing", "v3"))

	item := fetchOrch(t, p, 5*time.Second)
	require.Equal(t, "orphan-test-existing", item.Instance)
	require.Contains(t, item.Messages, queueMessage("orphan-test-existing", "v3"),
		"the QueueMessage for the existing instance should be delivered")

	ackTurn(t, p, item.LockToken, item.ExecutionID, nil, duroxide.ExecutionMetadata{})
}

// FetchListsMessagesInEnqueueOrder checks duroxide main's rule (no Rust
// validation test of this name; the provider side of
// test_continue_as_new_queue_race_replay): the messages of a fetched turn
// are listed in the order they were enqueued, whatever their visibility
// times. A TimerFired whose fire time is long past (visible at once, and
// visible "earlier" than anything else) stays where it was enqueued:
// before the queue messages an ack enqueued after it, and after the queue
// message an ack or a client enqueued before it.
func FetchListsMessagesInEnqueueOrder(t *testing.T, f Factory) {
	timer := func(inst string, id uint64) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: id, FireAtMs: 1000}}
	}
	queued := func(inst, data string) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: data}}
	}
	for _, shape := range []string{"timer-first", "timer-between", "timer-last", "client-then-timer"} {
		t.Run(shape, func(t *testing.T) {
			t.Parallel()
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
