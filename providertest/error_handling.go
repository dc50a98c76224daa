package providertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// errorHandlingCases ports duroxide's src/provider_validation/error_handling.rs; see README.md for
// the table from each Rust test to its Go function.
var errorHandlingCases = []Case{
	{"test_invalid_lock_token_on_ack", InvalidLockTokenOnAck},
	{"test_duplicate_event_id_rejection", DuplicateEventIDRejection},
	{"test_missing_instance_metadata", MissingInstanceMetadata},
	{"test_corrupted_serialization_data", CorruptedSerializationData},
	{"test_lock_expiration_during_ack", LockExpirationDuringAck},
	{"test_read_corrupted_history_returns_error", ReadCorruptedHistoryReturnsError},
	{"test_read_with_execution_corrupted_history_returns_error", ReadWithExecutionCorruptedHistoryReturnsError},
}

// InvalidLockTokenOnAck checks that an ack with a token no fetch issued
// fails with a permanent ProviderError whose message names the lock token
// (duroxide's test_invalid_lock_token_on_ack; the Go contract adds that the
// error is a permanent *ProviderError).
func InvalidLockTokenOnAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	err := p.AckOrchestrationItem(t.Context(), "invalid-token", 1, nil, nil, nil, duroxide.ExecutionMetadata{}, nil)
	pe := requirePermanent(t, err, "an ack with an invalid lock token should fail")
	require.True(t, strings.Contains(pe.Message, "Invalid lock token") || strings.Contains(pe.Message, "lock_token"),
		"the error message %q should name the invalid lock token", pe.Message)
}

// DuplicateEventIDRejection checks that an ack appending an event id the
// execution already has fails and leaves the history unchanged (duroxide's
// test_duplicate_event_id_rejection).
func DuplicateEventIDRejection(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	second := startedThenRefetched(t, p, inst)
	err := p.AckOrchestrationItem(ctx, second.LockToken, 1,
		[]duroxide.Event{duroxide.NewEvent(1, inst, 1, nil, duroxide.ActivityScheduled{Name: "Activity", Input: "{}"})}, // duplicate id 1
		nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.Error(t, err, "an ack with a duplicate event_id should fail")

	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 1, "history should be unchanged")
	require.IsType(t, duroxide.OrchestrationStarted{}, history[0].Kind, "the original event should remain")
}

// MissingInstanceMetadata checks that reading an instance that does not
// exist gives an empty history (duroxide's test_missing_instance_metadata,
// which tolerates an error; the Go contract says an unknown instance has an
// empty history, not an error, so this port requires no error).
func MissingInstanceMetadata(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	history, err := p.Read(t.Context(), "non-existent-instance")
	require.NoError(t, err, "reading an unknown instance is not an error")
	require.Empty(t, history)
}

// CorruptedSerializationData checks that a fetch on a provider with
// nothing to decode degrades gracefully (duroxide's
// test_corrupted_serialization_data, whose only assertion, "does not
// panic", holds for any outcome; the Go port asserts the outcome instead:
// no error and no item on an empty provider). Corrupted history itself is
// covered by the capability_filtering group through the HistoryCorrupter
// hook.
func CorruptedSerializationData(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
	require.NoError(t, err, "fetch should not fail")
	require.Nil(t, item, "an empty provider has nothing to fetch")
}

// LockExpirationDuringAck checks that an ack after the lock expired is
// rejected (duroxide's test_lock_expiration_during_ack); the Go contract
// adds that the error is permanent and nothing is written.
func LockExpirationDuringAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "instance-A"

	enqueueOrch(t, p, startItem(inst))
	item := fetchOrch(t, p, f.LockTimeout())

	sleepPastLockTimeout(f)

	err := p.AckOrchestrationItem(t.Context(), item.LockToken, 1,
		[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, testOrchVersion)}, nil, nil, duroxide.ExecutionMetadata{}, nil)
	requirePermanent(t, err, "an ack with an expired lock should be rejected")

	history, err := p.Read(t.Context(), inst)
	require.NoError(t, err)
	require.Empty(t, history, "the rejected ack should write nothing")
}

// ReadCorruptedHistoryReturnsError checks that Read fails with a permanent
// ProviderError, instead of dropping events, once the instance's history
// holds data that does not decode (duroxide's
// test_read_corrupted_history_returns_error, added after 0.1.26; the Go
// contract adds that the error is permanent, and that ProviderAdmin's
// ReadHistory fails the same way when the provider has it). Needs the
// HistoryCorrupter hook.
func ReadCorruptedHistoryReturnsError(t *testing.T, f Factory) {
	corrupter := requireCorrupter(t, f)
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "inst-read-corrupt"
	createInstance(t, p, inst)
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.NotEmpty(t, history, "history should contain events before corruption")

	corrupter.CorruptInstanceHistory(ctx, t, p, inst)
	history, err = p.Read(ctx, inst)
	requirePermanent(t, err, "read() should return an error for corrupted history, got %d events", len(history))
	if admin, ok := duroxide.AsManagementCapability(p); ok {
		history, err = admin.ReadHistory(ctx, inst)
		requirePermanent(t, err, "read_history() should return an error for corrupted history, got %d events", len(history))
	}
}

// ReadWithExecutionCorruptedHistoryReturnsError checks the same of
// ReadWithExecution, and of ProviderAdmin's ReadHistoryWithExecutionID when
// the provider has it (duroxide's
// test_read_with_execution_corrupted_history_returns_error, added after
// 0.1.26). Needs the HistoryCorrupter hook.
func ReadWithExecutionCorruptedHistoryReturnsError(t *testing.T, f Factory) {
	corrupter := requireCorrupter(t, f)
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "inst-rwe-corrupt"
	createInstance(t, p, inst)
	history, err := p.ReadWithExecution(ctx, inst, duroxide.InitialExecutionID)
	require.NoError(t, err)
	require.NotEmpty(t, history, "history should contain events before corruption")

	corrupter.CorruptInstanceHistory(ctx, t, p, inst)
	history, err = p.ReadWithExecution(ctx, inst, duroxide.InitialExecutionID)
	requirePermanent(t, err, "read_with_execution() should return an error for corrupted history, got %d events", len(history))
	if admin, ok := duroxide.AsManagementCapability(p); ok {
		history, err = admin.ReadHistoryWithExecutionID(ctx, inst, duroxide.InitialExecutionID)
		requirePermanent(t, err, "read_history_with_execution_id() should return an error for corrupted history, got %d events", len(history))
	}
}
