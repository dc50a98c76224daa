package cdb

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func kvEvent(kind duroxide.EventKind) duroxide.Event { return duroxide.Event{EventID: 1, Kind: kind} }

func sp(s string) *string { return &s }

// rootTable is a KV table held in its root alone.
func rootTable(entries map[string]kvValue) kvTable { return kvTable{root: &kvDoc{Entries: entries}} }

// TestApplyKVEvents checks the materialization of KV events: set, clear,
// clear-all over the store, and the merge at the end of an execution.
func TestApplyKVEvents(t *testing.T) {
	store := map[string]kvValue{"a": {Value: sp("1"), LastUpdatedAtMs: 5}, "b": {Value: sp("2"), LastUpdatedAtMs: 5}}
	delta := map[string]kvValue{}

	turn := applyKVEvents(store, delta, []duroxide.Event{
		kvEvent(duroxide.KeyValueSet{Key: "c", Value: "3", LastUpdatedAtMs: 7}),
		kvEvent(duroxide.KeyValueCleared{Key: "a"}),
	}, 1, 100, false)
	assert.True(t, turn.deltaChanged)
	assert.False(t, turn.storeChanged)
	assert.Equal(t, map[string]string{"b": "2", "c": "3"}, kvView(kvState{store: rootTable(turn.store), delta: rootTable(turn.delta)}))
	assert.Equal(t, map[string]duroxide.KvEntry{"a": {Value: "1", LastUpdatedAtMs: 5}, "b": {Value: "2", LastUpdatedAtMs: 5}},
		kvSnapshot(rootTable(turn.store)), "the snapshot is the store, not the current execution's changes")
	assert.Equal(t, "1", *store["a"].Value, "inputs are not modified")

	turn = applyKVEvents(turn.store, turn.delta, []duroxide.Event{kvEvent(duroxide.KeyValuesCleared{}), kvEvent(duroxide.KeyValueSet{Key: "d", Value: "4", LastUpdatedAtMs: 9})}, 1, 200, false)
	assert.Equal(t, map[string]string{"d": "4"}, kvView(kvState{store: rootTable(turn.store), delta: rootTable(turn.delta)}))
	assert.Equal(t, uint64(200), turn.delta["b"].LastUpdatedAtMs, "tombstones are stamped with the ack time")

	turn = applyKVEvents(turn.store, turn.delta, nil, 1, 300, true)
	assert.True(t, turn.storeChanged)
	assert.Empty(t, turn.delta, "the delta is merged at the end of the execution")
	assert.Equal(t, map[string]duroxide.KvEntry{"d": {Value: "4", LastUpdatedAtMs: 9}}, kvSnapshot(rootTable(turn.store)))

	turn = applyKVEvents(nil, nil, nil, 2, 400, true)
	assert.False(t, turn.storeChanged || turn.deltaChanged, "nothing to write")
	assert.Empty(t, kvView(kvState{}))
}

// TestIsTerminalStatus checks which statuses end an execution.
func TestIsTerminalStatus(t *testing.T) {
	for s, want := range map[string]bool{
		duroxide.StatusCompleted: true, duroxide.StatusFailed: true, duroxide.StatusContinuedAsNew: true, duroxide.StatusRunning: false,
	} {
		assert.Equal(t, want, isTerminalStatus(&s), s)
	}
	assert.False(t, isTerminalStatus(nil))
}

// bigKVValues returns n entries of size bytes each, keys k00, k01, ...
func bigKVValues(n, size int, fill string) map[string]kvValue {
	out := map[string]kvValue{}
	for i := range n {
		out[fmt.Sprintf("k%02d", i)] = kvValue{Value: sp(strings.Repeat(fill, size)), LastUpdatedAtMs: 1, ExecutionID: 1}
	}
	return out
}

// storedTable turns a layout into the table a reader would find.
func storedTable(plan kvTablePlan, before kvTable) kvTable {
	pages := map[string]*kvDoc{}
	for _, p := range before.pages {
		pages[p.ID] = p
	}
	for _, p := range plan.pages {
		pages[p.ID] = &p
	}
	root := plan.root
	t := kvTable{root: &root}
	for _, id := range root.Pages {
		t.pages = append(t.pages, pages[id])
	}
	return t
}

// TestLayoutKVTable checks how a KV table is spread over documents: a
// small table stays in its root; a large one fills pages within the item
// limit; a change rewrites only the page holding the changed key (in
// place, or under a new id when the turn stages it); emptied pages are
// retired.
func TestLayoutKVTable(t *testing.T) {
	t.Parallel()
	ids := func(turn string) func() string { return kvPageIDs(kvStoreDocID, turn) }
	small := bigKVValues(100, 16<<10, "s")
	plan := layoutKVTable(kvStoreDocID, kvTable{}, small, kvRootBytes, false, ids("turn1"))
	assert.Empty(t, plan.pages, "the 0.1.26 limits fit the root")
	assert.Len(t, plan.root.Entries, 100)

	big := bigKVValues(150, 64<<10, "b")
	plan = layoutKVTable(kvStoreDocID, kvTable{}, big, kvRootBytes, false, ids("turn2"))
	table := storedTable(plan, kvTable{})
	assert.True(t, maps.EqualFunc(big, table.entries(), sameKVValue), "the table reads back")
	assert.Len(t, plan.pages, 5, "150 x 64 KiB: 25 keys in the root and in each page")
	for _, p := range plan.pages {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		assert.Less(t, len(b), maxItemBytes)
	}

	changed := maps.Clone(big)
	changed["k149"] = kvValue{Value: sp("new"), LastUpdatedAtMs: 2, ExecutionID: 1}
	changed["k99"] = kvValue{Value: sp("new"), LastUpdatedAtMs: 2, ExecutionID: 1}
	delete(changed, "k00")
	plan = layoutKVTable(kvStoreDocID, table, changed, kvRootBytes, false, ids("turn3"))
	assert.Len(t, plan.pages, 2, "only the pages holding k99 and k149 are rewritten (and the root, which held k00)")
	assert.Equal(t, table.root.Pages, plan.root.Pages, "in place: the pages keep their ids")
	assert.Empty(t, plan.retired)
	assert.True(t, maps.EqualFunc(changed, storedTable(plan, table).entries(), sameKVValue), "the table reads back")

	plan = layoutKVTable(kvStoreDocID, table, changed, 0, true, ids("turn4"))
	assert.NotEmpty(t, plan.retired, "staged: the rewritten pages get new ids, the old ones retire")
	for _, p := range plan.pages {
		assert.NotContains(t, table.root.Pages, p.ID, "a staged page never overwrites a page the stored root names")
	}
	assert.Empty(t, plan.root.Entries, "a staged table keeps nothing in its root")
	assert.True(t, maps.EqualFunc(changed, storedTable(plan, table).entries(), sameKVValue), "the table reads back")

	plan = layoutKVTable(kvStoreDocID, table, map[string]kvValue{}, kvRootBytes, false, ids("turn5"))
	assert.Empty(t, plan.root.Pages)
	assert.ElementsMatch(t, table.root.Pages, plan.retired, "an emptied table retires every page")
}
