package providertest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// kvStoreCases ports duroxide's src/provider_validation/kv_store.rs; see README.md for
// the table from each Rust test to its Go function.
var kvStoreCases = []Case{
	{"test_kv_set_and_get", KvSetAndGet},
	{"test_kv_overwrite", KvOverwrite},
	{"test_kv_clear_single", KvClearSingle},
	{"test_kv_clear_all", KvClearAll},
	{"test_kv_get_nonexistent", KvGetNonexistent},
	{"test_kv_snapshot_in_fetch", KvSnapshotInFetch},
	{"test_kv_snapshot_after_clear_single", KvSnapshotAfterClearSingle},
	{"test_kv_snapshot_after_clear_all", KvSnapshotAfterClearAll},
	{"test_kv_execution_id_tracking", KvExecutionIDTracking},
	{"test_kv_cross_execution_overwrite", KvCrossExecutionOverwrite},
	{"test_kv_cross_execution_remove_readd", KvCrossExecutionRemoveReadd},
	{"test_kv_prune_preserves_overwritten", KvPrunePreservesOverwritten},
	{"test_kv_prune_preserves_all_keys", KvPrunePreservesAllKeys},
	{"test_kv_instance_isolation", KvInstanceIsolation},
	{"test_kv_delete_instance_cascades", KvDeleteInstanceCascades},
	{"test_kv_clear_nonexistent_key", KvClearNonexistentKey},
	{"test_kv_get_unknown_instance", KvGetUnknownInstance},
	{"test_kv_set_after_clear", KvSetAfterClear},
	{"test_kv_empty_value", KvEmptyValue},
	{"test_kv_large_value", KvLargeValue},
	{"test_kv_special_chars_in_key", KvSpecialCharsInKey},
	{"test_kv_snapshot_empty", KvSnapshotEmpty},
	{"test_kv_snapshot_cross_execution", KvSnapshotCrossExecution},
	{"test_kv_prune_current_execution_protected", KvPruneCurrentExecutionProtected},
	{"test_kv_delete_instance_with_children", KvDeleteInstanceWithChildren},
	{"test_kv_clear_isolation", KvClearIsolation},
	{"test_kv_delta_snapshot_excludes_current_execution", KvDeltaSnapshotExcludesCurrentExecution},
	{"test_kv_delta_snapshot_includes_completed_execution", KvDeltaSnapshotIncludesCompletedExecution},
	{"test_kv_delta_client_reads_merged", KvDeltaClientReadsMerged},
	{"test_kv_delta_tombstone_overrides_store", KvDeltaTombstoneOverridesStore},
	{"test_kv_delta_clear_all_tombstones_store", KvDeltaClearAllTombstonesStore},
	{"test_kv_delta_merged_on_completion", KvDeltaMergedOnCompletion},
	{"test_kv_delta_merged_on_can", KvDeltaMergedOnCan},
	{"test_kv_delta_delete_instance_cascades", KvDeltaDeleteInstanceCascades},
	{"test_kv_delta_prune_untouched_key_survives", KvDeltaPruneUntouchedKeySurvives},
}

// The KV tests follow duroxide 0.1.26's two-level KV model
// (docs/proposals/kv-delta-table.md): every ack records the turn's KV
// events as the current execution's delta, client reads (GetKVValue,
// GetKVAllValues) see the store merged with the delta (a cleared key hides
// the stored one), and the ack of a terminal turn (status Completed,
// Failed or ContinuedAsNew) merges the delta into the store. The snapshot
// a fetch returns is the store alone: what earlier executions left.

// kvSet is the KeyValueSet event id of execution exec of instance.
func kvSet(id uint64, instance string, exec uint64, key, value string, updatedAtMs uint64) duroxide.Event {
	return duroxide.NewEvent(id, instance, exec, nil, duroxide.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: updatedAtMs})
}

// kvCleared is the KeyValueCleared event id of execution exec of instance.
func kvCleared(id uint64, instance string, exec uint64, key string) duroxide.Event {
	return duroxide.NewEvent(id, instance, exec, nil, duroxide.KeyValueCleared{Key: key})
}

// kvAllCleared is the KeyValuesCleared event id of execution exec of
// instance.
func kvAllCleared(id uint64, instance string, exec uint64) duroxide.Event {
	return duroxide.NewEvent(id, instance, exec, nil, duroxide.KeyValuesCleared{})
}

