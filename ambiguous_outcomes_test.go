package cdb_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestEnqueueRetryAfterConsumption applies an enqueue's create and
// drops its answer; before the provider's retry reaches the service,
// another process fetches and acks the message. The retry must not put the
// consumed message back: the event was raised once.
func TestEnqueueRetryAfterConsumption(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p1, tr := c.process(t, nil)
	p2, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "enqueue-retry"
	startAndAckFirst(t, p2, inst)

	key := inst
	c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	creates := 0
	tr.setHook(func(req *http.Request) {
		if !isDocCreate(req, inst) {
			return
		}
		if creates++; creates == 2 {
			item := ackNextTurn(t, p2, inst, []duroxide.Event{externalEvent(inst, 2, "once")})
			require.Len(t, item.Messages, 1)
		}
	})
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "once"), 0))
	tr.setHook(nil)
	require.Equal(t, 2, creates, "the create was retried after the lost answer")

	item, err := p2.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	if item != nil {
		t.Errorf("the event raised once was delivered again: %+v", item.Messages)
	}
}

// TestEnqueueForWorkerRetryAfterConsumption is the same for the
// worker queue: an activity whose enqueue's answer was lost, and that a
// worker fetched and acked before the retry, is not queued again (it would
// run a second time after a successful ack).
func TestEnqueueForWorkerRetryAfterConsumption(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p1, tr := c.process(t, nil)
	p2, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "enqueue-worker-retry"
	startAndAckFirst(t, p2, inst)

	key := inst
	c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	creates := 0
	tr.setHook(func(req *http.Request) {
		if !isDocCreate(req, inst) {
			return
		}
		if creates++; creates == 2 {
			w, err := p2.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w)
			done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
			require.NoError(t, p2.AckWorkItem(ctx, w.LockToken, &done))
		}
	})
	act := activity(inst, 2)
	require.NoError(t, p1.EnqueueForWorker(ctx, act))
	tr.setHook(nil)
	require.Equal(t, 2, creates, "the create was retried after the lost answer")

	w, err := p2.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	if w != nil {
		t.Errorf("the activity acked once was queued again: %+v", w.Item)
	}
}

// TestOutboxRedeliveryAfterConsumption has two processes reconcile
// the same undelivered intent (a sub-orchestration's completion): the
// first delivers it, the parent consumes the completion, and only then
// does the second, which read the intent before it was deleted, deliver
// it. The completion must reach the parent once.
func TestOutboxRedeliveryAfterConsumption(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	clock := newTestClock()
	withClock := func(cfg *cdb.Config) { cfg.Now = clock.Now }
	pa, _ := c.process(t, withClock)
	pb, _ := c.process(t, withClock)
	pc, trc := c.process(t, withClock)
	ctx := context.Background()
	const parent, child = "outbox-parent", "outbox-child"
	startAndAckFirst(t, pa, parent)
	startAndAckFirst(t, pa, child)

	// The child completes; the immediate delivery of its completion to
	// the parent fails, leaving the intent to the reconcilers.
	key := parent
	c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &key, Times: 2, Fault: emulator.ServiceUnavailable()})
	require.NoError(t, pa.EnqueueForOrchestrator(ctx, raised(child, "go", "x"), 0))
	item, err := fetchInstance(ctx, pa, child)
	require.NoError(t, err)
	done := duroxide.WorkItem{Kind: duroxide.SubOrchCompletedItem{ParentInstance: parent, ParentExecutionID: 1, ParentID: 2, Result: "r"}}
	md := duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr("r")}
	require.NoError(t, pa.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(2, child, 1, nil, duroxide.ExternalEvent{Name: "go", Data: "x"}),
		duroxide.NewEvent(3, child, 1, nil, duroxide.OrchestrationCompleted{Output: "r"}),
	}, nil, []duroxide.WorkItem{done}, md, nil))
	none, err := pa.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, none, "the completion was not delivered at once")

	clock.Advance(cdb.DefaultReconcilerAgeThreshold + time.Second)
	deliveries := 0
	trc.setHook(func(req *http.Request) {
		if !isDocCreate(req, parent) {
			return
		}
		if deliveries++; deliveries == 1 {
			n, err := pb.ReconcileOutbox(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			item, err := fetchInstance(ctx, pb, parent)
			require.NoError(t, err)
			require.Len(t, item.Messages, 1)
			ev := duroxide.NewEvent(2, parent, 1, nil, duroxide.SubOrchestrationCompleted{Result: "r"})
			require.NoError(t, pb.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{ev}, nil, nil, duroxide.ExecutionMetadata{}, nil))
		}
	})
	_, err = pc.ReconcileOutbox(ctx)
	require.NoError(t, err)
	trc.setHook(nil)
	require.Equal(t, 1, deliveries, "the second reconciler delivered too")

	again, err := pa.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	if again != nil {
		t.Errorf("the sub-orchestration's completion reached the parent twice: %+v", again.Messages)
	}
	assert.Empty(t, partitionDocs(ctx, t, pc, child, "SELECT c.id FROM c WHERE c.type = 'outbox_intent'"), "the intent is gone") // read by the process that removed it
}

