package cdb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// kvLimitValues returns duroxide.MaxKVKeys values of duroxide.MaxKVValueBytes
// each, named by generation gen. The first two are control characters,
// which JSON escapes to six bytes each (about 384 KiB per value stored).
func kvLimitValues(gen string) map[string]string {
	out := map[string]string{}
	for i := range duroxide.MaxKVKeys {
		prefix := fmt.Sprintf("%s-%03d-", gen, i)
		fill := string(rune('a' + i%26))
		if i < 2 {
			fill = "\x01"
		}
		out[fmt.Sprintf("key-%03d", i)] = prefix + strings.Repeat(fill, duroxide.MaxKVValueBytes-len(prefix))
	}
	return out
}

// kvSetEvents returns a KeyValueSet event per value, numbered from first
// in key order.
func kvSetEvents(instance string, executionID, first uint64, values map[string]string) []duroxide.Event {
	var events []duroxide.Event
	for i := range duroxide.MaxKVKeys {
		key := fmt.Sprintf("key-%03d", i)
		v, ok := values[key]
		if !ok {
			continue
		}
		events = append(events, duroxide.NewEvent(first+uint64(len(events)), instance, executionID, nil,
			duroxide.KeyValueSet{Key: key, Value: v, LastUpdatedAtMs: 1}))
	}
	return events
}

// kvDocLayout returns the ids of an instance's KV documents that no root
// names, and how many pages the roots name.
func kvDocLayout(ctx context.Context, t *testing.T, p duroxide.Provider, instance string) (orphans []string, pages int) {
	t.Helper()
	docs := partitionDocs(ctx, t, p, instance, "SELECT c.id, c.pages FROM c WHERE c.type = 'kv'")
	named := map[string]bool{"kv-store": true, "kv-delta": true}
	for _, d := range docs {
		if ids, ok := d["pages"].([]any); ok {
			for _, id := range ids {
				named[id.(string)] = true
				pages++
			}
		}
	}
	for _, d := range docs {
		if id := d["id"].(string); !named[id] {
			orphans = append(orphans, id)
		}
	}
	return orphans, pages
}

// requireKV checks every way a client reads an instance's KV values.
func requireKV(ctx context.Context, t *testing.T, p duroxide.Provider, instance string, want map[string]string, msg string) {
	t.Helper()
	all, err := p.GetKVAllValues(ctx, instance)
	require.NoError(t, err)
	require.Equal(t, len(want), len(all), msg)
	for k, v := range want {
		require.Equal(t, v, all[k], "%s: key %s", msg, k)
	}
	v, ok, err := p.GetKVValue(ctx, instance, "key-149")
	require.NoError(t, err)
	w, present := want["key-149"]
	require.Equal(t, present, ok, msg)
	require.Equal(t, w, v, msg)
}

