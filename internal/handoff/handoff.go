// Package handoff is the meeting point of eager dispatch (DESIGN.md §17):
// the fetches of one provider process that found no work and wait for some
// (the runtime long-polls, so an idle dispatcher sits inside a fetch) are
// the process's free capacity, and an ack that can lock the next piece of
// work in its own transactional batch hands it to one of them instead of
// leaving it for a fetch to find and lock with requests of its own.
//
// The protocol guarantees that a locked item is never left without an
// owner:
//
//  1. A fetch about to wait registers a Waiter with its parameters (P: lock
//     timeout, filters) and waits on Ready beside its other wake-ups.
//  2. An ack that wants to dispatch eagerly Reserves a matching waiter
//     before it sends its batch: the waiter leaves the free set at once, so
//     no two acks hand work to one waiter, and no free waiter means no
//     eager dispatch (the ack is exactly the plain one).
//  3. After the batch, the ack calls Deliver with the item it locked for
//     the waiter, or Fail when it locked nothing for it. Exactly one of
//     them, exactly once: the reserving code owns the reservation.
//  4. The fetch, whatever woke it (its poll timer, other work, its
//     context's end), calls Leave: a free waiter just leaves; a reserved
//     one waits for the outcome (it comes within the batch's round trip)
//     and takes it, so the item delivered is always owned by a fetch.
//
// A fetch that is querying or locking on its own is not registered, hence
// not reservable. Close makes Reserve and Register refuse; waiters already
// reserved still get their outcome. The package starts no goroutine.
package handoff

import "sync"

// Waiters is the set of waiting fetches of one queue of one process. The
// zero value is not usable: create it with New. Its methods are safe for
// concurrent use.
type Waiters[P, T any] struct {
	mu     sync.Mutex
	free   []*Waiter[P, T] // registered and not reserved, oldest first
	closed bool
}

// New returns an empty set of waiters.
func New[P, T any]() *Waiters[P, T] { return &Waiters[P, T]{} }

// state is a waiter's place in the protocol.
type state int

const (
	stateFree state = iota
	stateReserved
	stateLeft
)

// Waiter is one waiting fetch, with the parameters its item must satisfy.
type Waiter[P, T any] struct {
	// Params are the fetch's parameters, as given to Register.
	Params P
	set    *Waiters[P, T]
	state  state
	// out receives the outcome of a reservation (buffered: the ack never
	// blocks on it); ready is closed with it.
	out     chan outcome[T]
	ready   chan struct{}
	settled bool
}

type outcome[T any] struct {
	item T
	ok   bool
}

// Register adds a waiting fetch with parameters params and returns it;
// nil when ws is nil (eager dispatch off) or closed. A nil *Waiter is
// valid for Ready (a nil channel: never ready) and Leave (nothing).
func (ws *Waiters[P, T]) Register(params P) *Waiter[P, T] {
	if ws == nil {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil
	}
	w := &Waiter[P, T]{Params: params, set: ws, out: make(chan outcome[T], 1), ready: make(chan struct{})}
	ws.free = append(ws.free, w)
	return w
}

// Reserve takes the longest-waiting free waiter whose parameters match
// (match returns true) (nil when ws is nil or closed, or none matches). The caller must
// then call Deliver or Fail on it exactly once.
func (ws *Waiters[P, T]) Reserve(match func(P) bool) *Waiter[P, T] {
	if ws == nil {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil
	}
	for i, w := range ws.free {
		if match(w.Params) {
			ws.free = append(ws.free[:i], ws.free[i+1:]...)
			w.state = stateReserved
			return w
		}
	}
	return nil
}

// Free returns how many waiters are free (registered, not reserved).
func (ws *Waiters[P, T]) Free() int {
	if ws == nil {
		return 0
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.free)
}

// Close makes Register and Reserve refuse from now on and forgets the free
// waiters (their fetches leave on their own wake-ups, the provider's
// close among them). Reserved waiters still get their outcome. Idempotent.
func (ws *Waiters[P, T]) Close() {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	for _, w := range ws.free {
		w.state = stateLeft
	}
	ws.free = nil
}

// Deliver hands item to reserved waiter w. It panics when w was not
// reserved or was already settled: that is a bug of the reserving code,
// which would lose a lock.
func (w *Waiter[P, T]) Deliver(item T) { w.settle(outcome[T]{item: item, ok: true}) }

// Fail tells reserved waiter w that no item comes: its fetch goes on
// polling. Calling Fail on a nil waiter does nothing.
func (w *Waiter[P, T]) Fail() {
	if w != nil {
		w.settle(outcome[T]{})
	}
}

func (w *Waiter[P, T]) settle(o outcome[T]) {
	w.set.mu.Lock()
	if w.state != stateReserved || w.settled {
		w.set.mu.Unlock()
		panic("handoff: outcome for a waiter that is not reserved, or settled twice")
	}
	w.settled = true
	w.set.mu.Unlock()
	w.out <- o
	close(w.ready)
}

// Ready is closed once a reservation's outcome arrived (nil for a nil
// waiter: a channel that never is).
func (w *Waiter[P, T]) Ready() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.ready
}

// Leave ends the wait of w and returns the item delivered to it, ok false
// when none was (never reserved, or reserved and failed). A reserved waiter
// blocks until its outcome arrives: the reserving ack sends it within its
// batch's round trip. A nil waiter returns at once.
func (w *Waiter[P, T]) Leave() (item T, ok bool) {
	if w == nil {
		return item, false
	}
	ws := w.set
	ws.mu.Lock()
	switch w.state {
	case stateFree:
		for i, f := range ws.free {
			if f == w {
				ws.free = append(ws.free[:i], ws.free[i+1:]...)
				break
			}
		}
		w.state = stateLeft
		ws.mu.Unlock()
		return item, false
	case stateLeft:
		ws.mu.Unlock()
		return item, false
	}
	ws.mu.Unlock()
	o := <-w.out
	ws.mu.Lock()
	w.state = stateLeft
	ws.mu.Unlock()
	return o.item, o.ok
}
