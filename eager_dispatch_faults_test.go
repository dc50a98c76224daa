package cdb_test

import (
	"context"
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
