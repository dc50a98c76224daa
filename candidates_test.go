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

// TestAProcessKnowsTheMessagesDueSoonFromItsFirstQuery: a process that starts
// (or takes slots over) after another process's turn set a timer learns of
// the timer from its first candidate query, though it is not due yet: no
// write or change-feed copy of it is to come, and the query's answer
// stands for 10 s while the change feed is healthy. When the timer fires,
// the fetch takes it from the pool, without another query (issue 33: a
// continue-as-new successor stopped after its TimerCreated, for up to
// 10 s, when the leases rebalanced as a second replica started). The same
// holds on the worker queue for a work item abandoned with a delay.
func TestAProcessKnowsTheMessagesDueSoonFromItsFirstQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const instance = "timer-before-takeover"
	for _, c := range []struct {
		name, query string
		// set makes a message due in a second on clock, through first.
		set func(t *testing.T, first *cdb.Provider, clock *testClock) duroxide.WorkItem
		// fetch fetches, answering at once.
		fetch func(p *cdb.Provider) (duroxide.WorkItem, bool, error)
	}{{
		name: "orchestrator queue", query: "orch candidate query",
		set: func(t *testing.T, first *cdb.Provider, clock *testClock) duroxide.WorkItem {
			require.NoError(t, first.EnqueueForOrchestrator(ctx, startItem(instance), 0))
			item, err := fetchInstance(ctx, first, instance)
			require.NoError(t, err)
			at := uint64(clock.Now().Add(time.Second).UnixMilli())
			timer := duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: 2, FireAtMs: at}}
			require.NoError(t, first.AckOrchestrationItem(ctx, item.LockToken, 1,
				[]duroxide.Event{started(instance), duroxide.NewEvent(2, instance, 1, nil, duroxide.TimerCreated{FireAtMs: at})},
				nil, []duroxide.WorkItem{timer}, runningMetadata(), nil))
			return timer
		},
		fetch: func(p *cdb.Provider) (duroxide.WorkItem, bool, error) {
			item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
			if item == nil || err != nil || len(item.Messages) != 1 {
				return duroxide.WorkItem{}, item != nil, err
			}
			return item.Messages[0], true, nil
		},
	}, {
		name: "worker queue", query: "work candidate query",
		set: func(t *testing.T, first *cdb.Provider, _ *testClock) duroxide.WorkItem {
			require.NoError(t, first.EnqueueForWorker(ctx, activity(instance, 2)))
			w, err := first.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w)
			require.NoError(t, first.AbandonWorkItem(ctx, w.LockToken, time.Second, false))
			return w.Item
		},
		fetch: func(p *cdb.Provider) (duroxide.WorkItem, bool, error) {
			w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			if w == nil || err != nil {
				return duroxide.WorkItem{}, false, err
			}
			return w.Item, true, nil
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := newCluster(t)
			clock := newTestClock()
			adjust := func(cfg *cdb.Config) {
				cfg.Now = clock.Now
				cfg.ChangeFeedInterval = time.Second // healthy for 3 s after each read, however slow the machine
			}
			first, _ := cl.process(t, adjust)
			want := c.set(t, first, clock)

			// A process that never read the slots may be served by a
			// replica that trails the write (a lagging emulator): the
			// message was written before by more than that.
			time.Sleep(cl.emu.ReplicaLag())
			next, _ := cl.process(t, adjust)
			steps := traceSteps(next)
			_, found, err := c.fetch(next)
			require.NoError(t, err)
			require.False(t, found, "the message is not due")
			require.Equal(t, 1, steps.take()[c.query], "a fetch with a new view queries")

			clock.Advance(time.Second)
			got, found, err := c.fetch(next)
			require.NoError(t, err)
			require.True(t, found, "the message is due")
			assert.Equal(t, want, got)
			assert.Zero(t, steps.take()[c.query], "the first query told the pool of the message")
		})
	}
}
