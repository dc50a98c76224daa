package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// memStart is a client's start of instance running name.
func memStart(instance, name string) duroxide.StartOrchestrationItem {
	return duroxide.StartOrchestrationItem{Instance: instance, Orchestration: name, Input: "in", ExecutionID: duroxide.InitialExecutionID}
}

// fetchAndAbandon fetches the next turn, which must be instance's, and
// abandons it with reason.
func fetchAndAbandon(t *testing.T, p *memory.MemoryProvider, instance, reason string) {
	t.Helper()
	ctx := context.Background()
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.Equal(t, instance, item.Instance)
	require.NoError(t, p.AbandonOrchestrationItemWithReason(ctx, item.LockToken, 0, false, reason))
}

// A client's start that has not run is Pending, with the reason of the
// last abandon; a start enqueued without EnqueueStart becomes pending when
// a fetch locks it, as on the cdb provider.
func TestMemoryStoredStartsArePendingWithTheirReason(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx := context.Background()
	require.NoError(t, p.EnqueueStart(ctx, memStart("a", "Procss")))
	info, err := p.GetInstanceInfo(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, duroxide.InstanceInfo{InstanceID: "a", OrchestrationName: "Procss", OrchestrationVersion: "unknown",
		Status: duroxide.StatusPending, CreatedAt: info.CreatedAt, UpdatedAt: info.CreatedAt}, info)
	fetchAndAbandon(t, p, "a", "attempt 1")
	info, err = p.GetInstanceInfo(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, "attempt 1", info.PendingReason)

	err = p.EnqueueStart(ctx, memStart("a", "Process"))
	assert.True(t, errors.Is(err, duroxide.ErrInstancePending) && errors.Is(err, duroxide.ErrInstanceExists), "%v", err)
	assert.Contains(t, err.Error(), `instance "a" is pending: its start is stored and has not run yet (attempt 1)`)

	// Not pending on enqueue (duroxide's test_no_instance_creation_on_enqueue), pending once locked.
	res, err := p.DeleteInstance(ctx, "a", false)
	require.NoError(t, err)
	assert.Equal(t, duroxide.DeleteInstanceResult{InstancesDeleted: 1, QueueMessagesDeleted: 1}, res, "a pending instance is purged")
	_, err = p.GetInstanceInfo(ctx, "a")
	require.Error(t, err)
	require.NoError(t, p.EnqueueStart(ctx, memStart("a", "Process")), "its id can be started again")
	_, err = p.DeleteInstance(ctx, "a", false)
	require.NoError(t, err)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: memStart("child", "Child")}, 0))
	_, err = p.GetInstanceInfo(ctx, "child")
	require.Error(t, err)
	fetchAndAbandon(t, p, "child", "")
	info, err = p.GetInstanceInfo(ctx, "child")
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusPending, info.Status)
	ids, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
	require.NoError(t, err)
	assert.Equal(t, []string{"child"}, ids)
	all, err := p.ListInstances(ctx)
	require.NoError(t, err)
	assert.Empty(t, all, "ListInstances lists created instances, as duroxide's")
}

// The first committed turn ends the pending state and its reason.
func TestMemoryFirstTurnEndsPending(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx := context.Background()
	require.NoError(t, p.EnqueueStart(ctx, memStart("b", "Approval")))
	fetchAndAbandon(t, p, "b", "not yet")
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	md := duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Approval"), OrchestrationVersion: duroxide.StringPtr("1.0.0"),
		Status: duroxide.StringPtr(duroxide.StatusRunning)}
	started := duroxide.NewEvent(duroxide.InitialEventID, "b", 1, nil, duroxide.OrchestrationStarted{Name: "Approval", Version: "1.0.0", Input: "in"})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started}, nil, nil, md, nil))
	info, err := p.GetInstanceInfo(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusRunning, info.Status)
	assert.Empty(t, info.PendingReason)
	ids, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
	require.NoError(t, err)
	assert.Empty(t, ids)
	err = p.EnqueueStart(ctx, memStart("b", "Approval"))
	assert.True(t, errors.Is(err, duroxide.ErrInstanceExists) && !errors.Is(err, duroxide.ErrInstancePending), "%v", err)
}

// A sub-orchestration's start that a fetch locked and no turn ran names
// its parent, as on the cdb provider: deleting it alone is refused, and
// it is in its parent's tree, so that deleting the root takes it.
func TestMemoryPendingChildNamesItsParent(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx := context.Background()
	start := memStart("root::sub::2", "Child")
	start.ParentInstance, start.ParentID = duroxide.StringPtr("root"), duroxide.Uint64Ptr(2)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: start}, 0))
	fetchAndAbandon(t, p, "root::sub::2", "not registered")
	info, err := p.GetInstanceInfo(ctx, "root::sub::2")
	require.NoError(t, err)
	require.NotNil(t, info.ParentInstanceID)
	assert.Equal(t, "root", *info.ParentInstanceID)
	parent, ok, err := p.GetParentID(ctx, "root::sub::2")
	require.NoError(t, err)
	assert.True(t, ok && parent == "root", "GetParentID = %q, %v", parent, ok)
	_, err = p.DeleteInstance(ctx, "root::sub::2", true)
	require.Error(t, err, "a sub-orchestration is deleted with its root")
	children, err := p.ListChildren(ctx, "root")
	require.NoError(t, err)
	assert.Equal(t, []string{"root::sub::2"}, children)
}
