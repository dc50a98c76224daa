package cdb_test

import (
	"context"
	"testing"

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
	ctx := context.Background()
	const instance = "watch-complete"
	w, ok := duroxide.AsStatusWatcher(p)
	require.True(t, ok, "the provider is a duroxide.StatusWatcher")

	changed, stop := w.WatchStatus(instance)
	defer stop()
	startAndAckFirst(t, p, instance)
	require.False(t, closed(changed), "a running turn changes nothing a status wait looks at")

	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(instance, "e", "x"), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	done := duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationCompleted{Output: `"ok"`})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{done}, nil, nil,
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr(`"ok"`)}, nil))
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
