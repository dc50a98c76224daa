// KV store: applying a turn's KV events, reading the store (GetKVValue,
// GetKVAllValues) and the view given to a turn.

package cdb

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// KV store. duroxide materializes KeyValueSet, KeyValueCleared and
// KeyValuesCleared events at ack time into two tables (its 0.1.26 SQLite
// provider): kv_delta, the current execution's changes (a cleared key is a
// tombstone), and kv_store, the values as of the end of the last finished
// execution; when an execution ends (Completed, Failed or ContinuedAsNew)
// the delta is merged into the store. A fetch returns the store as the KV
// snapshot (current-execution changes are rebuilt by replay); GetKVValue
// reads the delta over the store.
//
// Here each table is one document in the instance's partition, "kv-store"
// and "kv-delta": an instance holds at most duroxide.MaxKVKeys keys of at
// most duroxide.MaxKVValueBytes each, so each document fits an item, and a
// turn writes at most two KV operations into its batch, whatever the number
// of keys it touches (KeyValuesCleared needs every key, which the fetch
// already read).

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

// kvEntries returns a document's entries, or nil for a missing document.
func kvEntries(d *kvDoc) map[string]kvValue {
	if d == nil {
		return nil
	}
	return d.Entries
}

// kvSnapshot returns the store as the fetch's KV snapshot.
func kvSnapshot(store *kvDoc) map[string]duroxide.KvEntry {
	out := map[string]duroxide.KvEntry{}
	for k, v := range kvEntries(store) {
		if v.Value != nil {
			out[k] = duroxide.KvEntry{Value: *v.Value, LastUpdatedAtMs: v.LastUpdatedAtMs}
		}
	}
	return out
}

// kvView returns the delta over the store: what GetKVValue reads.
func kvView(store, delta *kvDoc) map[string]string {
	out := map[string]string{}
	for k, v := range kvEntries(store) {
		if v.Value != nil {
			out[k] = *v.Value
		}
	}
	for k, v := range kvEntries(delta) {
		if v.Value == nil {
			delete(out, k)
		} else {
			out[k] = *v.Value
		}
	}
	return out
}

// kvOps returns the batch operations that write a turn's KV documents.
func kvOps(instance string, t kvTurn) ([]batchOp, error) {
	var ops []batchOp
	write := func(id string, entries map[string]kvValue) error {
		body, err := json.Marshal(kvDoc{ID: id, InstanceID: instance, Type: typeKV, Entries: entries})
		if err != nil {
			return err
		}
		ops = append(ops, upsertOp(id, body))
		return nil
	}
	if t.storeChanged {
		if err := write(kvStoreDocID, t.store); err != nil {
			return nil, err
		}
	}
	if t.deltaChanged {
		if err := write(kvDeltaDocID, t.delta); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

// readKV reads an instance's KV documents with one single-partition query.
func (p *Provider) readKV(ctx context.Context, instance string) (store, delta *kvDoc, err error) {
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.type = 'kv'", nil, queryOpts{})
	if err != nil {
		return nil, nil, err
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, nil, err
	}
	return st.kvStore, st.kvDelta, nil
}

// GetKVValue returns one KV value: the current execution's change when
// there is one (a tombstone means absent), else the stored value; ok is
// false for a missing key or instance. One single-partition query.
func (p *Provider) GetKVValue(ctx context.Context, instance, key string) (string, bool, error) {
	ctx = withCall(ctx, "get_kv_value")
	const op = "get_kv_value"
	if err := validateInstanceID(op, instance); err != nil {
		return "", false, err
	}
	store, delta, err := p.readKV(ctx, instance)
	if err != nil {
		return "", false, mapError(op, err)
	}
	v, ok := kvView(store, delta)[key]
	return v, ok, nil
}

// GetKVAllValues returns every KV value of the instance (the delta over the
// store; empty for an unknown instance). One single-partition query.
func (p *Provider) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	ctx = withCall(ctx, "get_kv_all_values")
	const op = "get_kv_all_values"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	store, delta, err := p.readKV(ctx, instance)
	if err != nil {
		return nil, mapError(op, err)
	}
	return kvView(store, delta), nil
}