// TestTombstoneIsNotALock checks that the tombstone an ack leaves
// behind (it keeps the lock token) cannot be renewed, abandoned or acked
// again with that token, and is neither fetched nor counted.
func TestTombstoneIsNotALock(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "tombstone"
	startAndAckFirst(t, p, inst)
	act := activity(inst, 2)
	require.NoError(t, p.EnqueueForWorker(ctx, act))
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))

	_, err = p.RenewWorkItemLock(ctx, w.LockToken, longLock)
	requirePermanent(t, err, "renewing an acked work item")
	requirePermanent(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false), "abandoning an acked work item")
	requirePermanent(t, p.AckWorkItem(ctx, w.LockToken, &done), "acking a work item twice")
	requirePermanent(t, p.AckWorkItem(ctx, w.LockToken, nil), "acking a work item twice")

	again, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, again)
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, duroxide.QueueDepths{OrchestratorQueue: 1}, depths, "the completion is the only message")

	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.Len(t, item.Messages, 1, "the completion was enqueued once")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(2, inst, 1, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: "r"}),
	}, nil, nil, duroxide.ExecutionMetadata{}, nil))
	depths, err = p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Zero(t, depths.OrchestratorQueue)
	stats, err := p.GetInstanceStats(ctx, inst)
	require.NoError(t, err)
	assert.Zero(t, stats.QueuePendingCount)

	admin, ok := duroxide.AsManagementCapability(duroxide.Provider(p))
	require.True(t, ok)
	res, err := admin.DeleteInstancesAtomic(ctx, []string{inst}, true)
	require.NoError(t, err)
	assert.Zero(t, res.QueueMessagesDeleted, "tombstones are not messages")
	assert.Empty(t, partitionDocs(ctx, t, p, inst, "SELECT c.id FROM c"), "the tombstones went with their instance")
}

// TestCancelledActivityStaysCancelled cancels an activity whose
// enqueue's answer was lost, before the enqueue's retry reaches the
// service, once after a worker already acked it and once before any worker
// saw it. The retry must not bring the cancelled activity back.
func TestCancelledActivityStaysCancelled(t *testing.T) {
	t.Parallel()
	for _, ackedFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("acked=%v", ackedFirst), func(t *testing.T) {
			c := newCluster(t)
			p1, tr := c.process(t, nil)
			p2, _ := c.process(t, nil)
			ctx := context.Background()
			const inst = "cancelled-activity"
			startAndAckFirst(t, p2, inst)
			require.NoError(t, p2.EnqueueForOrchestrator(ctx, raised(inst, "e", "x"), 0))

			key := inst
			c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
			creates := 0
			tr.setHook(func(req *http.Request) {
				if !isDocCreate(req, inst) {
					return
				}
				if creates++; creates != 2 {
					return
				}
				if ackedFirst {
					w, err := p2.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
					require.NoError(t, err)
					require.NotNil(t, w)
					require.NoError(t, p2.AckWorkItem(ctx, w.LockToken, nil))
				}
				ackNextTurn(t, p2, inst, []duroxide.Event{externalEvent(inst, 2, "x")},
					duroxide.ScheduledActivityIdentifier{Instance: inst, ExecutionID: 1, ActivityID: 2})
			})
			act := activity(inst, 2)
			require.NoError(t, p1.EnqueueForWorker(ctx, act))
			tr.setHook(nil)
			require.Equal(t, 2, creates)

			w, err := p2.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			if w != nil {
				t.Errorf("the cancelled activity came back: %+v", w.Item)
			}
		})
	}
}

// TestLostAckAnswerThenOtherAck drops the answer of an ack that
// landed, and before the provider checks whether it did, another process
// fetches and acks the next turn of the instance (so the instance
// document no longer names the first lock as the last one acked). The
// first ack committed and must report success.
func TestLostAckAnswerThenOtherAck(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p1, tr := c.process(t, nil)
	p2, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "lost-then-other"
	startAndAckFirst(t, p1, inst)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "1"), 0))
	item, err := fetchInstance(ctx, p1, inst)
	require.NoError(t, err)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "2"), 0))

	key, id := inst, "instance"
	c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: &id, Times: 1, Fault: emulator.ApplyThenDrop()})
	fired, batches := false, 0
	tr.setHook(func(req *http.Request) {
		// The read-back is p1's second batch in the partition (a batch of
		// one read, at the primary): the first is the ack's, dropped.
		if fired || req.Header.Get("x-ms-cosmos-is-batch-request") == "" || req.Header.Get("x-ms-documentdb-partitionkey") != `["`+inst+`"]` {
			return
		}
		if batches++; batches < 2 {
			return
		}
		fired = true
		ackNextTurn(t, p2, inst, []duroxide.Event{externalEvent(inst, 3, "2")})
	})
	err = p1.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "1"}),
	}, nil, nil, duroxide.ExecutionMetadata{}, nil)
	tr.setHook(nil)
	require.True(t, fired, "the lost answer was checked with a read of the instance")
	assert.NoError(t, err, "the ack committed")
	history, err := p1.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 3)
}

