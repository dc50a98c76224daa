package providertest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// tagFilteringCases ports duroxide's src/provider_validation/tag_filtering.rs; see README.md for
// the table from each Rust test to its Go function.
var tagFilteringCases = []Case{
	{"test_default_only_fetches_untagged", DefaultOnlyFetchesUntagged},
	{"test_tags_fetches_only_matching", TagsFetchesOnlyMatching},
	{"test_default_and_fetches_untagged_and_matching", DefaultAndFetchesUntaggedAndMatching},
	{"test_none_filter_returns_nothing", NoneFilterReturnsNothing},
	{"test_multi_tag_filter", MultiTagFilter},
	{"test_tag_round_trip_preservation", TagRoundTripPreservation},
	{"test_any_filter_fetches_everything", AnyFilterFetchesEverything},
	{"test_tag_survives_abandon_and_refetch", TagSurvivesAbandonAndRefetch},
	{"test_multi_runtime_tag_isolation", MultiRuntimeTagIsolation},
	{"test_tag_preserved_through_ack_orchestration_item", TagPreservedThroughAckOrchestrationItem},
}

// DefaultOnlyFetchesUntagged checks that the DefaultOnly filter returns the
// untagged items, in order, and never a tagged one (duroxide's
// test_default_only_fetches_untagged).
func DefaultOnlyFetchesUntagged(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-1", 2, "gpu")
	tagEnqueue(t, p, "inst-1", 3, "")

	only := duroxide.TagFilterDefaultOnly()
	tagRequire(t, tagFetch(t, p, only), 1, "")
	tagRequire(t, tagFetch(t, p, only), 3, "")
	assert.Nil(t, tagFetch(t, p, only), "no untagged item is left")
}

// TagsFetchesOnlyMatching checks that a Tags filter returns only the items
// with its tag, in order (duroxide's test_tags_fetches_only_matching).
func TagsFetchesOnlyMatching(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-1", 2, "gpu")
	tagEnqueue(t, p, "inst-1", 3, "cpu")
	tagEnqueue(t, p, "inst-1", 4, "gpu")

	gpu := tagTags(t, "gpu")
	tagRequire(t, tagFetch(t, p, gpu), 2, "gpu")
	tagRequire(t, tagFetch(t, p, gpu), 4, "gpu")
	assert.Nil(t, tagFetch(t, p, gpu), "no gpu item is left")
}

// DefaultAndFetchesUntaggedAndMatching checks that a DefaultAnd filter
// returns untagged items and those with its tag, but no other tag
// (duroxide's test_default_and_fetches_untagged_and_matching).
func DefaultAndFetchesUntaggedAndMatching(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-1", 2, "gpu")
	tagEnqueue(t, p, "inst-1", 3, "cpu")

	filter, err := duroxide.TagFilterDefaultAnd("gpu")
	require.NoError(t, err)
	tagRequire(t, tagFetch(t, p, filter), 1, "")
	tagRequire(t, tagFetch(t, p, filter), 2, "gpu")
	assert.Nil(t, tagFetch(t, p, filter), "the cpu item must not be fetched by DefaultAnd[gpu]")
}

// NoneFilterReturnsNothing checks that the None filter (an
// orchestrator-only runtime) returns no item (duroxide's
// test_none_filter_returns_nothing).
func NoneFilterReturnsNothing(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-1", 2, "gpu")
	assert.Nil(t, tagFetch(t, p, duroxide.TagFilterNone()), "the None filter never returns items")
}

// MultiTagFilter checks that a Tags filter of several tags returns the
// items with any of them, and neither other tags nor untagged items
// (duroxide's test_multi_tag_filter).
func MultiTagFilter(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "gpu")
	tagEnqueue(t, p, "inst-1", 2, "tpu")
	tagEnqueue(t, p, "inst-1", 3, "cpu")
	tagEnqueue(t, p, "inst-1", 4, "")

	filter := tagTags(t, "gpu", "tpu")
	tagRequire(t, tagFetch(t, p, filter), 0, "gpu")
	tagRequire(t, tagFetch(t, p, filter), 0, "tpu")
	assert.Nil(t, tagFetch(t, p, filter), "cpu and untagged items must not be fetched")
}

// TagRoundTripPreservation checks that an item's tag and name survive
// enqueue and fetch (duroxide's test_tag_round_trip_preservation).
func TagRoundTripPreservation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "gpu")
	act := tagRequire(t, tagFetch(t, p, tagTags(t, "gpu")), 0, "gpu")
	assert.Equal(t, "Activity1", act.Name)
}

// AnyFilterFetchesEverything checks that the Any filter returns every item,
// tagged or not (duroxide's test_any_filter_fetches_everything).
func AnyFilterFetchesEverything(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-2", 2, "gpu")
	tagEnqueue(t, p, "inst-3", 3, "cpu")

	anyTag := duroxide.TagFilterAny()
	for _, what := range []string{"untagged", "gpu", "cpu"} {
		assert.NotNil(t, tagFetch(t, p, anyTag), "the Any filter should fetch the %s item", what)
	}
	assert.Nil(t, tagFetch(t, p, anyTag), "the queue should be empty")
}

