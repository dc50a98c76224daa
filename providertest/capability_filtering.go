package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// capabilityFilteringCases ports duroxide's src/provider_validation/capability_filtering.rs; see README.md for
// the table from each Rust test to its Go function.
var capabilityFilteringCases = []Case{
	{"test_fetch_with_filter_none_returns_any_item", FetchWithFilterNoneReturnsAnyItem},
	{"test_fetch_with_compatible_filter_returns_item", FetchWithCompatibleFilterReturnsItem},
	{"test_fetch_with_incompatible_filter_skips_item", FetchWithIncompatibleFilterSkipsItem},
	{"test_fetch_filter_skips_incompatible_selects_compatible", FetchFilterSkipsIncompatibleSelectsCompatible},
	{"test_fetch_filter_does_not_lock_skipped_instances", FetchFilterDoesNotLockSkippedInstances},
	{"test_fetch_filter_null_pinned_version_always_compatible", FetchFilterNullPinnedVersionAlwaysCompatible},
	{"test_fetch_filter_boundary_versions", FetchFilterBoundaryVersions},
	{"test_pinned_version_stored_via_ack_metadata", PinnedVersionStoredViaAckMetadata},
	{"test_pinned_version_immutable_across_ack_cycles", PinnedVersionImmutableAcrossAckCycles},
	{"test_continue_as_new_execution_gets_own_pinned_version", ContinueAsNewExecutionGetsOwnPinnedVersion},
	{"test_filter_with_empty_supported_versions_returns_nothing", FilterWithEmptySupportedVersionsReturnsNothing},
	{"test_concurrent_filtered_fetch_no_double_lock", ConcurrentFilteredFetchNoDoubleLock},
	{"test_ack_stores_pinned_version_via_metadata_update", AckStoresPinnedVersionViaMetadataUpdate},
	{"test_provider_updates_pinned_version_when_told", ProviderUpdatesPinnedVersionWhenTold},
	{"test_fetch_corrupted_history_filtered_vs_unfiltered", FetchCorruptedHistoryFilteredVsUnfiltered},
	{"test_fetch_deserialization_error_increments_attempt_count", FetchDeserializationErrorIncrementsAttemptCount},
	{"test_fetch_deserialization_error_eventually_reaches_poison", FetchDeserializationErrorEventuallyReachesPoison},
	{"test_fetch_filter_applied_before_history_deserialization", FetchFilterAppliedBeforeHistoryDeserialization},
	{"test_fetch_single_range_only_uses_first_range", FetchSingleRangeOnlyUsesFirstRange},
	{"test_ack_appends_event_to_corrupted_history", AckAppendsEventToCorruptedHistory},
}

// capVersion returns the semantic version major.minor.patch.
func capVersion(major, minor, patch uint64) duroxide.Version {
	return duroxide.Version{Major: major, Minor: minor, Patch: patch}
}

// capFilter returns the capability filter of the single inclusive range
// [lo, hi].
func capFilter(lo, hi duroxide.Version) *duroxide.DispatcherCapabilityFilter {
	return &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{{Min: lo, Max: hi}}}
}

// capStarted is the OrchestrationStarted event (id 1, execution 1) of
// TestOrch 1.0.0 written by duroxide version duroxideVersion.
func capStarted(instance, duroxideVersion string) duroxide.Event {
	ev := startedEvent(instance, 1, 1, testOrch, testOrchVersion)
	ev.DuroxideVersion = duroxideVersion
	return ev
}

// capMetadata is the ExecutionMetadata of TestOrch 1.0.0 with the given
// pinned duroxide version (nil: leave it unset).
func capMetadata(pinned *duroxide.Version) duroxide.ExecutionMetadata {
	m := orchMetadata(testOrch, testOrchVersion)
	m.PinnedDuroxideVersion = pinned
	return m
}

// capPing is the external event name for instance, which gives it a new
// turn to fetch.
func capPing(instance, name string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: name, Data: "{}"}}
}

// capEnqueuePing enqueues capPing(instance, name) on the orchestrator queue.
func capEnqueuePing(t *testing.T, p duroxide.Provider, instance, name string) {
	t.Helper()
	enqueueOrch(t, p, capPing(instance, name))
}

