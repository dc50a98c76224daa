package cdb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
)

// TestChangeFeedWakesFetchOfAnotherProcess: a provider whose waiting
// fetch would poll only every minute is woken by its change-feed reader
// when another provider (another process) enqueues, and returns the turn;
// its Changes channel closes too.
func TestChangeFeedWakesFetchOfAnotherProcess(t *testing.T) {
	t.Parallel()
	cfg := env.config()
	cfg.DisableReconciler = true
	writer := startProvider(t, cfg)
	cfg.ChangeFeedInterval = 10 * time.Millisecond
	cfg.LongPollInterval = time.Minute
	waiter := startProvider(t, cfg)
	var mu sync.Mutex
	var events []string
	cdb.SetFetchTracer(waiter, func(ev string) { mu.Lock(); events = append(events, ev); mu.Unlock() })
	changes := waiter.Changes()
	require.NotNil(t, changes)

	ctx := context.Background()
	type result struct {
		instance string
		err      error
	}
	done := make(chan result, 1)
	go func() {
		item, err := waiter.FetchOrchestrationItem(ctx, longLock, 2*time.Minute, nil)
		r := result{err: err}
		if item != nil {
			r.instance = item.Instance
		}
		done <- r
	}()
	// Let the fetch find nothing and wait (the tracer says so).
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if e == "poll wait" {
				return true
			}
		}
		return false
	}, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, writer.EnqueueForOrchestrator(ctx, startItem("woken"), 0))
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, "woken", r.instance)
	mu.Lock()
	assert.Contains(t, events, "poll woken by a write", "the change feed woke the fetch, not its timer")
	assert.NotContains(t, events, "poll woken by the timer")
	mu.Unlock()
	select {
	case <-changes:
	default:
		t.Fatal("Changes was not closed")
	}
}

// TestChangesIsNilWithoutTheReader: with DisableChangeFeedWakeups there
// is no reader and Changes is nil.
func TestChangesIsNilWithoutTheReader(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(c *cdb.Config) { c.DisableChangeFeedWakeups = true })
	assert.Nil(t, p.Changes())
}
