package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/testparallel"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// TestMain runs the suite's cases 16 at a time unless -parallel says
// otherwise: they mostly wait for lock timeouts and polls, and the
// in-memory provider costs next to no CPU.
func TestMain(m *testing.M) {
	if err := testparallel.Default(16); err != nil {
		fmt.Fprintln(os.Stderr, "providertest:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestMemoryProviderValidation runs the whole validation suite against the
// reference in-memory provider; every case must pass, none may be skipped.
func TestMemoryProviderValidation(t *testing.T) {
	tally := RunAll(t, MemoryFactory{})
	require.Zero(t, tally.Failed(), "validation: %s", tally)
	require.Zero(t, tally.Skipped(), "validation: %s", tally)
}

// The tests below cover what the suite leaves to each provider: how the
// in-memory provider's long polls wake up. A fetch that failed to wake
// would return nil at the end of its poll timeout and fail the test.

// pollLong is a poll timeout no test should reach.
const pollLong = 10 * time.Second

// orderingPause gives a goroutine time to start waiting before the test
// acts; it only orders events and is never asserted on.
const orderingPause = 50 * time.Millisecond

// TestMemoryLongPollWakesOnEnqueue checks that a waiting orchestration fetch returns a message enqueued while it waits.
func TestMemoryLongPollWakesOnEnqueue(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(t.Context(), longLock, pollLong, nil)
		if err != nil {
			t.Errorf("fetch: %v", err)
		}
		got <- item
	}()
	time.Sleep(orderingPause)
	enqueueOrch(t, p, startItem("wake-on-enqueue"))
	item := <-got
	require.NotNil(t, item, "the waiting fetch should return the new message")
	require.Equal(t, "wake-on-enqueue", item.Instance)
}

// TestMemoryLongPollWakesWhenDelayedMessageBecomesVisible checks that a waiting fetch wakes when a delayed message becomes visible.
func TestMemoryLongPollWakesWhenDelayedMessageBecomesVisible(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), startItem("delayed"), 200*time.Millisecond))
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, pollLong, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the fetch should wake when the delayed message becomes visible")
	require.Equal(t, "delayed", item.Instance)
}

// TestMemoryLongPollWakesWhenLockExpires checks that a waiting fetch wakes when another fetch's instance lock expires, and the refetch counts a second attempt.
func TestMemoryLongPollWakesWhenLockExpires(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	enqueueOrch(t, p, startItem("expiring"))
	fetchOrch(t, p, 200*time.Millisecond)
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, pollLong, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the fetch should wake when the other lock expires")
	require.Equal(t, uint32(2), item.AttemptCount)
}

// TestMemoryLongPollWorkItemWakesOnAck checks that a waiting worker fetch returns the activity an orchestration ack enqueues.
func TestMemoryLongPollWorkItemWakesOnAck(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	enqueueOrch(t, p, startItem("wake-worker"))
	turn := fetchOrch(t, p, longLock)
	got := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		w, err := p.FetchWorkItem(t.Context(), longLock, pollLong, nil, duroxide.TagFilterDefaultOnly())
		if err != nil {
			t.Errorf("fetch work: %v", err)
		}
		got <- w
	}()
	time.Sleep(orderingPause)
	activity := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "wake-worker", ExecutionID: 1, ID: 2, Name: "A", Input: "{}"}}
	require.NoError(t, p.AckOrchestrationItem(t.Context(), turn.LockToken, 1,
		[]duroxide.Event{
			startedEvent("wake-worker", 1, 1, testOrch, testOrchVersion),
			duroxide.NewEvent(2, "wake-worker", 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "{}"}),
		},
		[]duroxide.WorkItem{activity}, nil, orchMetadata(testOrch, testOrchVersion), nil))
	w := <-got
	require.NotNil(t, w, "the waiting worker fetch should return the activity the ack enqueued")
	require.Equal(t, activity, w.Item)
}

// TestMemoryLongPollEndsWithCancelledContext checks that cancelling the context ends a long poll with a retryable error wrapping context.Canceled.
func TestMemoryLongPollEndsWithCancelledContext(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1)
	go func() {
		_, err := p.FetchOrchestrationItem(ctx, longLock, pollLong, nil)
		errs <- err
	}()
	time.Sleep(orderingPause)
	cancel()
	err := <-errs
	pe := requireProviderError(t, err, "a cancelled long poll should fail")
	require.True(t, pe.Retryable, "a cancelled call may be retried")
	require.True(t, errors.Is(err, context.Canceled), "the error should wrap context.Canceled: %v", err)
}