// capFetch fetches the next orchestration turn with filter and f's lock
// timeout; nil means there was none.
func capFetch(t *testing.T, p duroxide.Provider, filter *duroxide.DispatcherCapabilityFilter) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, filter)
	require.NoError(t, err)
	return item
}

// capAbandon abandons a fetched turn at once, without counting the attempt.
func capAbandon(t *testing.T, p duroxide.Provider, item *duroxide.OrchestrationItem) {
	t.Helper()
	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, true))
}

// capSeed creates instance with its execution 1 pinned at pinned and
// leaves a "ping" message for it in the same ack, so that it has work to
// fetch. Turns of other instances fetched on the way are abandoned without
// counting the attempt.
func capSeed(t *testing.T, p duroxide.Provider, instance string, pinned duroxide.Version) {
	t.Helper()
	ctx := t.Context()
	enqueueOrch(t, p, startItem(instance))
	var others []*duroxide.OrchestrationItem
	var mine *duroxide.OrchestrationItem
	for mine == nil {
		item := capFetch(t, p, nil)
		require.NotNil(t, item, "should have work available")
		if item.Instance == instance {
			mine = item
		} else {
			others = append(others, item)
		}
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, mine.LockToken, 1,
		[]duroxide.Event{capStarted(instance, pinned.String())}, nil,
		[]duroxide.WorkItem{capPing(instance, "ping")},
		capMetadata(&pinned), nil))
	for _, other := range others {
		capAbandon(t, p, other)
	}
}

// capCreateUnpinned creates instance through one turn whose started event
// was written by duroxideVersion and whose metadata pins no version (data
// from before capability filtering).
func capCreateUnpinned(t *testing.T, p duroxide.Provider, instance, duroxideVersion string) {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	item := capFetch(t, p, nil)
	require.NotNil(t, item)
	ackTurn(t, p, item.LockToken, 1, []duroxide.Event{capStarted(instance, duroxideVersion)}, capMetadata(nil))
}

// FetchWithFilterNoneReturnsAnyItem checks that a fetch without a filter
// returns a pinned instance (legacy behaviour).
func FetchWithFilterNoneReturnsAnyItem(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-1", capVersion(1, 2, 3))
	assert.NotNil(t, capFetch(t, p, nil), "a nil filter should return any item")
}

// FetchWithCompatibleFilterReturnsItem checks that a filter whose range
// holds the pinned version returns the instance.
func FetchWithCompatibleFilterReturnsItem(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-2", capVersion(1, 2, 3))
	assert.NotNil(t, capFetch(t, p, capFilter(capVersion(1, 0, 0), capVersion(1, 9, 9))),
		"a compatible filter should return the item")
}

// FetchWithIncompatibleFilterSkipsItem checks that a filter whose range
// excludes the pinned version returns nothing.
func FetchWithIncompatibleFilterSkipsItem(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-3", capVersion(1, 2, 3))
	assert.Nil(t, capFetch(t, p, capFilter(capVersion(2, 0, 0), capVersion(2, 9, 9))),
		"an incompatible filter should return nothing")
}

// FetchFilterSkipsIncompatibleSelectsCompatible checks that a filtered
// fetch passes over incompatible instances to return a compatible one.
func FetchFilterSkipsIncompatibleSelectsCompatible(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-v1", capVersion(1, 0, 0))
	capSeed(t, p, "inst-v2", capVersion(2, 0, 0))

	item := capFetch(t, p, capFilter(capVersion(2, 0, 0), capVersion(2, 9, 9)))
	require.NotNil(t, item, "should return the v2 instance")
	assert.Equal(t, "inst-v2", item.Instance)
	capAbandon(t, p, item)

	item = capFetch(t, p, capFilter(capVersion(1, 0, 0), capVersion(1, 9, 9)))
	require.NotNil(t, item, "should return the v1 instance")
	assert.Equal(t, "inst-v1", item.Instance)
}

// FetchFilterDoesNotLockSkippedInstances checks that an instance skipped by
// a filter is not left locked.
func FetchFilterDoesNotLockSkippedInstances(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-5", capVersion(1, 0, 0))

	assert.Nil(t, capFetch(t, p, capFilter(capVersion(2, 0, 0), capVersion(2, 9, 9))))
	assert.NotNil(t, capFetch(t, p, capFilter(capVersion(0, 0, 0), capVersion(1, 9, 9))),
		"the instance should not have been locked by the incompatible fetch")
}

