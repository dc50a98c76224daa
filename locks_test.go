package cdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestLocksWorkAcrossProcesses takes locks with one provider and renews,
// acks and abandons them with another on the same container (another
// process: nothing cached), and checks that a renewal made elsewhere does
// not break the taking provider's ack.
func TestLocksWorkAcrossProcesses(t *testing.T) {
	cfg := env.config()
	cfg.DisableReconciler = true
	cfg.Leases = cdb.LeasesInProcess // both processes may take every instance
	p1 := startProvider(t, cfg)
	p2 := startProvider(t, cfg)
	ctx := context.Background()

	// Orchestration lock: taken by p1, renewed and acked by p2.
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, startItem("x1"), 0))
	item, err := fetchInstance(ctx, p1, "x1")
	require.NoError(t, err)
	require.NoError(t, p2.RenewOrchestrationItemLock(ctx, item.LockToken, longLock))
	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "x1", ExecutionID: 1, ID: 2, Name: "A", Input: "i"}}
	require.NoError(t, p2.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started("x1")}, []duroxide.WorkItem{act}, nil, runningMetadata(), nil))
	var pe *duroxide.ProviderError
	err = p1.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started("x1")}, nil, nil, runningMetadata(), nil)
	require.True(t, errors.As(err, &pe), "the lock was released by p2's ack: %v", err)
	assert.False(t, pe.Retryable)

	// Work-item lock: taken by p1, renewed by p2, acked by p1 (whose
	// cached ETag is stale now).
	w, err := p1.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	state, err := p2.RenewWorkItemLock(ctx, w.LockToken, longLock)
	require.NoError(t, err)
	assert.Equal(t, duroxide.ExecutionRunning, state.Kind)
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: "x1", ExecutionID: 1, ID: 2, Result: "r"}}
	require.NoError(t, p1.AckWorkItem(ctx, w.LockToken, &done))

	// Orchestration lock: taken by p1, renewed by p2, acked by p1.
	item, err = fetchInstance(ctx, p1, "x1")
	require.NoError(t, err)
	require.NoError(t, p2.RenewOrchestrationItemLock(ctx, item.LockToken, longLock))
	require.NoError(t, p1.AckOrchestrationItem(ctx, item.LockToken, 1, nil, nil, nil, duroxide.ExecutionMetadata{}, nil))

	// Abandons from the other process.
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: "x1", Name: "e", Data: "d"}}, 0))
	item, err = fetchInstance(ctx, p1, "x1")
	require.NoError(t, err)
	require.NoError(t, p2.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))
	again, err := fetchInstance(ctx, p2, "x1")
	require.NoError(t, err)
	assert.Equal(t, uint32(1), again.AttemptCount, "the abandon released the message and undid its attempt")
	require.NoError(t, p2.AckOrchestrationItem(ctx, again.LockToken, 1, nil, nil, nil, duroxide.ExecutionMetadata{}, nil))

	require.NoError(t, p1.EnqueueForWorker(ctx, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "x1", ExecutionID: 1, ID: 9, Name: "B", Input: "i"}}))
	w, err = p1.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NoError(t, p2.AbandonWorkItem(ctx, w.LockToken, 0, false))
	w2, err := p2.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w2)
	assert.Equal(t, uint32(2), w2.AttemptCount)
	require.NoError(t, p2.AckWorkItem(ctx, w2.LockToken, nil))
}

