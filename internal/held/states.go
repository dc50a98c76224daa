package held

import (
	"cmp"
	"container/list"
	"slices"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/docs"
)

// maxHeldMessages caps the messages held per instance: an instance with
// more pending messages (a large fan-in) is fetched by the state query,
// which reads them all at once anyway.
const maxHeldMessages = 32

// State is what a fetch decides on, as this process last wrote the
// instance document (its start, or its last ack): while the document
// still carries etag, nothing else wrote it (no other process locked,
// acked, renewed or deleted the instance), so the instance is unlocked,
// its KV documents are as written, and its history ends at watermark.
type State struct {
	// absent is true when this process wrote a start to an instance it
	// knows no document of: the lock batch creates the pending instance
	// document (refused with 409 when one exists).
	Absent bool
	ETag   string
	// rid is the document's _rid ("" when this process created it and has
	// not read it back): held history must belong to the same document.
	RID string
	// context is true once the instance exists or has an execution (the
	// full path's hasContext); without it, a turn needs a start message.
	Context   bool
	Exec      uint64
	Watermark uint64
	Pinned    *docs.PinnedVersion
	// kvStore and kvDelta tell whether the KV tables' roots exist, so that
	// the lock batch reads them; kvPaged that a table continues in pages,
	// which the lock batch does not read (the partition is read instead).
	KVStore, KVDelta, KVPaged bool
}

// Message is an orchestrator-queue message of an instance this
// process holds, not locked by it since: one it wrote (or delivered), or
// one a candidate query or the change feed showed.
type Message struct {
	ID         string
	VisibleAt  int64
	EnqueuedAt int64
	Seq        string
	// start is true for a StartOrchestration message, with its
	// orchestration's name and version, and the parent instance of a
	// sub-orchestration's start (nil for a root).
	Start        bool
	StartName    string
	StartVersion *string
	StartParent  *string
}

// heldInstance is one instance's held state (nil while this process holds
// its lock, or after another change) and messages.
type heldInstance struct {
	instance string
	state    *State
	msgs     map[string]Message
}

// States holds at most max instances, least recently used out first.
// It is never a source of truth: the lock batch built from it is
// conditioned on the held ETag (If-Match) and each message on being a
// visible, unlocked orchestrator-queue message (a filter predicate), so a
// stale state costs a refused batch and the fetch falls back to reading
// the instance's partition.
type States struct {
	mu   sync.Mutex
	max  int
	lru  *list.List // of *heldInstance, most recent at the front
	byID map[string]*list.Element
}

// NewStates returns an empty holder of at most max instances.
func NewStates(max int) *States {
	return &States{max: max, lru: list.New(), byID: map[string]*list.Element{}}
}

// entryLocked returns instance's entry, created when create is set (nil
// otherwise when absent), and marks it most recently used; the caller
// holds h.mu.
func (h *States) entryLocked(instance string, create bool) *heldInstance {
	if e, ok := h.byID[instance]; ok {
		h.lru.MoveToFront(e)
		return e.Value.(*heldInstance)
	}
	if !create {
		return nil
	}
	hi := &heldInstance{instance: instance, msgs: map[string]Message{}}
	h.byID[instance] = h.lru.PushFront(hi)
	for h.lru.Len() > h.max {
		last := h.lru.Back()
		h.lru.Remove(last)
		delete(h.byID, last.Value.(*heldInstance).instance)
	}
	return hi
}

// Hold records state as instance's state after this process wrote it; with
// fresh (a start), the messages held for an earlier incarnation are
// forgotten and start is held.
func (h *States) Hold(instance string, state State, fresh bool, start *Message) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if state.ETag == "" && !state.Absent {
		h.dropLocked(instance) // nothing to condition a lock on
		return
	}
	hi := h.entryLocked(instance, true)
	hi.state = &state
	if fresh {
		hi.msgs = map[string]Message{}
	}
	if start != nil {
		hi.msgs[start.ID] = *start
	}
}

// StartWritten holds the StartOrchestration message m this process wrote
// to instance; when it holds nothing of the instance, the instance is
// taken to be absent (the lock batch's create checks it).
func (h *States) StartWritten(instance string, m Message) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(instance, false)
	if hi == nil {
		hi = h.entryLocked(instance, true)
		hi.state = &State{Absent: true}
	}
	if _, ok := hi.msgs[m.ID]; !ok && len(hi.msgs) >= maxHeldMessages {
		h.dropLocked(instance)
		return
	}
	hi.msgs[m.ID] = m
}