// FetchFilterNullPinnedVersionAlwaysCompatible checks that an execution
// without a pinned version matches every filter.
func FetchFilterNullPinnedVersionAlwaysCompatible(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capCreateUnpinned(t, p, "inst-null", "0.0.0")
	capEnqueuePing(t, p, "inst-null", "ping")

	assert.NotNil(t, capFetch(t, p, capFilter(capVersion(99, 0, 0), capVersion(99, 9, 9))),
		"an unpinned execution should always be compatible")
}

// FetchFilterBoundaryVersions checks that filter ranges are inclusive at
// both ends and exclude the next version.
func FetchFilterBoundaryVersions(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	filter := capFilter(capVersion(1, 0, 0), capVersion(1, 9, 99))

	capSeed(t, p, "v1-low", capVersion(1, 0, 0))
	item := capFetch(t, p, filter)
	require.NotNil(t, item, "v1.0.0 should be within [1.0.0, 1.9.99]")
	assert.Equal(t, "v1-low", item.Instance)
	capAbandon(t, p, item)

	capSeed(t, p, "v1-high", capVersion(1, 9, 99))
	item = capFetch(t, p, filter)
	require.NotNil(t, item, "v1.9.99 should be within [1.0.0, 1.9.99]")
	capAbandon(t, p, item)

	// A second provider, so that the v1 instances above do not interfere.
	p2 := f.NewProvider(t)
	capSeed(t, p2, "v2-exact", capVersion(2, 0, 0))
	assert.Nil(t, capFetch(t, p2, filter), "v2.0.0 should not be within [1.0.0, 1.9.99]")
	assert.NotNil(t, capFetch(t, p2, nil), "v2-exact should be fetchable without a filter")
}

// PinnedVersionStoredViaAckMetadata checks that the pinned version of an
// ack's metadata is what later filters match.
func PinnedVersionStoredViaAckMetadata(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-8", capVersion(3, 1, 4))
	assert.NotNil(t, capFetch(t, p, capFilter(capVersion(3, 0, 0), capVersion(3, 9, 9))),
		"the version stored via metadata should be filterable")
}

// PinnedVersionImmutableAcrossAckCycles checks that a later ack without a
// pinned version keeps the stored one.
func PinnedVersionImmutableAcrossAckCycles(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-9", capVersion(1, 0, 0))

	filter := capFilter(capVersion(0, 0, 0), capVersion(1, 9, 9))
	item := capFetch(t, p, filter)
	require.NotNil(t, item)
	assert.Equal(t, "inst-9", item.Instance)
	ackTurn(t, p, item.LockToken, 1, nil, capMetadata(nil))

	capEnqueuePing(t, p, "inst-9", "ping2")
	assert.NotNil(t, capFetch(t, p, filter), "the pinned version should persist across ack cycles")
}

// ContinueAsNewExecutionGetsOwnPinnedVersion checks that after
// continue-as-new the new execution's pinned version comes from its own
// metadata and is not inherited from the previous execution.
func ContinueAsNewExecutionGetsOwnPinnedVersion(t *testing.T, f Factory) {
	const instance = "inst-can"
	ctx := t.Context()
	p := f.NewProvider(t)
	capSeed(t, p, instance, capVersion(1, 0, 0))

	// Execution 1 continues as new.
	item := capFetch(t, p, capFilter(capVersion(0, 0, 0), capVersion(1, 9, 9)))
	require.NotNil(t, item)
	canMeta := capMetadata(nil)
	canMeta.Status = duroxide.StringPtr(duroxide.StatusContinuedAsNew)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "{}"})},
		nil,
		[]duroxide.WorkItem{{Kind: duroxide.ContinueAsNewItem{
			Instance: instance, Orchestration: testOrch, Input: "{}", Version: duroxide.StringPtr(testOrchVersion),
			CarryForwardEvents: []duroxide.NameData{},
		}}},
		canMeta, nil))

	// Execution 2 starts pinned at 2.0.0.
	item = capFetch(t, p, nil)
	require.NotNil(t, item)
	started := capStarted(instance, "2.0.0")
	started.ExecutionID = 2
	v2 := capVersion(2, 0, 0)
	ackTurn(t, p, item.LockToken, 2, []duroxide.Event{started}, capMetadata(&v2))

	capEnqueuePing(t, p, instance, "ping")
	item = capFetch(t, p, capFilter(capVersion(2, 0, 0), capVersion(2, 9, 9)))
	require.NotNil(t, item, "should return the item with a v2 filter after continue-as-new")
	assert.Equal(t, instance, item.Instance)
	capAbandon(t, p, item)

	assert.Nil(t, capFetch(t, p, capFilter(capVersion(1, 0, 0), capVersion(1, 9, 9))),
		"a v1.x filter must not match execution 2: its pinned version is 2.0.0, not the inherited 1.0.0")
}

