package cdb_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// startChild commits a parent's first turn, which starts child as a
// sub-orchestration: a cross-partition write that goes through the outbox.
func startChild(t *testing.T, p duroxide.Provider, parent, child string) {
	t.Helper()
	ctx := context.Background()
	item := startTurn(t, p, parent)
	sched := duroxide.NewEvent(2, parent, 1, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: child, Input: "{}"})
	start := duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "Child", Input: "{}", ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(2), ExecutionID: 1,
	}}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(parent), sched}, nil, []duroxide.WorkItem{start}, runningMetadata(), nil))
}

// pendingIntents counts the outbox intents in instance's partition.
func pendingIntents(t *testing.T, p *cdb.Provider, instance string) int {
	t.Helper()
	return len(partitionDocs(context.Background(), t, p, instance, "SELECT c.id FROM c WHERE c.type = 'outbox_intent'"))
}

// TestOutboxDeliversAtOnce checks that a sub-orchestration start is in the
// child's queue when the parent's ack returns, and that no intent is left.
func TestOutboxDeliversAtOnce(t *testing.T) {
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	startChild(t, p, "parent", "parent::child")
	item, err := fetchInstance(context.Background(), p, "parent::child")
	require.NoError(t, err)
	assert.Equal(t, "Child", item.OrchestrationName)
	assert.Zero(t, pendingIntents(t, p, "parent"))
}

// reconcileBound is how long a test waits for the reconciler: the two
// intervals the provider promises plus room for a machine whose cores are
// shared with other jobs (a 1 s margin failed a clean clone's CI run). The
// tests check that the reconciler delivers; how fast is a benchmark's
// question.
func reconcileBound(interval time.Duration) time.Duration { return 2*interval + 20*time.Second }

// waitDelivered waits until child has a visible message, for at most
// reconcileBound(interval), and returns how long it took.
func waitDelivered(t *testing.T, p duroxide.Provider, child string, interval time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var item *duroxide.OrchestrationItem
	require.Eventually(t, func() bool {
		var err error
		item, err = p.FetchOrchestrationItem(context.Background(), longLock, 0, nil)
		require.NoError(t, err)
		return item != nil
	}, reconcileBound(interval), 20*time.Millisecond, "the reconciler delivers the intent")
	assert.Equal(t, child, item.Instance)
	return time.Since(start)
}

// TestOutboxReconcilerDelivers makes the immediate delivery of a child
// start fail and checks that the reconciler delivers it within two
// intervals once the target partition accepts writes again.
func TestOutboxReconcilerDelivers(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	p, s := newPrivateProvider(t, func(c *cdb.Config) {
		c.ReconcilerInterval, c.ReconcilerAgeThreshold = interval, interval
	})
	child := "p1::child"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &child, Fault: emulator.ServiceUnavailable()})
	startChild(t, p, "p1", child)
	assert.Equal(t, 1, pendingIntents(t, p, "p1"), "the failed delivery left its intent")
	item, err := p.FetchOrchestrationItem(context.Background(), longLock, 0, nil)
	require.NoError(t, err)
	require.Nil(t, item, "the child start was not delivered yet")
	remove()
	waitDelivered(t, p, child, interval)
	require.Eventually(t, func() bool { return pendingIntents(t, p, "p1") == 0 }, reconcileBound(interval), 20*time.Millisecond)
}

// TestOutboxSurvivesRestart closes the provider while an intent is pending
// and checks that a new provider on the same container delivers it.
func TestOutboxSurvivesRestart(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	var cfg cdb.Config
	p, s := newPrivateProvider(t, func(c *cdb.Config) {
		c.ReconcilerInterval, c.ReconcilerAgeThreshold = interval, interval
		cfg = *c
	})
	child := "p2::child"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &child, Fault: emulator.ServiceUnavailable()})
	startChild(t, p, "p2", child)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	remove()

	p2 := startProvider(t, cfg)
	waitDelivered(t, p2, child, interval)
}

// TestReconcileOutboxDirectly checks ReconcileOutbox's age threshold on a
// controlled clock: an intent younger than the threshold is left to the ack
// that wrote it; once the clock passes the threshold it is delivered.
func TestReconcileOutboxDirectly(t *testing.T) {
	t.Parallel()
	// The clock is read by the provider's goroutines too (its change-feed
	// reader): atomic.
	var clock atomic.Int64
	clock.Store(time.Unix(1_800_000_000, 0).UnixNano())
	p, s := newPrivateProvider(t, func(c *cdb.Config) {
		c.DisableReconciler = true
		c.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	child := "p3::child"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &child, Fault: emulator.ServiceUnavailable()})
	startChild(t, p, "p3", child)
	remove()
	n, err := p.ReconcileOutbox(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "too young")
	clock.Add(int64(cdb.DefaultReconcilerAgeThreshold))
	n, err = p.ReconcileOutbox(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	n, err = p.ReconcileOutbox(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n, "delivered once")
	item, err := fetchInstance(context.Background(), p, child)
	require.NoError(t, err)
	assert.Equal(t, "Child", item.OrchestrationName)
}
