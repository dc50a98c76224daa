package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// poisonMessageCases ports duroxide's src/provider_validation/poison_message.rs; see README.md for
// the table from each Rust test to its Go function.
var poisonMessageCases = []Case{
	{"orchestration_attempt_count_starts_at_one", OrchestrationAttemptCountStartsAtOne},
	{"orchestration_attempt_count_increments_on_refetch", OrchestrationAttemptCountIncrementsOnRefetch},
	{"worker_attempt_count_starts_at_one", WorkerAttemptCountStartsAtOne},
	{"worker_attempt_count_increments_on_lock_expiry", WorkerAttemptCountIncrementsOnLockExpiry},
	{"attempt_count_is_per_message", AttemptCountIsPerMessage},
	{"abandon_work_item_ignore_attempt_decrements", AbandonWorkItemIgnoreAttemptDecrements},
	{"abandon_orchestration_item_ignore_attempt_decrements", AbandonOrchestrationItemIgnoreAttemptDecrements},
	{"ignore_attempt_never_goes_negative", IgnoreAttemptNeverGoesNegative},
	{"max_attempt_count_across_message_batch", MaxAttemptCountAcrossMessageBatch},
	{"orchestration_delayed_abandon_preserves_unlocked_rows", OrchestrationDelayedAbandonPreservesUnlockedRows},
	{"orchestration_ignore_attempt_preserves_hidden_start", OrchestrationIgnoreAttemptPreservesHiddenStart},
}

// OrchestrationAttemptCountStartsAtOne checks that the first fetch of an
// orchestration item reports attempt 1 (duroxide's
// orchestration_attempt_count_starts_at_one).
func OrchestrationAttemptCountStartsAtOne(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	enqueueOrch(t, p, startItem("poison-test-1"))

	item := fetchOrch(t, p, f.LockTimeout())
	require.Equal(t, uint32(1), item.AttemptCount, "the first fetch should have attempt count 1")

	ackTurn(t, p, item.LockToken, duroxide.InitialExecutionID, nil, duroxide.ExecutionMetadata{})
}

// OrchestrationAttemptCountIncrementsOnRefetch checks that every fetch after
// an abandon counts one more attempt (duroxide's
// orchestration_attempt_count_increments_on_refetch).
func OrchestrationAttemptCountIncrementsOnRefetch(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("poison-test-2"))

	var item *duroxide.OrchestrationItem
	for want := uint32(1); want <= 3; want++ {
		if item != nil {
			require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))
		}
		item = fetchOrch(t, p, lockTimeout)
		require.Equal(t, want, item.AttemptCount, "fetch %d should have attempt count %d", want, want)
	}

	ackTurn(t, p, item.LockToken, duroxide.InitialExecutionID, nil, duroxide.ExecutionMetadata{})
}

// WorkerAttemptCountStartsAtOne checks that the first fetch of a worker item
// reports attempt 1 (duroxide's worker_attempt_count_starts_at_one).
func WorkerAttemptCountStartsAtOne(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-3", duroxide.InitialExecutionID, 1, "TestActivity", "{}"))

	item := lockingFetchWork(t, p, f.LockTimeout())
	require.Equal(t, uint32(1), item.AttemptCount, "the first fetch should have attempt count 1")

	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("poison-test-3", duroxide.InitialExecutionID, 1, "done"))
	require.Equal(t, duroxide.WorkItemActivityExecute, item.Item.Type())
}

// WorkerAttemptCountIncrementsOnLockExpiry checks that refetching a worker
// item after its lock expired counts a second attempt (duroxide's
// worker_attempt_count_increments_on_lock_expiry; the lock is the
// factory's lock timeout instead of a fixed 1 s).
func WorkerAttemptCountIncrementsOnLockExpiry(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-4", duroxide.InitialExecutionID, 1, "TestActivity", "{}"))

	item1 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(1), item1.AttemptCount, "the first fetch should have attempt count 1")

	sleepPastLockTimeout(f)

	item2 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(2), item2.AttemptCount, "the fetch after lock expiry should have attempt count 2")

	lockingAckWork(t, p, item2.LockToken, lockingActivityCompleted("poison-test-4", duroxide.InitialExecutionID, 1, "done"))
}

