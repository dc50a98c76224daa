package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	t.Parallel()
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
	assert.False(t, pe.Retryable, "%v", err)

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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// writeKind classifies a request as one of the document writes the
// emulator's faults can target, or "" for anything else.
func writeKind(req *http.Request) emulator.OpKind {
	switch {
	case req.Method == http.MethodPatch:
		return emulator.OpPatchItem
	case req.Method == http.MethodDelete:
		return emulator.OpDeleteItem
	case req.Method == http.MethodPut:
		return emulator.OpReplaceItem
	case req.Method != http.MethodPost || isQueryRequest(req):
		return ""
	case req.Header.Get("x-ms-cosmos-is-batch-request") != "":
		return emulator.OpBatch
	case req.Header.Get("x-ms-documentdb-is-upsert") != "":
		return emulator.OpUpsertItem
	case strings.HasSuffix(req.URL.Path, "/docs"):
		return emulator.OpCreateItem
	}
	return ""
}

// flowOutcome is what a run of the parent/child flow observed.
type flowOutcome struct {
	writes       map[emulator.OpKind]int
	activityAcks int // successful AckWorkItem calls of the activity
	completed    bool
}

// runParentChildFlow drives, the way duroxide's runtime would (retrying
// retryable ack failures, abandoning otherwise), a parent orchestration
// that is raised an event, runs an activity and a sub-orchestration whose
// completion comes back through the outbox, and completes once it saw all
// three. fault, when set, is called before every document write with its
// kind and its number among writes of that kind (from 1). It then checks
// the outcome: every event in each history once, with contiguous ids, and
// nothing left in the queues.
func runParentChildFlow(t *testing.T, fault func(emu *emulator.Server, kind emulator.OpKind, n int)) flowOutcome {
	t.Helper()
	c := newCluster(t)
	clock := newTestClock()
	p, tr := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	ctx := context.Background()
	const parent, child = "flow-parent", "flow-child"
	out := flowOutcome{writes: map[emulator.OpKind]int{}}
	tr.setHook(func(req *http.Request) {
		if k := writeKind(req); k != "" {
			out.writes[k]++
			if testing.Verbose() && fault == nil {
				t.Logf("write %s %s %s", k, req.Method, req.URL.Path)
			}
			if fault != nil {
				fault(c.emu, k, out.writes[k])
			}
		}
	})

	retried := func(call func() error) error {
		var err error
		for attempt := 0; attempt < 4; attempt++ {
			if err = call(); err == nil || !duroxide.IsRetryable(err) {
				return err
			}
		}
		return err
	}
	// Client calls are retried by the test like a caller would.
	require.NoError(t, retried(func() error { return p.EnqueueForOrchestrator(ctx, startItem(parent), 0) }))
	require.NoError(t, retried(func() error { return p.EnqueueForOrchestrator(ctx, raised(parent, "go", "x"), 0) }))

	turn := func(item *duroxide.OrchestrationItem) (uint64, []duroxide.Event, []duroxide.WorkItem, []duroxide.WorkItem, duroxide.ExecutionMetadata) {
		inst := item.Instance
		next := uint64(len(item.History)) + 1
		var delta []duroxide.Event
		add := func(src *uint64, k duroxide.EventKind) {
			delta = append(delta, duroxide.NewEvent(next, inst, 1, src, k))
			next++
		}
		var workers, orchs []duroxide.WorkItem
		md := duroxide.ExecutionMetadata{}
		done := false
		for _, ev := range item.History {
			if _, ok := ev.Kind.(duroxide.OrchestrationCompleted); ok {
				done = true
			}
		}
		for _, m := range item.Messages {
			switch k := m.Kind.(type) {
			case duroxide.StartOrchestrationItem:
				if len(item.History) > 0 {
					continue // a duplicate start is ignored, as duroxide does
				}
				add(nil, duroxide.OrchestrationStarted{Name: helloOrch, Version: helloVersion, Input: k.Input, ParentInstance: k.ParentInstance, ParentID: k.ParentID})
				md = runningMetadata()
				if inst == parent {
					add(nil, duroxide.ActivityScheduled{Name: "A", Input: "i"})
					workers = append(workers, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: parent, ExecutionID: 1, ID: next - 1, Name: "A", Input: "i"}})
					add(nil, duroxide.SubOrchestrationScheduled{Name: helloOrch, Instance: child, Input: "c"})
					orchs = append(orchs, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{Instance: child, Orchestration: helloOrch, Input: "c",
						Version: duroxide.StringPtr(helloVersion), ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(next - 1), ExecutionID: 1}})
				} else {
					add(nil, duroxide.OrchestrationCompleted{Output: "c-done"})
					orchs = append(orchs, duroxide.WorkItem{Kind: duroxide.SubOrchCompletedItem{ParentInstance: parent, ParentExecutionID: 1, ParentID: *k.ParentID, Result: "c-done"}})
					md.Status, md.Output = duroxide.StringPtr(duroxide.StatusCompleted), duroxide.StringPtr("c-done")
				}
			case duroxide.ExternalRaisedItem:
				add(nil, duroxide.ExternalEvent{Name: k.Name, Data: k.Data})
			case duroxide.ActivityCompletedItem:
				add(duroxide.Uint64Ptr(k.ID), duroxide.ActivityCompleted{Result: k.Result})
			case duroxide.SubOrchCompletedItem:
				add(duroxide.Uint64Ptr(k.ParentID), duroxide.SubOrchestrationCompleted{Result: k.Result})
			}
		}
		if inst == parent && !done {
			seen := map[duroxide.EventType]int{}
			for _, ev := range append(append([]duroxide.Event(nil), item.History...), delta...) {
				seen[ev.Type()]++
			}
			if seen[duroxide.EventTypeExternalEvent] > 0 && seen[duroxide.EventTypeActivityCompleted] > 0 && seen[duroxide.EventTypeSubOrchestrationCompleted] > 0 {
				add(nil, duroxide.OrchestrationCompleted{Output: "p-done"})
				md.Status, md.Output = duroxide.StringPtr(duroxide.StatusCompleted), duroxide.StringPtr("p-done")
			}
		}
		return 1, delta, workers, orchs, md
	}

	for i := 0; i < 300 && !out.completed; i++ {
		clock.Advance(3 * time.Second) // expires abandoned locks, ages intents
		if item, err := p.FetchOrchestrationItem(ctx, 10*time.Second, 0, nil); err == nil && item != nil {
			exec, delta, workers, orchs, md := turn(item)
			err := retried(func() error {
				return p.AckOrchestrationItem(ctx, item.LockToken, exec, delta, workers, orchs, md, nil)
			})
			if err != nil {
				_ = p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false)
			}
		}
		if w, err := p.FetchWorkItem(ctx, 10*time.Second, 0, nil, duroxide.TagFilterDefaultOnly()); err == nil && w != nil {
			act := w.Item.Kind.(duroxide.ActivityExecuteItem)
			done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: act.Instance, ExecutionID: 1, ID: act.ID, Result: "a-done"}}
			if err := p.AckWorkItem(ctx, w.LockToken, &done); err == nil {
				out.activityAcks++
			} else {
				_ = p.AbandonWorkItem(ctx, w.LockToken, 0, false)
			}
		}
		_, _ = p.ReconcileOutbox(ctx)
		if st, err := p.GetInstanceInfo(ctx, parent); err == nil && st.Status == duroxide.StatusCompleted {
			out.completed = true
		}
	}
	tr.setHook(nil)
	c.emu.ClearFaults()

	want := map[string][]duroxide.EventType{
		parent: {duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeActivityScheduled, duroxide.EventTypeSubOrchestrationScheduled,
			duroxide.EventTypeExternalEvent, duroxide.EventTypeActivityCompleted, duroxide.EventTypeSubOrchestrationCompleted, duroxide.EventTypeOrchestrationCompleted},
		child: {duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeOrchestrationCompleted},
	}
	for inst, types := range want {
		history, err := p.Read(ctx, inst)
		require.NoError(t, err)
		counts := map[duroxide.EventType]int{}
		for i, ev := range history {
			assert.Equal(t, uint64(i+1), ev.EventID, "%s: event ids are contiguous", inst)
			counts[ev.Type()]++
		}
		for _, ty := range types {
			assert.Equal(t, 1, counts[ty], "%s: %s events in %v", inst, ty, history)
		}
		assert.Len(t, history, len(types), "%s", inst)
		assert.Empty(t, partitionDocs(ctx, t, p, inst, "SELECT c.id, c.type FROM c WHERE c.type IN ('orch_queue', 'worker_queue', 'outbox_intent')"),
			"%s: nothing left in the queues", inst)
	}
	assert.True(t, out.completed, "the flow completed")
	assert.LessOrEqual(t, out.activityAcks, 1, "the activity was acked successfully at most once")
	return out
}

