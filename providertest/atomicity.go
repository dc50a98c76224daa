package providertest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// atomicityCases ports duroxide's src/provider_validation/atomicity.rs; see README.md for
// the table from each Rust test to its Go function.
var atomicityCases = []Case{
	{"test_atomicity_failure_rollback", AtomicityFailureRollback},
	{"test_multi_operation_atomic_ack", MultiOperationAtomicAck},
	{"test_lock_released_only_on_successful_ack", LockReleasedOnlyOnSuccessfulAck},
	{"test_concurrent_ack_prevention", ConcurrentAckPrevention},
}

// AtomicityFailureRollback checks that an ack that fails (a duplicate event
// id) writes nothing and keeps the instance lock (duroxide's
// test_atomicity_failure_rollback).
func AtomicityFailureRollback(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	second := startedThenRefetched(t, p, inst)
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 1, "baseline history")

	err = p.AckOrchestrationItem(ctx, second.LockToken, 1,
		[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, testOrchVersion)}, // event id 1 again
		nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.Error(t, err, "an ack with a duplicate event_id should be rejected")

	history, err = p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 1, "history should remain unchanged after a failed ack")

	requireNoOrch(t, p, longLock, "the lock should still be held after a failed ack")
}

// MultiOperationAtomicAck checks that one ack carrying history, three
// worker items and two orchestrator items commits all of them (duroxide's
// test_multi_operation_atomic_ack).
func MultiOperationAtomicAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	enqueueOrch(t, p, startItem(inst))
	item := fetchOrch(t, p, longLock)

	history := []duroxide.Event{startedEvent(inst, 1, 1, testOrch, testOrchVersion)}
	var workerItems []duroxide.WorkItem
	for i, a := range []struct{ name, input string }{
		{"Activity1", "input1"}, {"Activity2", "input2"}, {"Activity3", "input3"},
	} {
		history = append(history, duroxide.NewEvent(uint64(i+2), inst, 1, nil, duroxide.ActivityScheduled{Name: a.name, Input: a.input}))
		workerItems = append(workerItems, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
			Instance: inst, ExecutionID: 1, ID: uint64(i + 1), Name: a.name, Input: a.input,
		}})
	}
	const fireAt = 1234567890 // in the past: visible at once
	history = append(history, duroxide.NewEvent(5, inst, 1, nil, duroxide.TimerCreated{FireAtMs: fireAt}))
	orchestratorItems := []duroxide.WorkItem{
		{Kind: duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 1, FireAtMs: fireAt}},
		{Kind: duroxide.ExternalRaisedItem{Instance: inst, Name: "TestEvent", Data: "test-data"}},
	}

	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, history, workerItems, orchestratorItems,
		duroxide.ExecutionMetadata{}, nil))

	stored, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, stored, 5, "all 5 history events should be persisted")

	for i := range 3 {
		w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
		require.NoError(t, err)
		require.NotNil(t, w, "worker item %d of 3 should be queued", i+1)
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.Nil(t, w, "exactly 3 worker items should be queued")

	next := fetchOrch(t, p, longLock)
	require.Len(t, next.Messages, 2, "should have TimerFired and ExternalRaised")
	require.IsType(t, duroxide.TimerFiredItem{}, next.Messages[0].Kind)
	require.IsType(t, duroxide.ExternalRaisedItem{}, next.Messages[1].Kind)
}

// LockReleasedOnlyOnSuccessfulAck checks that a failed ack (an invalid
// lock token) leaves the instance locked until the lock expires (duroxide's
// test_lock_released_only_on_successful_ack).
func LockReleasedOnlyOnSuccessfulAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	lockTimeout := f.LockTimeout()
	const inst = "instance-A"

	enqueueOrch(t, p, startItem(inst))
	fetchOrch(t, p, lockTimeout)
	requireNoOrch(t, p, lockTimeout, "the lock should be held")

	err := p.AckOrchestrationItem(ctx, "invalid-lock-token", 1,
		[]duroxide.Event{startedEvent(inst, 2, 1, testOrch, testOrchVersion)}, nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.Error(t, err, "an ack with an invalid lock token should fail")

	requireNoOrch(t, p, lockTimeout, "the lock should still be held after the failed ack")

	sleepPastLockTimeout(f)

	again := fetchOrch(t, p, lockTimeout)
	require.Equal(t, inst, again.Instance, "the instance should be fetchable once the lock expired")
}

// ConcurrentAckPrevention checks that of two concurrent acks with the same
// lock token exactly one succeeds (duroxide's
// test_concurrent_ack_prevention).
func ConcurrentAckPrevention(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	enqueueOrch(t, p, startItem(inst))
	item := fetchOrch(t, p, longLock)

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			errs[i] = p.AckOrchestrationItem(ctx, item.LockToken, 1,
				[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, testOrchVersion)}, nil, nil, duroxide.ExecutionMetadata{}, nil)
		})
	}
	wg.Wait()

	failures := 0
	for _, err := range errs {
		if err != nil {
			failures++
		}
	}
	require.Equal(t, 1, len(errs)-failures, "exactly one ack should succeed: %v", errs)
	require.Equal(t, 1, failures, "exactly one ack should fail: %v", errs)
}
