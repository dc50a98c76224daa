package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// cancellationCases ports duroxide's src/provider_validation/cancellation.rs; see README.md for
// the table from each Rust test to its Go function.
var cancellationCases = []Case{
	{"test_fetch_returns_running_state_for_active_orchestration", FetchReturnsRunningStateForActiveOrchestration},
	{"test_fetch_returns_terminal_state_when_orchestration_completed", FetchReturnsTerminalStateWhenOrchestrationCompleted},
	{"test_fetch_returns_terminal_state_when_orchestration_failed", FetchReturnsTerminalStateWhenOrchestrationFailed},
	{"test_fetch_returns_terminal_state_when_orchestration_continued_as_new", FetchReturnsTerminalStateWhenOrchestrationContinuedAsNew},
	{"test_fetch_returns_missing_state_when_instance_deleted", FetchReturnsMissingStateWhenInstanceDeleted},
	{"test_renew_returns_running_when_orchestration_active", RenewReturnsRunningWhenOrchestrationActive},
	{"test_renew_returns_terminal_when_orchestration_completed", RenewReturnsTerminalWhenOrchestrationCompleted},
	{"test_renew_returns_missing_when_instance_deleted", RenewReturnsMissingWhenInstanceDeleted},
	{"test_ack_work_item_none_deletes_without_enqueue", AckWorkItemNoneDeletesWithoutEnqueue},
	{"test_cancelled_activities_deleted_from_worker_queue", CancelledActivitiesDeletedFromWorkerQueue},
	{"test_ack_work_item_fails_when_entry_deleted", AckWorkItemFailsWhenEntryDeleted},
	{"test_renew_fails_when_entry_deleted", RenewFailsWhenEntryDeleted},
	{"test_cancelling_nonexistent_activities_is_idempotent", CancellingNonexistentActivitiesIsIdempotent},
	{"test_batch_cancellation_deletes_multiple_activities", BatchCancellationDeletesMultipleActivities},
	{"test_same_activity_in_worker_items_and_cancelled_is_noop", SameActivityInWorkerItemsAndCancelledIsNoop},
	{"test_orphan_activity_after_instance_force_deletion", OrphanActivityAfterInstanceForceDeletion},
}

// cancellationActivity is the activity the cancellation tests schedule:
// activity id of execution 1 of instance, named name, with input "{}".
func cancellationActivity(instance string, id uint64, name string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: 1, ID: id, Name: name, Input: "{}",
	}}
}

// cancellationMetadata is the ExecutionMetadata of a TestOrch turn that
// sets status and output (nil: unchanged).
func cancellationMetadata(status string, output *string) duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{
		OrchestrationName: duroxide.StringPtr(testOrch),
		Status:            duroxide.StringPtr(status),
		Output:            output,
	}
}

// cancellationTerminal is ExecutionState Terminal(status).
func cancellationTerminal(status string) duroxide.ExecutionState {
	return duroxide.ExecutionState{Kind: duroxide.ExecutionTerminal, Status: status}
}

// cancellationStartTurn starts instance and commits its first turn: the
// start message is enqueued and fetched, then acked with
// OrchestrationStarted followed by terminal (if any), scheduling activities
// and storing metadata.
func cancellationStartTurn(t *testing.T, p duroxide.Provider, instance string, terminal []duroxide.Event, metadata duroxide.ExecutionMetadata, activities ...duroxide.WorkItem) {
	t.Helper()
	ctx := t.Context()
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	history := append([]duroxide.Event{startedEvent(instance, 1, 1, testOrch, "1.0")}, terminal...)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, history, activities, nil, metadata, nil))
}

// cancellationTrigger enqueues an external event so that instance has a
// new turn to fetch.
func cancellationTrigger(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{
		Instance: instance, Name: "Trigger", Data: "{}",
	}}, 0))
}

