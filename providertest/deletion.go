package providertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// deletionCases ports duroxide's src/provider_validation/deletion.rs; see README.md for
// the table from each Rust test to its Go function.
var deletionCases = []Case{
	{"test_delete_terminal_instances", DeleteTerminalInstances},
	{"test_delete_running_rejected_force_succeeds", DeleteRunningRejectedForceSucceeds},
	{"test_delete_nonexistent_instance", DeleteNonexistentInstance},
	{"test_delete_cleans_queues_and_locks", DeleteCleansQueuesAndLocks},
	{"test_cascade_delete_hierarchy", CascadeDeleteHierarchy},
	{"test_force_delete_prevents_ack_recreation", ForceDeletePreventsAckRecreation},
	{"test_list_children", ListChildren},
	{"test_delete_get_parent_id", DeleteGetParentID},
	{"test_delete_get_instance_tree", DeleteGetInstanceTree},
	{"test_delete_instances_atomic", DeleteInstancesAtomic},
	{"test_delete_instances_atomic_force", DeleteInstancesAtomicForce},
	{"test_delete_instances_atomic_orphan_detection", DeleteInstancesAtomicOrphanDetection},
	{"test_stale_activity_after_delete_recreate", StaleActivityAfterDeleteRecreate},
}

// DeleteTerminalInstances checks that DeleteInstance removes completed,
// failed and cancelled (Failed with a cancellation output) instances and
// reports at least one instance, execution and event deleted
// (duroxide's test_delete_terminal_instances).
func DeleteTerminalInstances(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	const completed, failed, cancelled = "delete-term-completed", "delete-term-failed", "delete-term-cancelled"
	delCompletedInstance(t, p, completed, "")
	delTerminalInstance(t, p, failed, "", duroxide.StatusFailed, "error: something went wrong")
	// Cancellation surfaces as Failed with a cancellation reason.
	delTerminalInstance(t, p, cancelled, "", duroxide.StatusFailed, "cancelled: user requested cancellation")
	delRequireExists(t, admin, completed, failed, cancelled)

	res := delDelete(t, admin, completed, false)
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(1), "should delete at least 1 execution")
	assert.GreaterOrEqual(t, res.EventsDeleted, uint64(1), "should delete at least 1 event")
	delDelete(t, admin, failed, false)
	delDelete(t, admin, cancelled, false)
}

// DeleteRunningRejectedForceSucceeds checks that deleting a Running instance
// fails permanently with an error that mentions "running" and leaves it in
// place, and that force deletes it (duroxide's
// test_delete_running_rejected_force_succeeds).
func DeleteRunningRejectedForceSucceeds(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "delete-running-force"
	createInstance(t, p, id)

	_, err := admin.DeleteInstance(ctx, id, false)
	require.Error(t, err, "deleting a running instance without force must fail")
	requirePermanent(t, err)
	assert.Contains(t, strings.ToLower(err.Error()), "running", "the error should mention 'running'")
	delRequireExists(t, admin, id)

	delDelete(t, admin, id, true)
}

// DeleteNonexistentInstance checks that deleting an unknown instance fails
// permanently with an error that mentions "not found" (duroxide's
// test_delete_nonexistent_instance).
func DeleteNonexistentInstance(t *testing.T, f Factory) {
	_, admin := delProvider(t, f)

	_, err := admin.DeleteInstance(t.Context(), "does-not-exist-12345", false)
	require.Error(t, err, "deleting an unknown instance must fail")
	requirePermanent(t, err)
	assert.Contains(t, strings.ToLower(err.Error()), "not found")
}