// TagSurvivesAbandonAndRefetch checks that an abandoned tagged item comes
// back to the same filter with its tag, a higher attempt count and a new
// lock token, and stays invisible to DefaultOnly (duroxide's
// test_tag_survives_abandon_and_refetch).
func TagSurvivesAbandonAndRefetch(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	tagEnqueue(t, p, "inst-1", 1, "gpu")
	tagEnqueue(t, p, "inst-1", 2, "")

	gpu := tagTags(t, "gpu")
	first := tagFetch(t, p, gpu)
	tagRequire(t, first, 1, "gpu")
	require.NoError(t, p.AbandonWorkItem(ctx, first.LockToken, 0, false))

	again := tagFetch(t, p, gpu)
	tagRequire(t, again, 1, "gpu")
	assert.GreaterOrEqual(t, again.AttemptCount, uint32(2), "the attempt count increases after an abandon")
	assert.NotEqual(t, first.LockToken, again.LockToken, "each fetch has its own lock token")

	tagRequire(t, tagFetch(t, p, duroxide.TagFilterDefaultOnly()), 2, "")
}

// MultiRuntimeTagIsolation checks filters of several runtimes sharing one
// queue: mutually exclusive (DefaultOnly and Tags[gpu]), partially
// overlapping (Tags[gpu cpu] and Tags[cpu fpga]) and nested (Any over
// Tags[gpu]); each gets only what it accepts and nothing locked by another
// (duroxide's test_multi_runtime_tag_isolation).
func MultiRuntimeTagIsolation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	tagEnqueue(t, p, "inst-1", 1, "")
	tagEnqueue(t, p, "inst-2", 2, "gpu")
	tagEnqueue(t, p, "inst-3", 3, "cpu")
	tagEnqueue(t, p, "inst-4", 4, "fpga")
	tagEnqueue(t, p, "inst-5", 5, "gpu")

	only := duroxide.TagFilterDefaultOnly()
	tagRequire(t, tagFetch(t, p, only), 1, "")
	assert.Nil(t, tagFetch(t, p, only), "no untagged item is left")

	gpuCPU := tagTags(t, "gpu", "cpu")
	ids := []uint64{
		sessActivity(t, tagFetch(t, p, gpuCPU)).ID,
		sessActivity(t, tagFetch(t, p, gpuCPU)).ID,
	}
	slices.Sort(ids)
	assert.Equal(t, []uint64{2, 3}, ids, "Tags[gpu cpu] gets gpu(2) and cpu(3)")

	cpuFPGA := tagTags(t, "cpu", "fpga")
	tagRequire(t, tagFetch(t, p, cpuFPGA), 4, "fpga")
	assert.Nil(t, tagFetch(t, p, cpuFPGA), "cpu is locked and fpga taken: nothing for Tags[cpu fpga]")

	anyTag := duroxide.TagFilterAny()
	tagRequire(t, tagFetch(t, p, anyTag), 5, "gpu")
	assert.Nil(t, tagFetch(t, p, anyTag), "every item is taken or locked")
}

// TagPreservedThroughAckOrchestrationItem checks that the tags of worker
// items enqueued by AckOrchestrationItem are stored, so that DefaultOnly
// gets only the untagged one and Tags[gpu] the gpu one (duroxide's
// test_tag_preserved_through_ack_orchestration_item).
func TagPreservedThroughAckOrchestrationItem(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const id = "tag-ack-inst"
	delTurn(t, p, startItem(id), 1, []duroxide.Event{startedEvent(id, duroxide.InitialEventID, 1, testOrch, testOrchVersion)},
		[]duroxide.WorkItem{
			{Kind: duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 10, Name: "GpuWork", Input: `"model-v3"`, Tag: duroxide.StringPtr("gpu")}},
			{Kind: duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 11, Name: "CpuWork", Input: `"data"`}},
		},
		duroxide.ExecutionMetadata{})

	only := duroxide.TagFilterDefaultOnly()
	w := tagFetch(t, p, only)
	assert.Equal(t, "CpuWork", tagRequire(t, w, 0, "").Name, "DefaultOnly must return the untagged item")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	assert.Nil(t, tagFetch(t, p, only), "DefaultOnly must not see the gpu item")

	assert.Equal(t, "GpuWork", tagRequire(t, tagFetch(t, p, tagTags(t, "gpu")), 0, "gpu").Name, "Tags[gpu] must return the gpu item")
}

// tagEnqueue enqueues ActivityExecute item id ("Activity<id>") of instance
// with tag (none when empty).
func tagEnqueue(t *testing.T, p duroxide.Provider, instance string, id uint64, tag string) {
	t.Helper()
	act := duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: fmt.Sprintf("Activity%d", id), Input: "{}"}
	if tag != "" {
		act.Tag = duroxide.StringPtr(tag)
	}
	require.NoError(t, p.EnqueueForWorker(t.Context(), duroxide.WorkItem{Kind: act}))
}

// tagTags builds a Tags filter, failing t on invalid tags.
func tagTags(t *testing.T, tags ...string) duroxide.TagFilter {
	t.Helper()
	filter, err := duroxide.TagFilterTags(tags...)
	require.NoError(t, err)
	return filter
}

// tagFetch fetches a worker item through filter, without session routing,
// with a lock that does not lapse during the test; nil when there is none.
func tagFetch(t *testing.T, p duroxide.Provider, filter duroxide.TagFilter) *duroxide.LockedWorkItem {
	t.Helper()
	return sessFetchWork(t, p, longLock, nil, filter)
}

// tagRequire requires w to be an ActivityExecute item with id (any id when
// 0) and tag (untagged when tag is empty) and returns it.
func tagRequire(t *testing.T, w *duroxide.LockedWorkItem, id uint64, tag string) duroxide.ActivityExecuteItem {
	t.Helper()
	act := sessActivity(t, w)
	if id != 0 {
		assert.Equal(t, id, act.ID, "activity id")
	}
	sessRequireOptional(t, act.Tag, tag, "tag")
	return act
}
