// Leases over dispatch slots: the LeaseProvider interface, SlotLease,
// SlotOwner, the in-process InMemoryLeaseProvider, and the choice of
// LeaseMode; the leases in the container are package internal/leases,
// reached through leaseStore.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
	"github.com/google/uuid"
)

// LeaseProvider assigns dispatch slots to concurrent fetches, so that
// concurrent dispatchers query disjoint parts of a queue and never contend
// for the same messages (DESIGN.md §5.1).
// Every fetch calls Acquire, queries only the returned lease's slots,
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
	// omits the slot filter (DESIGN.md §10).
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
// owning the slots s with s % lanes == i (DESIGN.md §5.2: with 3
// lanes, 86, 85 and 85 slots). Acquire hands out a free lane, waiting when
// all are taken; Release puts it back at the end of the line, so one caller
// fetching repeatedly visits every lane in turn. With as many lanes as
// dispatchers, each dispatcher's fetch gets a lane of its own and fetches
// never query the same slots. It is safe for concurrent use; leases are
// held by fetches of one process only (leases shared by processes are
// LeasesInContainer, DESIGN.md §5.3).
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

// LeaseMode says where the dispatch-slot leases of a Provider live.
type LeaseMode string

const (
	// LeasesInProcess splits the slots among the dispatchers of this
	// process only (InMemoryLeaseProvider): every process queries all 256
	// slots, so several processes race for the same candidates (safe,
	// because locking is ETag-based, but each lost race costs requests).
	LeasesInProcess LeaseMode = "in-process"
	// LeasesInContainer (the default) coordinates processes through lease
	// documents in the container: each Provider that fetches from a queue
	// owns a fair share of its slots and queries only those (and the slots
	// of owners that missed two heartbeats).
	LeasesInContainer LeaseMode = "container"
)

// Defaults of the container leases (LeasesInContainer).
const (
	// DefaultLeaseHeartbeatInterval is how often a Provider renews its
	// owner document and rebalances: 5 s, two requests per heartbeat.
	DefaultLeaseHeartbeatInterval = 5 * time.Second
	// DefaultLeaseExpiry is how long an owner document may stay unchanged
	// before the others take its slots: 30 s, six missed heartbeats, so a
	// garbage-collection pause, a throttled minute or a slow node does not
	// move leases, while the slots of a crashed process are served again
	// within half a minute. A process that stops cleanly (Close) releases
	// its slots at once and does not wait for expiry.
	DefaultLeaseExpiry = 30 * time.Second
)

// LeasePartitionKey is the logical partition (value of /instanceId) that
// holds the lease documents. It is reserved: every method that takes an
// instance id (directly or inside a work item) refuses this one with a
// permanent *ProviderError and writes nothing, so no orchestration shares
// the partition with the leases or deletes them with its own documents.
const LeasePartitionKey = "__duroxide_leases__"

// The container leases count the slots DispatchSlot does: the index is a
// compile error unless leases.NumSlots == NumDispatchSlots.
var _ = [1]struct{}{}[leases.NumSlots-NumDispatchSlots]

// containerLeases is one queue of the container leases
// (internal/leases) as a LeaseProvider and SlotOwner.
type containerLeases struct{ q *leases.Queue }

var (
	_ LeaseProvider = containerLeases{}
	_ SlotOwner     = containerLeases{}
)

// Acquire takes a free lane of the queue's share (leases.Queue.Acquire).
func (c containerLeases) Acquire(ctx context.Context) (*SlotLease, error) {
	l, err := c.q.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &SlotLease{Slots: l.Slots, All: l.All, release: l.Release}, nil
}

// OwnedSlots returns how many slots of the queue this process owns now.
func (c containerLeases) OwnedSlots() int { return c.q.OwnedSlots() }

// leaseStore is the lease partition as internal/leases reaches it: through
// the provider's retries and metrics.
type leaseStore struct{ p *Provider }

var _ leases.Store = leaseStore{}

// Query runs a query in the lease partition, pages as large as possible.
func (s leaseStore) Query(ctx context.Context, sql string, params []azcosmos.QueryParameter) ([][]byte, error) {
	return s.p.query(ctx, strp(LeasePartitionKey), sql, params, queryOpts{pageSize: -1})
}

// Create creates a lease document and returns its ETag (409 when one
// with its id exists).
func (s leaseStore) Create(ctx context.Context, body []byte) (string, error) {
	var resp azcosmos.ItemResponse
	err := s.p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		var err error
		resp, err = s.p.container.CreateItem(ctx, pk(LeasePartitionKey), body, nil)
		return err
	})
	return string(resp.ETag), err
}

