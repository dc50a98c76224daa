package cdb

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
)

// SetFetchTracer makes p report every step of its fetches to f; call it
// before p's first fetch.
func SetFetchTracer(p *Provider, f func(event string)) {
	p.fetchTracer = func(ev fetchtrace.Event) { f(string(ev)) }
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
func FreezeLeases(p *Provider, frozen bool) { p.leases.Freeze(frozen) }

// SuspectLeaseSlots returns the slots of queue ("orch" or "work") of
// suspect owners that p queries now besides its own.
func SuspectLeaseSlots(p *Provider, queue string) []uint8 {
	return leaseQueue(p, queue).Suspect()
}

// leaseQueue returns p's container lease share of queue ("orch" or
// "work").
func leaseQueue(p *Provider, queue string) *leases.Queue {
	if queue == "work" {
		return p.leases.Queue(1)
	}
	return p.leases.Queue(0)
}

// ServeLeaseQueues makes p serve both queues as if a fetch of each always
// ran: its heartbeats register it and claim its share without a fetch (for
// tests of the rebalancing itself); p must use LeasesInContainer.
func ServeLeaseQueues(p *Provider) {
	p.leases.Queue(0).Pin()
	p.leases.Queue(1).Pin()
}

// OwnedLeaseSlots returns the slots of queue ("orch" or "work") p owns now.
func OwnedLeaseSlots(p *Provider, queue string) []uint8 {
	return leaseQueue(p, queue).Slots()
}

// ForgetHeld makes p forget what it holds of instance (its decoded history
// and its state), as a process that never ran it: a test that changes the
// stored history behind p's back (which in production only another
// process's ack does, changing the instance document too) calls it so
// that p reads what was stored.
func ForgetHeld(p *Provider, instance string) {
	p.held.Drop(instance)
	p.heldStates.Drop(instance)
}

// ForgetHeldState makes p forget the state it holds of instance (not its
// history), as when a message another process wrote made it read the
// instance's partition.
func ForgetHeldState(p *Provider, instance string) { p.heldStates.Drop(instance) }

// LeaseHeartbeat runs one heartbeat of p's container leases now (renewal,
// lease read, rebalance), as its heartbeat goroutine does; p must use
// LeasesInContainer.
func LeaseHeartbeat(ctx context.Context, p *Provider) error { return p.leases.Beat(ctx) }

// LeaseDocumentCount returns how many documents p's lease partition holds.
func LeaseDocumentCount(ctx context.Context, p *Provider) (int, error) {
	raws, err := leaseStore{p}.Query(ctx, "SELECT * FROM c", nil)
	return len(raws), err
}

// DisableSessionTokens stops (true) or restarts (false) p's reads from
// carrying its session tokens (SessionTokenPolicy), for tests that show
// what a read without them sees on a lagging account.
func DisableSessionTokens(p *Provider, off bool) { p.session.SetDisabled(off) }

// SetLeaseSelf makes a provider opened with cfg say, in its lease owner
// document, that it runs on host with pid in process run process, and
// judge other pids on its host alive by alive: a test's stand-in for
// another process.
func SetLeaseSelf(cfg *Config, host string, pid int, process string, alive func(pid int) bool) {
	cfg.leaseSelf = &leases.Self{Host: host, PID: pid, Process: process, Alive: alive}
}

// FreeEagerWaiters returns how many orchestration and work-item fetches of
// p wait for work and can be handed some (eager dispatch).
func FreeEagerWaiters(p *Provider) (orch, work int) {
	return p.orchWaiters.Free(), p.workWaiters.Free()
}
