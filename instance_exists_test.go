package cdb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// start is a client's start of instance, as the runtime's client sends it.
func start(instance, name string) duroxide.StartOrchestrationItem {
	return duroxide.StartOrchestrationItem{Instance: instance, Orchestration: name, Input: "in", ExecutionID: duroxide.InitialExecutionID}
}

// requireExists requires err to be the refusal of a start whose instance
// exists.
func requireExists(t testing.TB, err error) {
	t.Helper()
	requirePermanent(t, err)
	require.True(t, errors.Is(err, duroxide.ErrInstanceExists), "not ErrInstanceExists: %v", err)
}

// TestEnqueueStartRefusesAnInstanceThatExists: a start is refused, with
// ErrInstanceExists and nothing written, while the first start is queued,
// while the instance runs and after it finished; once the instance is
// deleted its id can be started again.
func TestEnqueueStartRefusesAnInstanceThatExists(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "exists-1"
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Approval")))

	requireExists(t, p.EnqueueStart(ctx, start(inst, "Echo")))
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), depths.OrchestratorQueue, "the refused start wrote a message")

	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.Len(t, item.Messages, 1)
	assert.Equal(t, "Approval", item.Messages[0].Kind.(duroxide.StartOrchestrationItem).Orchestration)
	requireExists(t, p.EnqueueStart(ctx, start(inst, "Echo")))
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst)}, nil, nil, runningMetadata(), nil))
	requireExists(t, p.EnqueueStart(ctx, start(inst, "Echo")))

	_, err = p.DeleteInstance(ctx, inst, true)
	require.NoError(t, err)
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Echo")), "a deleted instance's id can be started again")
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.Len(t, item.Messages, 1)
	assert.Equal(t, "Echo", item.Messages[0].Kind.(duroxide.StartOrchestrationItem).Orchestration)
}

// TestEnqueueStartRefusesAStartedSubOrchestration: a child its parent
// started, once its start was fetched, refuses a client's start too.
func TestEnqueueStartRefusesAStartedSubOrchestration(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const child = "exists-child"
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(child), 0))
	item, err := fetchInstance(ctx, p, child)
	require.NoError(t, err)
	requireExists(t, p.EnqueueStart(ctx, start(child, "Echo")))
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(child)}, nil, nil, runningMetadata(), nil))
	requireExists(t, p.EnqueueStart(ctx, start(child, "Echo")))
}

// TestEnqueueStartRetryAfterLostAnswerSucceeds: the start's batch is
// applied and its answer lost; the provider's retry meets its own start and
// succeeds, leaving one start message.
func TestEnqueueStartRetryAfterLostAnswerSucceeds(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "exists-lost-answer"
	key := inst
	c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Approval")))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Len(t, item.Messages, 1)
	requireExists(t, p.EnqueueStart(ctx, start(inst, "Approval")))
}

// TestEnqueueStartCostsOneRequest: a start is one request, as any enqueue.
func TestEnqueueStartCostsOneRequest(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	before := dataRequests(c.emu)
	require.NoError(t, p.EnqueueStart(context.Background(), start("exists-cost", "Approval")))
	assert.Equal(t, int64(1), dataRequests(c.emu)-before)
}
