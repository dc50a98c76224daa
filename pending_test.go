package cdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instanceDocument reads instance's instance document as stored.
func instanceDocument(t *testing.T, p *cdb.Provider, instance string) map[string]any {
	t.Helper()
	resp, err := p.Container().ReadItem(context.Background(), azcosmos.NewPartitionKeyString(instance), "instance", nil)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(resp.Value, &doc))
	return doc
}

// abandonUnregistered fetches instance's turn and abandons it with reason,
// as a runtime that does not register its orchestration does.
func abandonUnregistered(t *testing.T, p *cdb.Provider, instance, reason string) {
	t.Helper()
	ctx := context.Background()
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.NoError(t, p.AbandonOrchestrationItemWithReason(ctx, item.LockToken, 0, false, reason))
}

// requirePending requires instance to be Pending with reason, and returns
// its info.
func requirePending(t *testing.T, p *cdb.Provider, instance, reason string) duroxide.InstanceInfo {
	t.Helper()
	info, err := p.GetInstanceInfo(context.Background(), instance)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusPending, info.Status)
	assert.Equal(t, reason, info.PendingReason)
	return info
}

// TestAStoredStartIsPending: a client's start that has not run is a
// Pending instance, with the start's name and no execution, listed under
// Pending only; ListInstances keeps duroxide's contract (created instances).
func TestAStoredStartIsPending(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "pending-stored"
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Approval")))

	info := requirePending(t, p, inst, "") // no runtime reported a reason yet
	assert.Equal(t, "Approval", info.OrchestrationName)
	assert.Equal(t, uint64(0), info.CurrentExecutionID)
	assert.Nil(t, info.Output)
	assert.NotZero(t, info.CreatedAt)
	statusInfo, cs, err := p.GetInstanceStatus(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, info, statusInfo)
	assert.Nil(t, cs)

	pending, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
	require.NoError(t, err)
	assert.Contains(t, pending, inst)
	all, err := p.ListInstances(ctx)
	require.NoError(t, err)
	assert.NotContains(t, all, inst, "ListInstances lists created instances, as duroxide's")
	parent, isChild, err := p.GetParentID(ctx, inst)
	require.NoError(t, err)
	assert.False(t, isChild, "a pending instance is a root: %q", parent)

	_, err = p.GetInstanceInfo(ctx, "pending-never-started")
	requirePermanent(t, err, "an unknown instance is still not found")
}

// TestAbandonWithReasonRecordsItAtNoExtraRequest: the reason a runtime
// gives when it abandons a start is stored by the abandon's own request,
// reported by GetInstanceInfo and by the refusal of another start.
func TestAbandonWithReasonRecordsItAtNoExtraRequest(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "pending-reason"
	const reason = `orchestration "Procss" is not registered on runtime r-1, attempt 1`
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Procss")))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	before := dataRequests(c.emu)
	require.NoError(t, p.AbandonOrchestrationItemWithReason(ctx, item.LockToken, 0, false, reason))
	assert.Equal(t, int64(1), dataRequests(c.emu)-before, "the reason rides on the abandon's batch")

	requirePending(t, p, inst, reason)

	err = p.EnqueueStart(ctx, start(inst, "Process"))
	pe := requirePermanent(t, err)
	assert.True(t, errors.Is(err, duroxide.ErrInstancePending), "not ErrInstancePending: %v", err)
	assert.True(t, errors.Is(err, duroxide.ErrInstanceExists), "not ErrInstanceExists: %v", err)
	assert.Equal(t, `instance "pending-reason" is pending: its start is stored and has not run yet (`+reason+`)`, pe.Message)

	// A later abandon's reason replaces it.
	abandonUnregistered(t, p, inst, "attempt 2")
	requirePending(t, p, inst, "attempt 2")
}

// TestAStartAFetchLockedIsPending: a start enqueued without EnqueueStart
// (a parent's start of its child) has no pending document until a fetch
// locks it; from then on it is Pending, with its reason.
func TestAStartAFetchLockedIsPending(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const child = "pending-child"
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(child), 0))
	_, err := p.GetInstanceInfo(ctx, child)
	requirePermanent(t, err, "not pending before a fetch (duroxide's test_no_instance_creation_on_enqueue)")
	abandonUnregistered(t, p, child, "not registered")
	requirePending(t, p, child, "not registered")
}

