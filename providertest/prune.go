package providertest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// pruneCases ports duroxide's src/provider_validation/prune.rs; see README.md for
// the table from each Rust test to its Go function.
var pruneCases = []Case{
	{"test_prune_options_combinations", PruneOptionsCombinations},
	{"test_prune_safety", PruneSafety},
	{"test_prune_bulk", PruneBulk},
	{"test_prune_bulk_includes_running_instances", PruneBulkIncludesRunningInstances},
}

// PruneOptionsCombinations checks that KeepLast 2 keeps the two latest of
// four executions and that empty options keep only the current execution
// (duroxide's test_prune_options_combinations).
func PruneOptionsCombinations(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "prune-options-test"
	pruneMultiExecutionInstance(t, p, id, 4, duroxide.StatusCompleted)
	executions, err := admin.ListExecutions(ctx, id)
	require.NoError(t, err)
	require.Len(t, executions, 4)

	res, err := admin.PruneExecutions(ctx, id, duroxide.PruneOptions{KeepLast: pruneU32(2)})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.InstancesProcessed)
	executions, err = admin.ListExecutions(ctx, id)
	require.NoError(t, err)
	assert.Len(t, executions, 2, "2 executions should remain")
	assert.True(t, slices.Contains(executions, 3) || slices.Contains(executions, 4), "the latest executions should remain: %v", executions)

	const id2 = "prune-options-empty"
	pruneMultiExecutionInstance(t, p, id2, 3, duroxide.StatusCompleted)
	info, err := admin.GetInstanceInfo(ctx, id2)
	require.NoError(t, err)
	_, err = admin.PruneExecutions(ctx, id2, duroxide.PruneOptions{})
	require.NoError(t, err)
	executions, err = admin.ListExecutions(ctx, id2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{info.CurrentExecutionID}, executions, "only the current execution remains after an empty-options prune")
}

// PruneSafety checks that pruning never deletes the current execution
// (KeepLast 0 included), fails for an unknown instance, and that nil,
// KeepLast 0 and KeepLast 1 all leave only the current execution of a
// Completed instance (duroxide's test_prune_safety).
func PruneSafety(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "prune-safety-current"
	pruneMultiExecutionInstance(t, p, id, 3, duroxide.StatusCompleted)
	_, err := admin.PruneExecutions(ctx, id, duroxide.PruneOptions{KeepLast: pruneU32(0)})
	require.NoError(t, err)
	info, err := admin.GetInstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), info.CurrentExecutionID, "the current execution should remain")

	_, err = admin.PruneExecutions(ctx, "does-not-exist-prune", duroxide.PruneOptions{KeepLast: pruneU32(1)})
	require.Error(t, err, "pruning an unknown instance should fail")

	for _, tc := range []struct {
		label    string
		keepLast *uint32
	}{{"none", nil}, {"some0", pruneU32(0)}, {"some1", pruneU32(1)}} {
		id := "prune-terminal-" + tc.label
		pruneMultiExecutionInstance(t, p, id, 4, duroxide.StatusCompleted)
		info, err := admin.GetInstanceInfo(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, duroxide.StatusCompleted, info.Status, "the instance should be terminal")

		res, err := admin.PruneExecutions(ctx, id, duroxide.PruneOptions{KeepLast: tc.keepLast})
		require.NoError(t, err)
		executions, err := admin.ListExecutions(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, []uint64{info.CurrentExecutionID}, executions, "keep_last=%s: only the current execution remains", tc.label)
		assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(3), "keep_last=%s: the 3 historical executions are deleted", tc.label)
	}
}

// PruneBulk checks that PruneExecutionsBulk prunes only the instances its
// filter names (duroxide's test_prune_bulk).
func PruneBulk(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	for i := range 3 {
		pruneMultiExecutionInstance(t, p, fmt.Sprintf("prune-bulk-%d", i), 4, duroxide.StatusCompleted)
	}
	res, err := admin.PruneExecutionsBulk(ctx,
		duroxide.InstanceFilter{InstanceIDs: []string{"prune-bulk-0", "prune-bulk-1"}},
		duroxide.PruneOptions{KeepLast: pruneU32(1)})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.InstancesProcessed)
	assert.GreaterOrEqual(t, res.ExecutionsDeleted, uint64(4))

	for id, want := range map[string]int{"prune-bulk-0": 1, "prune-bulk-1": 1, "prune-bulk-2": 4} {
		executions, err := admin.ListExecutions(ctx, id)
		require.NoError(t, err)
		assert.Len(t, executions, want, "executions of %s", id)
	}
}

// PruneBulkIncludesRunningInstances checks that PruneExecutionsBulk prunes
// the historical executions of a Running instance (a continue-as-new
// chain) and keeps its current one Running (duroxide's
// test_prune_bulk_includes_running_instances).
func PruneBulkIncludesRunningInstances(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const id = "prune-running-inst"
	pruneMultiExecutionInstance(t, p, id, 3, duroxide.StatusRunning)
	executions, err := admin.ListExecutions(ctx, id)
	require.NoError(t, err)
	require.Len(t, executions, 3)
	info, err := admin.GetInstanceInfo(ctx, id)
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusRunning, info.Status)
	require.Equal(t, uint64(3), info.CurrentExecutionID)

	res, err := admin.PruneExecutionsBulk(ctx,
		duroxide.InstanceFilter{InstanceIDs: []string{id}},
		duroxide.PruneOptions{KeepLast: pruneU32(1)})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.InstancesProcessed, "the running instance should be processed")
	assert.Equal(t, uint64(2), res.ExecutionsDeleted, "its 2 historical executions should be deleted")

	executions, err = admin.ListExecutions(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3}, executions, "only the current execution remains")
	info, err = admin.GetInstanceInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusRunning, info.Status, "the instance is still Running")
}

// pruneMultiExecutionInstance creates instance with n executions the way a
// continue-as-new chain does: executions 1..n-1 end ContinuedAsNew and
// execution n gets lastStatus (duroxide's create_multi_execution_instance
// with Completed, create_running_multi_execution_instance with Running).
func pruneMultiExecutionInstance(t *testing.T, p duroxide.Provider, instance string, n uint64, lastStatus string) {
	t.Helper()
	for exec := uint64(1); exec <= n; exec++ {
		status := duroxide.StatusContinuedAsNew
		if exec == n {
			status = lastStatus
		}
		start := startItem(instance)
		if exec > 1 {
			start = duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
				Instance: instance, Orchestration: testOrch, Input: "{}", Version: duroxide.StringPtr(testOrchVersion),
			}}
		}
		delTurn(t, p, start, exec, []duroxide.Event{startedEvent(instance, duroxide.InitialEventID, exec, testOrch, testOrchVersion)}, nil, delMetadata(status, "", ""))
	}
}

// pruneU32 returns a pointer to v.
func pruneU32(v uint32) *uint32 { return &v }