// kvStatusMetadata is the ExecutionMetadata of TestOrch 1.0.0 that sets
// the execution's status.
func kvStatusMetadata(status string) duroxide.ExecutionMetadata {
	m := orchMetadata(testOrch, testOrchVersion)
	m.Status = duroxide.StringPtr(status)
	return m
}

// kvPoke enqueues an external event for instance so that it has a turn to
// fetch.
func kvPoke(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: "poke", Data: "{}"}})
}

// kvTurn pokes instance, fetches its turn and acks it on execution exec
// with historyDelta and metadata.
func kvTurn(t *testing.T, p duroxide.Provider, instance string, exec uint64, historyDelta []duroxide.Event, metadata duroxide.ExecutionMetadata) {
	t.Helper()
	kvPoke(t, p, instance)
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	ackTurn(t, p, item.LockToken, exec, historyDelta, metadata)
}

// kvAckWithDelta is one turn of execution exec of instance that appends
// historyDelta and changes no metadata.
func kvAckWithDelta(t *testing.T, p duroxide.Provider, instance string, exec uint64, historyDelta ...duroxide.Event) {
	t.Helper()
	kvTurn(t, p, instance, exec, historyDelta, duroxide.ExecutionMetadata{})
}

// kvCompleteInstance completes execution exec of instance: a turn appends
// OrchestrationCompleted and stores status Completed.
func kvCompleteInstance(t *testing.T, p duroxide.Provider, instance string, exec uint64) {
	t.Helper()
	meta := kvStatusMetadata(duroxide.StatusCompleted)
	meta.Output = duroxide.StringPtr("done")
	kvTurn(t, p, instance, exec,
		[]duroxide.Event{duroxide.NewEvent(9999, instance, exec, nil, duroxide.OrchestrationCompleted{Output: "done"})}, meta)
}

// kvContinueAsNew moves instance to execution newExec: a turn marks the
// previous execution ContinuedAsNew, then the ContinueAsNew message is
// fetched and acked with the new execution's OrchestrationStarted.
func kvContinueAsNew(t *testing.T, p duroxide.Provider, instance string, newExec uint64) {
	t.Helper()
	kvTurn(t, p, instance, newExec-1, nil, kvStatusMetadata(duroxide.StatusContinuedAsNew))

	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
		Instance: instance, Orchestration: testOrch, Input: "{}", Version: duroxide.StringPtr(testOrchVersion),
		CarryForwardEvents: []duroxide.NameData{},
	}})
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	started := startedEvent(instance, 1, newExec, testOrch, testOrchVersion)
	ackTurn(t, p, item.LockToken, newExec, []duroxide.Event{started}, orchMetadata(testOrch, testOrchVersion))
}

// kvSnapshot pokes instance, fetches its turn, acks it unchanged on
// execution exec and returns the KV snapshot the fetch carried, as key →
// value.
func kvSnapshot(t *testing.T, p duroxide.Provider, instance string, exec uint64) map[string]string {
	t.Helper()
	kvPoke(t, p, instance)
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	snapshot := make(map[string]string, len(item.KVSnapshot))
	for k, e := range item.KVSnapshot {
		snapshot[k] = e.Value
	}
	ackTurn(t, p, item.LockToken, exec, nil, duroxide.ExecutionMetadata{})
	return snapshot
}

// kvAssertValue asserts that the client read of key on instance returns
// want; why (optional) says what the value means.
func kvAssertValue(t *testing.T, p duroxide.Provider, instance, key, want string, why ...string) {
	t.Helper()
	got, ok, err := p.GetKVValue(t.Context(), instance, key)
	require.NoError(t, err)
	msg := kvMessage(instance, key, why)
	if assert.True(t, ok, "%s: the key should exist", msg) {
		assert.Equal(t, want, got, msg)
	}
}

// kvAssertAbsent asserts that the client read of key on instance finds no
// value; why (optional) says why.
func kvAssertAbsent(t *testing.T, p duroxide.Provider, instance, key string, why ...string) {
	t.Helper()
	got, ok, err := p.GetKVValue(t.Context(), instance, key)
	require.NoError(t, err)
	assert.False(t, ok, "%s: the key should not exist, got %q", kvMessage(instance, key, why), got)
}

// kvMessage names key of instance for an assertion message, followed by
// why.
func kvMessage(instance, key string, why []string) string {
	msg := fmt.Sprintf("KV %s[%q]", instance, key)
	for _, w := range why {
		msg += ": " + w
	}
	return msg
}