// FilterWithEmptySupportedVersionsReturnsNothing checks that a filter with
// no supported range matches nothing.
func FilterWithEmptySupportedVersionsReturnsNothing(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-empty", capVersion(1, 0, 0))
	assert.Nil(t, capFetch(t, p, &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{}}),
		"an empty list of supported versions should return nothing")
}

// ConcurrentFilteredFetchNoDoubleLock checks that a filtered fetch does not
// return an instance another filtered fetch holds.
func ConcurrentFilteredFetchNoDoubleLock(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-conc", capVersion(1, 0, 0))
	filter := capFilter(capVersion(0, 0, 0), capVersion(1, 9, 9))

	require.NotNil(t, capFetch(t, p, filter), "first fetch should succeed")
	assert.Nil(t, capFetch(t, p, filter), "second fetch should return nothing (instance locked)")
}

// AckStoresPinnedVersionViaMetadataUpdate checks that a later ack can set
// the pinned version of an execution created without one (backfill).
func AckStoresPinnedVersionViaMetadataUpdate(t *testing.T, f Factory) {
	const instance = "inst-backfill"
	p := f.NewProvider(t)
	capCreateUnpinned(t, p, instance, "1.2.3")

	capEnqueuePing(t, p, instance, "ping")
	item := capFetch(t, p, nil)
	require.NotNil(t, item)
	v := capVersion(1, 2, 3)
	ackTurn(t, p, item.LockToken, 1, nil, capMetadata(&v))

	capEnqueuePing(t, p, instance, "ping2")
	assert.NotNil(t, capFetch(t, p, capFilter(capVersion(1, 0, 0), capVersion(1, 9, 9))),
		"the backfilled pinned version should be filterable")
}

// ProviderUpdatesPinnedVersionWhenTold checks that the provider stores
// whatever pinned version the metadata carries, replacing an earlier one
// (write-once is the runtime's rule, not the provider's).
func ProviderUpdatesPinnedVersionWhenTold(t *testing.T, f Factory) {
	const instance = "inst-update"
	p := f.NewProvider(t)
	capSeed(t, p, instance, capVersion(1, 0, 0))

	item := capFetch(t, p, capFilter(capVersion(0, 0, 0), capVersion(1, 9, 9)))
	require.NotNil(t, item)
	v2 := capVersion(2, 0, 0)
	ackTurn(t, p, item.LockToken, 1, nil, capMetadata(&v2))

	capEnqueuePing(t, p, instance, "ping2")
	item = capFetch(t, p, capFilter(v2, v2))
	require.NotNil(t, item, "the provider should have updated the pinned version to 2.0.0")
	capAbandon(t, p, item)

	assert.Nil(t, capFetch(t, p, capFilter(capVersion(1, 0, 0), capVersion(1, 0, 0))),
		"should no longer match a v1 filter: the version was updated to v2")
}

// capSeedCorrupted seeds instance pinned at pinned and then replaces its
// history with undecodable data through the factory's HistoryCorrupter.
func capSeedCorrupted(t *testing.T, corrupter HistoryCorrupter, p duroxide.Provider, instance string, pinned duroxide.Version) {
	t.Helper()
	capSeed(t, p, instance, pinned)
	corrupter.CorruptInstanceHistory(t.Context(), t, p, instance)
}

