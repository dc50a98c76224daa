// KV store: a turn's KV events, GetKVValue and GetKVAllValues, and how a
// table is spread over a root document and pages so that a turn's KV
// writes commit atomically whatever their size.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// KV store: applying a turn's KV events, reading the store (GetKVValue,
// GetKVAllValues) and the view given to a turn.

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
// the root (KV pages, below): duroxide.MaxKVKeys keys of
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

// KV pages: how an instance's KV store and delta are spread over documents
// (a root per table, and pages the root names when the table outgrows it),
// and how a turn's KV writes are laid out so that they commit atomically
// whatever their size.

// KV tables across documents. duroxide 0.1.27 lets an instance hold
// duroxide.MaxKVKeys (150) keys of up to duroxide.MaxKVValueBytes (64 KiB)
// each: almost 10 MB per table, and six times that once JSON escapes
// control characters, against Cosmos DB's 2 MB per document and per
// transactional batch. So each table (the store and the delta) is a root
// document with a fixed id ("kv-store", "kv-delta") that holds up to
// kvRootBytes of entries itself and names, in Pages, the page documents
// that hold the rest (up to kvPageBytes each). A table is exactly its root's
// entries plus those of the pages the root names: a KV document no root
// names is garbage that no reader uses.
//
// A turn's KV writes commit atomically the way large turns' history does.
// When they fit in the turn's final batch (beside the instance document,
// whose If-Match makes the batch the commit), the changed root and pages
// are upserted there, in place. When they do not (a batch holds 2 MB), every page the turn
// writes gets a new id, derived from the turn's lock: those pages are
// staged by batches of their own before the final batch, invisible until
// the final batch replaces the roots that name them; the pages the new
// roots no longer name are deleted once the final batch committed. A turn
// that dies between batches leaves only pages no root names, which the
// next turn that reads the partition deletes after its own commit (no turn
// can commit after another took the instance's lock, so a page no root
// names when a fetch locks the instance is never named later).
//
// Small tables (every table the 0.1.26 limits allowed, 100 keys of 16 KiB)
// fit their roots, so their turns write at most two KV documents in the
// final batch, and a fetch of an instance this process holds reads the
// roots in its lock batch, as before pages existed.

const (
	// kvRootBytes caps the entries a root holds itself, in bytes of JSON:
	// as much as a page, so that every table the 0.1.26 limits allowed
	// (100 keys of 16 KiB) stays in its root.
	kvRootBytes = kvPageBytes
	// kvPageBytes caps the entries of one page, in bytes of JSON, below
	// the 2 MB item limit with room for the document's other fields.
	kvPageBytes = 1_700_000
	// kvEntryOverheadBytes is what an entry adds to a document besides its
	// key and value (field names, execution id, timestamp, punctuation).
	kvEntryOverheadBytes = 80
)

// kvTable is one KV table as stored: its root (nil when never written) and
// the pages the root names, in its order.
type kvTable struct {
	root  *kvDoc
	pages []*kvDoc
}

// entries returns the table's entries (nil for a table never written).
func (t kvTable) entries() map[string]kvValue {
	if t.root == nil {
		return nil
	}
	out := maps.Clone(t.root.Entries)
	if out == nil {
		out = map[string]kvValue{}
	}
	for _, p := range t.pages {
		maps.Copy(out, p.Entries)
	}
	return out
}

// kvState is an instance's KV documents, read with its partition: the
// store, the delta, and the ids of the pages no root names.
type kvState struct {
	store, delta kvTable
	orphans      []string
}

// errKVPageMissing is a root naming a page the read did not return: the
// read raced a turn that replaced the table (its old pages are deleted
// after it committed). Reading again finds the new table.
var errKVPageMissing = fmt.Errorf("a KV page named by its root is missing (the KV state changed while it was read; read it again)")

// resolveKV sorts an instance's KV documents, by id, into its tables.
func resolveKV(docs map[string]*kvDoc) (kvState, error) {
	var s kvState
	named := map[string]bool{kvStoreDocID: true, kvDeltaDocID: true}
	for _, tb := range []struct {
		id string
		t  *kvTable
	}{{kvStoreDocID, &s.store}, {kvDeltaDocID, &s.delta}} {
		root := docs[tb.id]
		if root == nil {
			continue
		}
		tb.t.root = root
		for _, id := range root.Pages {
			page := docs[id]
			if page == nil {
				return kvState{}, fmt.Errorf("%w: %s names %s", errKVPageMissing, tb.id, id)
			}
			named[id] = true
			tb.t.pages = append(tb.t.pages, page)
		}
	}
	for id := range docs {
		if !named[id] {
			s.orphans = append(s.orphans, id)
		}
	}
	slices.Sort(s.orphans)
	return s, nil
}