// TestMemoryTagFilterNoneNeverReturnsWork checks that TagFilterNone matches no activity, even when one is queued.
func TestMemoryTagFilterNoneNeverReturnsWork(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	require.NoError(t, p.EnqueueForWorker(t.Context(), duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 1, Name: "A"}}))
	w, err := p.FetchWorkItem(t.Context(), longLock, 0, nil, duroxide.TagFilterNone())
	require.NoError(t, err)
	require.Nil(t, w)
	w, err = p.FetchWorkItem(t.Context(), longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the item was there all along")
}

// TestMemoryProviderIsItsOwnAdmin checks that AsManagementCapability finds the provider's ProviderAdmin.
func TestMemoryProviderIsItsOwnAdmin(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	admin, ok := duroxide.AsManagementCapability(p)
	require.True(t, ok)
	require.Same(t, p, admin.(*memory.MemoryProvider))
}

// TestMemoryProviderUsesInjectedClock checks that memory.MemoryOptions.Now drives message visibility.
func TestMemoryProviderUsesInjectedClock(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_000_000)
	p := memory.NewMemoryProvider(memory.MemoryOptions{Now: func() time.Time { return now }})
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), startItem("clocked"), time.Minute))
	requireNoOrch(t, p, longLock, "the message is delayed by a minute of the injected clock")
	now = now.Add(time.Minute)
	item := fetchOrch(t, p, longLock)
	require.Equal(t, "clocked", item.Instance)
}

// TestMemoryUnencodableWorkItemIsPermanentSerializationError checks that a
// work item the codec refuses (a pointer kind) is SQLite's permanent
// "Serialization error", with the codec's error reachable through errors.As,
// and that nothing is enqueued.
func TestMemoryUnencodableWorkItemIsPermanentSerializationError(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	bad := duroxide.WorkItem{Kind: &duroxide.ExternalRaisedItem{Instance: "unencodable", Name: "e", Data: "d"}}
	err := p.EnqueueForOrchestrator(t.Context(), bad, 0)
	pe := requireProviderError(t, err, "a pointer kind cannot be stored")
	require.False(t, pe.Retryable)
	require.Equal(t, "enqueue_for_orchestrator", pe.Operation)
	require.True(t, strings.HasPrefix(pe.Message, "Serialization error: "), "message %q", pe.Message)
	var marshalErr *json.MarshalerError
	require.True(t, errors.As(err, &marshalErr), "the codec's error should be wrapped: %v", err)
	depths, err := p.GetQueueDepths(t.Context())
	require.NoError(t, err)
	require.Zero(t, depths.OrchestratorQueue, "nothing may be enqueued")

	// A completion the codec refuses fails the worker ack the same way and
	// leaves the locked item in place.
	require.NoError(t, p.EnqueueForWorker(t.Context(), duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "unencodable", ExecutionID: 1, ID: 1, Name: "A"}}))
	w, err := p.FetchWorkItem(t.Context(), longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	completion := duroxide.WorkItem{Kind: duroxide.ActivityFailedItem{Instance: "unencodable", ExecutionID: 1, ID: 1}}
	pe = requireProviderError(t, p.AckWorkItem(t.Context(), w.LockToken, &completion), "failure details with no variant cannot be stored")
	require.False(t, pe.Retryable)
	require.True(t, strings.HasPrefix(pe.Message, "Serialization error: "), "message %q", pe.Message)
	_, err = p.RenewWorkItemLock(t.Context(), w.LockToken, longLock)
	require.NoError(t, err, "the failed ack must leave the item locked")
}

// TestMemoryUnencodableEventKeepsItsCause checks that an event the codec
// refuses (no kind) fails the append with a permanent "Failed to append
// history" error that wraps the codec's error, and that nothing is written.
func TestMemoryUnencodableEventKeepsItsCause(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	err := p.AppendWithExecution(t.Context(), "no-kind", 1, []duroxide.Event{
		startedEvent("no-kind", 1, 1, testOrch, testOrchVersion),
		{EventID: 2, InstanceID: "no-kind", ExecutionID: 1},
	})
	pe := requireProviderError(t, err, "an event without a kind cannot be stored")
	require.False(t, pe.Retryable)
	require.True(t, strings.HasPrefix(pe.Message, "Failed to append history: "), "message %q", pe.Message)
	var marshalErr *json.MarshalerError
	require.True(t, errors.As(err, &marshalErr), "the codec's error should be wrapped: %v", err)
	history, err := p.ReadWithExecution(t.Context(), "no-kind", 1)
	require.NoError(t, err)
	require.Empty(t, history, "nothing may be written")
}