// capRequireHistoryError fails t unless item is a turn whose history could
// not be decoded: HistoryError set and History empty.
func capRequireHistoryError(t *testing.T, item *duroxide.OrchestrationItem, what string) {
	t.Helper()
	require.NotNil(t, item, "%s: should return the item with HistoryError set, not nil", what)
	require.NotNil(t, item.HistoryError, "%s: corrupted history should set HistoryError", what)
	assert.Empty(t, item.History, "%s: history should be empty when decoding fails", what)
}

// FetchCorruptedHistoryFilteredVsUnfiltered checks that a filter excluding
// an instance with corrupted history returns nothing without an error,
// while an unfiltered fetch returns the turn with HistoryError set. It
// needs the HistoryCorrupter hook.
func FetchCorruptedHistoryFilteredVsUnfiltered(t *testing.T, f Factory) {
	const instance = "inst-corrupt-39"
	corrupter := requireCorrupter(t, f)
	p := f.NewProvider(t)
	capSeedCorrupted(t, corrupter, p, instance, capVersion(1, 0, 0))

	item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, capFilter(capVersion(2, 0, 0), capVersion(2, 9, 9)))
	require.NoError(t, err, "a filtered fetch should not fail for excluded items")
	assert.Nil(t, item, "a filtered fetch should return nothing for an excluded version")

	item, err = p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
	require.NoError(t, err, "should return the item with HistoryError, not an error")
	capRequireHistoryError(t, item, "unfiltered fetch")
	assert.Equal(t, instance, item.Instance)
	capAbandon(t, p, item)
}

// capFetchCorruptedCycles fetches instance's corrupted turn cycles times,
// each time checking HistoryError and abandoning the turn while keeping
// the attempt, and checks that the attempt count grows with every fetch.
// An abandon releases the lock at once, so the next fetch needs no wait for
// lock expiry.
func capFetchCorruptedCycles(t *testing.T, p duroxide.Provider, cycles int) {
	t.Helper()
	var last uint32
	for i := 1; i <= cycles; i++ {
		item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
		require.NoError(t, err, "fetch #%d", i)
		capRequireHistoryError(t, item, fmt.Sprintf("fetch #%d", i))
		assert.Greater(t, item.AttemptCount, last, "fetch #%d: the attempt count should grow with every fetch", i)
		last = item.AttemptCount
		require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))
	}
}

// FetchDeserializationErrorIncrementsAttemptCount checks that fetching a
// turn with corrupted history counts attempts across fetch cycles. It needs
// the HistoryCorrupter and AttemptCountReader hooks.
func FetchDeserializationErrorIncrementsAttemptCount(t *testing.T, f Factory) {
	const instance = "inst-deser-41"
	corrupter := requireCorrupter(t, f)
	attempts := requireAttemptCountReader(t, f)
	p := f.NewProvider(t)
	capSeedCorrupted(t, corrupter, p, instance, capVersion(1, 0, 0))

	capFetchCorruptedCycles(t, p, 2)

	got := attempts.MaxAttemptCount(t.Context(), t, p, instance)
	assert.GreaterOrEqual(t, got, uint32(2), "attempt count should be >= 2 after two fetch cycles")
}

// FetchDeserializationErrorEventuallyReachesPoison checks that a turn with
// corrupted history keeps returning HistoryError with a growing attempt
// count, so that the runtime's poison limit ends it. It needs the
// HistoryCorrupter and AttemptCountReader hooks.
func FetchDeserializationErrorEventuallyReachesPoison(t *testing.T, f Factory) {
	const instance = "inst-poison-42"
	const maxAttempts = 5
	corrupter := requireCorrupter(t, f)
	attempts := requireAttemptCountReader(t, f)
	p := f.NewProvider(t)
	capSeedCorrupted(t, corrupter, p, instance, capVersion(1, 0, 0))

	capFetchCorruptedCycles(t, p, maxAttempts)

	got := attempts.MaxAttemptCount(t.Context(), t, p, instance)
	assert.GreaterOrEqual(t, got, uint32(maxAttempts), "attempt count should be >= %d after %d fetch cycles", maxAttempts, maxAttempts)
}