// DeleteCleansQueuesAndLocks checks that deletion removes the instance's
// queue messages (worker queue included) and its lock, so that the id can
// be reused by a different orchestration whose data is not mixed with the
// old one (duroxide's test_delete_cleans_queues_and_locks).
func DeleteCleansQueuesAndLocks(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "delete-queues-locks"
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(id), 0))
	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
		Instance: id, ExecutionID: 1, ID: 1, Name: "TestActivity", Input: "{}",
	}}))
	item := fetchOrch(t, p, longLock)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{startedEvent(id, duroxide.InitialEventID, 1, testOrch, testOrchVersion)}, nil, nil,
		delMetadata(duroxide.StatusCompleted, "", ""), nil))

	res, err := admin.DeleteInstance(ctx, id, false)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.QueueMessagesDeleted, uint64(1), "should have deleted queue messages")

	// Reuse the id with a different orchestration name, version and input.
	const newName, newVersion, newInput = "ReusedOrch", "2.0.0", `{"reused": true}`
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: id, Orchestration: newName, Version: duroxide.StringPtr(newVersion), Input: newInput, ExecutionID: 1,
	}}, 0))
	item = fetchOrch(t, p, longLock)
	assert.Equal(t, newName, item.OrchestrationName, "the fetched item should carry the new orchestration name")
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{duroxide.NewEvent(1, id, 1, nil, duroxide.OrchestrationStarted{Name: newName, Version: newVersion, Input: newInput})},
		nil, nil,
		duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr(newName), OrchestrationVersion: duroxide.StringPtr(newVersion)},
		nil)
	require.NoError(t, err, "recreating the instance after deletion must succeed (no stale lock)")

	info, err := admin.GetInstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, newName, info.OrchestrationName, "the recreated instance must not show stale data")

	_, err = admin.DeleteInstance(ctx, id, true)
	require.NoError(t, err)
}

// CascadeDeleteHierarchy checks that sub-orchestrations cannot be deleted
// directly (even with force, at any depth) and that deleting the root
// removes the whole three-level tree, counting the executions of all four
// instances (duroxide's test_cascade_delete_hierarchy).
func CascadeDeleteHierarchy(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const root, child1, child2, grandchild = "cascade-root", "cascade-child1", "cascade-child2", "cascade-grandchild"
	delCompletedInstance(t, p, root, "")
	delCompletedInstance(t, p, child1, root)
	delCompletedInstance(t, p, child2, root)
	delCompletedInstance(t, p, grandchild, child1)
	delRequireExists(t, admin, root, child1, child2, grandchild)

	_, err := admin.DeleteInstance(ctx, child1, false)
	require.Error(t, err, "a sub-orchestration must not be deleted directly")
	msg := strings.ToLower(err.Error())
	assert.True(t, strings.Contains(msg, "sub-orchestration") || strings.Contains(msg, "root") || strings.Contains(msg, "parent"),
		"the error should mention sub-orchestration, root or parent: %v", err)
	_, err = admin.DeleteInstance(ctx, child1, true)
	require.Error(t, err, "a sub-orchestration must not be deleted directly, even with force")
	_, err = admin.DeleteInstance(ctx, grandchild, false)
	require.Error(t, err, "a nested sub-orchestration must not be deleted directly")

	res := delDelete(t, admin, root, false)
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(4), "the executions of all 4 instances should be deleted")
	delRequireGone(t, admin, root, child1, child2, grandchild)
}

// ForceDeletePreventsAckRecreation checks that an ack made with a lock
// taken before the instance was force-deleted fails and does not recreate
// the instance (zombie prevention; duroxide's
// test_force_delete_prevents_ack_recreation).
func ForceDeletePreventsAckRecreation(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "zombie-prevention"
	createInstance(t, p, id)

	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{
		Instance: id, Name: "test-event", Data: "{}",
	}}, 0))
	item := fetchOrch(t, p, longLock)

	delDelete(t, admin, id, true) // while the instance is locked

	err := p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{duroxide.NewEvent(2, id, 1, nil, duroxide.ExternalEvent{Name: "test-event", Data: "{}"})},
		nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.Error(t, err, "an ack after force delete must fail")
	delRequireGone(t, admin, id)
}

// ListChildren checks that ListChildren returns only direct children, an
// empty list for a leaf and for an unknown instance (duroxide's
// test_list_children).
func ListChildren(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const root = "list-children-root"
	child1, child2, grandchild := delHierarchy(t, p, root)

	children, err := admin.ListChildren(ctx, root)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{child1, child2}, children, "root has exactly its 2 direct children")
	assert.NotContains(t, children, grandchild)

	children, err = admin.ListChildren(ctx, child2)
	require.NoError(t, err)
	assert.Equal(t, []string{grandchild}, children)

	children, err = admin.ListChildren(ctx, grandchild)
	require.NoError(t, err)
	assert.Empty(t, children, "a leaf has no children")

	children, err = admin.ListChildren(ctx, "non-existent")
	require.NoError(t, err, "an unknown instance is not an error")
	assert.Empty(t, children)

	_, err = admin.DeleteInstance(ctx, root, true)
	require.NoError(t, err)
}

