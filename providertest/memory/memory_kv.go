package memory

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// applyKV materializes the KV events of a turn the way duroxide 0.1.26's
// SQLite provider does: mutations of the running execution go to a delta
// (KeyValueSet writes a value, KeyValueCleared a tombstone, KeyValuesCleared
// tombstones every key of the delta and of the store), and when the turn
// ends the execution (status Completed, Failed or ContinuedAsNew) the delta
// is merged into the store and cleared. Reads overlay the delta on the
// store; the fetch snapshot is the store alone. The caller holds p.mu.
func (p *MemoryProvider) applyKV(instance string, delta []duroxide.Event, status *string, now uint64) {
	for _, ev := range delta {
		switch k := ev.Kind.(type) {
		case duroxide.KeyValueSet:
			p.kvDeltaOf(instance)[k.Key] = memKVDeltaRow{value: &k.Value, lastUpdatedAtMs: k.LastUpdatedAtMs}
		case duroxide.KeyValueCleared:
			p.kvDeltaOf(instance)[k.Key] = memKVDeltaRow{lastUpdatedAtMs: now}
		case duroxide.KeyValuesCleared:
			d := p.kvDeltaOf(instance)
			for key := range d {
				d[key] = memKVDeltaRow{lastUpdatedAtMs: now}
			}
			for key := range p.kvStore[instance] {
				d[key] = memKVDeltaRow{lastUpdatedAtMs: now}
			}
		}
	}
	if status == nil {
		return
	}
	switch *status {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
	default:
		return
	}
	d := p.kvDelta[instance]
	if len(d) == 0 {
		delete(p.kvDelta, instance)
		return
	}
	store := p.kvStore[instance]
	if store == nil {
		store = map[string]duroxide.KvEntry{}
		p.kvStore[instance] = store
	}
	for key, row := range d {
		if row.value == nil {
			delete(store, key)
		} else {
			store[key] = duroxide.KvEntry{Value: *row.value, LastUpdatedAtMs: row.lastUpdatedAtMs}
		}
	}
	if len(store) == 0 {
		delete(p.kvStore, instance)
	}
	delete(p.kvDelta, instance)
}

// kvDeltaOf returns the instance's delta, creating it; the caller holds p.mu.
func (p *MemoryProvider) kvDeltaOf(instance string) map[string]memKVDeltaRow {
	d := p.kvDelta[instance]
	if d == nil {
		d = map[string]memKVDeltaRow{}
		p.kvDelta[instance] = d
	}
	return d
}

// kvView returns the instance's current KV values: the store overlaid with
// the running execution's delta. The caller holds p.mu.
func (p *MemoryProvider) kvView(instance string) map[string]string {
	view := map[string]string{}
	for key, e := range p.kvStore[instance] {
		view[key] = e.Value
	}
	for key, row := range p.kvDelta[instance] {
		if row.value == nil {
			delete(view, key)
		} else {
			view[key] = *row.value
		}
	}
	return view
}

// GetKVValue returns one KV value, the running execution's delta taking
// precedence over the store; ok is false for a missing or cleared key.
func (p *MemoryProvider) GetKVValue(ctx context.Context, instance, key string) (string, bool, error) {
	if err := memCtxErr("get_kv_value", ctx); err != nil {
		return "", false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if row, ok := p.kvDelta[instance][key]; ok {
		if row.value == nil {
			return "", false, nil
		}
		return *row.value, true, nil
	}
	e, ok := p.kvStore[instance][key]
	return e.Value, ok, nil
}

// GetKVAllValues returns every KV value of the instance (empty, not nil,
// for an unknown instance).
func (p *MemoryProvider) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	if err := memCtxErr("get_kv_all_values", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.kvView(instance), nil
}
