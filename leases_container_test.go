package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// Short lease intervals, so that takeover and rebalance happen within a
// test; the assertions wait for outcomes, never for a time. The expiry
// leaves room for a slow machine (the race detector, 8 parallel tests): a
// heartbeat that takes longer than the expiry makes an owner give up its
// own slots.
const (
	testHeartbeat = 200 * time.Millisecond
	testExpiry    = 2 * time.Second
)

// containerLeaseConfig returns a config with leases in the container and
// short intervals, on a fresh container.
func containerLeaseConfig() cdb.Config { return containerLeaseConfigOn(env.config()) }

// containerLeaseConfigOn sets container leases with short intervals on cfg.
func containerLeaseConfigOn(cfg cdb.Config) cdb.Config {
	cfg.DisableReconciler = true
	cfg.Leases = cdb.LeasesInContainer
	cfg.LeaseHeartbeatInterval = testHeartbeat
	cfg.LeaseExpiry = testExpiry
	return cfg
}

// eventually waits (up to 60 s: a slow machine, the race detector) until
// cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 10*time.Millisecond, what)
}

// startServingProvider starts a provider with container leases that
// serves both queues from its first heartbeat, as if its dispatchers
// fetched (cdb.ServeLeaseQueues).
func startServingProvider(t *testing.T, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	p := startProvider(t, cfg)
	cdb.ServeLeaseQueues(p)
	return p
}

// keepFetching runs an idle dispatcher of each queue on p (fetches with a
// short poll timeout, one after another) until the returned function is
// called (or the test ends); it returns once both loops stopped. The test
// enqueues nothing those fetches could take.
func keepFetching(t *testing.T, p *cdb.Provider) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	loop := func(fetch func() error) {
		defer wg.Done()
		for ctx.Err() == nil {
			if err := fetch(); err != nil && ctx.Err() == nil {
				t.Errorf("idle fetch: %v", err)
				return
			}
		}
	}
	wg.Add(2)
	go loop(func() error { _, err := p.FetchOrchestrationItem(ctx, longLock, 50*time.Millisecond, nil); return err })
	go loop(func() error {
		_, err := p.FetchWorkItem(ctx, longLock, 50*time.Millisecond, nil, duroxide.TagFilter{})
		return err
	})
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// servingPair starts two providers on cfg that serve both queues and
// waits until they split the slots 128/128.
func servingPair(t *testing.T, cfg cdb.Config) (a, b *cdb.Provider) {
	t.Helper()
	a, b = startServingProvider(t, cfg), startServingProvider(t, cfg)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })
	return a, b
}

// idInSlots returns an instance id starting with prefix whose dispatch
// slot is one of p's orchestration slots.
func idInSlots(prefix string, p *cdb.Provider) string {
	slots := cdb.OwnedLeaseSlots(p, "orch")
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s-%d", prefix, i); slices.Contains(slots, cdb.DispatchSlot(id)) {
			return id
		}
	}
}

// owned returns the slots p owns in both queues.
func owned(p *cdb.Provider) (orch, work []uint8) {
	return cdb.OwnedLeaseSlots(p, "orch"), cdb.OwnedLeaseSlots(p, "work")
}

// disjointCover reports whether the providers' slots of each queue are
// disjoint and cover all 256, each provider holding want slots.
func disjointCover(want int, ps ...*cdb.Provider) bool {
	for _, q := range []string{"orch", "work"} {
		seen := map[uint8]bool{}
		for _, p := range ps {
			s := cdb.OwnedLeaseSlots(p, q)
			if len(s) != want {
				return false
			}
			for _, v := range s {
				if seen[v] {
					return false
				}
				seen[v] = true
			}
		}
		if len(seen) != cdb.NumDispatchSlots {
			return false
		}
	}
	return true
}

