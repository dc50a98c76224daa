// Package held keeps what a provider process holds of the instances it runs
// between their turns (DESIGN.md §13): their decoded history (Histories),
// so that a turn reads and decodes only the events after it, and their
// state as this process last wrote it (States: the instance document's ETag
// and what a fetch decides on, and the orchestrator-queue messages written
// to them since), so that their next fetch is one request. Neither is a
// source of truth: the provider conditions every write built from them on
// the held ETag, and reads the instance's partition when they are stale.
package held

import (
	"container/list"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Histories holds, per instance, the decoded events 1..n of its current
// execution as this process last fetched or committed them, at most max
// events over all instances (least recently used first out). Events at or
// below an execution's watermark never change, so a fetch that finds the
// instance document still naming the same document (its _rid: a deleted
// and recreated instance is a new document), the same execution and a
// watermark at least n needs only the history documents above n. Anything
// else falls back to reading the whole history.
type Histories struct {
	mu    sync.Mutex
	max   int
	total int
	lru   *list.List // of *history, most recent at the front
	byID  map[string]*list.Element
}

// history is one instance's held events.
type history struct {
	instance string
	rid      string // the instance document's _rid
	exec     uint64
	events   []duroxide.Event // event ids 1..len(events)
}

// NewHistories returns an empty holder of at most max events over all
// instances.
func NewHistories(max int) *Histories {
	return &Histories{max: max, lru: list.New(), byID: map[string]*list.Element{}}
}

// Peek returns what is held for instance: the events, capped
// (events[:n:n]) so that a caller's append never writes into the held
// array, and the document and execution they belong to.
func (h *Histories) Peek(instance string) (events []duroxide.Event, rid string, exec uint64, ok bool) {
	if h == nil {
		return nil, "", 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byID[instance]
	if !ok {
		return nil, "", 0, false
	}
	h.lru.MoveToFront(e)
	hh := e.Value.(*history)
	n := len(hh.events)
	return hh.events[:n:n], hh.rid, hh.exec, true
}

// Put holds events (ids 1..len) of instance's execution exec of document
// rid, replacing what was held, and evicts the least recently used
// instances beyond max events.
func (h *Histories) Put(instance, rid string, exec uint64, events []duroxide.Event) {
	if h == nil || rid == "" || len(events) > h.max {
		h.Drop(instance)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.byID[instance]; ok {
		h.total -= len(e.Value.(*history).events)
		h.lru.Remove(e)
	}
	h.byID[instance] = h.lru.PushFront(&history{instance: instance, rid: rid, exec: exec, events: events})
	h.total += len(events)
	h.evictLocked()
}

// evictLocked drops the least recently used instances until at most max
// events are held; the caller holds h.mu.
func (h *Histories) evictLocked() {
	for h.total > h.max {
		last := h.lru.Back()
		hh := last.Value.(*history)
		h.total -= len(hh.events)
		h.lru.Remove(last)
		delete(h.byID, hh.instance)
	}
}

// Extend holds a committed turn of instance (document rid): for a new
// execution exec, its events start afresh; for the same execution, they
// follow the held ones when exactly held events are held (the turn was
// built on them), appended in place (amortized: the capped slices get
// returned never see the appended part). Events must be in id order and
// continue the held ones; anything else drops the instance.
func (h *Histories) Extend(instance, rid string, exec uint64, newExec bool, held uint64, events []duroxide.Event) {
	if h == nil {
		return
	}
	if newExec {
		if contiguous(events, 1) {
			h.Put(instance, rid, exec, append([]duroxide.Event(nil), events...))
		} else {
			h.Drop(instance)
		}
		return
	}
	h.mu.Lock()
	e, ok := h.byID[instance]
	var hh *history
	if ok {
		hh = e.Value.(*history)
	}
	if !ok || hh.rid != rid || hh.exec != exec || uint64(len(hh.events)) != held || !contiguous(events, held+1) {
		h.mu.Unlock()
		h.Drop(instance)
		return
	}
	hh.events = append(hh.events, events...)
	h.total += len(events)
	h.lru.MoveToFront(e)
	h.evictLocked()
	h.mu.Unlock()
}

// contiguous reports whether events carry the ids first, first+1, ...
func contiguous(events []duroxide.Event, first uint64) bool {
	for i, ev := range events {
		if ev.EventID != first+uint64(i) {
			return false
		}
	}
	return true
}

// Drop forgets instance.
func (h *Histories) Drop(instance string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.byID[instance]; ok {
		h.total -= len(e.Value.(*history).events)
		h.lru.Remove(e)
		delete(h.byID, instance)
	}
}
