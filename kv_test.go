package cdb

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