// kvAdmin returns p's ProviderAdmin and fails t when it has none.
func kvAdmin(t *testing.T, p duroxide.Provider) duroxide.ProviderAdmin {
	t.Helper()
	admin, ok := duroxide.AsManagementCapability(p)
	require.True(t, ok, "provider should implement ProviderAdmin")
	return admin
}

// kvPruneKeepLast prunes every execution of instance but the last one.
func kvPruneKeepLast(t *testing.T, admin duroxide.ProviderAdmin, instance string) {
	t.Helper()
	keep := uint32(1)
	_, err := admin.PruneExecutions(t.Context(), instance, duroxide.PruneOptions{KeepLast: &keep})
	require.NoError(t, err)
}

// KvSetAndGet checks that an acked KeyValueSet is readable with GetKVValue.
func KvSetAndGet(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-set")
	kvAckWithDelta(t, p, "kv-set", 1, kvSet(100, "kv-set", 1, "counter", "42", 0))
	kvAssertValue(t, p, "kv-set", "counter", "42")
}

// KvOverwrite checks that a KeyValueSet of an existing key replaces its
// value.
func KvOverwrite(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-over")
	kvAckWithDelta(t, p, "kv-over", 1, kvSet(100, "kv-over", 1, "status", "old", 0))
	kvAssertValue(t, p, "kv-over", "status", "old", "initial value should be 'old'")

	kvAckWithDelta(t, p, "kv-over", 1, kvSet(101, "kv-over", 1, "status", "new", 0))
	kvAssertValue(t, p, "kv-over", "status", "new")
}

// KvClearSingle checks that KeyValueCleared removes the key.
func KvClearSingle(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-clr1")
	kvAckWithDelta(t, p, "kv-clr1", 1, kvSet(100, "kv-clr1", 1, "remove_me", "x", 0))
	kvAssertValue(t, p, "kv-clr1", "remove_me", "x", "value should be set before clearing")

	kvAckWithDelta(t, p, "kv-clr1", 1, kvCleared(101, "kv-clr1", 1, "remove_me"))
	kvAssertAbsent(t, p, "kv-clr1", "remove_me")
}

// KvClearAll checks that KeyValuesCleared removes every key of the
// instance.
func KvClearAll(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-clra")
	kvAckWithDelta(t, p, "kv-clra", 1,
		kvSet(100, "kv-clra", 1, "a", "1", 0),
		kvSet(101, "kv-clra", 1, "b", "2", 0))
	kvAssertValue(t, p, "kv-clra", "a", "1", "key 'a' should be set")
	kvAssertValue(t, p, "kv-clra", "b", "2", "key 'b' should be set")

	kvAckWithDelta(t, p, "kv-clra", 1, kvAllCleared(102, "kv-clra", 1))
	kvAssertAbsent(t, p, "kv-clra", "a")
	kvAssertAbsent(t, p, "kv-clra", "b")
}

// KvGetNonexistent checks that reading a key that was never set finds
// nothing.
func KvGetNonexistent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-none")
	kvAssertAbsent(t, p, "kv-none", "nope")
}

// KvSnapshotInFetch checks that, once an execution completed, the next
// fetch carries its KV values in the snapshot.
func KvSnapshotInFetch(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-fetch")
	kvAckWithDelta(t, p, "kv-fetch", 1,
		kvSet(100, "kv-fetch", 1, "x", "10", 0),
		kvSet(101, "kv-fetch", 1, "y", "20", 0))
	kvCompleteInstance(t, p, "kv-fetch", 1)

	assert.Equal(t, map[string]string{"x": "10", "y": "20"}, kvSnapshot(t, p, "kv-fetch", 1),
		"the snapshot should hold the completed execution's values")
}

// KvSnapshotAfterClearSingle checks that a key cleared before its execution
// completed is not in the next snapshot.
func KvSnapshotAfterClearSingle(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-fclr1")
	kvAckWithDelta(t, p, "kv-fclr1", 1,
		kvSet(100, "kv-fclr1", 1, "keep", "yes", 0),
		kvSet(101, "kv-fclr1", 1, "remove", "bye", 0))
	kvAckWithDelta(t, p, "kv-fclr1", 1, kvCleared(102, "kv-fclr1", 1, "remove"))
	kvCompleteInstance(t, p, "kv-fclr1", 1)

	assert.Equal(t, map[string]string{"keep": "yes"}, kvSnapshot(t, p, "kv-fclr1", 1),
		"the snapshot should hold 'keep' and not the cleared 'remove'")
}

