// Package leases keeps the dispatch-slot leases stored in the container
// (cdb.LeasesInContainer): several processes (replicas of a
// service) share one container and split the NumSlots dispatch
// slots of each queue among themselves, so that their candidate queries
// do not overlap (DESIGN.md §5.3: lease documents in a reserved partition,
// optimistic concurrency, heartbeat renewal, expiry-based takeover).
//
// The documents live in the logical partition PartitionKey:
//   - one owner document per Provider ("owner-<uuid>"), replaced at every
//     heartbeat; its ETag changing is the owner's sign of life;
//   - one slot document per queue and slot ("slot-orch-017",
//     "slot-work-017"), whose owner field names the Provider that owns the
//     slot ("" when free). Every change of a slot document is conditioned
//     on the ETag that was read (If-Match), so two processes never both
//     win the same slot.
//
// A Provider takes part only in the queues it serves: it registers (writes
// its owner document, which lists the queues it fetches from) at the first
// fetch of a queue, and gives a queue's slots up at the first heartbeat
// that finds no fetch of that queue for a heartbeat interval (its
// dispatchers stopped, or all of them are busy with long activities); when
// it serves neither queue it deletes its owner document and its heartbeat
// sends nothing. So a process that only starts orchestrations and reads
// their status (a web front end) never holds slots, and a Provider whose
// runtime stopped without Close strands its slots for at most two
// heartbeats.
//
// Liveness is judged by observation, never by comparing clocks of two
// processes: a process considers another owner dead when that owner's
// document keeps the same ETag for LeaseExpiry on its own clock; it may
// then take the dead owner's slots (and delete its owner document). An
// owner seen for the first time is taken to have last renewed when the
// service's timestamp (_ts, the server's clock, whole seconds) of its
// document says, measured against this process's own owner document just
// written, less a second: a process restarted after a crash waits only for
// the rest of its predecessor's expiry. A Provider whose own renewal is
// LeaseExpiry old (its process was frozen, or throttled for that long)
// stops handing out slots until it has renewed and read the slot documents
// again. Instance locks stay ETag-based, so even a process that still
// believes it owns a slot it lost cannot commit a turn twice.
//
// The provider (package cdb) reaches the container through Store, which
// adds its retries and metrics; it starts a Coordinator with
// New, notes each fetch with FetchStarted, hands it the lease documents
// the change feed delivers (Observed), and lets its fetches take Leases
// from the two Queues. This package never imports the provider.
package leases

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// NumSlots is the number of dispatch slots of each queue
// (cdb.NumDispatchSlots).
const NumSlots = 256

// PartitionKey is the logical partition (value of /instanceId) that holds
// the lease documents (cdb.LeasePartitionKey).
const PartitionKey = "__duroxide_leases__"

// maxBatchOps is the service's limit of operations in one transactional
// batch.
const maxBatchOps = 100

// Store is the lease partition (PartitionKey) of the container, as the
// provider reaches it: with its retries (every method but Batch with
// idempotent false retries transient failures) and its request metrics.
// Errors are those of the Cosmos DB SDK (status codes
// readable with cosmos.StatusCode), *cosmos.AmbiguousError for a write
// whose outcome is unknown, cosmos.ErrClosed after the provider closed.
type Store interface {
	// Query runs a query in the lease partition and returns the raw
	// documents of every page (pages as large as the service allows).
	Query(ctx context.Context, sql string, params []azcosmos.QueryParameter) ([][]byte, error)
	// Create creates document body and returns its ETag (409 when a
	// document with its id exists).
	Create(ctx context.Context, body []byte) (etag string, err error)
	// Upsert writes document body and returns its new ETag.
	Upsert(ctx context.Context, body []byte) (etag string, err error)
	// Replace replaces document id with body under If-Match etag and
	// returns its new ETag (412 when it changed, 404 when it is gone).
	Replace(ctx context.Context, id string, body []byte, etag string) (newETag string, err error)
	// Delete deletes document id, with If-Match when etag is non-empty.
	Delete(ctx context.Context, id, etag string) error
	// Batch runs ops as one transactional batch. When idempotent is false,
	// a lost answer is an *cosmos.AmbiguousError and is not sent again.
	Batch(ctx context.Context, ops []Op, idempotent bool) error
	// Sync reads document id at the partition's primary replica (nil
	// when it is missing too), so that the queries made after it are at
	// least as new as the primary was then (its answer's session token):
	// a write whose answer was lost brought no token of its own.
	Sync(ctx context.Context, id string) error
}

// Op is one operation of a lease batch: the creation of a slot document
// (Create) or its replacement under If-Match IfMatch.
type Op struct {
	Create  bool
	ID      string
	Body    []byte
	IfMatch string
}

func createOp(id string, body []byte) Op { return Op{Create: true, ID: id, Body: body} }
func replaceOp(id string, body []byte, etag string) Op {
	return Op{ID: id, Body: body, IfMatch: etag}
}

// Waker is told when a queue gained slots, so that waiting fetches query
// them now (the candidate pool's notifier).
type Waker interface {
	// Notify wakes the waiting fetches of the queue.
	Notify()
}