// TestContainerLeasesClaimedAtTheFirstFetchOfAQueue checks that a lone
// provider holds no slot and sends no lease request until it fetches, that
// its first orchestration fetch claims all 256 orchestration slots before
// it queries (a zero-timeout fetch finds the waiting turn) and no worker
// slot, and that its first work-item fetch claims the worker slots.
func TestContainerLeasesClaimedAtTheFirstFetchOfAQueue(t *testing.T) {
	t.Parallel()
	p, emu := newPrivateProvider(t, func(c *cdb.Config) {
		*c = containerLeaseConfigOn(*c)
		c.DisableChangeFeedWakeups = true
	})
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("solo"), 0))
	require.NoError(t, cdb.LeaseHeartbeat(ctx, p))
	orch, work := owned(p)
	assert.Empty(t, orch, "no slot before a fetch")
	assert.Empty(t, work)
	assert.Zero(t, leaseDocuments(t, p), "no owner document before a fetch")

	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the first fetch claims the slots before it queries")
	assert.Equal(t, "solo", item.Instance)
	orch, work = owned(p)
	assert.Len(t, orch, cdb.NumDispatchSlots)
	assert.Empty(t, work, "no worker fetch yet")
	_, err = p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilter{})
	require.NoError(t, err)
	_, work = owned(p)
	assert.Len(t, work, cdb.NumDispatchSlots)
	assert.Positive(t, emu.Counters()[emulator.OpBatch].Requests)
}

// TestContainerLeasesClientOnlyProviderHoldsNoSlot: a provider that only
// starts orchestrations (a web front end) beside one that fetches never
// takes a share, so everything it starts is served by the other.
func TestContainerLeasesClientOnlyProviderHoldsNoSlot(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	worker := startProvider(t, cfg)
	client := startProvider(t, cfg)
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, client.EnqueueForOrchestrator(ctx, startItem(fmt.Sprintf("front-%d", i)), 0))
	}
	served := map[string]bool{}
	eventually(t, "the fetching provider serves every start", func() bool {
		item, err := worker.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		if item != nil {
			served[item.Instance] = true
		}
		return len(served) == 20
	})
	require.NoError(t, cdb.LeaseHeartbeat(ctx, client))
	orch, work := owned(client)
	assert.Empty(t, orch, "a provider that never fetches holds no slot")
	assert.Empty(t, work)
	orch, _ = owned(worker)
	assert.Len(t, orch, cdb.NumDispatchSlots)
}

// TestContainerLeasesProviderThatStopsFetchingGivesItsSlotsUp: of two
// providers sharing the slots, the one whose fetches stop (a runtime
// stopped without Close) gives its slots up within two heartbeats and
// deletes its owner document, and the other takes all of them without
// waiting for the expiry.
func TestContainerLeasesProviderThatStopsFetchingGivesItsSlotsUp(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = time.Hour // only a release can move slots here
	steady := startServingProvider(t, cfg)
	stopped := startProvider(t, cfg)
	stopFetching := keepFetching(t, stopped)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, steady, stopped) })
	stopFetching()
	eventually(t, "the provider that stopped fetching gives everything up", func() bool {
		return disjointCover(cdb.NumDispatchSlots, steady)
	})
	orch, work := owned(stopped)
	assert.Empty(t, orch)
	assert.Empty(t, work)
}

// TestContainerLeasesRebalanceOnJoinAndRelease checks that a second
// provider gets half of the slots of each queue (disjoint from the
// first's), that a third gets a third, and that Close hands a provider's
// slots to the others without waiting for the expiry.
func TestContainerLeasesRebalanceOnJoinAndRelease(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = time.Hour // only Close can free slots here
	a, b := servingPair(t, cfg)

	c, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
	cdb.ServeLeaseQueues(c)
	eventually(t, "three owners split the slots 86/85/85", func() bool {
		sizes := []int{}
		for _, p := range []*cdb.Provider{a, b, c} {
			o, w := owned(p)
			if len(o) != len(w) {
				return false
			}
			sizes = append(sizes, len(o))
		}
		slices.Sort(sizes)
		return slices.Equal(sizes, []int{85, 85, 86})
	})
	require.NoError(t, c.Close())
	eventually(t, "after Close the two others own everything again", func() bool { return disjointCover(128, a, b) })
	assert.Positive(t, a.LeaseMoves())
}