// DeleteGetParentID checks GetParentID: no parent for a root, the parent
// for a sub-orchestration, and an error for an unknown instance (duroxide's
// test_delete_get_parent_id).
func DeleteGetParentID(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const root = "parent-id-root"
	child := root + "::sub::2"
	delCompletedInstance(t, p, root, "")
	delCompletedInstance(t, p, child, root)

	_, hasParent, err := admin.GetParentID(ctx, root)
	require.NoError(t, err)
	assert.False(t, hasParent, "a root has no parent")

	parent, hasParent, err := admin.GetParentID(ctx, child)
	require.NoError(t, err)
	assert.True(t, hasParent, "a child has a parent")
	assert.Equal(t, root, parent)

	_, _, err = admin.GetParentID(ctx, "non-existent")
	require.Error(t, err, "an unknown instance is an error")

	_, err = admin.DeleteInstance(ctx, root, true)
	require.NoError(t, err)
}

// DeleteGetInstanceTree checks that GetInstanceTree returns the root and
// all its descendants, and a root-only tree for a leaf (duroxide's
// test_delete_get_instance_tree).
func DeleteGetInstanceTree(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const root = "tree-root"
	child1, child2, grandchild := delHierarchy(t, p, root)

	tree, err := admin.GetInstanceTree(ctx, root)
	require.NoError(t, err)
	assert.Equal(t, root, tree.RootID)
	assert.Equal(t, 4, tree.Size(), "the tree holds 4 instances")
	assert.False(t, tree.IsRootOnly(), "the tree has children")
	assert.ElementsMatch(t, []string{root, child1, child2, grandchild}, tree.AllIDs)

	leaf, err := admin.GetInstanceTree(ctx, grandchild)
	require.NoError(t, err)
	assert.Equal(t, 1, leaf.Size(), "a leaf's tree holds only the leaf")
	assert.True(t, leaf.IsRootOnly())

	_, err = admin.DeleteInstance(ctx, root, true)
	require.NoError(t, err)
}

// DeleteInstancesAtomic checks that DeleteInstancesAtomic removes several
// independent instances in one call and counts their executions
// (duroxide's test_delete_instances_atomic).
func DeleteInstancesAtomic(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	ids := []string{"atomic-del-1", "atomic-del-2", "atomic-del-3"}
	for _, id := range ids {
		delCompletedInstance(t, p, id, "")
		delRequireExists(t, admin, id)
	}

	res, err := admin.DeleteInstancesAtomic(ctx, ids, false)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1))
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(3), "should delete at least 3 executions")
	delRequireGone(t, admin, ids...)
}

// DeleteInstancesAtomicForce checks that DeleteInstancesAtomic without force
// fails, deleting nothing, when one of the instances is Running, and
// deletes all of them with force (duroxide's
// test_delete_instances_atomic_force).
func DeleteInstancesAtomicForce(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const completed, running = "atomic-force-completed", "atomic-force-running"
	delCompletedInstance(t, p, completed, "")
	createInstance(t, p, running)
	ids := []string{completed, running}

	_, err := admin.DeleteInstancesAtomic(ctx, ids, false)
	require.Error(t, err, "must fail without force when a running instance is present")
	delRequireExists(t, admin, completed, running)

	res, err := admin.DeleteInstancesAtomic(ctx, ids, true)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1))
	delRequireGone(t, admin, completed, running)
}

