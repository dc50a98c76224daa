// Held instance states: what this process last wrote to the instances it
// runs (the instance document's ETag and what a fetch decides on, and the
// orchestrator-queue messages it wrote to them since), so that their next
// fetch is one request.

package cdb

import (
	"cmp"
	"container/list"
	"slices"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
)

// DefaultHeldInstanceStates is the default of Config.HeldInstanceStates.
const DefaultHeldInstanceStates = 10_000

// maxHeldMessages caps the messages held per instance: an instance with
// more pending messages (a large fan-in) is fetched by the state query,
// which reads them all at once anyway.
const maxHeldMessages = 32

// heldState is what a fetch decides on, as this process last wrote the
// instance document (its start, or its last ack): while the document
// still carries etag, nothing else wrote it (no other process locked,
// acked, renewed or deleted the instance), so the instance is unlocked,
// its KV documents are as written, and its history ends at watermark.
type heldState struct {
	// absent is true when this process wrote a start to an instance it
	// knows no document of: the lock batch creates the pending instance
	// document (refused with 409 when one exists).
	absent bool
	etag   string
	// rid is the document's _rid ("" when this process created it and has
	// not read it back): held history must belong to the same document.
	rid string
	// context is true once the instance exists or has an execution (the
	// full path's hasContext); without it, a turn needs a start message.
	context   bool
	exec      uint64
	watermark uint64
	pinned    *pinnedVersion
	// kvStore and kvDelta tell whether the KV tables' roots exist, so that
	// the lock batch reads them; kvPaged that a table continues in pages,
	// which the lock batch does not read (the partition is read instead).
	kvStore, kvDelta, kvPaged bool
}

// heldMessage is an orchestrator-queue message of an instance this
// process holds, not locked by it since: one it wrote (or delivered), or
// one a candidate query or the change feed showed.
type heldMessage struct {
	id         string
	visibleAt  int64
	enqueuedAt int64
	seq        string
	// start is true for a StartOrchestration message, with its
	// orchestration's name and version.
	start        bool
	startName    string
	startVersion *string
}

// heldInstance is one instance's held state (nil while this process holds
// its lock, or after another change) and messages.
type heldInstance struct {
	instance string
	state    *heldState
	msgs     map[string]heldMessage
}

// heldStates holds at most max instances, least recently used out first.
// It is never a source of truth: the lock batch built from it is
// conditioned on the held ETag (If-Match) and each message on being a
// visible, unlocked orchestrator-queue message (a filter predicate), so a
// stale state costs a refused batch and the fetch falls back to reading
// the instance's partition.
type heldStates struct {
	mu   sync.Mutex
	max  int
	lru  *list.List // of *heldInstance, most recent at the front
	byID map[string]*list.Element
}

func newHeldStates(max int) *heldStates {
	return &heldStates{max: max, lru: list.New(), byID: map[string]*list.Element{}}
}

// entryLocked returns instance's entry, created when create is set (nil
// otherwise when absent), and marks it most recently used; the caller
// holds h.mu.
func (h *heldStates) entryLocked(instance string, create bool) *heldInstance {
	if e, ok := h.byID[instance]; ok {
		h.lru.MoveToFront(e)
		return e.Value.(*heldInstance)
	}
	if !create {
		return nil
	}
	hi := &heldInstance{instance: instance, msgs: map[string]heldMessage{}}
	h.byID[instance] = h.lru.PushFront(hi)
	for h.lru.Len() > h.max {
		last := h.lru.Back()
		h.lru.Remove(last)
		delete(h.byID, last.Value.(*heldInstance).instance)
	}
	return hi
}

// hold records state as instance's state after this process wrote it; with
// fresh (a start), the messages held for an earlier incarnation are
// forgotten and start is held.
func (h *heldStates) hold(instance string, state heldState, fresh bool, start *heldMessage) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if state.etag == "" && !state.absent {
		h.dropLocked(instance) // nothing to condition a lock on
		return
	}
	hi := h.entryLocked(instance, true)
	hi.state = &state
	if fresh {
		hi.msgs = map[string]heldMessage{}
	}
	if start != nil {
		hi.msgs[start.id] = *start
	}
}

