package cdb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/emulator"
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

// TestIdleLongPollTrustsThePoolWhileTheChangeFeedIsHealthy: with the
// change-feed reader healthy, a long poll that finds nothing makes no
// candidate query while its view is younger than 10 s (the reader hints
// every message written since), not even at its deadline; without the
// reader it queries at the start, every LongPollInterval and at the
// deadline.
func TestIdleLongPollTrustsThePoolWhileTheChangeFeedIsHealthy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		disable bool
	}{{"change feed", false}, {"polling", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, func(cfg *cdb.Config) {
				cfg.DisableReconciler, cfg.DisableChangeFeedWakeups = true, c.disable
				cfg.LongPollInterval = 50 * time.Millisecond
				cfg.ChangeFeedInterval = time.Second // healthy for 3 s after each read, however slow the machine
			})
			steps := traceSteps(p)
			ctx := context.Background()
			item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
			require.NoError(t, err)
			require.Nil(t, item)
			require.Equal(t, 1, steps.take()["orch candidate query"], "a fetch with a new view queries")

			item, err = p.FetchOrchestrationItem(ctx, longLock, 300*time.Millisecond, nil)
			require.NoError(t, err)
			require.Nil(t, item)
			queries := steps.take()["orch candidate query"]
			if c.disable {
				assert.GreaterOrEqual(t, queries, 2, "polling: the stale view at the start, the polls and the deadline")
			} else {
				assert.Zero(t, queries, "the change feed's healthy reader stands for the queries")
			}
		})
	}
}

// TestNewWithoutTheChangeFeedWhenItsFirstReadFails: an account that
// refuses change-feed reads (here: every read throttled, past the
// retries) still gets a working provider, which polls for other
// processes' messages instead of being woken.
func TestNewWithoutTheChangeFeedWhenItsFirstReadFails(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	a.Emulator().InjectFault(emulator.FaultRule{Op: emulator.OpChangeFeed, Fault: emulator.TooManyRequests(time.Millisecond)})
	cfg := a.Config()
	cfg.DisableReconciler, cfg.LongPollInterval = true, 20*time.Millisecond
	writer := a.NewProvider(t, cfg)
	waiter := a.NewProvider(t, cfg)
	assert.Nil(t, waiter.Changes(), "no change-feed reader")
	assert.False(t, waiter.WatchesAllProcesses())

	ctx := context.Background()
	require.NoError(t, writer.EnqueueForOrchestrator(ctx, startItem("polled"), 0))
	item, err := waiter.FetchOrchestrationItem(ctx, longLock, 10*time.Second, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the waiting fetch's polls found the other provider's message")
	assert.Equal(t, "polled", item.Instance)
}