// TestContainerLeasesTakeoverOnExpiry freezes one of two providers: the
// other takes all its slots once its owner document has not changed for
// the expiry, the frozen one hands out no slot meanwhile, and when it
// comes back the slots are shared again.
func TestContainerLeasesTakeoverOnExpiry(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	a, b := servingPair(t, cfg)

	cdb.FreezeLeases(a, true)
	eventually(t, "b takes over every slot", func() bool {
		o, w := owned(b)
		return len(o) == cdb.NumDispatchSlots && len(w) == cdb.NumDispatchSlots
	})
	// The frozen provider's renewal is older than the expiry: its fetches
	// query nothing, so they find nothing even though work is waiting.
	ctx := context.Background()
	require.NoError(t, b.EnqueueForOrchestrator(ctx, startItem("waiting"), 0))
	item, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, item, "a frozen owner must not fetch from slots it may have lost")

	cdb.FreezeLeases(a, false)
	eventually(t, "the returning owner gets its share back", func() bool { return disjointCover(128, a, b) })
}

// TestContainerLeasesFrozenOwnerCannotCommitTwice: a provider fetches a
// turn and freezes past its lease expiry and its lock timeout; the other
// takes its slots, fetches the same turn and commits it; when the frozen
// one comes back, its ack fails and the history holds the turn once.
func TestContainerLeasesFrozenOwnerCannotCommitTwice(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	a, b := servingPair(t, cfg)
	instance := idInSlots("frozen", a)
	ctx := context.Background()
	require.NoError(t, b.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	const lock = 300 * time.Millisecond
	stale, err := a.FetchOrchestrationItem(ctx, lock, 5*time.Second, nil)
	require.NoError(t, err)
	require.NotNil(t, stale)
	require.Equal(t, instance, stale.Instance)

	cdb.FreezeLeases(a, true)
	eventually(t, "b takes over a's slots", func() bool {
		o, _ := owned(b)
		return slices.Contains(o, cdb.DispatchSlot(instance))
	})
	var fresh *duroxide.OrchestrationItem
	eventually(t, "b fetches the turn once a's lock expired", func() bool {
		fresh, err = b.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		return fresh != nil
	})
	require.Equal(t, instance, fresh.Instance)
	require.NoError(t, b.AckOrchestrationItem(ctx, fresh.LockToken, 1, []duroxide.Event{started(instance)}, nil, nil, runningMetadata(), nil))

	cdb.FreezeLeases(a, false)
	err = a.AckOrchestrationItem(ctx, stale.LockToken, 1, []duroxide.Event{started(instance)}, nil, nil, runningMetadata(), nil)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "the stale ack must fail: %v", err)
	hist, err := b.ReadHistory(ctx, instance)
	require.NoError(t, err)
	assert.Len(t, hist, 1, "the turn is committed once")
}

// TestContainerLeasesConfigRejectsBadIntervals checks that an unknown
// mode and an expiry shorter than two heartbeats are refused by New
// before anything is contacted.
func TestContainerLeasesConfigRejectsBadIntervals(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = cfg.LeaseHeartbeatInterval
	_, err := cdb.New(context.Background(), cfg)
	require.ErrorContains(t, err, "LeaseExpiry")
	cfg = containerLeaseConfig()
	cfg.Leases = "cluster"
	_, err = cdb.New(context.Background(), cfg)
	require.ErrorContains(t, err, "Leases")
}

// TestContainerLeasesHeartbeatIsTwoRequests: while nothing moves, a
// heartbeat renews the owner document and reads every lease document in
// one page (the 512 slot documents and the owners): 2 requests.
func TestContainerLeasesHeartbeatIsTwoRequests(t *testing.T) {
	t.Parallel()
	p, emu := newPrivateProvider(t, func(c *cdb.Config) {
		c.Leases, c.DisableReconciler, c.DisableChangeFeedWakeups = cdb.LeasesInContainer, true, true
		c.LeaseHeartbeatInterval, c.LeaseExpiry = time.Hour, 3*time.Hour // only the test's heartbeats run
	})
	cdb.ServeLeaseQueues(p)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), p)) // registers and claims
	emu.ResetCounters()
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), p))
	assert.Equal(t, int64(2), dataRequests(emu), "renewal and one page of lease documents")
	assert.Equal(t, int64(1), emu.Counters()[emulator.OpQuery].Requests)
}

// leaseDocuments counts the documents in p's lease partition.
func leaseDocuments(t *testing.T, p *cdb.Provider) int {
	t.Helper()
	n, err := cdb.LeaseDocumentCount(context.Background(), p)
	require.NoError(t, err)
	return n
}