// cancellationFetchWork fetches the next untagged, session-less worker
// item with f's lock timeout; it returns nil when the queue has none.
func cancellationFetchWork(t *testing.T, p duroxide.Provider) *duroxide.LockedWorkItem {
	t.Helper()
	item, err := p.FetchWorkItem(t.Context(), longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	return item
}

// cancellationRequireActivity fails t unless locked holds the
// ActivityExecute message with activity id and returns its payload.
func cancellationRequireActivity(t *testing.T, locked *duroxide.LockedWorkItem, instance string, id uint64) duroxide.ActivityExecuteItem {
	t.Helper()
	require.NotNil(t, locked, "expected to fetch work item")
	act, ok := locked.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected ActivityExecute, got %s", locked.Item.Type())
	require.Equal(t, instance, act.Instance)
	require.Equal(t, id, act.ID)
	return act
}

// cancellationRequireState renews the lock of locked and asserts the
// execution state the renewal reports (the Go port of ExecutionState, which
// fetch_work_item and renew_work_item_lock returned in earlier duroxide
// releases; see duroxide.ExecutionState).
func cancellationRequireState(t *testing.T, p duroxide.Provider, locked *duroxide.LockedWorkItem, want duroxide.ExecutionState) {
	t.Helper()
	state, err := p.RenewWorkItemLock(t.Context(), locked.LockToken, longLock)
	require.NoError(t, err, "renewing a valid work-item lock must succeed")
	assert.Equal(t, want, state, "ExecutionState reported by RenewWorkItemLock: got %s, want %s", state, want)
}

// cancellationLeftoverActivity enqueues activity 1 of instance, which was
// never created (a leftover message), fetches it and returns it locked.
func cancellationLeftoverActivity(t *testing.T, p duroxide.Provider, instance string) *duroxide.LockedWorkItem {
	t.Helper()
	require.NoError(t, p.EnqueueForWorker(t.Context(), cancellationActivity(instance, 1, "TestActivity")))
	locked := cancellationFetchWork(t, p)
	cancellationRequireActivity(t, locked, instance, 1)
	return locked
}

// cancellationRunningActivity creates instance with a first turn that
// schedules activity 1 and leaves the orchestration Running, then fetches
// the activity and returns it locked.
func cancellationRunningActivity(t *testing.T, p duroxide.Provider, instance string) *duroxide.LockedWorkItem {
	t.Helper()
	cancellationStartTurn(t, p, instance, nil, cancellationMetadata(duroxide.StatusRunning, nil),
		cancellationActivity(instance, 1, "TestActivity"))
	locked := cancellationFetchWork(t, p)
	cancellationRequireActivity(t, locked, instance, 1)
	return locked
}

// fetchReturnsStateCase runs the four "fetch returns state" tests: the
// instance's first turn schedules activity 1 and ends with terminal (none
// for a running orchestration) and metadata; the activity must be fetchable
// and, in Go, a renewal of its lock must report want.
func fetchReturnsStateCase(t *testing.T, f Factory, instance string, terminal []duroxide.Event, metadata duroxide.ExecutionMetadata, want duroxide.ExecutionState) {
	p := f.NewProvider(t)
	cancellationStartTurn(t, p, instance, terminal, metadata, cancellationActivity(instance, 1, "TestActivity"))

	locked := cancellationFetchWork(t, p)
	act := cancellationRequireActivity(t, locked, instance, 1)
	assert.Equal(t, "TestActivity", act.Name)
	cancellationRequireState(t, p, locked, want)
}

// FetchReturnsRunningStateForActiveOrchestration checks that the activity
// of a running orchestration can be fetched, and that its orchestration is
// reported Running.
func FetchReturnsRunningStateForActiveOrchestration(t *testing.T, f Factory) {
	fetchReturnsStateCase(t, f, "inst-running", nil, cancellationMetadata(duroxide.StatusRunning, nil),
		duroxide.ExecutionState{Kind: duroxide.ExecutionRunning})
}

// FetchReturnsTerminalStateWhenOrchestrationCompleted checks that an
// activity scheduled in the turn that completed its orchestration can
// still be fetched, and that its orchestration is reported
// Terminal(Completed).
func FetchReturnsTerminalStateWhenOrchestrationCompleted(t *testing.T, f Factory) {
	const instance = "inst-completed"
	fetchReturnsStateCase(t, f, instance,
		[]duroxide.Event{duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationCompleted{Output: "done"})},
		cancellationMetadata(duroxide.StatusCompleted, duroxide.StringPtr("done")),
		cancellationTerminal(duroxide.StatusCompleted))
}