// TestLostLockAnswerIsReadBack drops the connection of a fetch's lock
// write, before the write is applied (DropConnection) and after
// (ApplyThenDrop), for each lock a fetch takes: a work item's, a session
// item's with its session claim, an instance's read from its partition,
// and an instance's whose state the process held. The provider reads the
// outcome back, so the same fetch (one with no poll timeout) returns the
// work with its lock, the attempt counted once, and a log line says what
// was read back.
func TestLostLockAnswerIsReadBack(t *testing.T) {
	t.Parallel()
	type lockWrite struct {
		name string // the log's "write" field
		run  func(t *testing.T, emu *emulator.Server, fault emulator.Fault, p, other *cdb.Provider)
	}
	ctx := context.Background()
	inject := func(emu *emulator.Server, op emulator.OpKind, inst string, fault emulator.Fault) {
		emu.InjectFault(emulator.FaultRule{Op: op, PartitionKey: &inst, Times: 1, Fault: fault})
	}
	ackTurn := func(t *testing.T, p *cdb.Provider, item *duroxide.OrchestrationItem) {
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(item.Instance)}, nil, nil, runningMetadata(), nil))
	}
	writes := []lockWrite{
		{"work item lock", func(t *testing.T, emu *emulator.Server, fault emulator.Fault, p, _ *cdb.Provider) {
			const inst = "lost-work-lock"
			startAndAckFirst(t, p, inst)
			require.NoError(t, p.EnqueueForWorker(ctx, activity(inst, 2)))
			inject(emu, emulator.OpPatchItem, inst, fault)
			w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w, "the same fetch locks the work item")
			assert.Equal(t, uint32(1), w.AttemptCount)
			done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
			require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done), "the lock holds")
		}},
		{"session claim", func(t *testing.T, emu *emulator.Server, fault emulator.Fault, p, _ *cdb.Provider) {
			const inst = "lost-session-claim"
			startAndAckFirst(t, p, inst)
			act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 2, Name: "A", Input: "i", SessionID: duroxide.StringPtr("s1")}}
			require.NoError(t, p.EnqueueForWorker(ctx, act))
			inject(emu, emulator.OpBatch, inst, fault)
			w, err := p.FetchWorkItem(ctx, longLock, 0, &duroxide.SessionFetchConfig{OwnerID: "w1", LockTimeout: longLock}, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, w, "the same fetch locks the session item")
			assert.Equal(t, uint32(1), w.AttemptCount)
			require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil), "the lock holds")
			// The session is this worker's: another owner gets nothing.
			require.NoError(t, p.EnqueueForWorker(ctx, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 3, Name: "A", Input: "i", SessionID: duroxide.StringPtr("s1")}}))
			none, err := p.FetchWorkItem(ctx, longLock, 0, &duroxide.SessionFetchConfig{OwnerID: "w2", LockTimeout: longLock}, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			assert.Nil(t, none, "the session was claimed by w1")
		}},
		{"orchestration lock", func(t *testing.T, emu *emulator.Server, fault emulator.Fault, p, other *cdb.Provider) {
			const inst = "lost-orch-lock"
			require.NoError(t, other.EnqueueForOrchestrator(ctx, startItem(inst), 0)) // p holds no state of it
			inject(emu, emulator.OpBatch, inst, fault)
			item, err := fetchInstance(ctx, p, inst)
			require.NoError(t, err, "the same fetch locks the instance")
			assert.Equal(t, uint32(1), item.AttemptCount)
			ackTurn(t, p, item)
		}},
		{"orchestration lock (held state)", func(t *testing.T, emu *emulator.Server, fault emulator.Fault, p, _ *cdb.Provider) {
			const inst = "lost-held-lock"
			require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0)) // p holds the start
			inject(emu, emulator.OpBatch, inst, fault)
			item, err := fetchInstance(ctx, p, inst)
			require.NoError(t, err, "the same fetch locks the instance")
			assert.Equal(t, uint32(1), item.AttemptCount)
			ackTurn(t, p, item)
		}},
	}
	for _, w := range writes {
		for _, fault := range []emulator.Fault{emulator.DropConnection(), emulator.ApplyThenDrop()} {
			t.Run(fmt.Sprintf("%s/%v", w.name, fault.Kind), func(t *testing.T) {
				t.Parallel()
				c := newCluster(t)
				core, logs := observer.New(zapcore.InfoLevel)
				p, _ := c.process(t, func(cfg *cdb.Config) { cfg.Logger = zap.New(core) })
				other, _ := c.process(t, nil)
				w.run(t, c.emu, fault, p, other)
				want := "not applied"
				if fault.Kind == emulator.FaultApplyThenDrop {
					want = "applied"
				}
				var outcomes []string
				for _, e := range logs.FilterField(zap.String("write", w.name)).All() {
					outcomes = append(outcomes, e.ContextMap()["outcome"].(string))
				}
				assert.Equal(t, []string{want}, outcomes, "one log line tells what was read back")
			})
		}
	}
}