// TestFirstTurnEndsPending: the ack that creates the instance ends its
// pending state and clears the reason from its document; an abandon with
// a reason of an instance that exists writes no reason.
func TestFirstTurnEndsPending(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "pending-then-running"
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Approval")))
	abandonUnregistered(t, p, inst, "not yet")
	require.Equal(t, "not yet", instanceDocument(t, p, inst)["pendingReason"])

	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst)}, nil, nil, runningMetadata(), nil))
	info, err := p.GetInstanceInfo(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusRunning, info.Status)
	assert.Empty(t, info.PendingReason)
	assert.NotContains(t, instanceDocument(t, p, inst), "pendingReason", "the first ack clears the reason")
	pending, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
	require.NoError(t, err)
	assert.NotContains(t, pending, inst)

	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "Go", "x"), 0))
	abandonUnregistered(t, p, inst, "ignored")
	assert.NotContains(t, instanceDocument(t, p, inst), "pendingReason", "an instance that exists keeps no reason")
	err = p.EnqueueStart(ctx, start(inst, "Approval"))
	requireExists(t, err)
	assert.False(t, errors.Is(err, duroxide.ErrInstancePending), "a running instance is not pending: %v", err)
}

// TestDeletePurgesAPendingInstance: deleting a pending instance (no
// force needed) removes its start and every other message queued for it;
// the id can then be started again.
func TestDeletePurgesAPendingInstance(t *testing.T) {
	t.Parallel()
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "pending-purged"
	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Procss")))
	abandonUnregistered(t, p, inst, "not registered")
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "Go", "x"), time.Hour))

	res, err := p.DeleteInstance(ctx, inst, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), res.InstancesDeleted)
	assert.Equal(t, uint64(2), res.QueueMessagesDeleted, "the start and the event")
	_, err = p.GetInstanceInfo(ctx, inst)
	requirePermanent(t, err, "gone")
	depths, err := p.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), depths.OrchestratorQueue)

	require.NoError(t, p.EnqueueStart(ctx, start(inst, "Process")), "the id can be started again")
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.Len(t, item.Messages, 1)
	assert.Equal(t, "Process", item.Messages[0].Kind.(duroxide.StartOrchestrationItem).Orchestration)
}

// TestAPendingChildNamesItsParent: a sub-orchestration's start that a
// fetch locked and no runtime ran keeps its parent on the pending
// document, so that deleting the child alone is refused as for a running
// child (the parent would wait for it for ever) and the child is found
// with its parent's tree. Both fetch paths are covered: the partition read
// (another process's start) and the held state (this process's).
func TestAPendingChildNamesItsParent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const parent = "pending-parent"
	for _, c := range []struct {
		child, via string
		held       int
	}{{"pending-parent::sub::2", "partition read", -1}, {"pending-parent::sub::3", "held state", 0}} {
		p := newProvider(t, func(cfg *cdb.Config) { cfg.HeldInstanceStates = c.held })
		item := startItem(c.child)
		k := item.Kind.(duroxide.StartOrchestrationItem)
		k.ParentInstance, k.ParentID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(2)
		item.Kind = k
		require.NoError(t, p.EnqueueForOrchestrator(ctx, item, 0), c.via)
		abandonUnregistered(t, p, c.child, "not registered")
		info := requirePending(t, p, c.child, "not registered")
		require.NotNil(t, info.ParentInstanceID, c.via)
		assert.Equal(t, parent, *info.ParentInstanceID, c.via)
		_, err := p.DeleteInstance(ctx, c.child, true)
		requirePermanent(t, err, "a sub-orchestration is deleted with its root ("+c.via+")")
		_, err = p.GetInstanceInfo(ctx, c.child)
		require.NoError(t, err, "nothing deleted (%s)", c.via)
		children, err := p.ListChildren(ctx, parent)
		require.NoError(t, err)
		assert.Equal(t, []string{c.child}, children, "the parent's tree takes it (%s)", c.via)
	}
}