// TestContainerLeasesRestartedProcessTakesOverAStaleOwnerAtOnce: a
// provider that starts after its predecessor stopped renewing (a process
// killed and restarted) judges the predecessor's age by the service's
// timestamps of the two owner documents, so it takes the slots at its
// first heartbeat when the predecessor's renewal is older than the expiry,
// instead of watching the document for another expiry.
func TestContainerLeasesRestartedProcessTakesOverAStaleOwnerAtOnce(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	crashed := startServingProvider(t, cfg)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), crashed))
	cdb.FreezeLeases(crashed, true)
	time.Sleep(testExpiry + 2*time.Second) // _ts has whole seconds
	restarted := startServingProvider(t, cfg)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), restarted))
	orch, work := owned(restarted)
	assert.Len(t, orch, cdb.NumDispatchSlots)
	assert.Len(t, work, cdb.NumDispatchSlots)
}

// TestContainerLeasesSuspectOwnersSlotsAreServedBeforeTheExpiry: when an
// owner stops renewing (frozen here; a crash looks the same), the other
// owner queries its slots after two missed heartbeats, long before the
// expiry lets it take them, and fetches a message waiting there; when the
// owner renews again it still holds its slots.
func TestContainerLeasesSuspectOwnersSlotsAreServedBeforeTheExpiry(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = time.Hour // no takeover in this test
	a, b := servingPair(t, cfg)
	instance := idInSlots("suspect", a)
	ctx := context.Background()
	cdb.FreezeLeases(a, true)
	require.NoError(t, a.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	item, err := b.FetchOrchestrationItem(ctx, longLock, 10*time.Second, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "b serves the slots of an owner that missed two heartbeats")
	assert.Equal(t, instance, item.Instance)
	bSlots, _ := owned(b)
	assert.NotContains(t, bSlots, cdb.DispatchSlot(instance), "the slot is not taken before the expiry")

	cdb.FreezeLeases(a, false)
	eventually(t, "a keeps its share", func() bool { return disjointCover(128, a, b) })
}

// TestContainerLeasesMoveWhenTheChangeFeedShowsAJoinOrARelease: with
// heartbeats an hour apart, slots still move at once: the owner that sees
// a newcomer's owner document in the change feed gives half its slots up,
// the newcomer that sees them released claims them, and when the newcomer
// closes, the other claims its slots back.
func TestContainerLeasesMoveWhenTheChangeFeedShowsAJoinOrARelease(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseHeartbeatInterval, cfg.LeaseExpiry = time.Hour, 3*time.Hour // no heartbeat runs by itself
	ctx := context.Background()
	a := startServingProvider(t, cfg)
	require.NoError(t, cdb.LeaseHeartbeat(ctx, a))
	require.True(t, disjointCover(cdb.NumDispatchSlots, a))
	b, err := cdb.New(ctx, cfg)
	require.NoError(t, err)
	cdb.ServeLeaseQueues(b)
	require.NoError(t, cdb.LeaseHeartbeat(ctx, b)) // registers; every slot is a's
	eventually(t, "the two split the slots without a heartbeat tick", func() bool { return disjointCover(128, a, b) })
	require.NoError(t, b.Close())
	eventually(t, "a takes b's released slots", func() bool { return disjointCover(cdb.NumDispatchSlots, a) })
}

// TestContainerLeasesHeartbeatsInQuickSuccessionKeepARecentFetchersShare:
// heartbeats the change feed asks for can follow each other closely; a
// provider whose last fetch ended less than a heartbeat interval ago (its
// worker runs an activity) keeps its share through them.
func TestContainerLeasesHeartbeatsInQuickSuccessionKeepARecentFetchersShare(t *testing.T) {
	t.Parallel()
	p, _ := newPrivateProvider(t, func(c *cdb.Config) {
		*c = containerLeaseConfigOn(*c)
		c.LeaseHeartbeatInterval, c.LeaseExpiry = time.Hour, 3*time.Hour // only the test's heartbeats run
	})
	ctx := context.Background()
	_, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilter{})
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, cdb.LeaseHeartbeat(ctx, p))
	}
	_, work := owned(p)
	assert.Len(t, work, cdb.NumDispatchSlots)
}

