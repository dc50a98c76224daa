package cdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Eager dispatch (DESIGN.md §17) across processes: what a process was
// handed eagerly and never acked (it froze, or was killed) is taken over
// by another once its lock expires, and the late ack fails cleanly; a
// waiter whose capability filter excludes an instance is never handed its
// turn.

// eagerLock is the short lock of the eager items these tests let expire.
const eagerLock = 500 * time.Millisecond

// inProcessLeases makes every process fetch every instance.
func inProcessLeases(cfg *cdb.Config) { cfg.Leases = cdb.LeasesInProcess }

// takeOver fetches with fetch until it returns something, for up to
// pollTimeout: the lock of a frozen process's item expires first.
func takeOver[T any](t *testing.T, fetch func() (*T, error)) *T {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		got, err := fetch()
		require.NoError(t, err)
		if got != nil {
			return got
		}
		require.True(t, time.Now().Before(deadline), "never taken over")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAFrozenProcesssEagerActivityIsTakenOverWhenItsLockExpires checks an
// activity a turn's ack handed to its own process's waiting fetch, whose
// process then stops (frozen past the lock timeout): another process
// fetches it once the lock expires, at its second attempt; the frozen
// process's late renewal and ack fail with a permanent error and write
// nothing, and the instance gets exactly one completion, the other
// process's.
func TestAFrozenProcesssEagerActivityIsTakenOverWhenItsLockExpires(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := newEagerProvider(t, c.account, c.container, inProcessLeases)
	b, _ := newEagerProvider(t, c.account, c.container, inProcessLeases)
	ctx := context.Background()
	const instance = "eager-work-frozen"
	item := firstTurn(t, a, instance)
	got := fetchWorkAsync(ctx, t, a, eagerLock, duroxide.TagFilterDefaultOnly())
	waitForEagerWaiters(t, a, 0, 1)
	ackScheduling(t, a, item, greet(instance, 2, nil))
	frozen := receive(t, got)
	require.NotNil(t, frozen)
	require.Equal(t, uint64(1), a.EagerDispatch().Worker.Hits)

	w := takeOver(t, func() (*duroxide.LockedWorkItem, error) {
		return b.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	})
	assert.Equal(t, uint64(2), w.Item.Kind.(duroxide.ActivityExecuteItem).ID)
	assert.Equal(t, uint32(2), w.AttemptCount, "the eager lock counted the first attempt")

	_, err := a.RenewWorkItemLock(ctx, frozen.LockToken, longLock)
	requirePermanent(t, err, "the frozen process's renewal")
	requirePermanent(t, a.AckWorkItem(ctx, frozen.LockToken, greeted(instance)), "the frozen process's late ack")
	require.NoError(t, b.AckWorkItem(ctx, w.LockToken, greeted(instance)))

	turn, err := fetchInstance(ctx, b, instance)
	require.NoError(t, err)
	require.Len(t, turn.Messages, 1, "one completion: the late ack wrote nothing")
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
}

// TestAFrozenProcesssEagerTurnIsTakenOverWhenItsLockExpires checks a turn
// an activity's ack handed to its own process's waiting fetch, whose
// process then stops past the lock timeout: another process takes the
// turn once the lock expires, the completion among its messages, at its
// second attempt, and commits it; the frozen process's late ack of the
// turn fails with a permanent error and writes nothing: the history has
// each event once.
func TestAFrozenProcesssEagerTurnIsTakenOverWhenItsLockExpires(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := newEagerProvider(t, c.account, c.container, inProcessLeases)
	b, _ := newEagerProvider(t, c.account, c.container, inProcessLeases)
	ctx := context.Background()
	const instance = "eager-turn-frozen"
	w := runningActivity(t, a, instance)
	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := a.FetchOrchestrationItem(ctx, eagerLock, pollTimeout, nil)
		assert.NoError(t, err)
		got <- item
	}()
	waitForEagerWaiters(t, a, 1, 0)
	require.NoError(t, a.AckWorkItem(ctx, w.LockToken, greeted(instance)))
	frozen := receive(t, got)
	require.NotNil(t, frozen)
	require.Equal(t, uint64(1), a.EagerDispatch().Orchestrator.Hits)

	turn := takeOver(t, func() (*duroxide.OrchestrationItem, error) { return b.FetchOrchestrationItem(ctx, longLock, 0, nil) })
	assert.Equal(t, instance, turn.Instance)
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, uint32(2), turn.AttemptCount, "the eager lock counted the first attempt")

	requirePermanent(t, ackGreetedTurn(ctx, a, instance, frozen.LockToken), "the frozen process's late ack")
	require.NoError(t, ackGreetedTurn(ctx, b, instance, turn.LockToken))

	hist, err := b.Read(ctx, instance)
	require.NoError(t, err)
	ids := map[uint64]int{}
	for _, e := range hist {
		ids[e.EventID]++
	}
	assert.Equal(t, map[uint64]int{1: 1, 2: 1, 3: 1, 4: 1}, ids, "each event once")
}

// TestAWaiterWhoseCapabilityFilterExcludesTheInstanceIsNotHandedItsTurn
// checks an activity's ack when the only waiting orchestration fetch's
// capability filter excludes the instance's pinned version: no eager turn
// (no hit, no fallback), the excluded fetch never returns the turn, and a
// compatible fetch takes it, at its first attempt.
func TestAWaiterWhoseCapabilityFilterExcludesTheInstanceIsNotHandedItsTurn(t *testing.T) {
	t.Parallel()
	p, _ := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-turn-excluded"
	w := runningActivity(t, p, instance)

	future := duroxide.Version{Major: 99}
	excluding := &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{{Min: future, Max: future}}}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, _ := p.FetchOrchestrationItem(fctx, longLock, pollTimeout, excluding)
		got <- item
	}()
	waitForEagerWaiters(t, p, 1, 0)
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, greeted(instance)))
	assert.Equal(t, duroxide.EagerDispatchCounts{}, p.EagerDispatch().Orchestrator, "no eager turn for an excluding waiter")

	turn, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.Len(t, turn.Messages, 1)
	assert.Equal(t, uint32(1), turn.AttemptCount)
	stop()
	assert.Nil(t, receive(t, got), "the excluding fetch never got the turn")
}
