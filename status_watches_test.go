package cdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWatchStatusClosesOnTheAckThatCompletesTheInstance(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	const instance = "watch-complete"
	w, ok := duroxide.AsStatusWatcher(p)
	require.True(t, ok, "the provider is a duroxide.StatusWatcher")

	changed, stop := w.WatchStatus(instance)
	defer stop()
	startAndAckFirst(t, p, instance)
	require.False(t, closed(changed), "a running turn changes nothing a status wait looks at")

	completeRunning(t, p, instance)
	require.True(t, closed(changed), "the completing ack wakes the watcher")

	again, stopAgain := w.WatchStatus(instance)
	stopAgain()
	stopAgain() // safe twice
	require.False(t, closed(again), "a new watch waits for the next change")
}

func TestWatchStatusClosesOnCustomStatusUpdate(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	const instance = "watch-custom"
	startAndAckFirst(t, p, instance)
	changed, stop := p.WatchStatus(instance)
	defer stop()
	require.NoError(t, p.EnqueueForOrchestrator(context.Background(), raised(instance, "e", "x"), 0))
	ackNextTurn(t, p, instance, []duroxide.Event{duroxide.NewEvent(2, instance, 1, nil, duroxide.CustomStatusUpdated{Status: duroxide.StringPtr("half")})})
	require.True(t, closed(changed))
}

// completeInstance runs instance's first turn and a second that completes
// it with output "ok", on p.
func completeInstance(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	startAndAckFirst(t, p, instance)
	completeRunning(t, p, instance)
}

// completeRunning runs a turn of running instance that completes it with
// output "ok".
func completeRunning(t *testing.T, p duroxide.Provider, instance string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(instance, "e", "x"), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	done := duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationCompleted{Output: `"ok"`})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{done}, nil, nil,
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr(`"ok"`)}, nil))
}

func TestWatchStatusSeesAnotherProcessesCompletionThroughTheChangeFeed(t *testing.T) {
	t.Parallel()
	cfg := env.config()
	cfg.DisableReconciler = true
	cfg.DisableChangeFeedWakeups = true
	other := startProvider(t, cfg)
	cfg.DisableChangeFeedWakeups = false
	cfg.ChangeFeedInterval = 10 * time.Millisecond
	waiter := startProvider(t, cfg)
	require.True(t, waiter.WatchesAllProcesses(), "with the change feed the watches cover every process")
	require.False(t, other.WatchesAllProcesses(), "without it they cover this process's acks only")

	const instance = "watch-elsewhere"
	changed, stop := waiter.WatchStatus(instance)
	defer stop()
	completeInstance(t, other, instance)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the completion another process committed did not close the watch")
	}
}

func TestGetInstanceStatusReadsInfoAndCustomStatusTogether(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	_, _, err := p.GetInstanceStatus(ctx, "absent")
	requirePermanent(t, err, "an unknown instance is GetInstanceInfo's permanent error")

	const instance = "status-together"
	completeInstance(t, p, instance)
	info, cs, err := p.GetInstanceStatus(ctx, instance)
	require.NoError(t, err)
	want, err := p.GetInstanceInfo(ctx, instance)
	require.NoError(t, err)
	require.Equal(t, want, info)
	require.Nil(t, cs, "no custom status was set")

	const custom = "status-together-custom"
	startAndAckFirst(t, p, custom)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(custom, "e", "x"), 0))
	ackNextTurn(t, p, custom, []duroxide.Event{duroxide.NewEvent(2, custom, 1, nil, duroxide.CustomStatusUpdated{Status: duroxide.StringPtr("half")})})
	info, cs, err = p.GetInstanceStatus(ctx, custom)
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusRunning, info.Status)
	require.NotNil(t, cs)
	require.Equal(t, "half", *cs.Status)
	require.Equal(t, uint64(1), cs.Version)
}