// DeleteInstancesAtomicOrphanDetection checks that DeleteInstancesAtomic
// refuses to delete a parent without its child (which would orphan the
// child), with an error naming the problem and nothing deleted, and
// succeeds with the whole tree (duroxide's
// test_delete_instances_atomic_orphan_detection).
func DeleteInstancesAtomicOrphanDetection(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const root = "orphan-detect-root"
	child := root + "::sub::2"
	delCompletedInstance(t, p, root, "")
	delCompletedInstance(t, p, child, root)
	delRequireExists(t, admin, root, child)

	_, err := admin.DeleteInstancesAtomic(ctx, []string{root}, false)
	require.Error(t, err, "deleting a parent without its child must fail")
	msg := strings.ToLower(err.Error())
	assert.True(t, strings.Contains(msg, "child") || strings.Contains(msg, "orphan") || strings.Contains(msg, "tree"),
		"the error should mention the child, orphan or tree problem: %v", err)
	delRequireExists(t, admin, root, child)

	_, err = admin.DeleteInstancesAtomic(ctx, []string{root, child}, false)
	require.NoError(t, err, "deleting the complete tree should succeed")
	delRequireGone(t, admin, root, child)
}

// StaleActivityAfterDeleteRecreate checks that the completion of an
// activity fetched before its instance was force-deleted cannot be acked
// once the instance id is reused, and never reaches the new instance
// (duroxide's test_stale_activity_after_delete_recreate).
func StaleActivityAfterDeleteRecreate(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "stale-activity-recreate"
	activity := duroxide.ActivityExecuteItem{
		Instance: id, ExecutionID: duroxide.InitialExecutionID, ID: 2, Name: "OldActivity", Input: "old-input",
	}
	delTurn(t, p, startItem(id), duroxide.InitialExecutionID,
		[]duroxide.Event{
			startedEvent(id, duroxide.InitialEventID, duroxide.InitialExecutionID, testOrch, testOrchVersion),
			duroxide.NewEvent(2, id, duroxide.InitialExecutionID, duroxide.Uint64Ptr(2),
				duroxide.ActivityScheduled{Name: "OldActivity", Input: "old-input"}),
		},
		[]duroxide.WorkItem{{Kind: activity}},
		delMetadata("", "", ""))

	old := sessFetchWork(t, p, longLock, nil, duroxide.TagFilterDefaultOnly())
	require.NotNil(t, old, "the worker should fetch the activity")

	delDelete(t, admin, id, true)

	// Recreate the instance with the same id, name, version and input.
	createInstance(t, p, id)
	info, err := admin.GetInstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, testOrch, info.OrchestrationName)

	err = p.AckWorkItem(ctx, old.LockToken, &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: id, ExecutionID: duroxide.InitialExecutionID, ID: 2, Result: "stale-result-from-old-instance",
	}})
	require.Error(t, err, "the stale activity's ack must fail")

	// Probe the new instance: no stale completion may be queued for it.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{
		Instance: id, Name: "probe-event", Data: "{}",
	}}, 0))
	item := fetchOrch(t, p, longLock)
	for _, m := range item.Messages {
		if c, ok := m.Kind.(duroxide.ActivityCompletedItem); ok {
			assert.NotContains(t, c.Result, "stale-result", "the new instance must not see the old activity's completion")
		}
	}

	// Cleanup, best effort as in duroxide.
	_ = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.InitialExecutionID, nil, nil, nil,
		delMetadata(duroxide.StatusCompleted, "", ""), nil)
	_, _ = admin.DeleteInstance(ctx, id, true)
}

// ===== helpers shared by the deletion, bulk_deletion, management, prune and tag_filtering ports =====

// delProvider returns a fresh provider from f and its ProviderAdmin,
// failing t when the provider has none.
func delProvider(t *testing.T, f Factory) (duroxide.Provider, duroxide.ProviderAdmin) {
	t.Helper()
	p := f.NewProvider(t)
	admin, ok := duroxide.AsManagementCapability(p)
	require.True(t, ok, "the provider should implement ProviderAdmin")
	require.NotNil(t, admin)
	return p, admin
}

// delMetadata is the ExecutionMetadata of a TestOrch 1.0.0 turn; an empty
// status, output or parent leaves that field nil.
func delMetadata(status, output, parent string) duroxide.ExecutionMetadata {
	md := orchMetadata(testOrch, testOrchVersion)
	if status != "" {
		md.Status = duroxide.StringPtr(status)
	}
	if output != "" {
		md.Output = duroxide.StringPtr(output)
	}
	if parent != "" {
		md.ParentInstanceID = duroxide.StringPtr(parent)
	}
	return md
}

