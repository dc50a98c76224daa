package candidates

import "container/heap"

// A view's entries in the order Pick hands them out, so that a pick reads
// the few oldest entries instead of every entry of the view (a 10,000-way
// fan-out puts 10,000 work items in one view, and each of their fetches
// picks one). Two lazy heaps hold pointers to the view's entries:
//
//   - ready, by (EnqueuedAt, Seq, Key): the entries that were visible
//     when last looked at, or that were never looked at;
//   - waiting, by VisibleAt: the entries a pick found not visible yet (a
//     timer), which go back to ready once their time has come.
//
// The heaps are never searched or updated in place. A node is stale when
// its entry has left the view (deleted, or replaced by another pointer) or
// when, for a ready node, the entry's order changed since (a merge pushed
// a newer node); stale nodes are dropped when they reach the top, and both
// heaps are rebuilt from the entries when they hold more than twice as
// many nodes as the view has entries. An entry has at most one valid ready
// node (Entry.inReady), so it is offered once per pick.

// readyNode is an entry in ready order, as it was when pushed.
type readyNode struct {
	enq int64
	seq string
	e   *Entry
}

// nodeHeap is a min-heap of nodes by less, for container/heap.
type nodeHeap[T any] struct {
	s    []T
	less func(a, b *T) bool
}

func (h *nodeHeap[T]) Len() int           { return len(h.s) }
func (h *nodeHeap[T]) Less(i, j int) bool { return h.less(&h.s[i], &h.s[j]) }
func (h *nodeHeap[T]) Swap(i, j int)      { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *nodeHeap[T]) Push(x any)         { h.s = append(h.s, x.(T)) }
func (h *nodeHeap[T]) Pop() any {
	var zero T
	n := h.s[len(h.s)-1]
	h.s[len(h.s)-1] = zero
	h.s = h.s[:len(h.s)-1]
	return n
}

// readyBefore orders ready nodes by (enq, seq, key).
func readyBefore(a, b *readyNode) bool {
	if a.enq != b.enq {
		return a.enq < b.enq
	}
	if a.seq != b.seq {
		return a.seq < b.seq
	}
	return a.e.Key < b.e.Key
}

// waitNode is an entry that was not visible when a pick looked at it.
type waitNode struct {
	at int64
	e  *Entry
}

// waitBefore orders waiting nodes by at.
func waitBefore(a, b *waitNode) bool { return a.at < b.at }

// live reports whether e is still the view's entry of its key.
func (v *View) live(e *Entry) bool { return v.entries[e.Key] == e }

// current reports whether n is e's valid ready node.
func (n *readyNode) current(v *View) bool {
	return v.live(n.e) && n.e.inReady && n.e.EnqueuedAt == n.enq && n.e.Seq == n.seq
}

// put makes e the view's entry of its key and offers it to picks.
func (v *View) put(e *Entry) {
	v.entries[e.Key] = e
	e.inReady = false
	v.offer(e)
}

// offer pushes e's ready node unless it has a valid one.
func (v *View) offer(e *Entry) {
	if e.inReady {
		return
	}
	e.inReady = true
	heap.Push(v.ready, readyNode{enq: e.EnqueuedAt, seq: e.Seq, e: e})
	v.compactOrder()
}

// merge folds sighting s into cur (mergeEntry) and keeps cur's place in
// the order: a new ready node when its order changed, or when it waits
// and s made it visible earlier.
func (v *View) merge(cur, s *Entry) {
	enq, seq, vis := cur.EnqueuedAt, cur.Seq, cur.VisibleAt
	mergeEntry(cur, s)
	if cur.EnqueuedAt != enq || cur.Seq != seq || cur.VisibleAt < vis {
		cur.inReady = false
		v.offer(cur)
	}
}

// compactOrder rebuilds the heaps from the entries when stale nodes
// outnumber them.
func (v *View) compactOrder() {
	if len(v.ready.s)+len(v.waiting.s) <= 2*len(v.entries)+64 {
		return
	}
	v.ready.s, v.waiting.s = v.ready.s[:0], v.waiting.s[:0]
	for _, e := range v.entries {
		e.inReady = true
		v.ready.s = append(v.ready.s, readyNode{enq: e.EnqueuedAt, seq: e.Seq, e: e})
	}
	heap.Init(v.ready)
}

// visit calls fn on v's live entries that are visible at nowMs, oldest
// first (Entry.before), until fn returns true, and returns that entry (nil
// when fn accepted none). Entries found not visible move to the waiting
// heap; those whose time has come move back first.
func (v *View) visit(nowMs int64, fn func(*Entry) bool) *Entry {
	for len(v.waiting.s) > 0 && v.waiting.s[0].at <= nowMs {
		n := heap.Pop(v.waiting).(waitNode)
		if v.live(n.e) {
			v.offer(n.e)
		}
	}
	var passed []readyNode
	var found *Entry
	for len(v.ready.s) > 0 {
		n := v.ready.s[0]
		if !n.current(v) {
			heap.Pop(v.ready)
			continue
		}
		if n.e.VisibleAt > nowMs {
			heap.Pop(v.ready)
			n.e.inReady = false
			heap.Push(v.waiting, waitNode{at: n.e.VisibleAt, e: n.e})
			continue
		}
		if fn(n.e) {
			found = n.e
			break
		}
		passed = append(passed, heap.Pop(v.ready).(readyNode))
	}
	for _, n := range passed {
		heap.Push(v.ready, n)
	}
	return found
}