// TestFaultOnEveryWrite runs the parent/child flow once per document
// write it makes and per fault: the write applied and its answer dropped
// (the ambiguous outcome of a network failure), or refused unapplied by a
// dropped connection, a 408 or a 500 (which leave the outcome just as
// unknown to the provider). Each time the flow must complete with every
// event in history exactly once and nothing left behind.
func TestFaultOnEveryWrite(t *testing.T) {
	t.Parallel()
	clean := runParentChildFlow(t, nil)
	require.Equal(t, 1, clean.activityAcks)
	total := 0
	for _, f := range []emulator.Fault{emulator.ApplyThenDrop(), emulator.DropConnection(), emulator.RequestTimeout(), emulator.InternalServerError()} {
		for kind, n := range clean.writes {
			for k := 1; k <= n; k++ {
				total++
				t.Run(fmt.Sprintf("%s/%s#%d", f.Kind, kind, k), func(t *testing.T) {
					fired := false
					runParentChildFlow(t, func(emu *emulator.Server, kind2 emulator.OpKind, n2 int) {
						if !fired && kind2 == kind && n2 == k {
							fired = true
							emu.InjectFault(emulator.FaultRule{Op: kind, Times: 1, Fault: f})
						}
					})
					assert.True(t, fired)
				})
			}
		}
	}
	t.Logf("%d faulted runs; the flow's writes: %v", total, clean.writes)
}