// Config is what a Coordinator needs besides its Store.
type Config struct {
	// Heartbeat is how often the owner document is renewed and the slots
	// rebalanced (cdb.Config.LeaseHeartbeatInterval).
	Heartbeat time.Duration
	// Expiry is how long another owner's document may stay unchanged
	// before its slots are taken (cdb.Config.LeaseExpiry).
	Expiry time.Duration
	// Lanes is the number of lanes of each queue (0 orchestrations, 1
	// work items): its concurrent fetches, 1 to NumSlots.
	Lanes [2]int
	// Wake is told when a queue gained slots.
	Wake [2]Waker
	// Log receives the heartbeat's failures and lost answers.
	Log *zap.Logger
	// Owner is this Provider's stable identity (cdb.Config.ProcessID; any
	// text, made a valid id by OwnerID): a Provider that registers under
	// the identity of a dead predecessor takes its slots at once. "" gives
	// a random identity.
	Owner string
	// Self says who this Provider is, to tell a predecessor from a twin.
	Self Self
	// StoreHealthReported: the provider logs every failed request itself
	// (with its cause, on a backoff), so a failed heartbeat is logged at
	// Debug, not at Warn every heartbeat of an outage.
	StoreHealthReported bool
}

// Lease is a set of slots of one Queue held by one fetch.
type Lease struct {
	// Slots are the leased slots in ascending order.
	Slots []uint8
	// All is true when Slots holds all NumSlots slots.
	All     bool
	release func()
}

// Release returns the lease's lane to its queue; call it exactly once.
func (l *Lease) Release() { l.release() }

// Lease document types (the type field): the change feed hands documents
// of these types in PartitionKey to Coordinator.Observed.
const (
	OwnerType = "lease_owner"
	SlotType  = "lease_slot"
)

// leaseQueues are the two queues whose slots are leased, in the order of
// Coordinator.queues.
var leaseQueues = [2]string{"orch", "work"}

// leaseDoc is a lease document as stored.
type leaseDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	Type       string `json:"type"`
	Owner      string `json:"owner"`
	Queue      string `json:"queue,omitempty"`
	Slot       int    `json:"slot"`
	Beat       int64  `json:"beat,omitempty"`
	// Leaving marks a slot document released by an owner that serves
	// neither queue any more (Close, or no fetch for a heartbeat): its
	// owner document is deleted, which the change feed does not show, so
	// every other owner rebalances when it sees such a release
	// (Observed), not only the one whose home range holds the slot.
	Leaving bool `json:"leaving,omitempty"`
	// Queues lists the queues (leaseQueues names) an owner serves;
	// absent (an owner written before the field existed) means both.
	Queues []string `json:"queues,omitempty"`
	// HeartbeatMs is the owner's LeaseHeartbeatInterval (ms), so that a
	// process with a shorter one does not suspect it (suspectAfter).
	HeartbeatMs int64 `json:"heartbeatMs,omitempty"`
	// Host, PID, Process and Instance say which Provider wrote an owner
	// document (Self), so that one restarted under the same identity
	// tells its dead predecessor from a live twin (identity.go).
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Process  string `json:"process,omitempty"`
	Instance string `json:"instance,omitempty"`
	ETag     string `json:"_etag,omitempty"`
	Ts       int64  `json:"_ts,omitempty"`
}

// serves reports whether owner document d serves queue q.
func (d leaseDoc) serves(q int) bool {
	return d.Queues == nil || slices.Contains(d.Queues, leaseQueues[q])
}

func slotDocID(queue string, slot int) string { return fmt.Sprintf("slot-%s-%03d", queue, slot) }

// body is the document as written (no system properties).
func (d leaseDoc) body() []byte {
	d.ETag, d.Ts = "", 0
	b, _ := json.Marshal(d)
	return b
}

// observedOwner is what this process last saw of another owner: its
// document's ETag and when (local monotonic clock) the ETag last changed.
type observedOwner struct {
	etag    string
	changed time.Time
	queues  string // the queues it serves, as its document lists them
	warned  bool   // its silence was logged (logSilent)
}

// silentOwner is an owner whose document stopped changing: for how long,
// and whether its lease expired.
type silentOwner struct {
	doc     leaseDoc
	silent  time.Duration
	expired bool
}

// logSilent says which owners' slots this process waits for, and for how
// long: once per silence, when the owner becomes suspect (WARN: its slots
// are queried by the others meanwhile, and taken when its lease expires),
// and when its lease expired (INFO: taken over now). Owners that hold no
// slot are not mentioned.
func (c *Coordinator) logSilent(silent []silentOwner, slots [2]map[int]leaseDoc) {
	for _, so := range silent {
		held := 0
		for q := range slots {
			for _, d := range slots[q] {
				if d.Owner == so.doc.Owner {
					held++
				}
			}
		}
		if held == 0 {
			continue
		}
		fields := []zap.Field{zap.String("owner", so.doc.Owner), zap.String("owner_host", so.doc.Host), zap.Int("owner_pid", so.doc.PID),
			zap.Int("slots", held), zap.Duration("silent_for", so.silent.Round(time.Millisecond))}
		if so.expired {
			c.log.Info("taking over the dispatch slots of an owner whose lease expired", fields...)
			continue
		}
		c.log.Warn("waiting for the dispatch slots of an owner that stopped renewing its lease (crashed?): its messages are served by the other processes meanwhile, and its slots taken when its lease expires",
			append(fields, zap.Duration("taken_in", (c.expiry-so.silent).Round(time.Millisecond)))...)
	}
}