// FetchReturnsTerminalStateWhenOrchestrationFailed checks that an activity
// scheduled in the turn that failed its orchestration can still be
// fetched, and that its orchestration is reported Terminal(Failed).
func FetchReturnsTerminalStateWhenOrchestrationFailed(t *testing.T, f Factory) {
	const instance = "inst-failed"
	fetchReturnsStateCase(t, f, instance,
		[]duroxide.Event{duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationFailed{
			Details: duroxide.ApplicationError(duroxide.AppErrorOrchestrationFailed, "boom"),
		})},
		cancellationMetadata(duroxide.StatusFailed, nil),
		cancellationTerminal(duroxide.StatusFailed))
}

// FetchReturnsTerminalStateWhenOrchestrationContinuedAsNew checks that an
// activity scheduled in the turn that continued its execution as new can
// still be fetched, and that its execution is reported
// Terminal(ContinuedAsNew).
func FetchReturnsTerminalStateWhenOrchestrationContinuedAsNew(t *testing.T, f Factory) {
	const instance = "inst-can"
	fetchReturnsStateCase(t, f, instance,
		[]duroxide.Event{duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "new-input"})},
		cancellationMetadata(duroxide.StatusContinuedAsNew, duroxide.StringPtr("new-input")),
		cancellationTerminal(duroxide.StatusContinuedAsNew))
}

// FetchReturnsMissingStateWhenInstanceDeleted checks that an activity whose
// instance does not exist (a leftover message) can be fetched, and that its
// orchestration is reported Missing.
func FetchReturnsMissingStateWhenInstanceDeleted(t *testing.T, f Factory) {
	const instance = "inst-missing"
	p := f.NewProvider(t)
	locked := cancellationLeftoverActivity(t, p, instance)
	cancellationRequireState(t, p, locked, duroxide.ExecutionState{Kind: duroxide.ExecutionMissing})
}

// RenewReturnsRunningWhenOrchestrationActive checks that renewing the lock
// of an activity of a running orchestration succeeds and reports Running.
func RenewReturnsRunningWhenOrchestrationActive(t *testing.T, f Factory) {
	const instance = "inst-renew-run"
	p := f.NewProvider(t)
	locked := cancellationRunningActivity(t, p, instance)
	cancellationRequireState(t, p, locked, duroxide.ExecutionState{Kind: duroxide.ExecutionRunning})
}

// RenewReturnsTerminalWhenOrchestrationCompleted checks that renewing the
// lock of an activity whose orchestration completed after the activity was
// fetched still succeeds, and reports Terminal(Completed).
func RenewReturnsTerminalWhenOrchestrationCompleted(t *testing.T, f Factory) {
	const instance = "inst-renew-term"
	p := f.NewProvider(t)
	locked := cancellationRunningActivity(t, p, instance)

	// A second turn completes the orchestration while the activity runs.
	cancellationTrigger(t, p, instance)
	turn := fetchOrch(t, p, longLock)
	completed := duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationCompleted{Output: "done"})
	ackTurn(t, p, turn.LockToken, 1, []duroxide.Event{completed}, duroxide.ExecutionMetadata{
		Status: duroxide.StringPtr(duroxide.StatusCompleted),
		Output: duroxide.StringPtr("done"),
	})

	cancellationRequireState(t, p, locked, cancellationTerminal(duroxide.StatusCompleted))
}

// RenewReturnsMissingWhenInstanceDeleted checks that renewing the lock of
// an activity whose instance does not exist succeeds and reports Missing
// (the Rust test creates no instance rather than deleting one).
func RenewReturnsMissingWhenInstanceDeleted(t *testing.T, f Factory) {
	const instance = "inst-renew-missing"
	p := f.NewProvider(t)
	locked := cancellationLeftoverActivity(t, p, instance)
	cancellationRequireState(t, p, locked, duroxide.ExecutionState{Kind: duroxide.ExecutionMissing})
}

// AckWorkItemNoneDeletesWithoutEnqueue checks that acking a work item
// without a completion removes it from the worker queue and enqueues
// nothing on the orchestrator queue.
func AckWorkItemNoneDeletesWithoutEnqueue(t *testing.T, f Factory) {
	const instance = "inst-ack-none"
	ctx := t.Context()
	p := f.NewProvider(t)
	locked := cancellationLeftoverActivity(t, p, instance)
	require.NoError(t, p.AckWorkItem(ctx, locked.LockToken, nil))

	assert.Nil(t, cancellationFetchWork(t, p), "worker queue should be empty")
	requireNoOrch(t, p, longLock, "orchestrator queue should be empty")
}