// KvSnapshotAfterClearAll checks that after KeyValuesCleared the next
// snapshot is empty.
func KvSnapshotAfterClearAll(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-fclra")
	kvAckWithDelta(t, p, "kv-fclra", 1,
		kvSet(100, "kv-fclra", 1, "a", "1", 0),
		kvSet(101, "kv-fclra", 1, "b", "2", 0))
	kvAckWithDelta(t, p, "kv-fclra", 1, kvAllCleared(102, "kv-fclra", 1))

	snapshot := kvSnapshot(t, p, "kv-fclra", 1)
	assert.Empty(t, snapshot, "expected an empty snapshot, got %v", snapshot)
}

// KvExecutionIDTracking checks that a key overwritten by a later execution
// survives the pruning of the earlier one (last writer wins). It needs the
// provider's ProviderAdmin.
func KvExecutionIDTracking(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-exec")
	kvAckWithDelta(t, p, "kv-exec", 1, kvSet(100, "kv-exec", 1, "shared", "from_exec_1", 0))
	kvAssertValue(t, p, "kv-exec", "shared", "from_exec_1")

	kvContinueAsNew(t, p, "kv-exec", 2)
	kvAckWithDelta(t, p, "kv-exec", 2, kvSet(200, "kv-exec", 2, "shared", "from_exec_2", 0))
	kvAssertValue(t, p, "kv-exec", "shared", "from_exec_2", "should reflect the exec 2 value")

	kvPruneKeepLast(t, admin, "kv-exec")
	kvAssertValue(t, p, "kv-exec", "shared", "from_exec_2",
		"key must survive pruning because the last writer (exec 2) is not pruned")
}

// KvCrossExecutionOverwrite checks that a key set in execution 1 is
// readable, and that execution 2 overwrites it.
func KvCrossExecutionOverwrite(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-xexec")
	kvAckWithDelta(t, p, "kv-xexec", 1, kvSet(100, "kv-xexec", 1, "k", "v1", 0))
	kvAssertValue(t, p, "kv-xexec", "k", "v1", "should see the value from exec 1")

	kvContinueAsNew(t, p, "kv-xexec", 2)
	kvAckWithDelta(t, p, "kv-xexec", 2, kvSet(200, "kv-xexec", 2, "k", "v2", 0))
	kvAssertValue(t, p, "kv-xexec", "k", "v2", "exec 2 should overwrite the exec 1 value")
}

// KvCrossExecutionRemoveReadd checks a key set in execution 1, cleared in
// execution 2 and set again in execution 3.
func KvCrossExecutionRemoveReadd(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-xrm")
	kvAckWithDelta(t, p, "kv-xrm", 1, kvSet(100, "kv-xrm", 1, "cycle", "exec1", 0))
	kvAssertValue(t, p, "kv-xrm", "cycle", "exec1")

	kvContinueAsNew(t, p, "kv-xrm", 2)
	kvAckWithDelta(t, p, "kv-xrm", 2, kvCleared(200, "kv-xrm", 2, "cycle"))
	kvAssertAbsent(t, p, "kv-xrm", "cycle", "key should be cleared in exec 2")

	kvContinueAsNew(t, p, "kv-xrm", 3)
	kvAckWithDelta(t, p, "kv-xrm", 3, kvSet(300, "kv-xrm", 3, "cycle", "exec3", 0))
	kvAssertValue(t, p, "kv-xrm", "cycle", "exec3", "key should be set again by exec 3")
}

// KvPrunePreservesOverwritten checks that pruning execution 1 keeps a key
// execution 2 overwrote, with execution 2's value. It needs the provider's
// ProviderAdmin.
func KvPrunePreservesOverwritten(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-prn1")
	kvAckWithDelta(t, p, "kv-prn1", 1, kvSet(100, "kv-prn1", 1, "survive", "v1", 0))
	kvContinueAsNew(t, p, "kv-prn1", 2)
	kvAckWithDelta(t, p, "kv-prn1", 2, kvSet(200, "kv-prn1", 2, "survive", "v2", 0))

	kvPruneKeepLast(t, admin, "kv-prn1")
	kvAssertValue(t, p, "kv-prn1", "survive", "v2", "an overwritten key must survive pruning of the old execution")
}