// Sync reads lease document id at the primary (readDocPrimary): its
// answer's session token makes the queries that follow at least as new.
func (s leaseStore) Sync(ctx context.Context, id string) error {
	var d json.RawMessage
	_, _, err := s.p.readDocPrimary(ctx, LeasePartitionKey, id, &d)
	return err
}

// Upsert writes a lease document and returns its ETag.
func (s leaseStore) Upsert(ctx context.Context, body []byte) (string, error) {
	var resp azcosmos.ItemResponse
	err := s.p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		var err error
		resp, err = s.p.container.UpsertItem(ctx, pk(LeasePartitionKey), body, nil)
		return err
	})
	return string(resp.ETag), err
}

// Replace replaces a lease document under If-Match and returns its ETag.
func (s leaseStore) Replace(ctx context.Context, id string, body []byte, etag string) (string, error) {
	var resp azcosmos.ItemResponse
	e := azcore.ETag(etag)
	err := s.p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		var err error
		resp, err = s.p.container.ReplaceItem(ctx, pk(LeasePartitionKey), id, body, &azcosmos.ItemOptions{IfMatchEtag: &e})
		return err
	})
	return string(resp.ETag), err
}

// Delete deletes a lease document, with If-Match when etag is non-empty.
func (s leaseStore) Delete(ctx context.Context, id, etag string) error {
	return s.p.deleteDoc(ctx, LeasePartitionKey, id, etag)
}

// Batch runs lease operations as one transactional batch.
func (s leaseStore) Batch(ctx context.Context, ops []leases.Op, idempotent bool) error {
	bops := make([]batchOp, 0, len(ops))
	for _, o := range ops {
		if o.Create {
			bops = append(bops, createOp(o.ID, o.Body))
		} else {
			bops = append(bops, replaceOp(o.ID, o.Body, o.IfMatch))
		}
	}
	kind := write
	if idempotent {
		kind = idempotentWrite
	}
	_, err := s.p.runBatch(ctx, LeasePartitionKey, bops, kind, false)
	return err
}

// newLeaseCoordinator starts the container leases of p (LeasesInContainer).
func newLeaseCoordinator(p *Provider) *leases.Coordinator {
	self := leases.Self{Host: hostName(), PID: os.Getpid(), Process: processRun, Alive: leases.ProcessAlive}
	if p.cfg.leaseSelf != nil {
		self = *p.cfg.leaseSelf
	}
	return leases.New(leases.Config{
		Heartbeat: p.cfg.LeaseHeartbeatInterval,
		Expiry:    p.cfg.LeaseExpiry,
		Lanes:     [2]int{p.cfg.OrchestrationLanes, p.cfg.WorkerLanes},
		Wake:      [2]leases.Waker{p.orchPool.Wake(), p.workPool.Wake()},
		Log:       p.log,
		Owner:     p.cfg.ProcessID,
		Self:      self,
		// The store health logs the heartbeat's failed requests.
		StoreHealthReported: true,
	}, leaseStore{p})
}

// processRun identifies this run of the process among the writers of
// owner documents (leases.Self.Process): the Providers of one process
// share it, a restarted process has another. Set once at start, never
// changed.
var processRun = uuid.NewString()

// hostName is the host name, "" when the system does not say.
func hostName() string {
	h, _ := os.Hostname()
	return h
}

// defaultProcessID is Config.ProcessID's default: the host name and the
// program's name, "web-7f9c-orders". A restarted process (a container or
// a service restarted on its host) keeps it; two programs on one host
// differ; two replicas of one program on one host are told apart when
// the second registers (internal/leases).
func defaultProcessID() string {
	prog := "go"
	if exe, err := os.Executable(); err == nil {
		prog = strings.TrimSuffix(filepath.Base(exe), ".exe")
	}
	if h := hostName(); h != "" {
		return h + "-" + prog
	}
	return prog
}

// ProcessID returns this Provider's owner id among the processes that
// share its container's lease slots (LeasesInContainer): Config.ProcessID
// made a valid id, or a random id when another live process has the same
// ProcessID (logged at New's first fetch); "" with other lease modes.
func (p *Provider) ProcessID() string {
	if p.leases == nil {
		return ""
	}
	return p.leases.Owner()
}

// LeaseMoves returns how many dispatch slots this Provider has gained or
// lost since New (both queues; a slot taken and later given up counts
// twice); always 0 unless Config.Leases is LeasesInContainer.
func (p *Provider) LeaseMoves() int64 {
	if p.leases == nil {
		return 0
	}
	return p.leases.Moves()
}