// startWritten holds the StartOrchestration message m this process wrote
// to instance; when it holds nothing of the instance, the instance is
// taken to be absent (the lock batch's create checks it).
func (h *heldStates) startWritten(instance string, m heldMessage) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(instance, false)
	if hi == nil {
		hi = h.entryLocked(instance, true)
		hi.state = &heldState{absent: true}
	}
	if _, ok := hi.msgs[m.id]; !ok && len(hi.msgs) >= maxHeldMessages {
		h.dropLocked(instance)
		return
	}
	hi.msgs[m.id] = m
}

// message holds an orchestrator-queue message of an instance this
// process holds (an entry without state included: its messages are needed
// once the lock held now is acked): one it wrote, or one a candidate query
// or the change feed showed, visible and unlocked from e.VisibleAt on. The
// lock batch checks each message (a filter predicate on its type,
// visibility and lock) and reads it, so a message known only by its id and
// timing is locked as well as one this process wrote.
func (h *heldStates) message(e candidates.Entry) {
	if h == nil || e.Worker || e.ID == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(e.Instance, false)
	if hi == nil {
		return
	}
	if _, ok := hi.msgs[e.ID]; !ok && len(hi.msgs) >= maxHeldMessages {
		h.dropLocked(e.Instance)
		return
	}
	m := hi.msgs[e.ID]
	m.id, m.visibleAt, m.enqueuedAt, m.seq = e.ID, e.VisibleAt, e.EnqueuedAt, e.Seq
	hi.msgs[e.ID] = m
}

// locked records that this process locked instance with messages ids: the
// held state ends (the lock changed the ETag) until the ack holds the
// next one, and the messages are no longer pending.
func (h *heldStates) locked(instance string, ids []string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(instance, true)
	hi.state = nil
	for _, id := range ids {
		delete(hi.msgs, id)
	}
}

// turn returns instance's held state and the messages visible at nowMs,
// oldest first, when both exist: its held messages and those of c, the
// candidate-pool entry the fetch picked (which may know messages this
// process saw before it held the instance). An entry that saw more
// messages than it lists gives no turn.
func (h *heldStates) turn(c candidates.Entry, nowMs int64) (heldState, []heldMessage, bool) {
	if h == nil || c.Overflow {
		return heldState{}, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(c.Instance, false)
	if hi == nil || hi.state == nil {
		return heldState{}, nil, false
	}
	var msgs []heldMessage
	for _, m := range hi.msgs {
		if m.visibleAt <= nowMs {
			msgs = append(msgs, m)
		}
	}
	for _, r := range c.Msgs {
		if _, held := hi.msgs[r.ID]; !held && r.VisibleAt <= nowMs {
			// Its enqueue time is not known: it goes first, as the
			// oldest the entry knows (c.EnqueuedAt) or older.
			msgs = append(msgs, heldMessage{id: r.ID, visibleAt: r.VisibleAt, enqueuedAt: c.EnqueuedAt, seq: c.Seq})
		}
	}
	if len(msgs) > maxHeldMessages {
		return heldState{}, nil, false
	}
	if len(msgs) == 0 {
		return heldState{}, nil, false
	}
	slices.SortFunc(msgs, func(a, b heldMessage) int {
		if c := cmp.Compare(a.enqueuedAt, b.enqueuedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return *hi.state, msgs, true
}

// drop forgets instance.
func (h *heldStates) drop(instance string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(instance)
}

func (h *heldStates) dropLocked(instance string) {
	if e, ok := h.byID[instance]; ok {
		h.lru.Remove(e)
		delete(h.byID, instance)
	}
}

// heldStartOf is the held message of e, the queue entry of start.
func heldStartOf(e candidates.Entry, start duroxide.StartOrchestrationItem) heldMessage {
	return heldMessage{id: e.ID, visibleAt: e.VisibleAt, enqueuedAt: e.EnqueuedAt, seq: e.Seq,
		start: true, startName: start.Orchestration, startVersion: start.Version}
}

// heldStateOf is the held state of instance document d as written with
// etag, with its KV tables' roots as written (nil: absent).
func heldStateOf(d *instanceDoc, etag string, kvStore, kvDelta *kvDoc) heldState {
	return heldState{etag: etag, rid: d.RID, context: d.hasContext(), exec: d.CurrentExecutionID,
		watermark: d.HistoryWatermark, pinned: d.PinnedDuroxideVersion, kvStore: kvStore != nil, kvDelta: kvDelta != nil,
		kvPaged: (kvStore != nil && len(kvStore.Pages) > 0) || (kvDelta != nil && len(kvDelta.Pages) > 0)}
}
