package providertest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Helpers shared by the validation groups: the Go counterparts of
// duroxide's provider_validation/mod.rs (start_item, create_instance,
// create_instance_with_parent) and the few steps nearly every test takes.

// longLock is the lock timeout duroxide's tests pass when the test does
// not wait for expiry (Duration::from_secs(30)).
const longLock = 30 * time.Second

// testOrch and testOrchVersion name the orchestration start_item starts.
const (
	testOrch        = "TestOrch"
	testOrchVersion = "1.0.0"
)

// startItem returns the StartOrchestration message duroxide's start_item
// builds: TestOrch version 1.0.0, input "{}", execution 1, no parent.
func startItem(instance string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance:      instance,
		Orchestration: testOrch,
		Input:         "{}",
		Version:       duroxide.StringPtr(testOrchVersion),
		ExecutionID:   duroxide.InitialExecutionID,
	}}
}

// startedEvent returns an OrchestrationStarted event of name and version
// with input "{}" and no parent, at eventID in execution executionID.
func startedEvent(instance string, eventID, executionID uint64, name, version string) duroxide.Event {
	return duroxide.NewEvent(eventID, instance, executionID, nil, duroxide.OrchestrationStarted{
		Name: name, Version: version, Input: "{}",
	})
}

// orchMetadata returns the ExecutionMetadata that creates or updates the
// instance record as name at version.
func orchMetadata(name, version string) duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{
		OrchestrationName:    duroxide.StringPtr(name),
		OrchestrationVersion: duroxide.StringPtr(version),
	}
}

// enqueueOrch enqueues item on the orchestrator queue, visible at once,
// failing t on error.
func enqueueOrch(t testing.TB, p duroxide.Provider, item duroxide.WorkItem) {
	t.Helper()
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), item, 0), "enqueue_for_orchestrator")
}

// fetchOrch fetches an orchestration item without waiting (poll timeout
// zero, no capability filter) and fails t unless one is returned.
func fetchOrch(t testing.TB, p duroxide.Provider, lockTimeout time.Duration) *duroxide.OrchestrationItem {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), lockTimeout, 0, nil)
	require.NoError(t, err, "fetch_orchestration_item")
	require.NotNil(t, item, "fetch_orchestration_item should return an item")
	return item
}

// requireNoOrch fails t unless a fetch without waiting returns nothing.
func requireNoOrch(t testing.TB, p duroxide.Provider, lockTimeout time.Duration, msgAndArgs ...any) {
	t.Helper()
	item, err := p.FetchOrchestrationItem(t.Context(), lockTimeout, 0, nil)
	require.NoError(t, err, "fetch_orchestration_item")
	require.Nil(t, item, msgAndArgs...)
}

// ackTurn acks a locked turn with history and metadata only, failing t on
// error.
func ackTurn(t testing.TB, p duroxide.Provider, lockToken string, executionID uint64, history []duroxide.Event, metadata duroxide.ExecutionMetadata) {
	t.Helper()
	require.NoError(t, p.AckOrchestrationItem(t.Context(), lockToken, executionID, history, nil, nil, metadata, nil),
		"ack_orchestration_item")
}

// createInstance creates instance the way duroxide's create_instance does:
// enqueue startItem, fetch it, and ack it with an OrchestrationStarted
// event and metadata naming TestOrch 1.0.0.
func createInstance(t testing.TB, p duroxide.Provider, instance string) {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance, "create_instance fetched another instance")
	ackTurn(t, p, item.LockToken, duroxide.InitialExecutionID,
		[]duroxide.Event{startedEvent(instance, duroxide.InitialEventID, duroxide.InitialExecutionID, testOrch, testOrchVersion)},
		orchMetadata(testOrch, testOrchVersion))
}

// startedThenRefetched runs the first turn of instance (startItem, acked
// with OrchestrationStarted as event 1 and empty metadata, so no instance
// record), enqueues startItem again and returns that second turn, locked
// for longLock. The atomicity and error-handling tests then ack it with a
// duplicate event id.
func startedThenRefetched(t testing.TB, p duroxide.Provider, instance string) *duroxide.OrchestrationItem {
	t.Helper()
	enqueueOrch(t, p, startItem(instance))
	first := fetchOrch(t, p, longLock)
	ackTurn(t, p, first.LockToken, 1,
		[]duroxide.Event{startedEvent(instance, 1, 1, testOrch, testOrchVersion)}, duroxide.ExecutionMetadata{})
	enqueueOrch(t, p, startItem(instance))
	return fetchOrch(t, p, longLock)
}

// requireProviderError fails t unless err is a *duroxide.ProviderError and
// returns it.
func requireProviderError(t testing.TB, err error, msgAndArgs ...any) *duroxide.ProviderError {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "error %v (%T) should be a *duroxide.ProviderError", err, err)
	return pe
}

// requirePermanent fails t unless err is a permanent (non-retryable)
// *duroxide.ProviderError and returns it.
func requirePermanent(t testing.TB, err error, msgAndArgs ...any) *duroxide.ProviderError {
	t.Helper()
	pe := requireProviderError(t, err, msgAndArgs...)
	require.False(t, pe.Retryable, "error %v should be permanent", err)
	return pe
}

// sleepPastLockTimeout sleeps the factory's lock timeout plus 100 ms, as
// duroxide's lock-expiry tests do (lock_timeout + 100ms).
func sleepPastLockTimeout(f Factory) {
	time.Sleep(f.LockTimeout() + 100*time.Millisecond)
}

// supportsLongPolling reports whether f's providers long-poll (the
// optional LongPollingReporter hook; short polling when absent).
func supportsLongPolling(f Factory) bool {
	lp, ok := f.(LongPollingReporter)
	return ok && lp.SupportsLongPolling()
}

// stamped returns ev with its duroxide_version replaced by stamp.
func stamped(ev duroxide.Event, stamp string) duroxide.Event {
	ev.DuroxideVersion = stamp
	return ev
}

// messageSummary names a turn's messages, in order, for assertions.
func messageSummary(items []duroxide.WorkItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		switch k := it.Kind.(type) {
		case duroxide.QueueMessageItem:
			out[i] = "QueueMessage:" + k.Data
		case duroxide.TimerFiredItem:
			out[i] = fmt.Sprintf("TimerFired:%d", k.ID)
		case duroxide.StartOrchestrationItem:
			out[i] = "StartOrchestration:" + k.Orchestration
		case duroxide.ContinueAsNewItem:
			out[i] = "ContinueAsNew:" + k.Orchestration
		case duroxide.ActivityCompletedItem:
			out[i] = fmt.Sprintf("ActivityCompleted:%d", k.ID)
		default:
			out[i] = string(it.Type())
		}
	}
	return out
}
