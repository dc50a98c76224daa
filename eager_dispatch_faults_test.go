package cdb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// Eager dispatch (DESIGN.md §17) when a side of the hand-over goes away
// mid-batch: the waiting fetch's context ends, or the ack's does, while
// the ack's batch is on its way.

// handOverDelay holds an ack's batch in the emulator long enough for the
// test to end a context while the batch is on its way.
const handOverDelay = 2 * time.Second

// cutInFlight ends an ack's context (cut) once its batch, held for
// handOverDelay, has certainly reached the emulator: a batch cut before
// it left the client is never applied, and these tests are about one
// that is.
func cutInFlight(cut context.CancelFunc) {
	time.Sleep(handOverDelay / 2)
	cut()
}

// waitForReservation blocks until no eager waiter of p is free: the ack
// under test reserved the one that waited.
func waitForReservation(t *testing.T, p *cdb.Provider) {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		if o, w := cdb.FreeEagerWaiters(p); o+w == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the ack reserved no waiter")
		}
		time.Sleep(time.Millisecond)
	}
}

// activityDocID is the id of the worker-queue message of activity id of
// execution 1 (models.go's workerDocID).
func activityDocID(id uint64) string { return fmt.Sprintf("wq-%020d-%020d", 1, id) }

// TestAWorkFetchWhoseContextEndsDuringItsHandOverReleasesTheActivityUncounted
// checks a waiting work-item fetch reserved by a turn's ack whose context
// ends while the ack's batch is on its way, after another write of this
// process woke it (so that it waits for the outcome outside its poll
// wait): the fetch waits for the batch's outcome (the activity was
// created locked for it), gives the activity up without counting the
// attempt and returns its context's error; the activity is then fetched
// at once, at its first attempt.
func TestAWorkFetchWhoseContextEndsDuringItsHandOverReleasesTheActivityUncounted(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	var armed atomic.Bool
	woken := make(chan struct{}, 1)
	cdb.SetFetchTracer(p, func(ev string) {
		if ev == "poll woken by a write" && armed.Load() {
			select {
			case woken <- struct{}{}:
			default:
			}
		}
	})
	ctx := context.Background()
	const instance = "eager-work-fetch-cancelled"
	item := firstTurn(t, p, instance)

	fctx, cancel := context.WithCancel(ctx)
	type result struct {
		w   *duroxide.LockedWorkItem
		err error
	}
	got := make(chan result, 1)
	go func() {
		w, err := p.FetchWorkItem(fctx, longLock, pollTimeout, nil, duroxide.TagFilterDefaultOnly())
		got <- result{w, err}
	}()
	waitForEagerWaiters(t, p, 0, 1)
	key := instance
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.Delay(handOverDelay)})
	acked := make(chan struct{})
	go func() {
		defer close(acked)
		ackScheduling(t, p, item, greet(instance, 2, nil))
	}()
	waitForReservation(t, p)
	armed.Store(true)
	require.NoError(t, p.EnqueueForWorker(ctx, duroxide.WorkItem{Kind: greet("eager-other", 2, nil)}))
	receive(t, woken)
	cancel()
	r := receive(t, got)
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Nil(t, r.w)
	receive(t, acked)
	assert.Equal(t, uint64(1), p.EagerDispatch().Worker.Hits, "the activity was handed over, then given up")

	found := false
	for range 2 {
		w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
		require.NoError(t, err)
		require.NotNil(t, w, "the given-up activity is fetched at once")
		if act := w.Item.Kind.(duroxide.ActivityExecuteItem); act.Instance == instance {
			assert.Equal(t, uint32(1), w.AttemptCount, "giving it up did not count an attempt")
			require.NoError(t, p.AckWorkItem(ctx, w.LockToken, greeted(instance)))
			found = true
		}
	}
	assert.True(t, found, "the given-up activity is fetched at once")
}

// TestATurnFetchWhoseContextEndsDuringItsHandOverReleasesTheTurnUncounted
// checks a waiting orchestration fetch reserved by an activity's ack
// (eager turn) whose context ends while the ack's batch is on its way:
// the activity's ack succeeds, the fetch returns its context's error, and
// the turn it was handed is released without counting the attempt: the
// next fetch takes it at once, the completion among its messages, at its
// first attempt.
func TestATurnFetchWhoseContextEndsDuringItsHandOverReleasesTheTurnUncounted(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-turn-fetch-cancelled"
	w := runningActivity(t, p, instance)

	fctx, cancel := context.WithCancel(ctx)
	type result struct {
		item *duroxide.OrchestrationItem
		err  error
	}
	got := make(chan result, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(fctx, longLock, pollTimeout, nil)
		got <- result{item, err}
	}()
	waitForEagerWaiters(t, p, 1, 0)
	key := instance
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.Delay(handOverDelay)})
	acked := make(chan error, 1)
	go func() { acked <- p.AckWorkItem(ctx, w.LockToken, greeted(instance)) }()
	waitForReservation(t, p)
	cancel()
	r := receive(t, got)
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Nil(t, r.item)
	require.NoError(t, receive(t, acked), "the activity's ack does not depend on the fetch")
	assert.Equal(t, uint64(1), p.EagerDispatch().Orchestrator.Hits, "the turn was handed over, then given up")

	turn, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NotNil(t, turn, "the given-up turn is fetched at once")
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, uint32(1), turn.AttemptCount, "giving it up did not count an attempt")
	assert.Len(t, turn.History, 2)
}

