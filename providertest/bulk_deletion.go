package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// bulkDeletionCases ports duroxide's src/provider_validation/bulk_deletion.rs; see README.md for
// the table from each Rust test to its Go function.
var bulkDeletionCases = []Case{
	{"test_delete_instance_bulk_filter_combinations", DeleteInstanceBulkFilterCombinations},
	{"test_delete_instance_bulk_safety_and_limits", DeleteInstanceBulkSafetyAndLimits},
	{"test_delete_instance_bulk_completed_before_filter", DeleteInstanceBulkCompletedBeforeFilter},
	{"test_delete_instance_bulk_cascades_to_children", DeleteInstanceBulkCascadesToChildren},
}

// DeleteInstanceBulkFilterCombinations checks DeleteInstanceBulk selecting
// by instance ids (only those go), with unknown ids (nothing deleted) and
// with an empty filter (every remaining terminal instance goes) (duroxide's
// test_delete_instance_bulk_filter_combinations).
func DeleteInstanceBulkFilterCombinations(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	for i := range 5 {
		delCompletedInstance(t, p, fmt.Sprintf("bulk-del-filter-%d", i), "")
	}

	res, err := admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{
		InstanceIDs: []string{"bulk-del-filter-0", "bulk-del-filter-1"},
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.InstancesDeleted, "should delete the 2 instances named")
	delRequireGone(t, admin, "bulk-del-filter-0", "bulk-del-filter-1")
	delRequireExists(t, admin, "bulk-del-filter-2")

	res, err = admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{
		InstanceIDs: []string{"does-not-exist-1", "does-not-exist-2"},
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(0), res.InstancesDeleted, "unknown ids delete nothing")

	res, err = admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.InstancesDeleted, uint64(3), "an empty filter deletes the remaining terminal instances")
	for i := 2; i < 5; i++ {
		delRequireGone(t, admin, fmt.Sprintf("bulk-del-filter-%d", i))
	}
}

// DeleteInstanceBulkSafetyAndLimits checks that DeleteInstanceBulk skips
// Running instances silently and honours Limit across repeated calls
// (duroxide's test_delete_instance_bulk_safety_and_limits).
func DeleteInstanceBulkSafetyAndLimits(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	delCompletedInstance(t, p, "bulk-del-safe-completed-1", "")
	delCompletedInstance(t, p, "bulk-del-safe-completed-2", "")
	createInstance(t, p, "bulk-del-safe-running-1")
	createInstance(t, p, "bulk-del-safe-running-2")

	res, err := admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{
		"bulk-del-safe-completed-1", "bulk-del-safe-completed-2",
		"bulk-del-safe-running-1", "bulk-del-safe-running-2",
	}})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.InstancesDeleted, "only the completed instances should be deleted")
	delRequireExists(t, admin, "bulk-del-safe-running-1", "bulk-del-safe-running-2")

	for i := range 4 {
		delCompletedInstance(t, p, fmt.Sprintf("bulk-del-batch-%d", i), "")
	}
	limit := uint32(2)
	for batch, want := range []uint64{2, 2, 0} {
		res, err := admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{Limit: &limit})
		require.NoError(t, err)
		assert.Equal(t, want, res.InstancesDeleted, "batch %d with limit 2", batch+1)
	}
}

// DeleteInstanceBulkCompletedBeforeFilter checks CompletedBefore together
// with instance ids: a cutoff before the instances completed deletes
// nothing, a cutoff after it deletes both (duroxide's
// test_delete_instance_bulk_completed_before_filter).
func DeleteInstanceBulkCompletedBeforeFilter(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()
	ids := []string{"bulk-del-time-1", "bulk-del-time-2"}

	before := uint64(time.Now().UnixMilli())
	// Step the millisecond clock so that completion times differ from the cutoffs.
	time.Sleep(10 * time.Millisecond)
	for _, id := range ids {
		delCompletedInstance(t, p, id, "")
	}
	time.Sleep(10 * time.Millisecond)
	after := uint64(time.Now().UnixMilli())

	res, err := admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: ids, CompletedBefore: &before})
	require.NoError(t, err)
	assert.Equal(t, uint64(0), res.InstancesDeleted, "the instances completed after the cutoff")
	delRequireExists(t, admin, ids...)

	res, err = admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: ids, CompletedBefore: &after})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.InstancesDeleted, "the instances completed before the cutoff")
	delRequireGone(t, admin, ids...)
}

// DeleteInstanceBulkCascadesToChildren checks that bulk-deleting roots also
// deletes their sub-orchestrations, one or several per root, and that a
// root without children goes too (duroxide's
// test_delete_instance_bulk_cascades_to_children).
func DeleteInstanceBulkCascadesToChildren(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	const parent1, child1 = "bulk-del-cascade-parent1", "bulk-del-cascade-child1"
	const parent2 = "bulk-del-cascade-parent2"
	children2 := []string{"bulk-del-cascade-child2a", "bulk-del-cascade-child2b", "bulk-del-cascade-child2c"}
	const standalone = "bulk-del-cascade-standalone"

	delCompletedInstance(t, p, parent1, "")
	delCompletedInstance(t, p, child1, parent1)
	delCompletedInstance(t, p, parent2, "")
	for _, c := range children2 {
		delCompletedInstance(t, p, c, parent2)
	}
	delCompletedInstance(t, p, standalone, "")
	all := append([]string{parent1, child1, parent2, standalone}, children2...)
	delRequireExists(t, admin, all...)

	res, err := admin.DeleteInstanceBulk(ctx, duroxide.InstanceFilter{InstanceIDs: []string{parent1, parent2, standalone}})
	require.NoError(t, err)
	assert.Equal(t, uint64(7), res.InstancesDeleted, "3 roots, 1 child of parent1 and 3 children of parent2")
	delRequireGone(t, admin, all...)
}
