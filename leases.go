// Leases over dispatch slots: the LeaseProvider interface, SlotLease,
// SlotOwner and the in-process InMemoryLeaseProvider.

package cdb

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// LeaseProvider assigns dispatch slots to concurrent fetches, so that
// concurrent dispatchers query disjoint parts of a queue and never contend
// for the same messages (duroxide-cdb's spec §5, duroxide-cdb's architecture notes
// §5). Every fetch calls Acquire, queries only the returned lease's slots,
// and calls Release when done.
//
// duroxide-cdb's Rust LeaseProvider identifies callers by tokio task id and
// caches an assignment per task. Go has no goroutine id, so here a lease is
// held only for the duration of one fetch: the slot set travels with the
// lease, not with the caller.
type LeaseProvider interface {
	// Acquire returns a lease on a set of slots disjoint from every other
	// lease currently held, waiting until one is free or ctx ends.
	Acquire(ctx context.Context) (*SlotLease, error)
}

// SlotLease is a set of dispatch slots held by one fetch.
type SlotLease struct {
	// Slots are the leased slots in ascending order.
	Slots []uint8
	// All is true when Slots holds all NumDispatchSlots slots; a query then
	// omits the slot filter (duroxide-cdb's architecture notes §11).
	All     bool
	release func()
	once    sync.Once
}

// Release returns the lease's slots; it may be called more than once.
func (l *SlotLease) Release() {
	if l == nil || l.release == nil {
		return
	}
	l.once.Do(l.release)
}

// NewSlotLease returns a lease on a copy of slots whose Release calls
// release (which may be nil); it is for LeaseProvider implementations
// outside this package. The lease holds all slots (All) only when each of
// the 256 slots appears in slots; duplicates count once.
func NewSlotLease(slots []uint8, release func()) *SlotLease {
	var seen [NumDispatchSlots]bool
	distinct := 0
	for _, s := range slots {
		if !seen[s] {
			seen[s] = true
			distinct++
		}
	}
	return &SlotLease{Slots: slices.Clone(slots), All: distinct == NumDispatchSlots, release: release}
}

// InMemoryLeaseProvider splits the 256 dispatch slots into lanes, lane i
// owning the slots s with s % lanes == i (duroxide-cdb's spec §5.2: with 3
// lanes, 86, 85 and 85 slots). Acquire hands out a free lane, waiting when
// all are taken; Release puts it back at the end of the line, so one caller
// fetching repeatedly visits every lane in turn. With as many lanes as
// dispatchers, each dispatcher's fetch gets a lane of its own and fetches
// never query the same slots. It is safe for concurrent use; leases are
// held by fetches of one process only (cross-process coordination is the
// spec's Phase 2).
type InMemoryLeaseProvider struct {
	lanes [][]uint8
	free  chan int
}

// NewInMemoryLeaseProvider returns a provider with the given number of
// lanes (1 to 256; values outside are clamped). With one lane, every lease
// holds all 256 slots.
func NewInMemoryLeaseProvider(lanes int) *InMemoryLeaseProvider {
	if lanes < 1 {
		lanes = 1
	}
	if lanes > NumDispatchSlots {
		lanes = NumDispatchSlots
	}
	p := &InMemoryLeaseProvider{lanes: make([][]uint8, lanes), free: make(chan int, lanes)}
	for s := 0; s < NumDispatchSlots; s++ {
		p.lanes[s%lanes] = append(p.lanes[s%lanes], uint8(s))
	}
	for i := 0; i < lanes; i++ {
		p.free <- i
	}
	return p
}

// Lanes returns the number of lanes.
func (p *InMemoryLeaseProvider) Lanes() int { return len(p.lanes) }

// LaneSlots returns a copy of the slots of lane i.
func (p *InMemoryLeaseProvider) LaneSlots(i int) ([]uint8, error) {
	if i < 0 || i >= len(p.lanes) {
		return nil, fmt.Errorf("cdb: lane %d out of range 0..%d", i, len(p.lanes)-1)
	}
	return append([]uint8(nil), p.lanes[i]...), nil
}

// Acquire takes the next free lane, waiting for one when all are held.
func (p *InMemoryLeaseProvider) Acquire(ctx context.Context) (*SlotLease, error) {
	select {
	case i := <-p.free:
		return NewSlotLease(p.lanes[i], func() { p.free <- i }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SlotOwner is implemented by LeaseProviders that know how many of the
// NumDispatchSlots dispatch slots of their queue this process owns; the
// provider reports it as the gauge duroxide_cosmosdb_slots_owned {queue}
// (see README's "Metrics"). A lease provider that coordinates several processes
// (leases stored in Cosmos DB) reports its current share; one that does not
// implement SlotOwner is not reported.
type SlotOwner interface {
	// OwnedSlots returns the number of slots this process owns now, 0 to
	// NumDispatchSlots.
	OwnedSlots() int
}

// OwnedSlots returns NumDispatchSlots: the in-memory provider's lanes
// split all 256 slots among this process's dispatchers, and no other
// process takes any (SlotOwner).
func (p *InMemoryLeaseProvider) OwnedSlots() int { return NumDispatchSlots }