// Coordinator keeps this Provider's share of the slots of both
// queues: one goroutine renews, reads and rebalances every heartbeat.
type Coordinator struct {
	store Store
	log   *zap.Logger
	wake  [2]Waker
	// owner is this Provider's owner id: its stable identity
	// (Config.Owner) or, when that is shared with another live process, a
	// random one (identity.go). Changed only under beatMu.
	owner atomic.Pointer[string]
	self  Self
	// healthReported: Config.StoreHealthReported.
	healthReported bool
	// checked: the owner document of the stable identity was looked at
	// (identity.go: a predecessor's, or a live twin's).
	checked   bool
	heartbeat time.Duration
	expiry    time.Duration
	queues    [2]*Queue

	// beatMu serializes heartbeats (the goroutine's, those a first fetch
	// runs and those the change feed asks for) and guards closed.
	beatMu sync.Mutex
	closed bool // close ran: a fetch racing with Close registers nothing

	mu        sync.Mutex // guards the fields below
	ownerETag string     // "" while this Provider is not registered
	lastRenew time.Time
	published [2]bool // the queues the owner document last written serves
	seen      map[string]observedOwner

	moves  atomic.Int64
	frozen atomic.Bool // test hook: the heartbeat skips its work
	// kick asks the heartbeat goroutine for a heartbeat now: the change
	// feed showed a slot another owner released, or an owner that joined
	// or changed its queues (Coordinator.Observed).
	kick     chan struct{}
	lastBeat atomic.Int64 // when the last heartbeat ended (Unix ns)
	stop     chan struct{}
	done     chan struct{}
}

// minKickGap is the least time from one heartbeat to the next that a
// change-feed observation asks for; it keeps a provider's own lease
// writes, which its reader sees too, from running more than one extra
// heartbeat.
const minKickGap = 100 * time.Millisecond

// New starts the heartbeat goroutine of a Coordinator over store; it
// sends nothing until the first fetch. Stop it with Close.
func New(cfg Config, store Store) *Coordinator {
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	c := &Coordinator{
		store:          store,
		log:            log,
		wake:           cfg.Wake,
		self:           cfg.Self,
		healthReported: cfg.StoreHealthReported,
		heartbeat:      cfg.Heartbeat,
		expiry:         cfg.Expiry,
		seen:           map[string]observedOwner{},
		kick:           make(chan struct{}, 1),
		stop:           make(chan struct{}),
		done:           make(chan struct{}),
	}
	owner := OwnerID(cfg.Owner)
	if cfg.Owner == "" {
		owner, c.checked = uuid.NewString(), true
	}
	c.owner.Store(&owner)
	if c.self.Instance == "" {
		c.self.Instance = uuid.NewString()
	}
	c.queues[0] = newQueue(c, cfg.Lanes[0])
	c.queues[1] = newQueue(c, cfg.Lanes[1])
	go c.loop()
	return c
}

// FetchStarted notes a fetch of queue q (0 orchestrations, 1 work items)
// and returns the function that notes its end. The first fetch of a queue
// this Provider does not serve yet runs a heartbeat at once, which
// registers it and claims its share, so that the fetch queries slots; when
// that heartbeat fails (after the retries of any write) the fetch fails
// with its error, and the next fetch tries again.
func (c *Coordinator) FetchStarted(ctx context.Context, q int) (func(), error) {
	o := c.queues[q]
	o.fetches.Add(1)
	done := func() {
		o.lastFetch.Store(time.Now().UnixNano())
		o.fetches.Add(-1)
	}
	if !o.serving.Load() && !c.frozen.Load() {
		c.beatMu.Lock()
		var err error
		if !o.serving.Load() {
			err = c.beatLocked(cosmos.WithCall(ctx, "lease_heartbeat"), false)
		}
		c.beatMu.Unlock()
		if err != nil {
			done()
			return nil, fmt.Errorf("claim dispatch-slot leases: %w", err)
		}
	}
	return done, nil
}

func (c *Coordinator) loop() {
	defer close(c.done)
	t := time.NewTicker(c.heartbeat)
	defer t.Stop()
	for {
		// A heartbeat the ticker starts renews the owner document; one a
		// change-feed observation or a refused batch asks for renews it
		// only when due (renewDue).
		ticked := false
		select {
		case <-c.stop:
			return
		case <-t.C:
			ticked = true
		case <-c.kick:
			if wait := minKickGap - time.Since(time.Unix(0, c.lastBeat.Load())); wait > 0 {
				select {
				case <-c.stop:
					return
				case <-time.After(wait):
				}
			}
		}
		if c.frozen.Load() {
			continue
		}
		ctx, cancel := context.WithTimeout(cosmos.WithCall(context.Background(), "lease_heartbeat"), c.expiry)
		c.beatMu.Lock()
		err := c.beatLocked(ctx, ticked)
		c.beatMu.Unlock()
		if err != nil {
			level := zapcore.WarnLevel
			if c.healthReported {
				level = zapcore.DebugLevel
			}
			c.log.Log(level, "lease heartbeat failed", zap.Error(err))
		}
		cancel()
	}
}

// Observed takes a lease document the change-feed reader delivered and
// asks for a heartbeat now when it changes this Provider's share: a slot
// of its home range of a queue it serves was released (another process
// closed, stopped fetching or gave slots up to rebalance; a slot outside
// it is claimed by the owner whose home it is, unless its owner left:
// Leaving), or an owner joined or changed
// the queues it serves (this one may have to give slots up). So slots
// move within a few change-feed intervals rather than at the next
// heartbeats. Renewals of known owners ask for nothing.
func (c *Coordinator) Observed(raw []byte) {
	var d leaseDoc
	if json.Unmarshal(raw, &d) == nil && c.changesShare(d) {
		c.askBeat()
	}
}