// AttemptCountIsPerMessage checks that attempt counts are kept per worker
// item, not globally (duroxide's attempt_count_is_per_message).
func AttemptCountIsPerMessage(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-5a", duroxide.InitialExecutionID, 1, "Activity1", "{}"))
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-5b", duroxide.InitialExecutionID, 2, "Activity2", "{}"))

	item1 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(1), item1.AttemptCount, "the first item's first fetch should have attempt count 1")
	item2 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(1), item2.AttemptCount, "the second item's first fetch should have attempt count 1")

	id1, id2 := lockingExecuteID(t, item1.Item), lockingExecuteID(t, item2.Item)
	require.NotEqual(t, id1, id2, "should be different items")

	lockingAckWork(t, p, item1.LockToken, lockingActivityCompleted(item1.Item.Instance(), duroxide.InitialExecutionID, id1, "done"))
	lockingAckWork(t, p, item2.LockToken, lockingActivityCompleted(item2.Item.Instance(), duroxide.InitialExecutionID, id2, "done"))
}

// AbandonWorkItemIgnoreAttemptDecrements checks that abandoning a worker
// item with ignoreAttempt takes back the attempt the fetch counted
// (duroxide's abandon_work_item_ignore_attempt_decrements).
func AbandonWorkItemIgnoreAttemptDecrements(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-ignore-1", duroxide.InitialExecutionID, 1, "TestActivity", "{}"))

	item1 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(1), item1.AttemptCount, "the first fetch should have attempt count 1")
	require.NoError(t, p.AbandonWorkItem(t.Context(), item1.LockToken, 0, false))

	item2 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(2), item2.AttemptCount, "the second fetch should have attempt count 2")
	require.NoError(t, p.AbandonWorkItem(t.Context(), item2.LockToken, 0, true), "abandon with ignoreAttempt")

	item3 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, uint32(2), item3.AttemptCount,
		"the third fetch should have attempt count 2 (decremented, then incremented by the fetch)")

	lockingAckWork(t, p, item3.LockToken, lockingActivityCompleted("poison-test-ignore-1", duroxide.InitialExecutionID, 1, "done"))
}

// AbandonOrchestrationItemIgnoreAttemptDecrements checks that abandoning an
// orchestration item with ignoreAttempt takes back the attempt the fetch
// counted (duroxide's abandon_orchestration_item_ignore_attempt_decrements).
func AbandonOrchestrationItemIgnoreAttemptDecrements(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("poison-test-ignore-2"))

	item1 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(1), item1.AttemptCount, "the first fetch should have attempt count 1")
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item1.LockToken, 0, false))

	item2 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(2), item2.AttemptCount, "the second fetch should have attempt count 2")
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item2.LockToken, 0, true), "abandon with ignoreAttempt")

	item3 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(2), item3.AttemptCount,
		"the third fetch should have attempt count 2 (decremented, then incremented by the fetch)")

	ackTurn(t, p, item3.LockToken, duroxide.InitialExecutionID, nil, duroxide.ExecutionMetadata{})
}

// IgnoreAttemptNeverGoesNegative checks that repeated abandons with
// ignoreAttempt never take the attempt count below zero, so every fetch
// reports at least 1 (duroxide's ignore_attempt_never_goes_negative).
func IgnoreAttemptNeverGoesNegative(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("poison-test-never-neg", duroxide.InitialExecutionID, 1, "TestActivity", "{}"))

	var item *duroxide.LockedWorkItem
	for fetch := 1; fetch <= 3; fetch++ {
		if item != nil {
			require.NoError(t, p.AbandonWorkItem(t.Context(), item.LockToken, 0, true), "abandon with ignoreAttempt")
		}
		item = lockingFetchWork(t, p, lockTimeout)
		require.Equal(t, uint32(1), item.AttemptCount,
			"fetch %d should have attempt count 1: the count never goes below 0", fetch)
	}

	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("poison-test-never-neg", duroxide.InitialExecutionID, 1, "done"))
}

// MaxAttemptCountAcrossMessageBatch checks that a fetch reports the highest
// attempt count among the messages it locked: a start message fetched
// three times and a completion fetched once give 3 (duroxide's
// max_attempt_count_across_message_batch).
func MaxAttemptCountAcrossMessageBatch(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	const inst = "poison-batch-test"
	enqueueOrch(t, p, startItem(inst))

	item1 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(1), item1.AttemptCount, "the first fetch should have attempt count 1")
	require.Len(t, item1.Messages, 1, "should have 1 message")
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item1.LockToken, 0, false))

	item2 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(2), item2.AttemptCount, "the second fetch should have attempt count 2")

	// A completion arrives while the lock is held, then the turn fails again.
	enqueueOrch(t, p, lockingActivityCompleted(inst, duroxide.InitialExecutionID, 1, "activity result"))
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item2.LockToken, 0, false))

	item3 := fetchOrch(t, p, lockTimeout)
	require.Len(t, item3.Messages, 2, "should have 2 messages in the batch")
	require.Equal(t, uint32(3), item3.AttemptCount,
		"the attempt count should be the max across messages (3), not the newer message's (1)")

	ackTurn(t, p, item3.LockToken, duroxide.InitialExecutionID, nil, duroxide.ExecutionMetadata{})
}