// kvEntryBytes estimates an entry's share of a document, in bytes of JSON.
func kvEntryBytes(key string, v kvValue) int {
	n := len(key) + kvEntryOverheadBytes
	if v.Value != nil {
		b, _ := json.Marshal(*v.Value)
		n += len(b)
	}
	return n
}

func sameKVValue(a, b kvValue) bool {
	if (a.Value == nil) != (b.Value == nil) || (a.Value != nil && *a.Value != *b.Value) {
		return false
	}
	return a.LastUpdatedAtMs == b.LastUpdatedAtMs && a.ExecutionID == b.ExecutionID
}

// kvTablePlan is how a turn writes one table: the new root, the pages to
// write (new ids, or in place), and the pages the new root no longer names
// (deleted after the commit).
type kvTablePlan struct {
	root    kvDoc
	pages   []kvDoc
	retired []string
}

// kvBucket is one document of a table being laid out.
type kvBucket struct {
	id      string
	old     map[string]kvValue // its entries as stored (nil: a new page)
	entries map[string]kvValue
	size    int
	limit   int
}

func (b *kvBucket) add(key string, v kvValue, size int) {
	b.entries[key] = v
	b.size += size
}

// dirty reports whether the bucket's entries differ from what is stored.
func (b *kvBucket) dirty() bool {
	if b.old == nil || len(b.old) != len(b.entries) {
		return true
	}
	for k, v := range b.entries {
		o, ok := b.old[k]
		if !ok || !sameKVValue(o, v) {
			return true
		}
	}
	return false
}

// layoutKVTable lays out table rootID holding next, starting from old:
// keys stay on the document that holds them while it has room, so that a
// turn rewrites only the documents whose entries change; a new key goes to
// the root while it has rootLimit bytes of room, else to a page the turn
// writes anyway, else to a new page. Pages are repacked when there are
// more than twice as many as the entries need. With fresh, every page the
// turn writes gets a new id (newID), so that nothing the stored root names
// is overwritten: the turn can then stage its pages before its final batch.
func layoutKVTable(rootID string, old kvTable, next map[string]kvValue, rootLimit int, fresh bool, newID func() string) kvTablePlan {
	buckets := []*kvBucket{{id: rootID, entries: map[string]kvValue{}, limit: rootLimit}}
	where := map[string]int{}
	if old.root != nil {
		buckets[0].old = old.root.Entries
		if buckets[0].old == nil {
			buckets[0].old = map[string]kvValue{}
		}
		for k := range old.root.Entries {
			where[k] = 0
		}
		for i, p := range old.pages {
			buckets = append(buckets, &kvBucket{id: p.ID, old: p.Entries, entries: map[string]kvValue{}, limit: kvPageBytes})
			for k := range p.Entries {
				where[k] = i + 1
			}
		}
	}
	keys := slices.Sorted(maps.Keys(next))
	sizes := make(map[string]int, len(keys))
	total := 0
	for _, k := range keys {
		sizes[k] = kvEntryBytes(k, next[k])
		total += sizes[k]
	}
	repack := len(buckets)-1 > 2*(total/kvPageBytes+1)
	var pending []string
	for _, k := range keys {
		if i, ok := where[k]; ok && (i == 0 || !repack) {
			buckets[i].add(k, next[k], sizes[k])
		} else {
			pending = append(pending, k)
		}
	}
	// A document over its limit (a value grew, or the root's limit is 0)
	// gives up its last keys.
	for _, b := range buckets {
		if b.size <= b.limit {
			continue
		}
		own := slices.Sorted(maps.Keys(b.entries))
		for i := len(own) - 1; i >= 0 && b.size > b.limit; i-- {
			b.size -= sizes[own[i]]
			delete(b.entries, own[i])
			pending = append(pending, own[i])
		}
	}
	slices.Sort(pending)
	for _, k := range pending {
		placed := false
		for i, b := range buckets {
			if b.size+sizes[k] > b.limit || (i > 0 && b.old != nil && !b.dirty()) {
				continue
			}
			b.add(k, next[k], sizes[k])
			placed = true
			break
		}
		if !placed {
			b := &kvBucket{entries: map[string]kvValue{}, limit: kvPageBytes}
			b.add(k, next[k], sizes[k])
			buckets = append(buckets, b)
		}
	}

	plan := kvTablePlan{root: kvDoc{ID: rootID, Type: typeKV, Entries: buckets[0].entries}}
	for _, b := range buckets[1:] {
		switch {
		case len(b.entries) == 0:
			if b.old != nil {
				plan.retired = append(plan.retired, b.id)
			}
			continue
		case b.old == nil:
			b.id = newID()
			plan.pages = append(plan.pages, kvDoc{ID: b.id, Type: typeKV, Entries: b.entries})
		case b.dirty():
			if fresh {
				plan.retired = append(plan.retired, b.id)
				b.id = newID()
			}
			plan.pages = append(plan.pages, kvDoc{ID: b.id, Type: typeKV, Entries: b.entries})
		}
		plan.root.Pages = append(plan.root.Pages, b.id)
	}
	return plan
}

