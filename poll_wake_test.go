package cdb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Long-poll steps a provider traces (internal/fetchtrace).
const (
	tracePollWait     = "poll wait"
	tracePollNotified = "poll woken by a write"
	tracePollTimer    = "poll woken by the timer"
)

// wakeTrace counts the long-poll steps of a provider's fetches and signals
// every wait.
type wakeTrace struct {
	mu     sync.Mutex
	counts map[string]int
	waits  chan struct{}
}

func (w *wakeTrace) add(ev string) {
	w.mu.Lock()
	w.counts[ev]++
	w.mu.Unlock()
	if ev == tracePollWait {
		w.waits <- struct{}{}
	}
}

// waited blocks until a fetch waits; a fetch that never does fails the
// test after pollTimeout instead of hanging it.
func (w *wakeTrace) waited(t *testing.T) {
	t.Helper()
	select {
	case <-w.waits:
	case <-time.After(pollTimeout):
		t.Fatal("no fetch waited")
	}
}

func (w *wakeTrace) count(ev string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[ev]
}

// newWakeProvider returns a provider whose poll interval (an hour) never
// ends a wait within a test, so that only a write of this process (the
// notifier) can wake a waiting fetch, and the trace of its fetches.
func newWakeProvider(t *testing.T) (*cdb.Provider, *wakeTrace) {
	p, _ := newPrivateProvider(t, func(c *cdbConfig) { c.DisableReconciler, c.LongPollInterval = true, time.Hour })
	w := &wakeTrace{counts: map[string]int{}, waits: make(chan struct{}, 64)}
	cdb.SetFetchTracer(p, w.add)
	return p, w
}

// pollTimeout is longer than any of these tests waits for: a fetch that
// gets to its end has lost a wake-up (and the timer count says so).
const pollTimeout = time.Minute

// TestLongPollWokenByOrchestratorWrite requires a waiting orchestration
// fetch to return a start this process enqueues, woken by the notifier.
func TestLongPollWokenByOrchestratorWrite(t *testing.T) {
	p, w := newWakeProvider(t)
	ctx := context.Background()
	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
		assert.NoError(t, err)
		got <- item
	}()
	w.waited(t)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("wake-orch"), 0))
	item := <-got
	require.NotNil(t, item)
	assert.Equal(t, "wake-orch", item.Instance)
	assert.Equal(t, 0, w.count(tracePollTimer), "a timer ended a wait")
	assert.GreaterOrEqual(t, w.count(tracePollNotified), 1)
}

// TestLongPollWokenByWorkerWrite requires a waiting work-item fetch to
// return an activity this process enqueues, woken by the notifier.
func TestLongPollWokenByWorkerWrite(t *testing.T) {
	p, w := newWakeProvider(t)
	ctx := context.Background()
	got := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		item, err := p.FetchWorkItem(ctx, longLock, pollTimeout, nil, duroxide.TagFilterDefaultOnly())
		assert.NoError(t, err)
		got <- item
	}()
	w.waited(t)
	require.NoError(t, p.EnqueueForWorker(ctx, activity("wake-work", 2)))
	item := <-got
	require.NotNil(t, item)
	act, ok := item.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "%T", item.Item.Kind)
	assert.Equal(t, "wake-work", act.Instance)
	assert.Equal(t, 0, w.count(tracePollTimer), "a timer ended a wait")
	assert.GreaterOrEqual(t, w.count(tracePollNotified), 1)
}

// TestLongPollWokenByUnlockingAck requires a message that arrives while
// its instance is locked to reach a waiting fetch as soon as the ack
// releases the lock: the enqueue wakes the fetch, which finds the instance
// locked and waits again; the ack wakes it again.
func TestLongPollWokenByUnlockingAck(t *testing.T) {
	p, w := newWakeProvider(t)
	ctx := context.Background()
	const id = "wake-locked"
	startAndAckFirst(t, p, id)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(id, "e", "first"), 0))
	locked, err := fetchInstance(ctx, p, id)
	require.NoError(t, err)
	for len(w.waits) > 0 {
		w.waited(t)
	}

	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
		assert.NoError(t, err)
		got <- item
	}()
	w.waited(t)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(id, "e", "second"), 0))
	w.waited(t) // woken, found the instance locked, waits again
	select {
	case item := <-got:
		t.Fatalf("fetch returned %+v while the instance was locked", item)
	default:
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, locked.LockToken, 1, []duroxide.Event{externalEvent(id, 2, "first")}, nil, nil, duroxide.ExecutionMetadata{}, nil))

	item := <-got
	require.NotNil(t, item)
	assert.Equal(t, id, item.Instance)
	require.Len(t, item.Messages, 1)
	ev, ok := item.Messages[0].Kind.(duroxide.ExternalRaisedItem)
	require.True(t, ok, "%T", item.Messages[0].Kind)
	assert.Equal(t, "second", ev.Data)
	assert.Equal(t, 0, w.count(tracePollTimer), "a timer ended a wait")
	assert.GreaterOrEqual(t, w.count(tracePollNotified), 2)
}