// OrchestrationDelayedAbandonPreservesUnlockedRows checks that a delayed
// abandon hides only the messages its fetch locked: a message that arrived
// while the lock was held stays visible, is fetched at once on its own with
// attempt 1, and the abandoned message stays hidden for the whole delay
// (duroxide main's orchestration_delayed_abandon_preserves_unlocked_rows).
func OrchestrationDelayedAbandonPreservesUnlockedRows(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	const inst = "poison-delayed-abandon"
	createInstance(t, p, inst)
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "locked"}})

	locked := fetchOrch(t, p, lockTimeout)
	require.Equal(t, inst, locked.Instance)
	require.Equal(t, []string{"QueueMessage:locked"}, messageSummary(locked.Messages))

	// A message arrives after the fetch; then the turn is abandoned with a
	// delay far beyond the test's duration.
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "later"}})
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), locked.LockToken, time.Hour, false))

	later := fetchOrch(t, p, lockTimeout)
	require.Equal(t, inst, later.Instance)
	require.Equal(t, []string{"QueueMessage:later"}, messageSummary(later.Messages),
		"the message that arrived after the fetch must not be hidden by the abandon's delay; the locked one must be")
	require.Equal(t, uint32(1), later.AttemptCount, "the later message was never fetched before")
	ackTurn(t, p, later.LockToken, duroxide.InitialExecutionID, nil, duroxide.ExecutionMetadata{})

	requireNoOrch(t, p, lockTimeout, "the abandoned message must stay hidden for the abandon's delay")
}

// hiddenStartDelay is how long OrchestrationIgnoreAttemptPreservesHiddenStart
// hides the successor's start: long enough for one fetch and abandon of
// another message on a loaded machine, short enough for a fast suite.
const hiddenStartDelay = 2 * time.Second

// OrchestrationIgnoreAttemptPreservesHiddenStart checks that an abandon with
// ignoreAttempt takes back only the attempts its own fetch counted: the
// continue-as-new successor's start, fetched twice and then hidden by a
// delayed abandon, keeps its two attempts while an input that arrived in the
// window is fetched alone and abandoned with ignoreAttempt, so the fetch
// that finally takes both reports attempt 3 (duroxide main's
// orchestration_ignore_attempt_preserves_hidden_start).
func OrchestrationIgnoreAttemptPreservesHiddenStart(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	const inst = "poison-hidden-start"
	seedTurn(t, p, inst,
		[]duroxide.Event{started(inst, "Transition", "old"), continuedAsNew(inst, "next")},
		[]duroxide.WorkItem{successorStart(inst, "Transition")},
		duroxide.ExecutionMetadata{
			Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew), Output: duroxide.StringPtr("next"),
			OrchestrationName: duroxide.StringPtr("Transition"), OrchestrationVersion: duroxide.StringPtr("1.0.0"),
		})

	first := fetchOrch(t, p, lockTimeout)
	require.Equal(t, []string{"ContinueAsNew:Transition"}, messageSummary(first.Messages))
	require.Equal(t, uint32(1), first.AttemptCount)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), first.LockToken, 0, false))

	second := fetchOrch(t, p, lockTimeout)
	require.Equal(t, uint32(2), second.AttemptCount)
	hiddenUntil := time.Now().Add(hiddenStartDelay)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), second.LockToken, hiddenStartDelay, false))

	// An input arrives while the start is hidden: fetched on its own, then
	// abandoned with ignoreAttempt.
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "window"}})
	input := fetchOrch(t, p, lockTimeout)
	require.Equal(t, []string{"QueueMessage:window"}, messageSummary(input.Messages),
		"the start is hidden for %s, so the fetch must lock the input alone", hiddenStartDelay)
	require.Equal(t, uint32(1), input.AttemptCount)
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), input.LockToken, 0, true), "abandon with ignoreAttempt")

	time.Sleep(time.Until(hiddenUntil) + 100*time.Millisecond)
	both := fetchOrch(t, p, lockTimeout)
	require.ElementsMatch(t, []string{"ContinueAsNew:Transition", "QueueMessage:window"}, messageSummary(both.Messages))
	require.Equal(t, uint32(3), both.AttemptCount,
		"the hidden start keeps its 2 attempts (+1 for this fetch): the input's ignoreAttempt abandon must not take one back")
	ackTurn(t, p, both.LockToken, 2, nil, duroxide.ExecutionMetadata{})
}
