package leases

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// memStore is a Store over a map: the lease partition of one container,
// with ETags and transactional batches, for tests without an emulator.
type memStore struct {
	mu   sync.Mutex
	docs map[string]map[string]any
	next int
}

func newMemStore() *memStore { return &memStore{docs: map[string]map[string]any{}} }

func status(code int) error { return &azcore.ResponseError{StatusCode: code} }

// put stores body under a fresh ETag; the caller holds mu.
func (s *memStore) put(body []byte) (string, error) {
	var d map[string]any
	if err := json.Unmarshal(body, &d); err != nil {
		return "", err
	}
	s.next++
	etag := strconv.Itoa(s.next)
	d["_etag"], d["_ts"] = etag, time.Now().Unix()
	s.docs[d["id"].(string)] = d
	return etag, nil
}

func (s *memStore) Query(_ context.Context, sql string, params []azcosmos.QueryParameter) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, d := range s.docs {
		if strings.Contains(sql, "@owner") && (d["type"] != SlotType || d["owner"] != params[0].Value) {
			continue
		}
		if strings.Contains(sql, "@id") && d["id"] != params[0].Value {
			continue
		}
		b, _ := json.Marshal(d)
		out = append(out, b)
	}
	return out, nil
}

func (s *memStore) Create(_ context.Context, body []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d struct{ ID string }
	if err := json.Unmarshal(body, &d); err != nil {
		return "", err
	}
	if _, ok := s.docs[d.ID]; ok {
		return "", status(http.StatusConflict)
	}
	return s.put(body)
}

func (s *memStore) Upsert(_ context.Context, body []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.put(body)
}

func (s *memStore) Replace(_ context.Context, id string, body []byte, etag string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok {
		return "", status(http.StatusNotFound)
	}
	if d["_etag"] != etag {
		return "", status(http.StatusPreconditionFailed)
	}
	return s.put(body)
}

func (s *memStore) Delete(_ context.Context, id, etag string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.docs[id]
	if !ok {
		return status(http.StatusNotFound)
	}
	if etag != "" && d["_etag"] != etag {
		return status(http.StatusPreconditionFailed)
	}
	delete(s.docs, id)
	return nil
}

func (s *memStore) Sync(context.Context, string) error { return nil }

func (s *memStore) Batch(_ context.Context, ops []Op, _ bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range ops {
		d, ok := s.docs[o.ID]
		switch {
		case o.Create && ok:
			return status(http.StatusConflict)
		case !o.Create && (!ok || d["_etag"] != o.IfMatch):
			return status(http.StatusPreconditionFailed)
		}
	}
	for _, o := range ops {
		if _, err := s.put(o.Body); err != nil {
			return err
		}
	}
	return nil
}

// owners returns the owner of every slot document of queue.
func (s *memStore) owners(queue string) map[int]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]string{}
	for _, d := range s.docs {
		if d["type"] == SlotType && d["queue"] == queue {
			out[int(d["slot"].(float64))] = d["owner"].(string)
		}
	}
	return out
}

type nopWaker struct{}

func (nopWaker) Notify() {}