// TestContainerLeasesSuspectSlotsAreSplitAmongTheHealthyOwners: of three
// owners, when one stops renewing the two others query disjoint halves of
// its slots (each slot by one of them), not all of them each.
func TestContainerLeasesSuspectSlotsAreSplitAmongTheHealthyOwners(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = time.Hour // no takeover in this test
	ps := []*cdb.Provider{startServingProvider(t, cfg), startServingProvider(t, cfg), startServingProvider(t, cfg)}
	eventually(t, "three owners split the slots", func() bool {
		for _, p := range ps {
			if o, w := owned(p); len(o) < 85 || len(w) < 85 {
				return false
			}
		}
		return true
	})
	frozen, a, b := ps[0], ps[1], ps[2]
	lost, _ := owned(frozen)
	cdb.FreezeLeases(frozen, true)
	eventually(t, "the two healthy owners split the frozen one's slots", func() bool {
		sa, sb := cdb.SuspectLeaseSlots(a, "orch"), cdb.SuspectLeaseSlots(b, "orch")
		union := append(append([]uint8(nil), sa...), sb...)
		slices.Sort(union)
		return len(sa) > 0 && len(sb) > 0 && slices.Equal(union, lost)
	})
	cdb.FreezeLeases(frozen, false)
	eventually(t, "nothing is suspect once it renews", func() bool {
		return len(cdb.SuspectLeaseSlots(a, "orch")) == 0 && len(cdb.SuspectLeaseSlots(b, "orch")) == 0
	})
}

// TestContainerLeasesClaimWhoseAnswerWasLostIsKept: the first claim batch
// is applied and its answer lost (the retry finds the documents changed,
// by the claim itself); the provider reads its slots back and serves them
// at once, so its zero-timeout first fetch finds the waiting turn.
func TestContainerLeasesClaimWhoseAnswerWasLostIsKept(t *testing.T) {
	t.Parallel()
	p, emu := newPrivateProvider(t, func(c *cdb.Config) {
		*c = containerLeaseConfigOn(*c)
		c.LeaseHeartbeatInterval, c.LeaseExpiry = time.Hour, 3*time.Hour // only the first fetch claims
	})
	ctx := context.Background()
	// DispatchSlot("lost-answer") is among the first batch's 100 slots.
	require.Less(t, int(cdb.DispatchSlot("lost-answer")), 100)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("lost-answer"), 0))
	key := cdb.LeasePartitionKey
	emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the claimed slots are served although the claim's answer was lost")
	orch, _ := owned(p)
	assert.Len(t, orch, cdb.NumDispatchSlots)
}

// TestContainerLeasesLostClaimAnswerIsReadBackInOneQuery drops the
// connection of the first claim batch, before it is applied and after:
// the provider reads its slots back with one query and, when the batch did
// not land, sends it again, so its zero-timeout first fetch finds the
// waiting turn, it owns every slot, the claims cost a handful of batches
// (not one per slot) and a log line says what was read back.
func TestContainerLeasesLostClaimAnswerIsReadBackInOneQuery(t *testing.T) {
	t.Parallel()
	for _, fault := range []emulator.Fault{emulator.DropConnection(), emulator.ApplyThenDrop()} {
		t.Run(fmt.Sprint(fault.Kind), func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zapcore.InfoLevel)
			p, emu := newPrivateProvider(t, func(c *cdb.Config) {
				*c = containerLeaseConfigOn(*c)
				c.LeaseHeartbeatInterval, c.LeaseExpiry = time.Hour, 3*time.Hour // only the first fetch claims
				c.Logger = zap.New(core)
			})
			ctx := context.Background()
			require.Less(t, int(cdb.DispatchSlot("lost-answer")), 100, "the instance's slot is among the first batch's")
			require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("lost-answer"), 0))
			key := cdb.LeasePartitionKey
			emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: fault})
			before := emu.Counters()[emulator.OpBatch].Requests
			item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
			require.NoError(t, err)
			require.NotNil(t, item, "the claimed slots are served at once")
			orch, _ := owned(p)
			assert.Len(t, orch, cdb.NumDispatchSlots)
			// 3 claim batches, the read at the primary before the read-back
			// (a batch of one read), at most 1 sent again, the turn's lock
			// batch.
			assert.LessOrEqual(t, emu.Counters()[emulator.OpBatch].Requests-before, int64(6))
			assert.Equal(t, 1, logs.FilterMessageSnippet("lease batch's answer was lost").Len())
		})
	}
}