// CancelledActivitiesDeletedFromWorkerQueue checks that the
// cancelledActivities of an ack remove exactly those activities from the
// worker queue (lock-stealing cancellation).
func CancelledActivitiesDeletedFromWorkerQueue(t *testing.T, f Factory) {
	const instance = "inst-cancel-delete"
	ctx := t.Context()
	p := f.NewProvider(t)
	cancellationStartTurn(t, p, instance, nil, cancellationMetadata(duroxide.StatusRunning, nil),
		cancellationActivity(instance, 1, "Activity1"),
		cancellationActivity(instance, 2, "Activity2"),
		cancellationActivity(instance, 3, "Activity3"))

	// The activities are in the worker queue: fetch one and put it back.
	first := cancellationFetchWork(t, p)
	require.NotNil(t, first, "should have activity in queue")
	require.NoError(t, p.AbandonWorkItem(ctx, first.LockToken, 0, false))

	// Another turn cancels activities 1 and 2.
	cancellationTrigger(t, p, instance)
	turn := fetchOrch(t, p, longLock)
	require.NoError(t, p.AckOrchestrationItem(ctx, turn.LockToken, 1, nil, nil, nil, duroxide.ExecutionMetadata{},
		[]duroxide.ScheduledActivityIdentifier{
			{Instance: instance, ExecutionID: 1, ActivityID: 1},
			{Instance: instance, ExecutionID: 1, ActivityID: 2},
		}))

	remaining := cancellationFetchWork(t, p)
	require.NotNil(t, remaining, "should have activity 3 remaining")
	act, ok := remaining.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected ActivityExecute, got %s", remaining.Item.Type())
	assert.Equal(t, uint64(3), act.ID, "only activity 3 should remain; activities 1 and 2 should be cancelled")
	assert.Nil(t, cancellationFetchWork(t, p), "should have no more activities")
}

// AckWorkItemFailsWhenEntryDeleted checks that acking a work item whose
// queue entry is gone (its lock was stolen) fails with a permanent error.
func AckWorkItemFailsWhenEntryDeleted(t *testing.T, f Factory) {
	const instance = "inst-ack-stolen"
	ctx := t.Context()
	p := f.NewProvider(t)
	locked := cancellationLeftoverActivity(t, p, instance)

	// Remove the entry, as a cancelling turn would.
	require.NoError(t, p.AckWorkItem(ctx, locked.LockToken, nil))

	err := p.AckWorkItem(ctx, locked.LockToken, &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: instance, ExecutionID: 1, ID: 1, Result: "done",
	}})
	requirePermanent(t, err, "AckWorkItem should fail, permanently, when the entry was already deleted")
}

// RenewFailsWhenEntryDeleted checks that renewing the lock of a work item
// whose queue entry is gone fails: this is how a worker learns that its
// activity was cancelled.
func RenewFailsWhenEntryDeleted(t *testing.T, f Factory) {
	const instance = "inst-renew-stolen"
	ctx := t.Context()
	p := f.NewProvider(t)
	locked := cancellationLeftoverActivity(t, p, instance)

	require.NoError(t, p.AckWorkItem(ctx, locked.LockToken, nil))

	_, err := p.RenewWorkItemLock(ctx, locked.LockToken, longLock)
	assert.Error(t, err, "RenewWorkItemLock should fail when the entry was deleted")
}

// CancellingNonexistentActivitiesIsIdempotent checks that an ack naming
// activities that are not in the worker queue succeeds.
func CancellingNonexistentActivitiesIsIdempotent(t *testing.T, f Factory) {
	const instance = "inst-cancel-idempotent"
	ctx := t.Context()
	p := f.NewProvider(t)
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)

	err := p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{startedEvent(instance, 1, 1, testOrch, "1.0")}, nil, nil,
		duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr(testOrch)},
		[]duroxide.ScheduledActivityIdentifier{
			{Instance: instance, ExecutionID: 1, ActivityID: 999},
			{Instance: instance, ExecutionID: 1, ActivityID: 1},
		})
	assert.NoError(t, err, "cancelling non-existent activities should not error")
}

