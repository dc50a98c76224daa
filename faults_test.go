package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

func ptr[T any](v T) *T { return &v }

// TestAckLostAnswers drops the answer of each commit after applying it
// (the ambiguous outcome of a real network failure) and checks that every
// call reports success, nothing is applied twice, and nothing is lost.
func TestAckLostAnswers(t *testing.T) {
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	const inst = "lost-answers"
	key := inst

	s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))

	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err, "the lock batch's lost answer is verified, not retried")
	require.Len(t, item.Messages, 1, "the start message was enqueued once")

	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: ptr("instance"), Times: 1, Fault: emulator.ApplyThenDrop()})
	scheduled := duroxide.NewEvent(2, inst, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "x"})
	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "Greet", Input: "x"}}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst), scheduled}, []duroxide.WorkItem{act}, nil, runningMetadata(), nil))
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst), scheduled}, []duroxide.WorkItem{act}, nil, runningMetadata(), nil)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "a second ack of the same lock fails: %v", err)
	assert.False(t, pe.Retryable)

	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))
	again, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, again, "an acked work item is never fetched again")

	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Len(t, item.History, 2)
	assert.Len(t, item.Messages, 1, "the completion was enqueued once")
}

// TestTransientFaultsAreRetried injects 429 (with x-ms-retry-after-ms),
// 503, 408 and dropped connections into reads, queries and idempotent
// writes, and checks that calls succeed.
func TestTransientFaultsAreRetried(t *testing.T) {
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	for i, f := range []emulator.Fault{
		emulator.TooManyRequests(30 * time.Millisecond), emulator.ServiceUnavailable(), emulator.RequestTimeout(), emulator.DropConnection(),
	} {
		inst := fmt.Sprintf("transient-%d", i)
		for _, op := range []emulator.OpKind{emulator.OpQuery, emulator.OpReadItem, emulator.OpCreateItem} {
			s.InjectFault(emulator.FaultRule{Op: op, Times: 1, Fault: f})
		}
		require.NoError(t, helloWorld(ctx, p, inst, nil), "fault %v", f.Kind)
		history, err := p.Read(ctx, inst)
		require.NoError(t, err)
		assert.Len(t, history, 4)
		s.ClearFaults()
	}
}

// TestThrottledPastRetriesIsRetryable checks that a call throttled longer
// than its retries last fails with a retryable ProviderError.
func TestThrottledPastRetriesIsRetryable(t *testing.T) {
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	s.InjectFault(emulator.FaultRule{Op: emulator.OpQuery, Fault: emulator.TooManyRequests(time.Millisecond)})
	_, err := p.FetchOrchestrationItem(context.Background(), longLock, 0, nil)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.True(t, pe.Retryable)
	assert.Equal(t, "fetch_orchestration_item", pe.Operation)
}

// faultRuntime drives orchestrations through the provider the way a
// runtime would, while faults fire, and checks duroxide's delivery
// guarantees: no work lost, nothing processed again after a successful
// ack.
type faultRuntime struct {
	t          *testing.T
	p          duroxide.Provider
	ackedWork  map[string]bool // instance/activity whose AckWorkItem succeeded
	ackedTurns map[string]int  // instance: turns committed
}

func (r *faultRuntime) orchestrationStep(ctx context.Context) {
	item, err := r.p.FetchOrchestrationItem(ctx, time.Second, 0, nil)
	if err != nil || item == nil {
		return
	}
	inst := item.Instance
	var events []duroxide.Event
	var work []duroxide.WorkItem
	md := duroxide.ExecutionMetadata{}
	completed := false
	for _, m := range item.Messages {
		if _, ok := m.Kind.(duroxide.ActivityCompletedItem); ok {
			completed = true
		}
	}
	switch {
	case len(item.History) == 0:
		events = []duroxide.Event{started(inst), duroxide.NewEvent(2, inst, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: "x"})}
		work = []duroxide.WorkItem{{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "Greet", Input: "x"}}}
		md = runningMetadata()
	case len(item.History) == 2 && completed:
		events = []duroxide.Event{
			duroxide.NewEvent(3, inst, 1, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: "r"}),
			duroxide.NewEvent(4, inst, 1, nil, duroxide.OrchestrationCompleted{Output: "r"}),
		}
		md.Status, md.Output = duroxide.StringPtr(duroxide.StatusCompleted), duroxide.StringPtr("r")
	}
	for attempt := 0; attempt < 3; attempt++ {
		err = r.p.AckOrchestrationItem(ctx, item.LockToken, 1, events, work, nil, md, nil)
		if err == nil {
			r.ackedTurns[inst]++
			return
		}
		if !duroxide.IsRetryable(err) {
			return
		}
	}
	_ = r.p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false)
}