// TestKVAtTheLimits stores duroxide.MaxKVKeys keys of
// duroxide.MaxKVValueBytes each (about 10 MB, 13 MB as JSON: far beyond one
// document or one transactional batch) through provider acks, reads them
// back every way (GetKVValue, GetKVAllValues, the fetch's KV snapshot),
// clears some and continues as new, with faults in the middle of each large
// turn: a final batch that fails, a staged batch that fails, a final batch
// whose answer is lost, and a process that dies between its staged batches
// and its final batch. Nothing half written is ever visible, and no page
// outlives the turns that retire it.
func TestKVAtTheLimits(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler, c.DisableChangeFeedWakeups, c.Now = true, true, clock.Now })
	ctx := context.Background()
	const inst = "kv-limits"
	key := inst
	finalBatch := emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: ptr("instance")}
	startAndAckFirst(t, p, inst)

	// Execution 1: every key set in one turn, its final batch failing once.
	gen1 := kvLimitValues("a")
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e", "1"), 0))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	sets := kvSetEvents(inst, 1, 2, gen1)
	rule := finalBatch
	rule.Fault = emulator.TooManyRequests(time.Millisecond)
	remove := s.InjectFault(rule)
	require.Error(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, sets, nil, nil, duroxide.ExecutionMetadata{}, nil))
	remove()
	requireKV(ctx, t, p, inst, map[string]string{}, "a turn whose final batch failed shows nothing")
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 1)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, sets, nil, nil, duroxide.ExecutionMetadata{}, nil))
	requireKV(ctx, t, p, inst, gen1, "after the turn committed")
	stats, err := p.GetInstanceStats(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, uint64(duroxide.MaxKVKeys), stats.KVUserKeyCount)
	assert.Equal(t, uint64(duroxide.MaxKVKeys*duroxide.MaxKVValueBytes), stats.KVTotalValueBytes)
	orphans, pages := kvDocLayout(ctx, t, p, inst)
	assert.Empty(t, orphans, "no page outlives the turn")
	assert.GreaterOrEqual(t, pages, 7, "13 MB of JSON needs pages of at most 1.5 MB")

	// Clear ten keys and continue as new: the delta merges into the store.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e", "2"), 0))
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Empty(t, item.KVSnapshot, "the snapshot is the store; the execution's own values are in its history")
	var events []duroxide.Event
	want := map[string]string{}
	for k, v := range gen1 {
		want[k] = v
	}
	for i := range 10 {
		k := fmt.Sprintf("key-%03d", i)
		events = append(events, duroxide.NewEvent(uint64(152+i), inst, 1, nil, duroxide.KeyValueCleared{Key: k}))
		delete(want, k)
	}
	events = append(events, duroxide.NewEvent(162, inst, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}))
	can := duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Test", Input: "next", Version: duroxide.StringPtr("1.0.0")}}
	md := duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew), Output: duroxide.StringPtr("next")}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, nil, []duroxide.WorkItem{can}, md, nil))
	requireKV(ctx, t, p, inst, want, "after continue-as-new")

	// Execution 2 starts from the merged store, and overwrites every key
	// while its first staged batch fails once.
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.Len(t, item.KVSnapshot, len(want))
	for k, v := range want {
		require.Equal(t, v, item.KVSnapshot[k].Value, "snapshot of %s", k)
	}
	gen2 := kvLimitValues("b")
	start := duroxide.NewEvent(1, inst, 2, nil, duroxide.OrchestrationStarted{Name: "Test", Version: "1.0.0", Input: "next"})
	turn := append([]duroxide.Event{start}, kvSetEvents(inst, 2, 2, gen2)...)
	remove = s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Fault: emulator.TooManyRequests(time.Millisecond)})
	require.Error(t, p.AckOrchestrationItem(ctx, item.LockToken, 2, turn, nil, nil, runningMetadata(), nil))
	remove()
	requireKV(ctx, t, p, inst, want, "a turn whose staged batch failed shows nothing")
	rule = finalBatch
	rule.Times, rule.Fault = 1, emulator.ApplyThenDrop()
	s.InjectFault(rule)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 2, turn, nil, nil, runningMetadata(), nil), "a lost answer of a committed turn is a success")
	requireKV(ctx, t, p, inst, gen2, "after the overwrite")
	orphans, _ = kvDocLayout(ctx, t, p, inst)
	assert.Empty(t, orphans, "the pages the overwrite retired are deleted")

	// A process dies between staging and its final batch: its pages stay
	// invisible, and the next turn deletes them.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e", "3"), 0))
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	rule = finalBatch
	rule.Fault = emulator.TooManyRequests(time.Millisecond)
	remove = s.InjectFault(rule)
	dead := map[string]string{}
	for k, v := range kvLimitValues("c") {
		if k < "key-040" {
			dead[k] = v // 2.6 MB: more than the final batch holds
		}
	}
	require.Error(t, p.AckOrchestrationItem(ctx, item.LockToken, 2, kvSetEvents(inst, 2, 152, dead), nil, nil, runningMetadata(), nil))
	remove()
	orphans, _ = kvDocLayout(ctx, t, p, inst)
	require.NotEmpty(t, orphans, "the dead turn staged pages")
	requireKV(ctx, t, p, inst, gen2, "a dead turn shows nothing")
	clock.Advance(longLock + time.Second)
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err, "the dead turn's lock expired")
	assert.Len(t, item.KVSnapshot, len(want), "the store is execution 1's; execution 2's values are its own")
	set := duroxide.NewEvent(152, inst, 2, nil, duroxide.KeyValueSet{Key: "key-000", Value: "small", LastUpdatedAtMs: 2})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 2, []duroxide.Event{set}, nil, nil, runningMetadata(), nil))
	gen2["key-000"] = "small"
	requireKV(ctx, t, p, inst, gen2, "after a small turn")
	orphans, _ = kvDocLayout(ctx, t, p, inst)
	assert.Empty(t, orphans, "the next turn deleted the dead turn's pages")
}