// FetchFilterAppliedBeforeHistoryDeserialization checks that the filter is
// applied before history is read: an excluded instance whose history is
// corrupted gives nothing, not a HistoryError. It needs the
// HistoryCorrupter hook.
func FetchFilterAppliedBeforeHistoryDeserialization(t *testing.T, f Factory) {
	const instance = "inst-order-43"
	corrupter := requireCorrupter(t, f)
	p := f.NewProvider(t)
	capSeedCorrupted(t, corrupter, p, instance, capVersion(99, 0, 0))

	item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, capFilter(capVersion(1, 0, 0), capVersion(2, 0, 0)))
	require.NoError(t, err, "the filter should be applied before history is decoded")
	assert.Nil(t, item, "an excluded version should not be returned")

	item, err = p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
	require.NoError(t, err, "an unfiltered fetch should return the item with HistoryError, not an error")
	capRequireHistoryError(t, item, "unfiltered fetch")
	capAbandon(t, p, item)
}

// FetchSingleRangeOnlyUsesFirstRange checks duroxide's phase-1 behaviour
// for filters with several ranges: only the first range is used.
func FetchSingleRangeOnlyUsesFirstRange(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	capSeed(t, p, "inst-range-a", capVersion(1, 0, 0))
	capSeed(t, p, "inst-range-b", capVersion(3, 0, 0))

	filter := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{
		{Min: capVersion(1, 0, 0), Max: capVersion(1, 5, 0)},
		{Min: capVersion(3, 0, 0), Max: capVersion(3, 5, 0)},
	}}
	item := capFetch(t, p, filter)
	require.NotNil(t, item, "should return instance A (first range)")
	assert.Equal(t, "inst-range-a", item.Instance, "phase 1: only the first range should be used, returning instance A")
	capAbandon(t, p, item)

	// inst-range-a may come back (it was abandoned), inst-range-b must not.
	if item := capFetch(t, p, filter); item != nil {
		assert.Equal(t, "inst-range-a", item.Instance,
			"phase 1: the second range should be ignored; only inst-range-a (first range) should be returned")
	}
}

// AckAppendsEventToCorruptedHistory checks that the ack of a turn whose
// history is corrupted appends the runtime's poison OrchestrationFailed
// event and stores the Failed status without reading the corrupted events
// back (acks are append-only). It needs the HistoryCorrupter hook and the
// provider's ProviderAdmin.
func AckAppendsEventToCorruptedHistory(t *testing.T, f Factory) {
	const instance = "inst-ack-corrupt-45"
	corrupter := requireCorrupter(t, f)
	ctx := t.Context()
	p := f.NewProvider(t)
	capSeedCorrupted(t, corrupter, p, instance, capVersion(1, 0, 0))

	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err, "fetch should succeed")
	capRequireHistoryError(t, item, "fetch of a corrupted instance")

	details := duroxide.ErrorDetails{Poison: &duroxide.PoisonDetails{
		AttemptCount: 4,
		MaxAttempts:  3,
		MessageType: duroxide.PoisonMessageType{FailedDeserialization: &duroxide.PoisonFailedDeserialization{
			Instance: instance, ExecutionID: item.ExecutionID, Error: *item.HistoryError,
		}},
		Message: *item.HistoryError,
	}}
	failed := duroxide.NewEvent(99999, instance, item.ExecutionID, nil, duroxide.OrchestrationFailed{Details: details})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, item.ExecutionID, []duroxide.Event{failed}, nil, nil,
		duroxide.ExecutionMetadata{
			Status:               duroxide.StringPtr(duroxide.StatusFailed),
			Output:               duroxide.StringPtr(details.DisplayMessage()),
			OrchestrationName:    duroxide.StringPtr(item.OrchestrationName),
			OrchestrationVersion: duroxide.StringPtr(item.Version),
		}, nil), "ack should succeed: the provider must not re-read existing history")

	admin, ok := duroxide.AsManagementCapability(p)
	require.True(t, ok, "provider should have management capability")
	info, err := admin.GetInstanceInfo(ctx, instance)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusFailed, info.Status, "execution status should be Failed after the poison ack")
	require.NotNil(t, info.Output, "output should hold the deserialization error message")
	assert.Contains(t, *info.Output, "deserialization failed")
}
