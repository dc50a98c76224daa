// KV store: applying a turn's KV events, reading the store (GetKVValue,
// GetKVAllValues) and the view given to a turn.

package cdb

import (
	"context"
	"maps"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// KV store. duroxide materializes KeyValueSet, KeyValueCleared and
// KeyValuesCleared events at ack time into two tables (its SQLite
// provider): kv_delta, the current execution's changes (a cleared key is a
// tombstone), and kv_store, the values as of the end of the last finished
// execution; when an execution ends (Completed, Failed or ContinuedAsNew)
// the delta is merged into the store. A fetch returns the store as the KV
// snapshot (current-execution changes are rebuilt by replay); GetKVValue
// reads the delta over the store.
//
// Here each table is a root document in the instance's partition,
// "kv-store" and "kv-delta", continued in page documents when it outgrows
// the root (kv_pages.go): duroxide.MaxKVKeys keys of
// duroxide.MaxKVValueBytes each are far more than one document holds. A
// turn whose tables fit their roots writes at most two KV operations into
// its batch, whatever the number of keys it touches (KeyValuesCleared
// needs every key, which the fetch already read).

// kvTurn is the outcome of a turn's KV events.
type kvTurn struct {
	store, delta               map[string]kvValue
	storeChanged, deltaChanged bool
}

// applyKVEvents applies a turn's KV events to the store and delta (which it
// does not modify) the way duroxide's SQLite provider does: KeyValueSet
// stores the value with the event's timestamp, KeyValueCleared and
// KeyValuesCleared write tombstones stamped nowMs, and a terminal turn
// merges the delta into the store and empties it.
func applyKVEvents(store, delta map[string]kvValue, events []duroxide.Event, executionID uint64, nowMs uint64, terminal bool) kvTurn {
	t := kvTurn{store: maps.Clone(store), delta: maps.Clone(delta)}
	if t.store == nil {
		t.store = map[string]kvValue{}
	}
	if t.delta == nil {
		t.delta = map[string]kvValue{}
	}
	for _, ev := range events {
		switch k := ev.Kind.(type) {
		case duroxide.KeyValueSet:
			v := k.Value
			t.delta[k.Key] = kvValue{Value: &v, LastUpdatedAtMs: k.LastUpdatedAtMs, ExecutionID: executionID}
			t.deltaChanged = true
		case duroxide.KeyValueCleared:
			t.delta[k.Key] = kvValue{LastUpdatedAtMs: nowMs, ExecutionID: executionID}
			t.deltaChanged = true
		case duroxide.KeyValuesCleared:
			for key := range t.delta {
				t.delta[key] = kvValue{LastUpdatedAtMs: nowMs, ExecutionID: executionID}
			}
			for key := range t.store {
				t.delta[key] = kvValue{LastUpdatedAtMs: nowMs, ExecutionID: executionID}
			}
			t.deltaChanged = true
		}
	}
	if terminal && len(t.delta) > 0 {
		for key, v := range t.delta {
			if v.Value == nil {
				delete(t.store, key)
			} else {
				t.store[key] = v
			}
		}
		t.delta = map[string]kvValue{}
		t.storeChanged, t.deltaChanged = true, true
	}
	return t
}

// isTerminalStatus reports whether an execution status ends the execution.
func isTerminalStatus(s *string) bool {
	if s == nil {
		return false
	}
	switch *s {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}

// kvSnapshot returns the store as the fetch's KV snapshot.
func kvSnapshot(store kvTable) map[string]duroxide.KvEntry {
	out := map[string]duroxide.KvEntry{}
	for k, v := range store.entries() {
		if v.Value != nil {
			out[k] = duroxide.KvEntry{Value: *v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs}
		}
	}
	return out
}

// kvView returns the delta over the store: what GetKVValue reads.
func kvView(kv kvState) map[string]string {
	out := map[string]string{}
	for k, v := range kv.store.entries() {
		if v.Value != nil {
			out[k] = *v.Value
		}
	}
	for k, v := range kv.delta.entries() {
		if v.Value == nil {
			delete(out, k)
		} else {
			out[k] = *v.Value
		}
	}
	return out
}

// readKV reads an instance's KV documents with one single-partition query
// (more pages of results for tables of several megabytes).
func (p *Provider) readKV(ctx context.Context, instance string) (kvState, error) {
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.type = 'kv'", nil, queryOpts{pageSize: -1})
	if err != nil {
		return kvState{}, err
	}
	st, err := parseState(raws)
	if err != nil {
		return kvState{}, err
	}
	return st.kv, nil
}

// GetKVValue returns one KV value: the current execution's change when
// there is one (a tombstone means absent), else the stored value; ok is
// false for a missing key or instance. One single-partition query (more
// pages of results for KV tables of several megabytes).
func (p *Provider) GetKVValue(ctx context.Context, instance, key string) (string, bool, error) {
	ctx = cosmos.WithCall(ctx, "get_kv_value")
	const op = "get_kv_value"
	if err := validateInstanceID(op, instance); err != nil {
		return "", false, err
	}
	kv, err := p.readKV(ctx, instance)
	if err != nil {
		return "", false, mapError(op, err)
	}
	v, ok := kvView(kv)[key]
	return v, ok, nil
}

// GetKVAllValues returns every KV value of the instance (the delta over the
// store; empty for an unknown instance). One single-partition query (more
// pages of results for KV tables of several megabytes).
func (p *Provider) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	ctx = cosmos.WithCall(ctx, "get_kv_all_values")
	const op = "get_kv_all_values"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	kv, err := p.readKV(ctx, instance)
	if err != nil {
		return nil, mapError(op, err)
	}
	return kvView(kv), nil
}