// KvPrunePreservesAllKeys checks that KV lives as long as the instance:
// pruning execution 1 keeps the keys only execution 1 set. It needs the
// provider's ProviderAdmin.
func KvPrunePreservesAllKeys(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-prn2")
	kvAckWithDelta(t, p, "kv-prn2", 1, kvSet(100, "kv-prn2", 1, "orphan", "survives", 0))
	kvContinueAsNew(t, p, "kv-prn2", 2)
	kvAckWithDelta(t, p, "kv-prn2", 2, kvSet(200, "kv-prn2", 2, "keeper", "alive", 0))
	kvAssertValue(t, p, "kv-prn2", "orphan", "survives")
	kvAssertValue(t, p, "kv-prn2", "keeper", "alive")

	kvPruneKeepLast(t, admin, "kv-prn2")
	kvAssertValue(t, p, "kv-prn2", "orphan", "survives", "KV entries must survive execution pruning (instance-scoped lifetime)")
	kvAssertValue(t, p, "kv-prn2", "keeper", "alive", "the exec 2 key must survive")
}

// KvInstanceIsolation checks that two instances keep independent values
// under the same key.
func KvInstanceIsolation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-iso-a")
	createInstance(t, p, "kv-iso-b")
	kvAckWithDelta(t, p, "kv-iso-a", 1, kvSet(100, "kv-iso-a", 1, "shared_name", "from_a", 0))
	kvAckWithDelta(t, p, "kv-iso-b", 1, kvSet(100, "kv-iso-b", 1, "shared_name", "from_b", 0))

	kvAssertValue(t, p, "kv-iso-a", "shared_name", "from_a")
	kvAssertValue(t, p, "kv-iso-b", "shared_name", "from_b")
}

// KvDeleteInstanceCascades checks that deleting a completed instance
// removes its KV. It needs the provider's ProviderAdmin.
func KvDeleteInstanceCascades(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-del")
	kvAckWithDelta(t, p, "kv-del", 1, kvSet(100, "kv-del", 1, "doomed", "bye", 0))
	kvCompleteInstance(t, p, "kv-del", 1)
	kvAssertValue(t, p, "kv-del", "doomed", "bye", "value should exist before deletion")

	_, err := admin.DeleteInstance(t.Context(), "kv-del", false)
	require.NoError(t, err)
	kvAssertAbsent(t, p, "kv-del", "doomed", "KV should be gone after instance deletion")
}

// KvClearNonexistentKey checks that clearing a key that was never set
// succeeds.
func KvClearNonexistentKey(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-clrne")
	kvAckWithDelta(t, p, "kv-clrne", 1, kvCleared(100, "kv-clrne", 1, "never_existed"))
	kvAssertAbsent(t, p, "kv-clrne", "never_existed")
}

// KvGetUnknownInstance checks that reading a key of an unknown instance
// finds nothing, without an error.
func KvGetUnknownInstance(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	kvAssertAbsent(t, p, "no-such-instance", "key")
}

// KvSetAfterClear checks that, in one ack, KeyValuesCleared followed by a
// KeyValueSet leaves only the new key.
func KvSetAfterClear(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-sac")
	kvAckWithDelta(t, p, "kv-sac", 1,
		kvSet(100, "kv-sac", 1, "old_a", "1", 0),
		kvSet(101, "kv-sac", 1, "old_b", "2", 0))
	kvAckWithDelta(t, p, "kv-sac", 1,
		kvAllCleared(102, "kv-sac", 1),
		kvSet(103, "kv-sac", 1, "new_x", "fresh", 0))

	kvAssertAbsent(t, p, "kv-sac", "old_a")
	kvAssertAbsent(t, p, "kv-sac", "old_b")
	kvAssertValue(t, p, "kv-sac", "new_x", "fresh")
}

// KvEmptyValue checks that the empty string is a value, not an absent key.
func KvEmptyValue(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-empty")
	kvAckWithDelta(t, p, "kv-empty", 1, kvSet(100, "kv-empty", 1, "blank", "", 0))
	kvAssertValue(t, p, "kv-empty", "blank", "", "the empty string is a valid value, not an absent key")
}

// KvLargeValue checks that a value of the largest size the runtime allows
// (duroxide.MaxKVValueBytes, 64 KiB since duroxide 0.1.27) is stored and
// read back intact.
func KvLargeValue(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-big")
	big := strings.Repeat("x", duroxide.MaxKVValueBytes)
	kvAckWithDelta(t, p, "kv-big", 1, kvSet(100, "kv-big", 1, "payload", big, 0))
	kvAssertValue(t, p, "kv-big", "payload", big)
}