// TestReadyClient checks that a provider built on a ready client (here
// with the partition key policy) works and leaves the client open on
// Close.
func TestReadyClient(t *testing.T) {
	cfg := env.config()
	opts := azcosmos.ClientOptions{}
	if cfg.ClientOptions != nil {
		opts = *cfg.ClientOptions
	}
	opts.PerCallPolicies = []policy.Policy{cdb.PartitionKeyHeaderPolicy(), cdb.SessionTokenPolicy()}
	cred, err := azcosmos.NewKeyCredential(cfg.Key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(cfg.Endpoint, cred, &opts)
	require.NoError(t, err)
	p := startProvider(t, cdb.Config{Client: client, Database: cfg.Database, Container: cfg.Container, DisableReconciler: true})
	require.NoError(t, helloWorld(context.Background(), p, "ready-client-🚀", nil))
	require.NoError(t, p.Close())
	db, err := client.NewDatabase(cfg.Database)
	require.NoError(t, err)
	_, err = db.Read(context.Background(), nil)
	require.NoError(t, err, "the caller's client still works after Close")
}

// TestSessionOwnedBacklogDoesNotStarve fills more than one candidate page
// with items of a session another worker owns and checks that a worker
// still finds the item behind them.
func TestSessionOwnedBacklogDoesNotStarve(t *testing.T) {
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	session := "busy"
	item := func(id uint64, sid *string) duroxide.WorkItem {
		return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "owner", ExecutionID: 1, ID: id, Name: "A", Input: "i", SessionID: sid}}
	}
	a := &duroxide.SessionFetchConfig{OwnerID: "worker-A", LockTimeout: longLock}
	require.NoError(t, p.EnqueueForWorker(ctx, item(1, &session)))
	w, err := p.FetchWorkItem(ctx, longLock, 0, a, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	for id := uint64(2); id <= 260; id++ {
		require.NoError(t, p.EnqueueForWorker(ctx, item(id, &session)))
	}
	require.NoError(t, p.EnqueueForWorker(ctx, item(999, nil)))

	b := &duroxide.SessionFetchConfig{OwnerID: "worker-B", LockTimeout: longLock}
	w, err = p.FetchWorkItem(ctx, longLock, 0, b, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the plain item behind the owned session's backlog is found")
	assert.Equal(t, uint64(999), w.Item.Kind.(duroxide.ActivityExecuteItem).ID)
}

// TestHotInstanceDoesNotStarveOthers fills more than one candidate page
// with messages of one locked instance and checks that another instance's
// message behind them is fetched.
func TestHotInstanceDoesNotStarveOthers(t *testing.T) {
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("hot"), 0))
	hot, err := fetchInstance(ctx, p, "hot")
	require.NoError(t, err)
	for i := 0; i < 250; i++ {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: "hot", Name: "e", Data: "d"}}, 0))
	}
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("cold"), 0))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the instance behind the locked one's backlog is found")
	assert.Equal(t, "cold", item.Instance)
	require.NoError(t, p.AbandonOrchestrationItem(ctx, hot.LockToken, 0, false))
}

// TestAWorkItemLockedByAStoppedProcessIsFetchedWhenTheLockExpires: a
// process stops (killed) while it holds a work item's lock; a process
// started after that (a replacement), whose waiting fetch's candidate
// query saw the item locked,
// takes it once the lock expires, within its poll, although nothing is
// written when a lock expires (with the change-feed reader healthy, the
// query's answer otherwise stood for 10 s, and the fetch ended empty).
func TestAWorkItemLockedByAStoppedProcessIsFetchedWhenTheLockExpires(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	gone, _ := c.process(t, func(cfg *cdb.Config) { cfg.DisableChangeFeedWakeups = true })
	ctx := context.Background()
	const instance = "locked-by-the-stopped"
	startAndAckFirst(t, gone, instance)
	require.NoError(t, gone.EnqueueForWorker(ctx, activity(instance, 2)))
	w, err := gone.FetchWorkItem(ctx, 1500*time.Millisecond, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w, "the stopping process locked the work item")
	// gone never acks: its lock expires 1.5 s after it was taken. The
	// other process starts now (a replacement): its change feed starts
	// after the lock was written, so only its candidate query sees it.
	alive, _ := c.process(t, nil)
	got, err := alive.FetchWorkItem(ctx, longLock, 8*time.Second, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, got, "the work item is fetched once the lock expires, within the poll")
	assert.Equal(t, w.Item, got.Item)
	assert.Equal(t, uint32(2), got.AttemptCount)
	require.NoError(t, alive.AckWorkItem(ctx, got.LockToken, nil))
}
