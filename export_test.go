package cdb

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// SetFetchTracer makes p report every step of its fetches to f; call it
// before p's first fetch.
func SetFetchTracer(p *Provider, f func(event string)) {
	p.fetchTracer = func(ev fetchEvent) { f(string(ev)) }
}

// InstanceInfoFromExecution is GetInstanceInfo as it was before the
// instance document mirrored the current execution's status and output: it
// always reads them from the execution document (2 point reads).
func InstanceInfoFromExecution(ctx context.Context, p *Provider, instance string) (duroxide.InstanceInfo, error) {
	info, _, err := p.instanceInfo(ctx, instance, p.readExecutionStatus)
	return info, err
}

// FreezeLeases stops (true) or resumes (false) p's lease heartbeat, as if
// its process were frozen (SIGSTOP) while its fetches still run; p must use
// LeasesInContainer.
func FreezeLeases(p *Provider, frozen bool) { p.leases.frozen.Store(frozen) }

// SuspectLeaseSlots returns the slots of queue ("orch" or "work") of
// suspect owners that p queries now besides its own.
func SuspectLeaseSlots(p *Provider, queue string) []uint8 {
	return leaseSlotsOf(p, queue, func(o *ownedSlots) []uint8 { return o.suspect })
}

// leaseSlotsOf returns a copy of what pick returns of p's queue ("orch"
// or "work"), under the queue's lock.
func leaseSlotsOf(p *Provider, queue string, pick func(*ownedSlots) []uint8) []uint8 {
	o := p.leases.queues[0]
	if queue == "work" {
		o = p.leases.queues[1]
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]uint8(nil), pick(o)...)
}

// ServeLeaseQueues makes p serve both queues as if a fetch of each always
// ran: its heartbeats register it and claim its share without a fetch (for
// tests of the rebalancing itself); p must use LeasesInContainer.
func ServeLeaseQueues(p *Provider) {
	for _, o := range p.leases.queues {
		o.pinned.Store(true)
	}
}

// OwnedLeaseSlots returns the slots of queue ("orch" or "work") p owns now.
func OwnedLeaseSlots(p *Provider, queue string) []uint8 {
	return leaseSlotsOf(p, queue, func(o *ownedSlots) []uint8 { return o.slots })
}

// ForgetHeld makes p forget what it holds of instance (its decoded history
// and its state), as a process that never ran it: a test that changes the
// stored history behind p's back (which in production only another
// process's ack does, changing the instance document too) calls it so
// that p reads what was stored.
func ForgetHeld(p *Provider, instance string) {
	p.held.drop(instance)
	p.heldStates.drop(instance)
}

// ForgetHeldState makes p forget the state it holds of instance (not its
// history), as when a message another process wrote made it read the
// instance's partition.
func ForgetHeldState(p *Provider, instance string) { p.heldStates.drop(instance) }

// LeaseHeartbeat runs one heartbeat of p's container leases now (renewal,
// lease read, rebalance), as its heartbeat goroutine does; p must use
// LeasesInContainer.
func LeaseHeartbeat(ctx context.Context, p *Provider) error { return p.leases.beat(ctx) }

// LeaseDocumentCount returns how many documents p's lease partition holds.
func LeaseDocumentCount(ctx context.Context, p *Provider) (int, error) {
	raws, err := p.query(ctx, leasePartition(), "SELECT * FROM c", nil, queryOpts{pageSize: -1})
	return len(raws), err
}