// KvSpecialCharsInKey checks keys with spaces, non-ASCII letters, dots,
// slashes and emoji.
func KvSpecialCharsInKey(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-chars")
	keys := []struct{ key, value string }{
		{"key with spaces", "v1"},
		{"日本語キー", "v2"},
		{"dotted.key.name", "v3"},
		{"path/like/key", "v4"},
		{"emoji🎉key", "v5"},
	}
	var events []duroxide.Event
	for i, kv := range keys {
		events = append(events, kvSet(100+uint64(i), "kv-chars", 1, kv.key, kv.value, 0))
	}
	kvAckWithDelta(t, p, "kv-chars", 1, events...)

	for _, kv := range keys {
		kvAssertValue(t, p, "kv-chars", kv.key, kv.value, "the key should be retrievable")
	}
}

// KvSnapshotEmpty checks that an instance without KV gets an empty
// snapshot.
func KvSnapshotEmpty(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-sempty")
	assert.Empty(t, kvSnapshot(t, p, "kv-sempty", 1), "expected an empty snapshot for a fresh instance")
}

// KvSnapshotCrossExecution checks that the snapshot of execution 2 holds
// what execution 1 set (merged at continue-as-new) and not what execution 2
// set itself (rebuilt by replay).
func KvSnapshotCrossExecution(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-scross")
	kvAckWithDelta(t, p, "kv-scross", 1, kvSet(100, "kv-scross", 1, "A", "from_exec1", 0))
	kvContinueAsNew(t, p, "kv-scross", 2)
	kvAckWithDelta(t, p, "kv-scross", 2, kvSet(200, "kv-scross", 2, "B", "from_exec2", 0))

	snapshot := kvSnapshot(t, p, "kv-scross", 2)
	assert.Len(t, snapshot, 1, "the snapshot should only hold prior-execution state")
	assert.Equal(t, "from_exec1", snapshot["A"])
	assert.NotContains(t, snapshot, "B", "a current-execution key should not be in the snapshot")
}

// KvPruneCurrentExecutionProtected checks that pruning an instance with a
// single execution keeps its KV. It needs the provider's ProviderAdmin.
func KvPruneCurrentExecutionProtected(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-prncur")
	kvAckWithDelta(t, p, "kv-prncur", 1, kvSet(100, "kv-prncur", 1, "alive", "yes", 0))

	kvPruneKeepLast(t, admin, "kv-prncur")
	kvAssertValue(t, p, "kv-prncur", "alive", "yes", "the current execution's KV must survive pruning")
}

// KvDeleteInstanceWithChildren checks that deleting a parent instance
// removes its sub-orchestration's KV too. It needs the provider's
// ProviderAdmin.
func KvDeleteInstanceWithChildren(t *testing.T, f Factory) {
	ctx := t.Context()
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-parent")
	kvAckWithDelta(t, p, "kv-parent", 1, kvSet(100, "kv-parent", 1, "parent_key", "parent_val", 0))

	// The child is a sub-orchestration of kv-parent.
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: "kv-child", Orchestration: testOrch, Version: duroxide.StringPtr(testOrchVersion), Input: "{}",
		ParentInstance: duroxide.StringPtr("kv-parent"), ParentID: duroxide.Uint64Ptr(1), ExecutionID: 1,
	}})
	item := fetchOrch(t, p, longLock)
	require.Equal(t, "kv-child", item.Instance, "expected the child's orchestration item")
	childMeta := orchMetadata(testOrch, testOrchVersion)
	childMeta.ParentInstanceID = duroxide.StringPtr("kv-parent")
	started := duroxide.NewEvent(1, "kv-child", 1, nil, duroxide.OrchestrationStarted{
		Name: testOrch, Version: testOrchVersion, Input: "{}",
		ParentInstance: duroxide.StringPtr("kv-parent"), ParentID: duroxide.Uint64Ptr(1),
	})
	ackTurn(t, p, item.LockToken, 1, []duroxide.Event{started}, childMeta)
	kvAckWithDelta(t, p, "kv-child", 1, kvSet(100, "kv-child", 1, "child_key", "child_val", 0))

	kvCompleteInstance(t, p, "kv-child", 1)
	kvCompleteInstance(t, p, "kv-parent", 1)

	_, err := admin.DeleteInstance(ctx, "kv-parent", false)
	require.NoError(t, err)
	kvAssertAbsent(t, p, "kv-parent", "parent_key", "the parent's KV should be removed")
	kvAssertAbsent(t, p, "kv-child", "child_key", "the child's KV should be removed when the parent is deleted")
}