func (r *faultRuntime) workerStep(ctx context.Context) {
	w, err := r.p.FetchWorkItem(ctx, time.Second, 0, nil, duroxide.TagFilterDefaultOnly())
	if err != nil || w == nil {
		return
	}
	act := w.Item.Kind.(duroxide.ActivityExecuteItem)
	key := fmt.Sprintf("%s/%d", act.Instance, act.ID)
	assert.False(r.t, r.ackedWork[key], "work item %s fetched again after a successful ack", key)
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: act.Instance, ExecutionID: 1, ID: act.ID, Result: "r"}}
	for attempt := 0; attempt < 3; attempt++ {
		err = r.p.AckWorkItem(ctx, w.LockToken, &done)
		if err == nil {
			r.ackedWork[key] = true
			return
		}
		if !duroxide.IsRetryable(err) {
			return
		}
	}
}

// TestFaultStorm runs orchestrations while 429, 503, 408, dropped
// connections and applied-then-dropped writes hit a fifth of all document
// requests, then checks that every orchestration completed with exactly its
// four events, every activity was acked once, and no lock outlives its
// timeout.
func TestFaultStorm(t *testing.T) {
	p, s := newPrivateProvider(t, func(c *cdb.Config) {
		c.ReconcilerInterval, c.ReconcilerAgeThreshold = 200*time.Millisecond, 200*time.Millisecond
	})
	ctx := context.Background()
	const n = 12
	var ids []string
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("storm-%02d", i)
		ids = append(ids, id)
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(id), 0))
	}
	for i, f := range []emulator.Fault{
		emulator.TooManyRequests(2 * time.Millisecond), emulator.ServiceUnavailable(), emulator.RequestTimeout(),
		emulator.DropConnection(), emulator.ApplyThenDrop(),
	} {
		for _, op := range dataOps {
			s.InjectFault(emulator.FaultRule{Op: op, Probability: 0.04, Seed: int64(100*i + len(op)), Fault: f})
		}
	}
	r := &faultRuntime{t: t, p: p, ackedWork: map[string]bool{}, ackedTurns: map[string]int{}}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		r.orchestrationStep(ctx)
		r.workerStep(ctx)
		if allCompleted(ctx, p, ids) {
			break
		}
	}
	s.ClearFaults()
	for _, id := range ids {
		history, err := p.Read(ctx, id)
		require.NoError(t, err)
		require.Len(t, history, 4, "instance %s", id)
		for i, ev := range history {
			assert.Equal(t, uint64(i+1), ev.EventID, "instance %s", id)
		}
		assert.True(t, r.ackedWork[id+"/2"] || workGone(ctx, t, p, id), "activity of %s", id)
		docs := partitionDocs(ctx, t, p, id, "SELECT c.lockedUntil FROM c WHERE c.type = 'instance'")
		require.Len(t, docs, 1)
		assert.LessOrEqual(t, docs[0]["lockedUntil"].(float64), float64(time.Now().Add(time.Second).UnixMilli()), "no lock outlives its timeout")
	}
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Zero(t, depths.WorkerQueue, "no activity left behind")
}

// allCompleted reports whether every instance's status is Completed.
func allCompleted(ctx context.Context, p duroxide.Provider, ids []string) bool {
	admin, _ := duroxide.AsManagementCapability(p)
	done, err := admin.ListInstancesByStatus(ctx, duroxide.StatusCompleted)
	return err == nil && len(done) == len(ids)
}

// workGone reports whether instance has no worker-queue message left.
func workGone(ctx context.Context, t *testing.T, p duroxide.Provider, instance string) bool {
	return len(partitionDocs(ctx, t, p, instance, "SELECT c.id FROM c WHERE c.type = 'worker_queue'")) == 0
}
