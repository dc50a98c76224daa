package cdb_test

import (
	"context"
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

// TestReviewFaultOnEveryWrite runs the parent/child flow once per document
// write it makes and per fault: the write applied and its answer dropped
// (the ambiguous outcome of a network failure), or refused unapplied by a
// dropped connection, a 408 or a 500 (which leave the outcome just as
// unknown to the provider). Each time the flow must complete with every
// event in history exactly once and nothing left behind.
func TestReviewFaultOnEveryWrite(t *testing.T) {
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