// delTurn enqueues start, fetches its turn (requiring it to be start's
// instance) and acks it as execution executionID with events, workerItems
// and md; it returns the fetched item.
func delTurn(t *testing.T, p duroxide.Provider, start duroxide.WorkItem, executionID uint64, events []duroxide.Event, workerItems []duroxide.WorkItem, md duroxide.ExecutionMetadata) *duroxide.OrchestrationItem {
	t.Helper()
	enqueueOrch(t, p, start)
	item := fetchOrch(t, p, longLock)
	require.Equal(t, start.Instance(), item.Instance, "fetched another instance")
	require.NoError(t, p.AckOrchestrationItem(t.Context(), item.LockToken, executionID, events, workerItems, nil, md, nil),
		"ack_orchestration_item")
	return item
}

// delCompletedInstance creates a Completed TestOrch instance (output
// "done"), a sub-orchestration of parent unless parent is empty.
func delCompletedInstance(t *testing.T, p duroxide.Provider, instance, parent string) {
	t.Helper()
	delTerminalInstance(t, p, instance, parent, duroxide.StatusCompleted, "done")
}

// delTerminalInstance creates a TestOrch instance whose first turn ends it
// with status and output, a sub-orchestration of parent (with parent id 1)
// unless parent is empty.
func delTerminalInstance(t *testing.T, p duroxide.Provider, instance, parent, status, output string) {
	t.Helper()
	start := startItem(instance).Kind.(duroxide.StartOrchestrationItem)
	started := duroxide.OrchestrationStarted{Name: testOrch, Version: testOrchVersion, Input: "{}"}
	if parent != "" {
		start.ParentInstance, start.ParentID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(1)
		started.ParentInstance, started.ParentID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(1)
	}
	delTurn(t, p, duroxide.WorkItem{Kind: start}, duroxide.InitialExecutionID,
		[]duroxide.Event{duroxide.NewEvent(duroxide.InitialEventID, instance, duroxide.InitialExecutionID, nil, started)},
		nil, delMetadata(status, output, parent))
}

// delDelete deletes instance (and its descendants) with DeleteInstance,
// requiring success, at least one instance deleted and instance gone; it
// returns the counts.
func delDelete(t *testing.T, admin duroxide.ProviderAdmin, instance string, force bool) duroxide.DeleteInstanceResult {
	t.Helper()
	res, err := admin.DeleteInstance(t.Context(), instance, force)
	require.NoError(t, err, "deleting %s (force=%v)", instance, force)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(1), "%s should be deleted", instance)
	delRequireGone(t, admin, instance)
	return res
}

// delHierarchy creates the Completed tree root -> (child1, child2 ->
// grandchild) with the ids the runtime would give sub-orchestrations
// ("<parent>::sub::<event id>") and returns the three descendants.
func delHierarchy(t *testing.T, p duroxide.Provider, root string) (child1, child2, grandchild string) {
	t.Helper()
	child1, child2 = root+"::sub::2", root+"::sub::3"
	grandchild = child2 + "::sub::4"
	delCompletedInstance(t, p, root, "")
	delCompletedInstance(t, p, child1, root)
	delCompletedInstance(t, p, child2, root)
	delCompletedInstance(t, p, grandchild, child2)
	return child1, child2, grandchild
}

// delRequireExists requires GetInstanceInfo to find every instance.
func delRequireExists(t *testing.T, admin duroxide.ProviderAdmin, instances ...string) {
	t.Helper()
	for _, id := range instances {
		_, err := admin.GetInstanceInfo(t.Context(), id)
		require.NoError(t, err, "instance %s should exist", id)
	}
}

// delRequireGone requires GetInstanceInfo to fail for every instance.
func delRequireGone(t *testing.T, admin duroxide.ProviderAdmin, instances ...string) {
	t.Helper()
	for _, id := range instances {
		_, err := admin.GetInstanceInfo(t.Context(), id)
		require.Error(t, err, "instance %s should not exist", id)
	}
}