// changesShare reports whether lease document d, seen in the change feed,
// may change this Provider's share (Observed).
func (c *Coordinator) changesShare(d leaseDoc) bool {
	switch d.Type {
	case SlotType:
		for q, name := range leaseQueues {
			if d.Queue == name && d.Owner == "" && c.queues[q].serving.Load() && (d.Leaving || c.queues[q].inHome(d.Slot)) {
				return true
			}
		}
	case OwnerType:
		if d.Owner == c.id() || !(c.queues[0].serving.Load() || c.queues[1].serving.Load()) {
			return false
		}
		c.mu.Lock()
		o, known := c.seen[d.Owner]
		c.mu.Unlock()
		return !known || o.queues != strings.Join(d.Queues, ",")
	}
	return false
}

// askBeat asks the heartbeat goroutine for a heartbeat soon (minKickGap
// after the last one at the earliest).
func (c *Coordinator) askBeat() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// suspectAfter is how long another owner's document d must stay unchanged
// before this Provider also queries that owner's slots: two heartbeats
// (the longer of the two owners'), two renewals missed (see
// Queue.suspect).
func (c *Coordinator) suspectAfter(d leaseDoc) time.Duration {
	return 2 * max(c.heartbeat, time.Duration(d.HeartbeatMs)*time.Millisecond)
}

// renewDue reports whether a heartbeat that was not started by the
// ticker (a first fetch's, or one a change-feed observation or a refused
// batch asked for) must renew the owner document: this Provider is not
// registered, the queues it serves changed, or its last renewal is a
// heartbeat interval old. Otherwise the ticker's renewals are the sign of
// life, and the heartbeat only reads and balances: at a start-up where
// processes join one after another each kicked heartbeat renewed (a
// request per join and per release observed, per process). Its lease
// read still proves fresh: it must hold the last renewal (readView).
func (c *Coordinator) renewDue(want [2]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownerETag == "" || c.published != want || c.lastRenew.IsZero() || time.Since(c.lastRenew) >= c.heartbeat
}

// renewedWithin reports whether this owner's last renewal is younger than
// the expiry, so that no other process can have taken its slots.
func (c *Coordinator) renewedWithin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lastRenew.IsZero() && time.Since(c.lastRenew) < c.expiry
}

// Beat runs one heartbeat: when this Provider serves a queue (a fetch of
// it runs, or ended less than a heartbeat interval ago) it renews the owner
// document, reads every lease document (1 query of one page: the 512 slot
// documents and the owners fit in one 4 MB page), judges which owners
// live, and rebalances both queues (a queue it does not serve gets a share
// of 0); when it serves neither it releases its slots and owner document,
// or sends nothing if it holds none.
func (c *Coordinator) Beat(ctx context.Context) error {
	c.beatMu.Lock()
	defer c.beatMu.Unlock()
	return c.beatLocked(ctx, true)
}

// beatLocked runs a heartbeat (Beat); it renews the owner document when
// renew is true or renewDue says so. The caller holds beatMu.
func (c *Coordinator) beatLocked(ctx context.Context, renew bool) error {
	if c.closed {
		return cosmos.ErrClosed
	}
	defer func() { c.lastBeat.Store(time.Now().UnixNano()) }()
	var want [2]bool
	for q, o := range c.queues {
		want[q] = o.wanted(c.heartbeat)
	}
	if !want[0] && !want[1] {
		return c.release(ctx)
	}
	if renew || c.renewDue(want) {
		if err := c.renew(ctx, want); err != nil {
			return err
		}
	}
	raws, err := c.readView(ctx)
	if err != nil || raws == nil {
		return err
	}
	now := time.Now()
	slots := [2]map[int]leaseDoc{{}, {}}
	var owners []leaseDoc
	var serverNow int64 // _ts of this owner's document, just written
	for _, raw := range raws {
		var d leaseDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			continue
		}
		switch d.Type {
		case SlotType:
			for q, name := range leaseQueues {
				if d.Queue == name && d.Slot >= 0 && d.Slot < NumSlots {
					slots[q][d.Slot] = d
				}
			}
		case OwnerType:
			if d.Owner == c.id() {
				serverNow = d.Ts
				continue
			}
			owners = append(owners, d)
		}
	}
	// live[q] are the live owners serving queue q (this one when it
	// does), liveSet every live owner: a live owner's slot is never taken.
	var live [2][]string
	liveSet := map[string]bool{c.id(): true}
	for q := range live {
		if want[q] {
			live[q] = []string{c.id()}
		}
	}
	present := map[string]bool{}
	suspect := map[string]bool{}
	var dead []leaseDoc
	var silent []silentOwner
	c.mu.Lock()
	for _, d := range owners {
		present[d.Owner] = true
		o, ok := c.seen[d.Owner]
		if !ok || o.etag != d.ETag {
			changed := now
			if age := serverNow - d.Ts - 1; !ok && d.Ts > 0 && serverNow > 0 && age > 0 {
				changed = now.Add(-time.Duration(age) * time.Second)
			}
			o = observedOwner{etag: d.ETag, changed: changed, queues: strings.Join(d.Queues, ",")}
			c.seen[d.Owner] = o
		}
		if now.Sub(o.changed) >= c.expiry {
			dead = append(dead, d)
			silent = append(silent, silentOwner{d, now.Sub(o.changed), true})
			continue
		}
		if now.Sub(o.changed) >= c.suspectAfter(d) {
			suspect[d.Owner] = true
			if !o.warned {
				o.warned = true
				c.seen[d.Owner] = o
				silent = append(silent, silentOwner{d, now.Sub(o.changed), false})
			}
		}
		liveSet[d.Owner] = true
		for q := range live {
			if d.serves(q) {
				live[q] = append(live[q], d.Owner)
			}
		}
	}
	for o := range c.seen {
		if !present[o] {
			delete(c.seen, o)
		}
	}
	c.mu.Unlock()
	c.logSilent(silent, slots)
	for _, d := range dead {
		// Best effort: the owner document of a dead owner goes; if it
		// renewed meanwhile, the If-Match fails and it stays.
		_ = c.store.Delete(ctx, d.ID, d.ETag)
	}
	for q := range leaseQueues {
		lo, hi := 0, 0
		if want[q] {
			sort.Strings(live[q])
			lo, hi = home(sort.SearchStrings(live[q], c.id()), len(live[q]))
		}
		c.queues[q].setHome(lo, hi)
		c.balance(ctx, q, slots[q], liveSet, lo, hi)
		// The suspect owners' slots are split among the owners serving q
		// that are not suspect: slot s goes to the (s mod n)-th of them by
		// id, so that processes that agree on who is healthy query
		// disjoint slots whichever slots are suspect.
		var extra []int
		if want[q] {
			var healthy []string
			for _, o := range live[q] {
				if !suspect[o] {
					healthy = append(healthy, o)
				}
			}
			mine := sort.SearchStrings(healthy, c.id()) // live[q] is sorted
			for s, d := range slots[q] {
				if suspect[d.Owner] && s%len(healthy) == mine {
					extra = append(extra, s)
				}
			}
		}
		if c.queues[q].setSuspect(extra) {
			c.wake[q].Notify()
		}
		c.queues[q].serving.Store(want[q])
	}
	return nil
}