// KvClearIsolation checks that clearing all keys of one instance leaves
// another instance's keys alone.
func KvClearIsolation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-ciso-a")
	createInstance(t, p, "kv-ciso-b")
	kvAckWithDelta(t, p, "kv-ciso-a", 1, kvSet(100, "kv-ciso-a", 1, "shared", "from_a", 0))
	kvAckWithDelta(t, p, "kv-ciso-b", 1, kvSet(100, "kv-ciso-b", 1, "shared", "from_b", 0))

	kvAckWithDelta(t, p, "kv-ciso-a", 1, kvAllCleared(101, "kv-ciso-a", 1))
	kvAssertAbsent(t, p, "kv-ciso-a", "shared")
	kvAssertValue(t, p, "kv-ciso-b", "shared", "from_b", "clearing instance A must not affect instance B")
}

// KvDeltaSnapshotExcludesCurrentExecution checks that the snapshot holds
// no value set by the current, unfinished execution (replay rebuilds those;
// seeding them would poison read-modify-write replays), while client reads
// see it.
func KvDeltaSnapshotExcludesCurrentExecution(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-ds1")
	kvAckWithDelta(t, p, "kv-ds1", 1, kvSet(100, "kv-ds1", 1, "counter", "1", 100))
	kvAssertValue(t, p, "kv-ds1", "counter", "1", "a client read should see the current execution's value")

	snapshot := kvSnapshot(t, p, "kv-ds1", 1)
	assert.Empty(t, snapshot,
		"the snapshot must be empty: counter was set by the current (unfinished) execution; got %v", snapshot)
}

// KvDeltaSnapshotIncludesCompletedExecution checks that after
// continue-as-new the new execution's snapshot holds the previous
// execution's values.
func KvDeltaSnapshotIncludesCompletedExecution(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-ds2")
	kvAckWithDelta(t, p, "kv-ds2", 1, kvSet(100, "kv-ds2", 1, "counter", "5", 100))
	kvContinueAsNew(t, p, "kv-ds2", 2)

	snapshot := kvSnapshot(t, p, "kv-ds2", 2)
	assert.Equal(t, "5", snapshot["counter"], "the snapshot must hold the prior execution's value after continue-as-new")
}

// KvDeltaClientReadsMerged checks that client reads merge the stored
// values of earlier executions with the current execution's changes, the
// latter winning.
func KvDeltaClientReadsMerged(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-dm")
	kvAckWithDelta(t, p, "kv-dm", 1,
		kvSet(100, "kv-dm", 1, "color", "red", 100),
		kvSet(101, "kv-dm", 1, "size", "large", 101))
	kvCompleteInstance(t, p, "kv-dm", 1)

	// Execution 2 (a restart, created by this ack) overwrites one key and
	// adds another.
	kvAckWithDelta(t, p, "kv-dm", 2,
		kvSet(200, "kv-dm", 2, "color", "blue", 200),
		kvSet(201, "kv-dm", 2, "shape", "circle", 201))

	kvAssertValue(t, p, "kv-dm", "color", "blue", "the current execution's value should override the stored one")
	kvAssertValue(t, p, "kv-dm", "size", "large", "a stored value should be visible when the current execution did not touch it")
	kvAssertValue(t, p, "kv-dm", "shape", "circle", "a key only the current execution set should be visible")

	all, err := p.GetKVAllValues(t.Context(), "kv-dm")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"color": "blue", "size": "large", "shape": "circle"}, all,
		"GetKVAllValues should return the same merged view")
}

// KvDeltaTombstoneOverridesStore checks that clearing, in the current
// execution, a key stored by an earlier execution hides it from client
// reads.
func KvDeltaTombstoneOverridesStore(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-dt")
	kvAckWithDelta(t, p, "kv-dt", 1, kvSet(100, "kv-dt", 1, "temp", "exists", 100))
	kvCompleteInstance(t, p, "kv-dt", 1)

	kvAckWithDelta(t, p, "kv-dt", 2, kvCleared(200, "kv-dt", 2, "temp"))
	kvAssertAbsent(t, p, "kv-dt", "temp", "a cleared key must hide the stored value")
}