// cutAckMidBatch runs ack, which reserves the waiting fetch of p, with a
// context it ends while ack's batch, held by the emulator, is on its way
// (the emulator applies it once it sees the client gone), and requires
// ack to fail. release is the fault that holds the request that would
// release what the batch locked, so that it reaches the emulator after
// the batch was applied (a real service may apply a cut request later
// still: then the lock expires, the best effort's limit). It waits until
// applied reports the batch applied.
func cutAckMidBatch(t *testing.T, p *cdb.Provider, s *emulator.Server, instance string, release emulator.FaultRule, ack func(context.Context) error, applied func() bool) {
	t.Helper()
	key := instance
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.Delay(handOverDelay)})
	release.PartitionKey, release.Times, release.Fault = &key, 1, emulator.Delay(handOverDelay/4)
	s.InjectFault(release)
	actx, cut := context.WithCancel(context.Background())
	acked := make(chan error, 1)
	go func() { acked <- ack(actx) }()
	waitForReservation(t, p)
	cutInFlight(cut)
	require.Error(t, receive(t, acked))
	deadline := time.Now().Add(pollTimeout)
	for !applied() {
		require.True(t, time.Now().Before(deadline), "the cut batch was never applied")
		time.Sleep(10 * time.Millisecond)
	}
}

// TestATurnAckCutWhileItsBatchIsOnItsWayLeavesNoActivityLockedForNobody
// checks a turn's ack whose context ends while its batch, which creates
// an activity locked for a waiting fetch, is on its way and lands after
// all (the service applies what it received): the ack fails and tells
// the waiter that nothing comes, so the activity's lock has no owner. It
// must be released (conditioned on it) rather than left to expire: the
// activity is fetched at once, not a lock timeout later (10 minutes
// here), at its first attempt.
func TestATurnAckCutWhileItsBatchIsOnItsWayLeavesNoActivityLockedForNobody(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-work-ack-cut"
	item := firstTurn(t, p, instance)

	wctx, stopWaiter := context.WithCancel(ctx)
	defer stopWaiter()
	waiter := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		w, _ := p.FetchWorkItem(wctx, 10*time.Minute, pollTimeout, nil, duroxide.TagFilterDefaultOnly())
		waiter <- w
	}()
	waitForEagerWaiters(t, p, 0, 1)
	doc := activityDocID(2)
	cutAckMidBatch(t, p, s, instance, emulator.FaultRule{Op: emulator.OpPatchItem, ItemID: &doc}, func(ctx context.Context) error {
		return p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(instance),
			duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: `"world"`})},
			[]duroxide.WorkItem{{Kind: greet(instance, 2, nil)}}, nil, runningMetadata(), nil)
	}, func() bool {
		hist, err := p.Read(ctx, instance)
		require.NoError(t, err)
		return len(hist) == 2
	})
	stopWaiter()
	if w := receive(t, waiter); w != nil {
		// The waiter, told nothing comes, went on polling and found the
		// released activity itself.
		assert.Equal(t, uint32(1), w.AttemptCount)
		return
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the activity is not left locked for a fetch that was told nothing comes")
	assert.Equal(t, uint32(1), w.AttemptCount)
}

// TestAnActivityAckCutWhileItsBatchIsOnItsWayLeavesNoTurnLockedForNobody
// checks an activity's ack whose context ends while its batch, which
// locks the instance's next turn for a waiting orchestration fetch, is on
// its way and lands after all: the ack fails and the waiter is told that
// nothing comes, so the turn's lock has no owner. It must be released
// (conditioned on it) rather than left to expire: the turn, the
// completion among its messages, is fetched at once, not a lock timeout
// later (10 minutes here), at its first attempt.
func TestAnActivityAckCutWhileItsBatchIsOnItsWayLeavesNoTurnLockedForNobody(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-turn-ack-cut"
	w := runningActivity(t, p, instance)

	wctx, stopWaiter := context.WithCancel(ctx)
	defer stopWaiter()
	waiter := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, _ := p.FetchOrchestrationItem(wctx, 10*time.Minute, pollTimeout, nil)
		waiter <- item
	}()
	waitForEagerWaiters(t, p, 1, 0)
	// The release, if any, is the partition's next batch; the cut batch,
	// applied, makes the activity's message the ack's tombstone.
	cutAckMidBatch(t, p, s, instance, emulator.FaultRule{Op: emulator.OpBatch}, func(ctx context.Context) error {
		return p.AckWorkItem(ctx, w.LockToken, greeted(instance))
	}, func() bool {
		_, err := p.RenewWorkItemLock(ctx, w.LockToken, longLock)
		return err != nil
	})
	stopWaiter()
	if item := receive(t, waiter); item != nil {
		// The waiter, told nothing comes, went on polling and took the
		// released turn itself.
		assert.Equal(t, uint32(1), item.AttemptCount)
		return
	}
	turn, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NotNil(t, turn, "the turn is not left locked for a fetch that was told nothing comes")
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, uint32(1), turn.AttemptCount)
}