// kvPageIDs returns a generator of the ids of the pages a turn under
// lockID writes to table rootID: unique to the turn, and the same when
// the turn's ack is planned again.
func kvPageIDs(rootID, lockID string) func() string {
	n := 0
	return func() string {
		n++
		return rootID + "-" + lockID + "-" + strconv.Itoa(n)
	}
}

// kvWrites is a turn's KV writes: the operations for the final batch, the
// operations to stage before it, and the pages to delete once it
// committed.
type kvWrites struct {
	final, staged []batchOp
	retired       []string
	// store and delta are the tables' roots after the turn (nil when the
	// table still does not exist), for the held state.
	store, delta *kvDoc
}

// planKVWrites lays out a turn's KV changes. The changed tables are
// written in place in the final batch when they fit beside fixed (the
// rest of the final batch's fixed operations); otherwise their pages are
// staged under new ids and only their roots, holding no entries, go into
// the final batch. Pages no root names (kv.orphans) are retired too.
func planKVWrites(instance, lockID string, kv kvState, t kvTurn, fixed []batchOp) (kvWrites, error) {
	type change struct {
		id      string
		old     kvTable
		entries map[string]kvValue
	}
	var changes []change
	if t.storeChanged {
		changes = append(changes, change{kvStoreDocID, kv.store, t.store})
	}
	if t.deltaChanged {
		changes = append(changes, change{kvDeltaDocID, kv.delta, t.delta})
	}
	plan := func(staged bool) (kvWrites, error) {
		w := kvWrites{store: kv.store.root, delta: kv.delta.root}
		for _, c := range changes {
			limit := kvRootBytes
			if staged {
				limit = 0
			}
			tp := layoutKVTable(c.id, c.old, c.entries, limit, staged, kvPageIDs(c.id, lockID))
			tp.root.InstanceID = instance
			body, err := json.Marshal(tp.root)
			if err != nil {
				return w, err
			}
			w.final = append(w.final, upsertOp(c.id, body))
			for _, pg := range tp.pages {
				pg.InstanceID = instance
				b, err := json.Marshal(pg)
				if err != nil {
					return w, err
				}
				if len(b) > maxItemBytes {
					return w, fmt.Errorf("KV value of key %q is too large to store: its page is %d bytes; Cosmos DB items are limited to %d", sortedKeys(pg.Entries)[0], len(b), maxItemBytes)
				}
				if staged {
					w.staged = append(w.staged, upsertOp(pg.ID, b))
				} else {
					w.final = append(w.final, upsertOp(pg.ID, b))
				}
			}
			w.retired = append(w.retired, tp.retired...)
			root := tp.root
			if c.id == kvStoreDocID {
				w.store = &root
			} else {
				w.delta = &root
			}
		}
		w.retired = append(w.retired, kv.orphans...)
		// A page the turn writes again (its ack planned anew after a
		// failed attempt staged it) is not retired.
		written := map[string]bool{}
		for _, o := range append(slices.Clone(w.final), w.staged...) {
			written[o.id] = true
		}
		w.retired = slices.DeleteFunc(w.retired, func(id string) bool { return written[id] })
		slices.Sort(w.retired)
		w.retired = slices.Compact(w.retired)
		return w, nil
	}
	w, err := plan(false)
	if err != nil {
		return w, err
	}
	if len(fixed)+len(w.final) <= maxBatchOps && opsSize(fixed)+opsSize(w.final) <= maxBatchBytes {
		return w, nil
	}
	return plan(true)
}

// sortedKeys returns a KV document's keys in order.
func sortedKeys(m map[string]kvValue) []string { return slices.Sorted(maps.Keys(m)) }