// staleViewRereads bounds how often a heartbeat reads the lease documents
// again when they do not hold its own renewal, staleViewDelay is the wait
// before the first of those reads (doubling).
const (
	staleViewRereads = 3
	staleViewDelay   = 10 * time.Millisecond
)

// readView reads every lease document (1 query of one page) for a
// heartbeat that just renewed the owner document. A query may be served
// by a replica behind the primary (Session consistency and weaker): one
// whose answer does not hold that renewal (its ETag) is stale, and
// balancing on it would drop this owner's own recent claims and claim
// slots others hold, so it is read again, up to staleViewRereads times;
// still stale, the heartbeat balances nothing (nil, nil) and asks for
// another soon. One that holds the renewal holds every earlier write of
// this owner (a query reads one consistent prefix of the partition); what
// it misses of other owners' writes is refused by their ETags.
func (c *Coordinator) readView(ctx context.Context) ([][]byte, error) {
	c.mu.Lock()
	want := c.ownerETag
	c.mu.Unlock()
	ownID := "owner-" + c.id()
	for try := 0; ; try++ {
		raws, err := c.store.Query(ctx, "SELECT * FROM c WHERE c.type IN ('"+OwnerType+"', '"+SlotType+"')", nil)
		if err != nil {
			return nil, err
		}
		for _, raw := range raws {
			var d leaseDoc
			if json.Unmarshal(raw, &d) == nil && d.ID == ownID && d.ETag == want {
				return raws, nil
			}
		}
		if try == staleViewRereads {
			c.log.Debug("the lease documents read do not hold this owner's renewal (a lagging replica); balancing at the next heartbeat")
			c.askBeat()
			return nil, nil
		}
		t := time.NewTimer(staleViewDelay << try)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// renew replaces the owner document under If-Match on its last ETag; when
// the document is gone (another process judged this one dead and deleted
// it), it is created again. The first registration under a stable
// identity creates the document, or judges the one it finds: a dead
// predecessor's is taken over, a live twin's makes this Provider take a
// random id (register, identity.go). A document changed under this Provider (412) was written by
// another live process with the same identity (twinWrote): this one
// takes a random id too.
func (c *Coordinator) renew(ctx context.Context, want [2]bool) error {
	c.mu.Lock()
	etag := c.ownerETag
	c.mu.Unlock()
	doc := c.ownerDoc(want)
	var newETag string
	var err error
	if etag == "" && !c.checked {
		newETag, err = c.register(ctx, want)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.ownerETag, c.published = newETag, want
		c.lastRenew = time.Now()
		c.mu.Unlock()
		return nil
	}
	if etag != "" {
		newETag, err = c.store.Replace(ctx, doc.ID, doc.body(), etag)
		if cosmos.IsStatus(err, http.StatusPreconditionFailed) {
			twin, rerr := c.twinWrote(ctx)
			if rerr != nil {
				return rerr
			}
			if twin {
				doc = c.ownerDoc(want)
			}
		}
	}
	if etag == "" || cosmos.IsStatus(err, http.StatusNotFound) || cosmos.IsStatus(err, http.StatusPreconditionFailed) {
		newETag, err = c.store.Upsert(ctx, doc.body())
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.ownerETag, c.published = newETag, want
	c.lastRenew = time.Now()
	c.mu.Unlock()
	return nil
}

// ownerDoc is this Provider's owner document, serving the queues of want.
func (c *Coordinator) ownerDoc(want [2]bool) leaseDoc {
	id := c.id()
	doc := leaseDoc{ID: "owner-" + id, InstanceID: PartitionKey, Type: OwnerType, Owner: id, Slot: -1, Beat: time.Now().UnixMilli(),
		HeartbeatMs: c.heartbeat.Milliseconds(), Host: c.self.Host, PID: c.self.PID, Process: c.self.Process, Instance: c.self.Instance}
	for q, name := range leaseQueues {
		if want[q] {
			doc.Queues = append(doc.Queues, name)
		}
	}
	return doc
}

// home returns the slots [lo, hi) of the owner at place idx among n
// owners serving a queue, sorted by id: the n owners' home ranges are
// contiguous, disjoint, cover the NumSlots slots, and hold NumSlots/n
// slots each, one more for some. The owners of both queues being the same
// processes (each serves both), a process's home ranges are the same
// slots in both queues: an instance's orchestrator and worker messages
// have one slot (its DispatchSlot), so one process serves all of it, and
// the instance's turns and activities go from one process to another only
// when the slots move.
func home(idx, n int) (lo, hi int) {
	n = max(n, 1)
	return idx * NumSlots / n, (idx + 1) * NumSlots / n
}

// balance makes this owner hold its home slots [lo, hi) of queue q: it
// adopts what the documents say it owns, gives up what it owns outside its
// home (another live owner's home: that owner claims it at its next
// heartbeat, or at once when its change feed shows the release), and
// claims its home slots that are free or held by dead owners (never a live
// owner's slot: that owner gives it up itself at its next heartbeat).
// Owners that agree on who lives thus split each queue the same way, and
// both queues alike. A slot it fails to give up or claim (another process
// changed the document) is tried again at the next heartbeat, which a
// refused batch asks for at once.
func (c *Coordinator) balance(ctx context.Context, q int, docs map[int]leaseDoc, live map[string]bool, lo, hi int) {
	name := leaseQueues[q]
	var mine, keep, away []int
	for s := 0; s < NumSlots; s++ {
		if d, ok := docs[s]; ok && d.Owner == c.id() {
			mine = append(mine, s)
			if s >= lo && s < hi {
				keep = append(keep, s)
			} else {
				away = append(away, s)
			}
		}
	}
	owned := c.queues[q]
	before := owned.count()
	owned.set(mine)
	if len(away) > 0 {
		owned.set(keep)
		ops := make([]Op, 0, len(away))
		for _, s := range away {
			d := docs[s]
			d.Owner = ""
			ops = append(ops, replaceOp(d.ID, d.body(), d.ETag))
		}
		c.applyEach(ctx, ops, false)
	}
	var ops []Op
	var opSlots []int
	for pass := 0; pass < 2; pass++ {
		for s := lo; s < hi; s++ {
			d, ok := docs[s]
			free := !ok || d.Owner == ""
			takeover := ok && d.Owner != "" && d.Owner != c.id() && !live[d.Owner]
			if (pass == 0 && !free) || (pass == 1 && !takeover) {
				continue
			}
			nd := leaseDoc{ID: slotDocID(name, s), InstanceID: PartitionKey, Type: SlotType, Owner: c.id(), Queue: name, Slot: s}
			if ok {
				ops = append(ops, replaceOp(nd.ID, nd.body(), d.ETag))
			} else {
				ops = append(ops, createOp(nd.ID, nd.body()))
			}
			opSlots = append(opSlots, s)
		}
	}
	// A claim not applied is not this owner's: a refused batch changed
	// nothing, and one whose answer was lost was read back (applyLost);
	// when even that failed, the next heartbeat's query finds the slot
	// documents that name this owner and adopts them.
	var claimed []int
	for i, ok := range c.applyEach(ctx, ops, false) {
		if ok {
			claimed = append(claimed, opSlots[i])
		}
	}
	if len(claimed) > 0 {
		owned.set(append(append([]int(nil), keep...), claimed...))
		// Waiting fetches query the new slots now rather than at their
		// next poll: a dead owner's messages are served within the
		// takeover's heartbeat.
		c.wake[q].Notify()
	}
	if d := owned.count() - before; d != 0 {
		c.moves.Add(int64(abs(d)))
	}
}

// ownedSlotDocs returns the slot documents, of both queues, that name this
// owner (one query of one page).
func (c *Coordinator) ownedSlotDocs(ctx context.Context) ([]leaseDoc, error) {
	raws, err := c.store.Query(ctx, "SELECT * FROM c WHERE c.type = '"+SlotType+"' AND c.owner = @owner", []azcosmos.QueryParameter{{Name: "@owner", Value: c.id()}})
	if err != nil {
		return nil, err
	}
	docs := make([]leaseDoc, 0, len(raws))
	for _, raw := range raws {
		var d leaseDoc
		if json.Unmarshal(raw, &d) == nil {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// applyEach runs ops (replacements and creations of slot documents) in
// transactional batches of up to 100 (one request each in the common
// case) and reports which operations were applied. A batch the service
// refuses (another process changed one of its documents) is run again one
// operation at a time when singly is true (Close's release, which has no
// later heartbeat); otherwise none of its operations is applied, and the
// next heartbeat, which it asks for at once (kick: after minKickGap),
// tries again on documents read afresh: one request more, where one at a
// time cost up to a hundred (claims racing with another process's at a
// rebalance did: 1.7 requests per orchestration in a 4-process run of 200
// orchestrations). A batch whose answer was lost (a dropped connection, a
// 408, a 500) is read back with one query of this owner's slot documents
// (applyLost), so that neither a claim that landed nor one that did not
// waits for the next heartbeat.
func (c *Coordinator) applyEach(ctx context.Context, ops []Op, singly bool) []bool {
	done := make([]bool, len(ops))
	for from := 0; from < len(ops); from += maxBatchOps {
		to := min(from+maxBatchOps, len(ops))
		err := c.store.Batch(ctx, ops[from:to], false)
		if cosmos.IsAmbiguous(err) {
			err = c.applyLost(ctx, ops[from:to], err)
		}
		if err == nil {
			for i := from; i < to; i++ {
				done[i] = true
			}
			continue
		}
		if !singly {
			c.log.Debug("a lease batch was refused; the next heartbeat tries again", zap.Int("slots", to-from), zap.Error(err))
			c.askBeat()
			continue
		}
		for i := from; i < to; i++ {
			err := c.store.Batch(ctx, ops[i:i+1], true)
			done[i] = err == nil
		}
	}
	return done
}

// maxLeaseBatchReadBacks bounds how often applyLost reads a lease batch
// back and sends it again.
const maxLeaseBatchReadBacks = 3

// applyLost settles lease batch ops after its answer was lost (cause): it
// reads this owner's slot documents (1 query) and reports success when the
// batch landed (every slot the batch claims names this owner, every slot
// it gives up does not); when it did not land it sends the batch again,
// up to maxLeaseBatchReadBacks times. Any other answer is returned for
// applyEach to go one operation at a time.
func (c *Coordinator) applyLost(ctx context.Context, ops []Op, cause error) error {
	err := cause
	for try := 0; try < maxLeaseBatchReadBacks && cosmos.IsAmbiguous(err); try++ {
		rerr := c.store.Sync(ctx, "owner-"+c.id())
		var docs []leaseDoc
		if rerr == nil {
			docs, rerr = c.ownedSlotDocs(ctx)
		}
		if rerr != nil {
			c.log.Warn("a lease batch's answer was lost and reading it back failed: its slots are tried one at a time", zap.NamedError("cause", err), zap.Error(rerr))
			return err
		}
		mine := map[string]bool{}
		for _, d := range docs {
			mine[d.ID] = true
		}
		applied := true
		for _, o := range ops {
			var want leaseDoc
			if json.Unmarshal(o.Body, &want) != nil || mine[o.ID] != (want.Owner == c.id()) {
				applied = false
				break
			}
		}
		if applied {
			c.log.Info("a lease batch's answer was lost; read back, it was applied", zap.Int("slots", len(ops)), zap.NamedError("cause", err))
			return nil
		}
		c.log.Info("a lease batch's answer was lost; read back, it was not applied: sending it again", zap.Int("slots", len(ops)), zap.NamedError("cause", err))
		err = c.store.Batch(ctx, ops, false)
	}
	return err
}

// Close stops the heartbeat and releases this owner's slots and owner
// document at once, so the other processes take them at their next
// heartbeat instead of after the expiry.
func (c *Coordinator) Close(ctx context.Context) {
	close(c.stop)
	<-c.done
	c.beatMu.Lock()
	defer c.beatMu.Unlock()
	c.closed = true
	_ = c.release(ctx)
}

// release gives up every slot this owner holds and deletes its owner
// document: it no longer serves either queue. Slots whose release fails
// stay with the owner document gone, and the others take them after the
// expiry. The caller holds beatMu.
func (c *Coordinator) release(ctx context.Context) error {
	c.mu.Lock()
	registered := c.ownerETag != ""
	c.mu.Unlock()
	held := false
	for _, o := range c.queues {
		held = held || o.count() > 0
		o.set(nil)
		o.setSuspect(nil)
		o.serving.Store(false)
	}
	if !registered && !held {
		return nil // never registered, or released already
	}
	docs, err := c.ownedSlotDocs(ctx)
	if err == nil {
		ops := make([]Op, 0, len(docs))
		for _, d := range docs {
			d.Owner, d.Leaving = "", true
			ops = append(ops, replaceOp(d.ID, d.body(), d.ETag))
		}
		c.applyEach(ctx, ops, true)
	}
	c.mu.Lock()
	c.ownerETag = ""
	c.mu.Unlock()
	if err2 := c.store.Delete(ctx, "owner-"+c.id(), ""); err == nil && err2 != nil && !cosmos.IsStatus(err2, http.StatusNotFound) {
		err = err2
	}
	return err
}

// Queue is one queue's share of this process: the provider wraps it as
// the cdb.LeaseProvider its fetches use. The owned slots are split into
// lanes as cdb.InMemoryLeaseProvider splits all of them, one lane per
// dispatcher.
type Queue struct {
	c    *Coordinator
	free chan int

	fetches   atomic.Int32 // fetches of the queue in progress
	lastFetch atomic.Int64 // when the last one ended (Unix ns)
	serving   atomic.Bool  // the last heartbeat claimed a share of the queue
	// home is the home range [lo, hi) the last heartbeat balanced to,
	// as lo<<16 | hi; -1 before the first.
	home   atomic.Int64
	pinned atomic.Bool // test hook: served as if a fetch always ran

	mu    sync.Mutex
	slots []uint8 // owned, sorted
	// suspect are this Provider's part of the slots of owners whose
	// documents stayed unchanged for two heartbeats but not yet for the
	// expiry (a process that crashed, or one frozen or slow): it queries
	// them too (racing perhaps with the owner itself, or with a process
	// that judges differently who is healthy: safe, locks are ETag-based),
	// so that a crashed process's messages wait about two heartbeats
	// rather than the whole expiry. They are claimed at the expiry, or
	// dropped when the owner renews. Sorted.
	suspect []uint8
	// queried marks the slots of slots and suspect (Queries).
	queried [NumSlots]bool
}

func newQueue(c *Coordinator, lanes int) *Queue {
	lanes = max(1, min(lanes, NumSlots))
	o := &Queue{c: c, free: make(chan int, lanes)}
	o.home.Store(-1)
	for i := 0; i < lanes; i++ {
		o.free <- i
	}
	return o
}

// setHome records the home range [lo, hi) a heartbeat balanced to.
func (o *Queue) setHome(lo, hi int) { o.home.Store(int64(lo)<<16 | int64(hi)) }

// inHome reports whether slot is in the home range of the last heartbeat
// (true before the first).
func (o *Queue) inHome(slot int) bool {
	h := o.home.Load()
	if h < 0 {
		return true
	}
	return slot >= int(h>>16) && slot < int(h&0xffff)
}

// set replaces the owned slots.
func (o *Queue) set(slots []int) {
	s := make([]uint8, 0, len(slots))
	for _, v := range slots {
		s = append(s, uint8(v))
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	o.mu.Lock()
	o.slots = s
	o.markLocked()
	o.mu.Unlock()
}

// markLocked sets queried from slots and suspect; the caller holds mu.
func (o *Queue) markLocked() {
	o.queried = [NumSlots]bool{}
	for _, v := range o.slots {
		o.queried[v] = true
	}
	for _, v := range o.suspect {
		o.queried[v] = true
	}
}

// Queries reports whether this process queries slot now: it owns it, or
// it is its part of a suspect owner's slots. A message in a slot it does
// not query is served by another process (or, for a moment while slots
// move, by none), which is how the provider tells its own traffic from
// the traffic it exchanges with other processes.
func (o *Queue) Queries(slot uint8) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queried[slot]
}

// wanted reports whether this Provider serves the queue: a fetch of it
// runs, or one ended within the last window (a heartbeat interval).
func (o *Queue) wanted(window time.Duration) bool {
	if o.pinned.Load() || o.fetches.Load() > 0 {
		return true
	}
	last := o.lastFetch.Load()
	return last != 0 && time.Since(time.Unix(0, last)) < window
}

// setSuspect replaces the suspect slots and reports whether a slot was
// added (waiting fetches should query).
func (o *Queue) setSuspect(slots []int) bool {
	s := make([]uint8, 0, len(slots))
	for _, v := range slots {
		s = append(s, uint8(v))
	}
	slices.Sort(s)
	o.mu.Lock()
	defer o.mu.Unlock()
	added := false
	for _, v := range s {
		if _, found := slices.BinarySearch(o.suspect, v); !found {
			added = true
		}
	}
	o.suspect = s
	o.markLocked()
	return added
}

func (o *Queue) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.slots)
}

// OwnedSlots returns how many slots of the queue this process owns now.
func (o *Queue) OwnedSlots() int { return o.count() }

// Acquire takes a free lane and returns its share of the owned slots and
// of the suspect slots: those at positions i, i+lanes, ... of each. An
// empty lease (no slot, All false) means this lane has nothing to query
// now: the process owns no slot yet, owns fewer slots than it has lanes,
// or its own renewal is older than the expiry.
func (o *Queue) Acquire(ctx context.Context) (*Lease, error) {
	var lane int
	select {
	case lane = <-o.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	lanes := cap(o.free)
	var slots []uint8
	if o.c.renewedWithin() {
		o.mu.Lock()
		for i := lane; i < len(o.slots); i += lanes {
			slots = append(slots, o.slots[i])
		}
		for i := lane; i < len(o.suspect); i += lanes {
			slots = append(slots, o.suspect[i])
		}
		o.mu.Unlock()
		slices.Sort(slots)
	}
	return &Lease{Slots: slots, All: len(slots) == NumSlots, release: func() { o.free <- lane }}, nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Moves returns how many slots this Coordinator has gained or lost since
// New (both queues; a slot taken and later given up counts twice).
func (c *Coordinator) Moves() int64 { return c.moves.Load() }

// Queue returns the share of queue q (0 orchestrations, 1 work items)
// whose Acquire the fetches of q call.
func (c *Coordinator) Queue(q int) *Queue { return c.queues[q] }

// Freeze stops (true) or resumes (false) the heartbeat goroutine's work and
// the first fetch's claim, as if the process were frozen (SIGSTOP) while its
// fetches still run: a test hook.
func (c *Coordinator) Freeze(frozen bool) { c.frozen.Store(frozen) }

// Pin makes the queue served as if a fetch of it always ran, so that
// heartbeats claim its share without a fetch: a test hook.
func (o *Queue) Pin() { o.pinned.Store(true) }

// Slots returns a copy of the slots this process owns now, sorted.
func (o *Queue) Slots() []uint8 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.slots)
}

// Suspect returns a copy of the slots of suspect owners (see Queue) that
// this process queries besides its own, sorted.
func (o *Queue) Suspect() []uint8 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.suspect)
}