func newTestCoordinator(t *testing.T, s Store) *Coordinator {
	t.Helper()
	c := New(Config{Heartbeat: time.Hour, Expiry: 2 * time.Hour, Lanes: [2]int{1, 1}, Wake: [2]Waker{nopWaker{}, nopWaker{}}}, s)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestFirstFetchOfAQueueClaimsAllItsSlotsAndNoneOfTheOther(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	c := newTestCoordinator(t, s)
	done, err := c.FetchStarted(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if got := c.Queue(0).OwnedSlots(); got != NumSlots {
		t.Fatalf("orchestration slots owned = %d, want %d", got, NumSlots)
	}
	if got := c.Queue(1).OwnedSlots(); got != 0 {
		t.Fatalf("work slots owned = %d, want 0", got)
	}
	l, err := c.Queue(0).Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if !l.All || len(l.Slots) != NumSlots {
		t.Fatalf("lease holds %d slots (All %v), want all %d", len(l.Slots), l.All, NumSlots)
	}
	if n := len(s.owners("orch")); n != NumSlots {
		t.Fatalf("%d slot documents of queue orch, want %d", n, NumSlots)
	}
}

func TestTwoCoordinatorsSplitTheSlotsDisjointly(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	a, b := newTestCoordinator(t, s), newTestCoordinator(t, s)
	a.Queue(0).Pin()
	b.Queue(0).Pin()
	ctx := context.Background()
	// a claims everything first; b joins and claims the free half once a
	// gives it up at its next heartbeat.
	for _, c := range []*Coordinator{a, b, a, b} {
		if err := c.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := a.Queue(0).Slots(), b.Queue(0).Slots()
	if len(sa) != NumSlots/2 || len(sb) != NumSlots/2 {
		t.Fatalf("shares %d and %d, want %d each", len(sa), len(sb), NumSlots/2)
	}
	seen := map[uint8]bool{}
	for _, v := range append(sa, sb...) {
		if seen[v] {
			t.Fatalf("slot %d owned twice", v)
		}
		seen[v] = true
	}
	if a.Moves() != NumSlots+NumSlots/2 || b.Moves() != NumSlots/2 {
		t.Fatalf("moves %d and %d, want %d and %d", a.Moves(), b.Moves(), NumSlots+NumSlots/2, NumSlots/2)
	}
}

func TestCloseReleasesTheSlotsAndDeletesTheOwnerDocument(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	c := New(Config{Heartbeat: time.Hour, Expiry: 2 * time.Hour, Lanes: [2]int{1, 1}, Wake: [2]Waker{nopWaker{}, nopWaker{}}}, s)
	c.Queue(1).Pin()
	if err := c.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	for slot, owner := range s.owners("work") {
		if owner != "" {
			t.Fatalf("slot %d still owned by %s after Close", slot, owner)
		}
	}
	for id := range s.docs {
		if strings.HasPrefix(id, "owner-") {
			t.Fatalf("owner document %s left after Close", id)
		}
	}
	if err := c.Beat(context.Background()); err == nil {
		t.Fatal("a heartbeat after Close succeeded")
	}
}

func TestReplaceOfAVanishedOwnerDocumentCreatesItAgain(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	c := newTestCoordinator(t, s)
	c.Queue(0).Pin()
	ctx := context.Background()
	if err := c.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	// Another process judged this owner dead and deleted its document.
	if err := s.Delete(ctx, "owner-"+c.id(), ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.docs["owner-"+c.id()]; !ok {
		t.Fatal("the owner document was not written again")
	}
}

// laggingStore serves the next stale queries from a snapshot of the lease
// documents, as a replica behind the primary would.
type laggingStore struct {
	*memStore
	mu       sync.Mutex
	snapshot [][]byte
	stale    int
	queries  int
}

func (s *laggingStore) Query(ctx context.Context, sql string, params []azcosmos.QueryParameter) ([][]byte, error) {
	s.mu.Lock()
	s.queries++
	if s.stale > 0 {
		s.stale--
		out := s.snapshot
		s.mu.Unlock()
		return out, nil
	}
	s.mu.Unlock()
	return s.memStore.Query(ctx, sql, params)
}

// TestHeartbeatNeverBalancesOnAStaleView checks that a heartbeat whose
// query answers from before this owner's own writes (its renewal, its
// claims) reads again rather than giving its slots up, and balances
// nothing while every read is stale.
func TestHeartbeatNeverBalancesOnAStaleView(t *testing.T) {
	t.Parallel()
	s := &laggingStore{memStore: newMemStore()}
	ctx := context.Background()
	c := newTestCoordinator(t, s)
	c.Queue(0).Pin()
	before, _ := s.memStore.Query(ctx, "", nil) // empty: no slot documents yet
	if err := c.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Queue(0).OwnedSlots(); got != NumSlots {
		t.Fatalf("slots owned = %d, want %d", got, NumSlots)
	}

	s.mu.Lock()
	s.snapshot, s.stale, s.queries = before, 2, 0
	s.mu.Unlock()
	if err := c.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Queue(0).OwnedSlots(); got != NumSlots {
		t.Fatalf("after a stale read, slots owned = %d, want %d", got, NumSlots)
	}
	if s.queries != 3 {
		t.Fatalf("queries = %d, want 3 (two stale, then a current one)", s.queries)
	}

	s.mu.Lock()
	s.snapshot, s.stale, s.queries = before, 100, 0
	s.mu.Unlock()
	if err := c.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Queue(0).OwnedSlots(); got != NumSlots {
		t.Fatalf("with every read stale, slots owned = %d, want %d (nothing balanced)", got, NumSlots)
	}
	if s.queries != staleViewRereads+1 {
		t.Fatalf("queries = %d, want %d", s.queries, staleViewRereads+1)
	}
	if n := len(s.owners("orch")); n != NumSlots {
		t.Fatalf("%d slot documents, want %d", n, NumSlots)
	}
}

// splitPair returns two coordinators on s serving the orchestration queue
// that have split its slots (each beat twice, alternately).
func splitPair(t *testing.T, s Store) (a, b *Coordinator) {
	t.Helper()
	a, b = newTestCoordinator(t, s), newTestCoordinator(t, s)
	a.Queue(0).Pin()
	b.Queue(0).Pin()
	for _, c := range []*Coordinator{a, b, a, b} {
		if err := c.Beat(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// countingStore counts the replacements of owner documents (renewals).
type countingStore struct {
	*memStore
	mu       sync.Mutex
	renewals int
}

func (s *countingStore) Replace(ctx context.Context, id string, body []byte, etag string) (string, error) {
	if strings.HasPrefix(id, "owner-") {
		s.mu.Lock()
		s.renewals++
		s.mu.Unlock()
	}
	return s.memStore.Replace(ctx, id, body, etag)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals
}

// TestAHeartbeatNotTickedRenewsOnlyWhenDue: a heartbeat the change feed
// or a first fetch asks for reads and balances without renewing the owner
// document while the last renewal is recent and the queues served are the
// same; a ticked one (Beat) renews, and one whose queues changed does.
func TestAHeartbeatNotTickedRenewsOnlyWhenDue(t *testing.T) {
	t.Parallel()
	s := &countingStore{memStore: newMemStore()}
	a, _ := splitPair(t, s)
	ctx := context.Background()
	renewals := s.count()
	a.beatMu.Lock()
	err := a.beatLocked(ctx, false)
	a.beatMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if s.count() != renewals {
		t.Fatalf("a heartbeat not ticked renewed (%d renewals, want %d)", s.count(), renewals)
	}
	if got := a.Queue(0).OwnedSlots(); got != NumSlots/2 {
		t.Fatalf("it still balanced: a owns %d slots, want %d", got, NumSlots/2)
	}
	a.Queue(1).Pin() // a serves the work queue too now
	a.beatMu.Lock()
	err = a.beatLocked(ctx, false)
	a.beatMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if s.count() != renewals+1 {
		t.Fatalf("a heartbeat serving a new queue did not renew (%d renewals, want %d)", s.count(), renewals+1)
	}
	if err := a.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if s.count() != renewals+2 {
		t.Fatalf("a ticked heartbeat did not renew (%d renewals, want %d)", s.count(), renewals+2)
	}
}

// TestOnlyReleasesInTheHomeRangeOrOfALeavingOwnerAskForAHeartbeat: a slot
// released in this owner's home range asks for a heartbeat (it claims
// it); one released outside it does not (the owner whose home it is
// claims it), unless its owner left (Leaving: its owner document is gone,
// which the change feed does not show); a newcomer's owner document asks
// for one.
func TestOnlyReleasesInTheHomeRangeOrOfALeavingOwnerAskForAHeartbeat(t *testing.T) {
	t.Parallel()
	a, b := splitPair(t, newMemStore())
	mine, theirs := int(a.Queue(0).Slots()[0]), int(b.Queue(0).Slots()[0])
	released := func(slot int, leaving bool) leaseDoc {
		return leaseDoc{ID: slotDocID("orch", slot), Type: SlotType, Queue: "orch", Slot: slot, Leaving: leaving}
	}
	if !a.changesShare(released(mine, false)) {
		t.Fatal("a release in the home range asks for no heartbeat")
	}
	if a.changesShare(released(theirs, false)) {
		t.Fatal("a release in another owner's home range asks for a heartbeat")
	}
	if !a.changesShare(released(theirs, true)) {
		t.Fatal("a leaving owner's release asks for no heartbeat")
	}
	if a.changesShare(leaseDoc{ID: slotDocID("work", mine), Type: SlotType, Queue: "work", Slot: mine, Leaving: true}) {
		t.Fatal("a release of a queue a does not serve asks for a heartbeat")
	}
	if !a.changesShare(leaseDoc{ID: "owner-x", Type: OwnerType, Owner: "x"}) {
		t.Fatal("a newcomer's owner document asks for no heartbeat")
	}
}

// TestCloseMarksTheReleasedSlotsLeaving: the slot documents Close releases
// say their owner left, so that every other owner rebalances on them.
func TestCloseMarksTheReleasedSlotsLeaving(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	c := New(Config{Heartbeat: time.Hour, Expiry: 2 * time.Hour, Lanes: [2]int{1, 1}, Wake: [2]Waker{nopWaker{}, nopWaker{}}}, s)
	c.Queue(0).Pin()
	if err := c.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.docs {
		if d["type"] == SlotType {
			n++
			if d["leaving"] != true || d["owner"] != "" {
				t.Fatalf("slot document %v after Close: want free and leaving", d)
			}
		}
	}
	if n != NumSlots {
		t.Fatalf("%d slot documents, want %d", n, NumSlots)
	}
}
