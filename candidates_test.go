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

// TestWaitingFetchSeesOtherProcessesMessages checks that a fetch waiting
// on a candidate pool that it just found empty (and so trusts for
// LongPollInterval) still finds the messages another process writes in the
// meantime, on both queues: the pool is refreshed every LongPollInterval
// (50 ms here). The fetches' poll timeout is an hour and their context ends
// after a minute, so only a refresh while they wait, not the query at the
// end of the poll timeout, lets them succeed.
func TestWaitingFetchSeesOtherProcessesMessages(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, func(cfg *cdb.Config) { cfg.LongPollInterval = 50 * time.Millisecond })
	b, _ := c.process(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	item, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "the queue starts empty")
	orch := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := a.FetchOrchestrationItem(ctx, longLock, time.Hour, nil)
		assert.NoError(t, err)
		orch <- item
	}()
	require.NoError(t, b.EnqueueForOrchestrator(ctx, startItem("from-b"), 0))
	got := <-orch
	require.NotNil(t, got, "the waiting fetch found the other process's message")
	assert.Equal(t, "from-b", got.Instance)

	w, err := a.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.Nil(t, w)
	work := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		w, err := a.FetchWorkItem(ctx, longLock, time.Hour, nil, duroxide.TagFilterDefaultOnly())
		assert.NoError(t, err)
		work <- w
	}()
	require.NoError(t, b.EnqueueForWorker(ctx, activity("from-b", 7)))
	gotWork := <-work
	require.NotNil(t, gotWork, "the waiting work-item fetch found the other process's message")
	act, ok := gotWork.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok)
	assert.Equal(t, uint64(7), act.ID)
}

// TestZeroTimeoutFetchLooksAtTheQueue checks that a fetch with a zero poll
// timeout does not trust a recent empty candidate pool: a message another
// process wrote right after this process found the queue empty is returned
// at once (here LongPollInterval is an hour, so only the fetch's own query
// can find it).
func TestZeroTimeoutFetchLooksAtTheQueue(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, func(cfg *cdb.Config) { cfg.LongPollInterval = time.Hour })
	b, _ := c.process(t, nil)
	ctx := context.Background()

	item, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item)
	require.NoError(t, b.EnqueueForOrchestrator(ctx, startItem("from-b"), 0))
	item = zeroTimeoutFetch(t, func() (*duroxide.OrchestrationItem, error) { return a.FetchOrchestrationItem(ctx, longLock, 0, nil) })
	require.NotNil(t, item)
	assert.Equal(t, "from-b", item.Instance)

	w, err := a.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.Nil(t, w)
	require.NoError(t, b.EnqueueForWorker(ctx, activity("from-b", 7)))
	w = zeroTimeoutFetch(t, func() (*duroxide.LockedWorkItem, error) {
		return a.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	})
	assert.NotNil(t, w)
}

// zeroTimeoutFetch repeats fetch (one with a zero poll timeout) until it
// returns something, for at most fetchWait: another process's write is
// seen once a read reaches a replica that has it, at once on a strongly
// consistent store, a replica lag later on a lagging one. Each try is the
// fetch's own query.
func zeroTimeoutFetch[T any](t *testing.T, fetch func() (*T, error)) *T {
	t.Helper()
	for deadline := time.Now().Add(fetchWait); ; {
		got, err := fetch()
		require.NoError(t, err)
		if got != nil || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAProcessKnowsTheTimersSetBeforeItsFirstQuery: a process that starts
// (or takes slots over) after another process's turn set a timer learns of
// the timer from its first candidate query, though it is not due yet: no
// write or change-feed copy of it is to come, and the query's answer
// stands for 10 s while the change feed is healthy. When the timer fires,
// the fetch takes it from the pool, without another query (issue 33: a
// continue-as-new successor stopped after its TimerCreated, for up to
// 10 s, when the leases rebalanced as a second replica started).
func TestAProcessKnowsTheTimersSetBeforeItsFirstQuery(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	clock := newTestClock()
	adjust := func(cfg *cdb.Config) {
		cfg.Now = clock.Now
		cfg.ChangeFeedInterval = time.Second // healthy for 3 s after each read, however slow the machine
	}
	first, _ := c.process(t, adjust)
	ctx := context.Background()
	const instance = "timer-before-takeover"
	require.NoError(t, first.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	item, err := fetchInstance(ctx, first, instance)
	require.NoError(t, err)
	fireAt := uint64(clock.Now().Add(time.Second).UnixMilli())
	timer := duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: 2, FireAtMs: fireAt}}
	require.NoError(t, first.AckOrchestrationItem(ctx, item.LockToken, 1,
		[]duroxide.Event{started(instance), duroxide.NewEvent(2, instance, 1, nil, duroxide.TimerCreated{FireAtMs: fireAt})},
		nil, []duroxide.WorkItem{timer}, runningMetadata(), nil))

	next, _ := c.process(t, adjust)
	steps := traceSteps(next)
	item, err = next.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "the timer is not due")
	require.Equal(t, 1, steps.take()["orch candidate query"], "a fetch with a new view queries")

	clock.Advance(time.Second)
	item, err = next.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the timer fired")
	assert.Equal(t, []duroxide.WorkItem{timer}, item.Messages)
	assert.Zero(t, steps.take()["orch candidate query"], "the first query told the pool of the timer")
}
