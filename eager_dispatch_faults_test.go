package cdb_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
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
const handOverDelay = time.Second

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

// cutAfterApplied makes the next transactional batch of p's process tr
// in instance's partition end as if the caller's context ended while the
// batch was on its way: the emulator applies it, then cut ends the
// context and the client gets the context's error instead of the answer.
func cutAfterApplied(tr *hookTransport, instance string, cut context.CancelFunc) {
	tr.setAnswer(func(req *http.Request, resp *http.Response, err error) (*http.Response, error) {
		if err != nil || !isBatchIn(req, instance) {
			return resp, err
		}
		tr.setAnswer(nil)
		_ = resp.Body.Close()
		cut()
		return nil, context.Canceled
	})
}

// eagerProcess starts a provider with eager dispatch on, whatever
// DUROXIDE_EAGER says, on a container of its own, whose requests go
// through the returned hookTransport.
func eagerProcess(t *testing.T) (*cdb.Provider, *hookTransport) {
	t.Helper()
	c := newCluster(t)
	tr := &hookTransport{inner: c.emu.HTTPClient()}
	p, _ := newEagerProvider(t, c.account, c.container, func(cfg *cdb.Config) {
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}}
	})
	return p, tr
}

// TestATurnAckCutWhileItsBatchIsOnItsWayLeavesNoActivityLockedForNobody
// checks a turn's ack whose context ends while its batch, which creates
// an activity locked for a waiting fetch, is on its way, and the service
// applies the batch: the ack fails and tells the waiter that nothing
// comes, so the activity's lock has no owner. It must be released
// (conditioned on it) rather than left to expire: the activity is
// fetched at once, not a lock timeout later (10 minutes here), at its
// first attempt.
func TestATurnAckCutWhileItsBatchIsOnItsWayLeavesNoActivityLockedForNobody(t *testing.T) {
	t.Parallel()
	p, tr := eagerProcess(t)
	ctx := context.Background()
	const instance = "eager-work-ack-cut"
	item := firstTurn(t, p, instance)

	waiter := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		w, _ := p.FetchWorkItem(ctx, 10*time.Minute, pollTimeout, nil, duroxide.TagFilterDefaultOnly())
		waiter <- w
	}()
	waitForEagerWaiters(t, p, 0, 1)
	actx, cut := context.WithCancel(ctx)
	cutAfterApplied(tr, instance, cut)
	require.Error(t, p.AckOrchestrationItem(actx, item.LockToken, 1, []duroxide.Event{started(instance),
		duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: `"world"`})},
		[]duroxide.WorkItem{{Kind: greet(instance, 2, nil)}}, nil, runningMetadata(), nil))
	assert.Equal(t, duroxide.EagerDispatchCounts{Fallbacks: 1}, p.EagerDispatch().Worker)
	// The waiter, told nothing comes, polls on: the released activity,
	// hinted, is its to lock.
	w := receive(t, waiter)
	require.NotNil(t, w, "the activity is not left locked for a fetch that was told nothing comes")
	assert.Equal(t, uint64(2), w.Item.Kind.(duroxide.ActivityExecuteItem).ID)
	assert.Equal(t, uint32(1), w.AttemptCount)
	hist, err := p.Read(ctx, instance)
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the cut batch was applied")
}

// TestAnActivityAckCutWhileItsBatchIsOnItsWayLeavesNoTurnLockedForNobody
// checks an activity's ack whose context ends while its batch, which
// locks the instance's next turn for a waiting orchestration fetch, is on
// its way, and the service applies the batch: the ack fails and the
// waiter is told that nothing comes, so the turn's lock has no owner. It
// must be released (conditioned on it) rather than left to expire: the
// turn, the completion among its messages, is fetched at once, not a lock
// timeout later (10 minutes here), at its first attempt.
func TestAnActivityAckCutWhileItsBatchIsOnItsWayLeavesNoTurnLockedForNobody(t *testing.T) {
	t.Parallel()
	p, tr := eagerProcess(t)
	ctx := context.Background()
	const instance = "eager-turn-ack-cut"
	w := runningActivity(t, p, instance)

	waiter := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, _ := p.FetchOrchestrationItem(ctx, 10*time.Minute, pollTimeout, nil)
		waiter <- item
	}()
	waitForEagerWaiters(t, p, 1, 0)
	actx, cut := context.WithCancel(ctx)
	cutAfterApplied(tr, instance, cut)
	require.Error(t, p.AckWorkItem(actx, w.LockToken, greeted(instance)))
	assert.Equal(t, duroxide.EagerDispatchCounts{Fallbacks: 1}, p.EagerDispatch().Orchestrator)
	// The waiter, told nothing comes, polls on: the released turn, its
	// completion hinted, is its to lock.
	turn := receive(t, waiter)
	require.NotNil(t, turn, "the turn is not left locked for a fetch that was told nothing comes")
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind, "the cut batch was applied")
	assert.Equal(t, uint32(1), turn.AttemptCount)
}