// KvDeltaClearAllTombstonesStore checks that clearing all keys in the
// current execution hides every stored key, while keys set afterwards are
// visible.
func KvDeltaClearAllTombstonesStore(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-dca")
	kvAckWithDelta(t, p, "kv-dca", 1,
		kvSet(100, "kv-dca", 1, "a", "1", 100),
		kvSet(101, "kv-dca", 1, "b", "2", 101))
	kvCompleteInstance(t, p, "kv-dca", 1)

	kvAckWithDelta(t, p, "kv-dca", 2,
		kvAllCleared(200, "kv-dca", 2),
		kvSet(201, "kv-dca", 2, "c", "3", 201))

	kvAssertAbsent(t, p, "kv-dca", "a", "clearing all keys must hide stored key 'a'")
	kvAssertAbsent(t, p, "kv-dca", "b", "clearing all keys must hide stored key 'b'")
	kvAssertValue(t, p, "kv-dca", "c", "3", "a key set after clearing all keys should be visible")

	all, err := p.GetKVAllValues(t.Context(), "kv-dca")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"c": "3"}, all, "GetKVAllValues should return the same merged view")
}

// KvDeltaMergedOnCompletion checks that a value stays readable after its
// execution completes (it moved into the store).
func KvDeltaMergedOnCompletion(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-dmc")
	kvAckWithDelta(t, p, "kv-dmc", 1, kvSet(100, "kv-dmc", 1, "result", "42", 100))
	kvCompleteInstance(t, p, "kv-dmc", 1)
	kvAssertValue(t, p, "kv-dmc", "result", "42", "the value should be stored after the completion merge")
}

// KvDeltaMergedOnCan checks that the latest values of an execution, set
// over several turns, reach the next execution's snapshot after
// continue-as-new.
func KvDeltaMergedOnCan(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "kv-dmc2")
	kvAckWithDelta(t, p, "kv-dmc2", 1,
		kvSet(100, "kv-dmc2", 1, "version", "1", 100),
		kvSet(101, "kv-dmc2", 1, "progress", "50%", 101))
	kvAckWithDelta(t, p, "kv-dmc2", 1, kvSet(102, "kv-dmc2", 1, "progress", "100%", 102))
	kvContinueAsNew(t, p, "kv-dmc2", 2)

	snapshot := kvSnapshot(t, p, "kv-dmc2", 2)
	assert.Equal(t, "1", snapshot["version"], "version should carry over through the store after continue-as-new")
	assert.Equal(t, "100%", snapshot["progress"], "the latest progress value should carry over")
}

// KvDeltaDeleteInstanceCascades checks that force-deleting a running
// instance removes the KV values of its current execution. It needs the
// provider's ProviderAdmin.
func KvDeltaDeleteInstanceCascades(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-ddel")
	kvAckWithDelta(t, p, "kv-ddel", 1, kvSet(100, "kv-ddel", 1, "data", "important", 100))
	kvAssertValue(t, p, "kv-ddel", "data", "important")

	_, err := admin.DeleteInstance(t.Context(), "kv-ddel", true)
	require.NoError(t, err)
	kvAssertAbsent(t, p, "kv-ddel", "data", "the current execution's KV must be removed on instance deletion")
}

// KvDeltaPruneUntouchedKeySurvives checks that keys set only by pruned
// executions survive the pruning, for client reads and in the snapshot. It
// needs the provider's ProviderAdmin.
func KvDeltaPruneUntouchedKeySurvives(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	admin := kvAdmin(t, p)
	createInstance(t, p, "kv-dprn")
	kvAckWithDelta(t, p, "kv-dprn", 1, kvSet(100, "kv-dprn", 1, "stale_config", "from_exec_1", 100))
	kvContinueAsNew(t, p, "kv-dprn", 2)
	kvAckWithDelta(t, p, "kv-dprn", 2, kvSet(200, "kv-dprn", 2, "other", "unrelated", 200))
	// Execution 3 runs and touches neither key.
	kvContinueAsNew(t, p, "kv-dprn", 3)
	kvAssertValue(t, p, "kv-dprn", "stale_config", "from_exec_1")
	kvAssertValue(t, p, "kv-dprn", "other", "unrelated")

	kvPruneKeepLast(t, admin, "kv-dprn")
	kvAssertValue(t, p, "kv-dprn", "stale_config", "from_exec_1",
		"a KV key of a pruned execution must survive: KV lifetime is instance-scoped")
	kvAssertValue(t, p, "kv-dprn", "other", "unrelated", "a KV key of pruned execution 2 must also survive")

	snapshot := kvSnapshot(t, p, "kv-dprn", 3)
	assert.Equal(t, "from_exec_1", snapshot["stale_config"], "the snapshot must hold the untouched key of a pruned execution")
	assert.Equal(t, "unrelated", snapshot["other"], "the snapshot must hold the key of pruned execution 2")
}
