package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	testHeartbeat = 100 * time.Millisecond
	testExpiry    = 2 * time.Second
)

// containerLeaseConfig returns a config with leases in the container and
// short intervals, on a fresh container.
func containerLeaseConfig() cdb.Config {
	cfg := env.config()
	cfg.DisableReconciler = true
	cfg.Leases = cdb.LeasesInContainer
	cfg.LeaseHeartbeatInterval = testHeartbeat
	cfg.LeaseExpiry = testExpiry
	return cfg
}

// eventually waits (up to 20 s) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 20*time.Second, 10*time.Millisecond, what)
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

// TestContainerLeasesSingleOwnerHoldsEverySlot checks that a lone
// provider owns all 256 slots of both queues as soon as New returns and
// runs a turn with them.
func TestContainerLeasesSingleOwnerHoldsEverySlot(t *testing.T) {
	t.Parallel()
	p := startProvider(t, containerLeaseConfig())
	orch, work := owned(p)
	assert.Len(t, orch, cdb.NumDispatchSlots)
	assert.Len(t, work, cdb.NumDispatchSlots)
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("solo"), 0))
	_, err := fetchInstance(ctx, p, "solo")
	require.NoError(t, err)
}

// TestContainerLeasesRebalanceOnJoinAndRelease checks that a second
// provider gets half of the slots of each queue (disjoint from the
// first's), that a third gets a third, and that Close hands a provider's
// slots to the others without waiting for the expiry.
func TestContainerLeasesRebalanceOnJoinAndRelease(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.LeaseExpiry = time.Hour // only Close can free slots here
	a := startProvider(t, cfg)
	b := startProvider(t, cfg)
	eventually(t, "two owners split the slots 128/128", func() bool { return disjointCover(128, a, b) })

	c, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
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
	a := startProvider(t, cfg)
	b := startProvider(t, cfg)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })

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
	a := startProvider(t, cfg)
	b := startProvider(t, cfg)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })
	aSlots, _ := owned(a)
	instance := ""
	for i := 0; instance == ""; i++ {
		if id := fmt.Sprintf("frozen-%d", i); slices.Contains(aSlots, cdb.DispatchSlot(id)) {
			instance = id
		}
	}
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
		c.LeaseHeartbeatInterval, c.LeaseExpiry = time.Hour, 3*time.Hour // only the test's heartbeat runs
	})
	emu.ResetCounters()
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), p))
	assert.Equal(t, int64(2), dataRequests(emu), "renewal and one page of lease documents")
	assert.Equal(t, int64(1), emu.Counters()[emulator.OpQuery].Requests)
}
