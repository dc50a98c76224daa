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