// BatchCancellationDeletesMultipleActivities checks that one ack can
// cancel many activities at once.
func BatchCancellationDeletesMultipleActivities(t *testing.T, f Factory) {
	const instance = "inst-batch-cancel"
	ctx := t.Context()
	p := f.NewProvider(t)
	var activities []duroxide.WorkItem
	var cancelled []duroxide.ScheduledActivityIdentifier
	for i := uint64(1); i <= 5; i++ {
		activities = append(activities, cancellationActivity(instance, i, fmt.Sprintf("Activity%d", i)))
		cancelled = append(cancelled, duroxide.ScheduledActivityIdentifier{Instance: instance, ExecutionID: 1, ActivityID: i})
	}
	cancellationStartTurn(t, p, instance, nil, cancellationMetadata(duroxide.StatusRunning, nil), activities...)

	cancellationTrigger(t, p, instance)
	turn := fetchOrch(t, p, longLock)
	require.NoError(t, p.AckOrchestrationItem(ctx, turn.LockToken, 1, nil, nil, nil, duroxide.ExecutionMetadata{}, cancelled))

	assert.Nil(t, cancellationFetchWork(t, p), "all activities should be cancelled; worker queue should be empty")
}

// SameActivityInWorkerItemsAndCancelledIsNoop checks that an activity both
// scheduled and cancelled in the same ack (a future dropped at once, such
// as a select loser) does not stay in the worker queue: providers insert
// the worker items before they delete the cancelled activities.
func SameActivityInWorkerItemsAndCancelledIsNoop(t *testing.T, f Factory) {
	const instance = "inst-schedule-then-cancel"
	ctx := t.Context()
	p := f.NewProvider(t)
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)

	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{startedEvent(instance, 1, 1, testOrch, "1.0")},
		[]duroxide.WorkItem{
			cancellationActivity(instance, 2, "DroppedActivity"),
			cancellationActivity(instance, 3, "NormalActivity"),
		}, nil,
		cancellationMetadata(duroxide.StatusRunning, nil),
		[]duroxide.ScheduledActivityIdentifier{{Instance: instance, ExecutionID: 1, ActivityID: 2}},
	), "AckOrchestrationItem should succeed")

	remaining := cancellationFetchWork(t, p)
	require.NotNil(t, remaining, "should have the normal activity in queue")
	act, ok := remaining.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected ActivityExecute, got %s", remaining.Item.Type())
	assert.Equal(t, uint64(3), act.ID,
		"only the normal activity (id=3) should remain; the scheduled-then-cancelled activity (id=2) should be gone")
	assert.Equal(t, "NormalActivity", act.Name)
	require.NoError(t, p.AckWorkItem(ctx, remaining.LockToken, nil))

	assert.Nil(t, cancellationFetchWork(t, p),
		"should have no more activities; the schedule-then-cancel activity should not be in the queue")
}

// OrphanActivityAfterInstanceForceDeletion checks that force-deleting an
// instance with an activity in the worker queue leaves the queue usable:
// the activity either went with the instance or can still be fetched and
// completed, its completion becoming a harmless orphan. It needs the
// provider's ProviderAdmin.
func OrphanActivityAfterInstanceForceDeletion(t *testing.T, f Factory) {
	const instance = "inst-orphan-activity"
	ctx := t.Context()
	p := f.NewProvider(t)
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)
	meta := orchMetadata(testOrch, testOrchVersion)
	meta.Status = duroxide.StringPtr(duroxide.StatusRunning)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{startedEvent(instance, 1, 1, testOrch, testOrchVersion)},
		[]duroxide.WorkItem{{Kind: duroxide.ActivityExecuteItem{
			Instance: instance, ExecutionID: 1, ID: 1, Name: "TestActivity", Input: "test-input",
		}}}, nil, meta, nil))

	admin, ok := duroxide.AsManagementCapability(p)
	require.True(t, ok, "provider should implement ProviderAdmin")
	res, err := admin.DeleteInstance(ctx, instance, true)
	require.NoError(t, err)
	assert.Positive(t, res.InstancesDeleted, "force delete should remove the instance")
	_, err = admin.GetInstanceInfo(ctx, instance)
	assert.Error(t, err, "instance should no longer exist")

	// The worker queue entry may or may not survive the deletion; both are
	// valid. When it survives, it can be executed and completed.
	locked := cancellationFetchWork(t, p)
	if locked == nil {
		t.Log("force delete also removed the worker-queue entry")
		return
	}
	require.NoError(t, p.AckWorkItem(ctx, locked.LockToken, &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: instance, ExecutionID: 1, ID: 1, Result: "orphan-result",
	}}), "completing an activity of a deleted instance should succeed (its completion is orphaned)")
}