// Message holds an orchestrator-queue message of an instance this
// process holds (an entry without state included: its messages are needed
// once the lock held now is acked): one it wrote, or one a candidate query
// or the change feed showed, visible and unlocked from e.VisibleAt on. The
// lock batch checks each message (a filter predicate on its type,
// visibility and lock) and reads it, so a message known only by its id and
// timing is locked as well as one this process wrote.
func (h *States) Message(e candidates.Entry) {
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
	m.ID, m.VisibleAt, m.EnqueuedAt, m.Seq = e.ID, e.VisibleAt, e.EnqueuedAt, e.Seq
	hi.msgs[e.ID] = m
}

// Locked records that this process locked instance with messages ids: the
// held state ends (the lock changed the ETag) until the ack holds the
// next one, and the messages are no longer pending.
func (h *States) Locked(instance string, ids []string) {
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

// Turn returns instance's held state and the messages visible at nowMs,
// oldest first, when both exist: its held messages and those of c, the
// candidate-pool entry the fetch picked (which may know messages this
// process saw before it held the instance). An entry that saw more
// messages than it lists gives no turn.
func (h *States) Turn(c candidates.Entry, nowMs int64) (State, []Message, bool) {
	if h == nil || c.Overflow {
		return State{}, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(c.Instance, false)
	if hi == nil || hi.state == nil {
		return State{}, nil, false
	}
	var msgs []Message
	for _, m := range hi.msgs {
		if m.VisibleAt <= nowMs {
			msgs = append(msgs, m)
		}
	}
	for _, r := range c.Msgs {
		if _, held := hi.msgs[r.ID]; !held && r.VisibleAt <= nowMs {
			// Its enqueue time is not known: it goes first, as the
			// oldest the entry knows (c.EnqueuedAt) or older.
			msgs = append(msgs, Message{ID: r.ID, VisibleAt: r.VisibleAt, EnqueuedAt: c.EnqueuedAt, Seq: c.Seq})
		}
	}
	if len(msgs) > maxHeldMessages {
		return State{}, nil, false
	}
	if len(msgs) == 0 {
		return State{}, nil, false
	}
	sortOldestFirst(msgs)
	return *hi.state, msgs, true
}

// Peek returns instance's held state and its held messages visible at
// nowMs, oldest first (none is fine: an eager turn brings its own
// message), without changing anything; ok is false when no state is held
// (never, or the instance is locked by this process).
func (h *States) Peek(instance string, nowMs int64) (State, []Message, bool) {
	if h == nil {
		return State{}, nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(instance, false)
	if hi == nil || hi.state == nil {
		return State{}, nil, false
	}
	var msgs []Message
	for _, m := range hi.msgs {
		if m.VisibleAt <= nowMs {
			msgs = append(msgs, m)
		}
	}
	sortOldestFirst(msgs)
	return *hi.state, msgs, true
}

// Claim ends instance's held state, as Locked does but keeping its
// messages, when it still carries etag ("" for an absent instance's), and
// reports whether it did: the one lock built from a held state at a time
// (a held lock batch or an eager turn, whose batch is on its way) takes
// it, so that no other builds a second one that the first would refuse. The caller then calls Locked (the lock
// landed) or Drop (it did not, or its outcome is unknown).
func (h *States) Claim(instance, etag string) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.entryLocked(instance, false)
	if hi == nil || hi.state == nil || hi.state.ETag != etag {
		return false
	}
	hi.state = nil
	return true
}

// Drop forgets instance.
func (h *States) Drop(instance string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(instance)
}

func (h *States) dropLocked(instance string) {
	if e, ok := h.byID[instance]; ok {
		h.lru.Remove(e)
		delete(h.byID, instance)
	}
}

// StartOf is the held message of e, the queue entry of start.
func StartOf(e candidates.Entry, start duroxide.StartOrchestrationItem) Message {
	return Message{ID: e.ID, VisibleAt: e.VisibleAt, EnqueuedAt: e.EnqueuedAt, Seq: e.Seq,
		Start: true, StartName: start.Orchestration, StartVersion: start.Version, StartParent: start.ParentInstance}
}

// sortOldestFirst sorts msgs by enqueue time, then sequence key.
func sortOldestFirst(msgs []Message) {
	slices.SortFunc(msgs, func(a, b Message) int {
		if c := cmp.Compare(a.EnqueuedAt, b.EnqueuedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
}
