package cdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// fanOutTurn returns the events and work items of a first turn that
// schedules n activities with inputs of about 200 bytes.
func fanOutTurn(inst string, n int) ([]duroxide.Event, []duroxide.WorkItem) {
	events := []duroxide.Event{started(inst)}
	var acts []duroxide.WorkItem
	for i := uint64(2); i < uint64(n)+2; i++ {
		in := fmt.Sprintf("%0200d", i)
		events = append(events, duroxide.NewEvent(i, inst, 1, nil, duroxide.ActivityScheduled{Name: "Work", Input: in}))
		acts = append(acts, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: i, Name: "Work", Input: in}})
	}
	return events, acts
}

// outboxIntents counts the instance's outbox intent documents.
func outboxIntents(t *testing.T, p duroxide.Provider, inst string) int {
	t.Helper()
	return len(partitionDocs(context.Background(), t, p, inst, "SELECT c.id FROM c WHERE c.type = 'outbox_intent'"))
}

// TestAckStagesAFanOutTooLargeForOneBatch: a turn that schedules 6,000
// activities (about 3 MB of worker-queue documents, more than one
// transactional batch holds even as outbox intents) commits, and every
// activity becomes fetchable exactly once.
func TestAckStagesAFanOutTooLargeForOneBatch(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "staged-fan-out"
	item := startTurn(t, p, inst)
	events, acts := fanOutTurn(inst, 6000)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(6000), depths.WorkerQueue)
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 6001)
}

// TestStagedFanOutIsInvisibleUntilItsTurnCommits: the final batch of a
// turn whose intents were staged fails; nothing of the turn is fetchable,
// the reconciler keeps the staged intents while the turn's lock is held and
// removes them once the lock is released, and a second try of the turn
// delivers every activity exactly once.
func TestStagedFanOutIsInvisibleUntilItsTurnCommits(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, func(cfg *cdb.Config) { cfg.ReconcilerAgeThreshold = time.Millisecond })
	ctx := context.Background()
	const inst = "staged-dies"
	item := startTurn(t, p, inst)
	events, acts := fanOutTurn(inst, 5000)

	key, id := inst, "instance"
	remove := c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: &id, Fault: emulator.InternalServerError()})
	require.Error(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))
	remove()

	staged := outboxIntents(t, p, inst)
	require.Positive(t, staged, "the intents were staged before the final batch")
	time.Sleep(5 * time.Millisecond) // older than the reconciler's age threshold
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, w, "no activity of the uncommitted turn is fetchable")

	_, err = p.ReconcileOutbox(ctx)
	require.NoError(t, err)
	assert.Equal(t, staged, outboxIntents(t, p, inst), "the turn's lock is held: it may still commit")
	w, err = p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, w, "the reconciler delivered nothing of the uncommitted turn")

	require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	_, err = p.ReconcileOutbox(ctx)
	require.NoError(t, err)
	assert.Zero(t, outboxIntents(t, p, inst), "a turn that can no longer commit leaves no intent")

	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(5000), depths.WorkerQueue, "every activity once")
	assert.Zero(t, outboxIntents(t, p, inst), "the ack delivered its intents")
}

// TestOutboxRedeliveryOfAFanOutSkipsWhatExists: an intent whose documents
// were all delivered but which is still there (its delete failed, or the
// ack and the reconciler deliver it at once, issue 26) is delivered again
// by the reconciler with one query per refused batch, not one create per
// document, and every activity stays in the worker queue once.
func TestOutboxRedeliveryOfAFanOutSkipsWhatExists(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, func(cfg *cdb.Config) { cfg.ReconcilerAgeThreshold = time.Millisecond })
	ctx := context.Background()
	const inst = "redelivered"
	const n = 300 // 3 batches of worker-queue documents, delivered from intents
	item := startTurn(t, p, inst)
	events, acts := fanOutTurn(inst, n)

	key := inst
	remove := c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpDeleteItem, PartitionKey: &key, Fault: emulator.ServiceUnavailable()})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))
	remove()
	require.Positive(t, outboxIntents(t, p, inst), "the ack delivered the documents but could not delete its intents")
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(n), depths.WorkerQueue)

	time.Sleep(5 * time.Millisecond) // older than the reconciler's age threshold
	c.emu.ResetCounters()
	delivered, err := p.ReconcileOutbox(ctx)
	require.NoError(t, err)
	assert.Positive(t, delivered)
	assert.Zero(t, outboxIntents(t, p, inst), "the reconciler deleted the intents")
	counts := c.emu.Counters()
	assert.Zero(t, counts[emulator.OpCreateItem].Requests, "no document created one at a time")
	assert.LessOrEqual(t, counts[emulator.OpBatch].Requests, int64(3*2), "per 100 documents: the refused batch and none after the query found them all")
	depths, err = p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(n), depths.WorkerQueue, "every activity once")
}