// TestFetchGivesUpLocksThatExpiredDuringIt delays every request that takes
// a lock past the lock's timeout: the fetch returns nothing rather than a
// lock that has already expired, and once requests are fast again the next
// fetch gets the work (an orchestration turn without the given-up attempts
// counted).
func TestFetchGivesUpLocksThatExpiredDuringIt(t *testing.T) {
	t.Parallel()
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	const inst = "slow-fetch"
	key := inst
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Fault: emulator.Delay(300 * time.Millisecond)})
	item, err := p.FetchOrchestrationItem(ctx, 100*time.Millisecond, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "each lock expired while the fetch waited for its lock batch")
	remove()
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), item.AttemptCount, "the fetch that gave its lock up did not count an attempt")

	require.NoError(t, p.EnqueueForWorker(ctx, activity(inst, 2)))
	remove = s.InjectFault(emulator.FaultRule{Op: emulator.OpPatchItem, PartitionKey: &key, Fault: emulator.Delay(300 * time.Millisecond)})
	w, err := p.FetchWorkItem(ctx, 100*time.Millisecond, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.Nil(t, w, "each lock expired while the fetch waited for its patch")
	remove()
	w, err = p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the next fetch gets the work item")
}

// TestFailedAbandonRedeliversAtLockExpiry makes the abandons of a turn and
// of a work item fail in transit: each item stays locked until its lock
// expires, then comes back under a new token with its attempt count kept.
func TestFailedAbandonRedeliversAtLockExpiry(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler, c.Now = true, clock.Now })
	ctx := context.Background()
	const inst = "failed-abandon"
	key := inst
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	require.NoError(t, p.EnqueueForWorker(ctx, activity(inst, 2)))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)

	remove := s.InjectFault(emulator.FaultRule{PartitionKey: &key, Fault: emulator.TooManyRequests(time.Millisecond)})
	require.Error(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	require.Error(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))
	remove()
	again, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, again, "the turn stays locked")
	w2, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, w2, "the work item stays locked")

	clock.Advance(longLock + time.Second)
	again, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.NotEqual(t, item.LockToken, again.LockToken)
	assert.Equal(t, uint32(2), again.AttemptCount)
	w2, err = p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w2)
	assert.NotEqual(t, w.LockToken, w2.LockToken)
	assert.Equal(t, uint32(2), w2.AttemptCount)
}
