package providertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// managementCases ports duroxide's src/provider_validation/management.rs; see README.md for
// the table from each Rust test to its Go function.
var managementCases = []Case{
	{"test_list_instances", ListInstances},
	{"test_list_instances_by_status", ListInstancesByStatus},
	{"test_list_executions", ListExecutions},
	{"test_get_instance_info", GetInstanceInfo},
	{"test_get_execution_info", GetExecutionInfo},
	{"test_get_system_metrics", GetSystemMetrics},
	{"test_get_queue_depths", GetQueueDepths},
	{"test_get_queue_stats", GetQueueStats},
	{"test_get_instance_stats_nonexistent", GetInstanceStatsNonexistent},
	{"test_get_instance_stats_history", GetInstanceStatsHistory},
	{"test_get_instance_stats_kv", GetInstanceStatsKv},
	{"test_get_instance_stats_carry_forward", GetInstanceStatsCarryForward},
	{"test_get_instance_stats_kv_delta_only", GetInstanceStatsKvDeltaOnly},
	{"test_get_instance_stats_kv_merged", GetInstanceStatsKvMerged},
	{"test_client_get_orchestration_stats", ClientGetOrchestrationStats},
}

// ListInstances checks that ListInstances returns every created instance
// (duroxide's test_list_instances).
func ListInstances(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	for i := range 3 {
		createInstance(t, p, fmt.Sprintf("mgmt-inst-%d", i))
	}
	instances, err := admin.ListInstances(t.Context())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(instances), 3)
	for i := range 3 {
		assert.Contains(t, instances, fmt.Sprintf("mgmt-inst-%d", i))
	}
}

// ListInstancesByStatus checks that a Completed instance is listed under
// "Completed" (duroxide's test_list_instances_by_status).
func ListInstancesByStatus(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	delCompletedInstance(t, p, "mgmt-completed", "")
	completed, err := admin.ListInstancesByStatus(t.Context(), duroxide.StatusCompleted)
	require.NoError(t, err)
	assert.Contains(t, completed, "mgmt-completed")
}

// ListExecutions checks that ListExecutions lists execution 1 of an
// instance created by an ack whose metadata is empty (duroxide's
// test_list_executions).
func ListExecutions(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	const id = "mgmt-multi-exec"
	delTurn(t, p, startItem(id), 1, []duroxide.Event{startedEvent(id, duroxide.InitialEventID, 1, testOrch, testOrchVersion)}, nil, duroxide.ExecutionMetadata{})
	executions, err := admin.ListExecutions(t.Context(), id)
	require.NoError(t, err)
	assert.Contains(t, executions, uint64(1))
}

// GetInstanceInfo checks that GetInstanceInfo returns the id, the name and
// version stored from the ack metadata and the current execution
// (duroxide's test_get_instance_info).
func GetInstanceInfo(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	const id = "mgmt-info"
	delTurn(t, p, startItem(id), 1,
		[]duroxide.Event{duroxide.NewEvent(1, id, 1, nil, duroxide.OrchestrationStarted{Name: "InfoOrch", Version: "2.0.0", Input: "test"})},
		nil,
		duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("InfoOrch"), OrchestrationVersion: duroxide.StringPtr("2.0.0")})

	info, err := admin.GetInstanceInfo(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, id, info.InstanceID)
	assert.Equal(t, "InfoOrch", info.OrchestrationName)
	assert.Equal(t, "2.0.0", info.OrchestrationVersion)
	assert.Equal(t, uint64(1), info.CurrentExecutionID)
}

// GetExecutionInfo checks that GetExecutionInfo returns the status and
// output an ack stored for execution 1 (duroxide's test_get_execution_info).
func GetExecutionInfo(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)

	const id = "mgmt-exec-info"
	delTurn(t, p, startItem(id), 1, []duroxide.Event{startedEvent(id, duroxide.InitialEventID, 1, testOrch, testOrchVersion)}, nil,
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr("result")})

	info, err := admin.GetExecutionInfo(t.Context(), id, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.ExecutionID)
	assert.Equal(t, duroxide.StatusCompleted, info.Status)
	require.NotNil(t, info.Output)
	assert.Equal(t, "result", *info.Output)
}

// GetSystemMetrics checks that creating an instance raises TotalInstances
// and that TotalEvents counts its history (duroxide's
// test_get_system_metrics).
func GetSystemMetrics(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	baseline, err := admin.GetSystemMetrics(ctx)
	require.NoError(t, err)
	createInstance(t, p, "mgmt-metrics")
	updated, err := admin.GetSystemMetrics(ctx)
	require.NoError(t, err)
	assert.Greater(t, updated.TotalInstances, baseline.TotalInstances, "total_instances should increase")
	assert.Positive(t, updated.TotalEvents, "total_events should be > 0")
}

// GetQueueDepths checks that enqueueing a start message raises the
// orchestrator queue depth (duroxide's test_get_queue_depths).
func GetQueueDepths(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	ctx := t.Context()

	baseline, err := admin.GetQueueDepths(ctx)
	require.NoError(t, err)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("mgmt-queue"), 0))
	updated, err := admin.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Greater(t, updated.OrchestratorQueue, baseline.OrchestratorQueue, "orchestrator_queue should increase")
}

// GetQueueStats checks duroxide.QueueStatsReporter, a Go addition: each
// queue's messages counted once, as ready, locked (a live peek-lock) or
// delayed (not visible yet), and a ready message's wait. Skipped for a
// provider without the capability.
func GetQueueStats(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	reporter, ok := admin.(duroxide.QueueStatsReporter)
	if !ok {
		t.Skip("skipped: the provider's admin lacks the optional capability duroxide.QueueStatsReporter")
	}
	ctx := t.Context()
	enqueueOrch(t, p, startItem("mgmt-stats-locked"))
	fetchOrch(t, p, longLock) // the only visible message: locks it
	enqueueOrch(t, p, startItem("mgmt-stats-ready"))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("mgmt-stats-delayed"), time.Hour))
	for _, id := range []uint64{1, 2} {
		require.NoError(t, p.EnqueueForWorker(ctx, cancellationActivity("mgmt-stats-locked", id, "A")))
	}
	lockingFetchWork(t, p, longLock)

	stats, err := reporter.GetQueueStats(ctx)
	require.NoError(t, err)
	age := func(c duroxide.QueueCounts) duroxide.QueueCounts { c.OldestReadyAgeMs = 0; return c }
	assert.Equal(t, duroxide.QueueCounts{Ready: 1, Locked: 1, Delayed: 1}, age(stats.Orchestrator), "orchestrator queue")
	assert.Equal(t, duroxide.QueueCounts{Ready: 1, Locked: 1}, age(stats.Worker), "worker queue")
	assert.Less(t, stats.Orchestrator.OldestReadyAgeMs, uint64(time.Hour.Milliseconds()), "a message enqueued during the test waited less than an hour")
}

// requireStats returns the instance's stats, failing t when it has none.
func requireStats(t *testing.T, p duroxide.Provider, instance, msg string) *duroxide.SystemStats {
	t.Helper()
	stats, err := p.GetInstanceStats(t.Context(), instance)
	require.NoError(t, err, "get_instance_stats")
	require.NotNil(t, stats, "%s: the instance should have stats", msg)
	return stats
}

// statsTurn enqueues an external event for instance, fetches its turn and
// acks it with events and metadata.
func statsTurn(t *testing.T, p duroxide.Provider, instance, poke string, events []duroxide.Event, md duroxide.ExecutionMetadata) {
	t.Helper()
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: poke, Data: "{}"}})
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	ackTurn(t, p, item.LockToken, 1, events, md)
}

// completedMetadata is the metadata of a turn that completes with output.
func completedMetadata(output string) duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr(output)}
}

// GetInstanceStatsNonexistent checks that an unknown instance has no stats
// (nil and no error: duroxide's test_get_instance_stats_nonexistent, added
// after 0.1.26).
func GetInstanceStatsNonexistent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	stats, err := p.GetInstanceStats(t.Context(), "no-such-instance")
	require.NoError(t, err)
	require.Nil(t, stats, "a non-existent instance should have no stats")
}

// GetInstanceStatsHistory checks the history count and size of a new
// instance, and that it has no KV and no carried-forward messages
// (duroxide's test_get_instance_stats_history).
func GetInstanceStatsHistory(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "stats-hist")
	stats := requireStats(t, p, "stats-hist", "after create_instance")
	require.GreaterOrEqual(t, stats.HistoryEventCount, uint64(1), "should have at least 1 event")
	require.Positive(t, stats.HistorySizeBytes, "history should have a non-zero size")
	require.Zero(t, stats.KVUserKeyCount, "no KV keys set")
	require.Zero(t, stats.KVTotalValueBytes, "no KV value bytes")
	require.Zero(t, stats.QueuePendingCount, "no carry-forward events")
}

// GetInstanceStatsKv checks the KV key count and value bytes once a
// completing turn merged its values into the store (duroxide's
// test_get_instance_stats_kv).
func GetInstanceStatsKv(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "stats-kv"
	createInstance(t, p, inst)
	statsTurn(t, p, inst, "poke", []duroxide.Event{
		kvSet(100, inst, 1, "k1", "aaa", 0),
		kvSet(101, inst, 1, "k2", "bbbbb", 0),
		duroxide.NewEvent(102, inst, 1, nil, duroxide.OrchestrationCompleted{Output: "done"}),
	}, completedMetadata("done"))
	stats := requireStats(t, p, inst, "after completion")
	require.Equal(t, uint64(2), stats.KVUserKeyCount, "should have 2 KV keys")
	require.Equal(t, uint64(8), stats.KVTotalValueBytes, "3 + 5 = 8 bytes")
}

// GetInstanceStatsCarryForward checks that QueuePendingCount counts the
// queue messages the current execution's OrchestrationStarted carries
// forward from the previous one (duroxide's
// test_get_instance_stats_carry_forward: duroxide's SystemStats defines
// queue_pending_count as those, not as orchestrator-queue messages).
func GetInstanceStatsCarryForward(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "cf-stats"
	enqueueOrch(t, p, startItem(inst))
	item := fetchOrch(t, p, longLock)
	started := duroxide.NewEvent(duroxide.InitialEventID, inst, duroxide.InitialExecutionID, nil, duroxide.OrchestrationStarted{
		Name: testOrch, Version: testOrchVersion, Input: "{}",
		CarryForwardEvents: []duroxide.NameData{
			{Name: "raised-1", Data: `{"data":"a"}`},
			{Name: "raised-2", Data: `{"data":"b"}`},
			{Name: "raised-3", Data: `{"data":"c"}`},
		},
	})
	ackTurn(t, p, item.LockToken, duroxide.InitialExecutionID, []duroxide.Event{started}, orchMetadata(testOrch, testOrchVersion))
	stats := requireStats(t, p, inst, "after the start")
	require.Equal(t, uint64(3), stats.QueuePendingCount, "should have 3 carry-forward events")
	require.GreaterOrEqual(t, stats.HistoryEventCount, uint64(1))
	require.Positive(t, stats.HistorySizeBytes)
	require.Zero(t, stats.KVUserKeyCount, "no KV keys set")
}

// GetInstanceStatsKvDeltaOnly checks that values set by a turn that does
// not end the execution (still in the delta) count (duroxide's
// test_get_instance_stats_kv_delta_only).
func GetInstanceStatsKvDeltaOnly(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "kv-delta-stats"
	createInstance(t, p, inst)
	statsTurn(t, p, inst, "poke", []duroxide.Event{
		kvSet(100, inst, 1, "dk1", "xxx", 0),
		kvSet(101, inst, 1, "dk2", "yyyyyy", 0),
		duroxide.NewEvent(102, inst, 1, nil, duroxide.ActivityScheduled{Name: "Noop", Input: "{}"}),
	}, duroxide.ExecutionMetadata{})
	stats := requireStats(t, p, inst, "after a running turn")
	require.Equal(t, uint64(2), stats.KVUserKeyCount, "should see 2 delta-only KV keys")
	require.Equal(t, uint64(9), stats.KVTotalValueBytes, "3 + 6 = 9 bytes from the delta")
	require.Zero(t, stats.QueuePendingCount, "no carry-forward events")
}

// GetInstanceStatsKvMerged checks the KV stats before and after the delta
// merges into the store, a key overwritten in between counted once with
// its new size (duroxide's test_get_instance_stats_kv_merged).
func GetInstanceStatsKvMerged(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "kv-merged-stats"
	createInstance(t, p, inst)
	statsTurn(t, p, inst, "poke1", []duroxide.Event{
		kvSet(100, inst, 1, "mk1", "aaa", 0),
		kvSet(101, inst, 1, "mk2", "bb", 0),
		duroxide.NewEvent(102, inst, 1, nil, duroxide.ActivityScheduled{Name: "Noop", Input: "{}"}),
	}, duroxide.ExecutionMetadata{})
	stats := requireStats(t, p, inst, "delta phase")
	require.Equal(t, uint64(2), stats.KVUserKeyCount, "delta phase: 2 keys")
	require.Equal(t, uint64(5), stats.KVTotalValueBytes, "delta phase: 3 + 2 = 5 bytes")

	statsTurn(t, p, inst, "poke2", []duroxide.Event{
		kvSet(200, inst, 1, "mk1", "zzzzz", 1),
		duroxide.NewEvent(201, inst, 1, nil, duroxide.OrchestrationCompleted{Output: "done"}),
	}, completedMetadata("done"))
	stats = requireStats(t, p, inst, "merged phase")
	require.Equal(t, uint64(2), stats.KVUserKeyCount, "merged: still 2 keys (an overwrite, not a duplicate)")
	require.Equal(t, uint64(7), stats.KVTotalValueBytes, "merged: 5 + 2 = 7 bytes")
	require.Zero(t, stats.QueuePendingCount, "no carry-forward events")
}

// ClientGetOrchestrationStats checks runtime.Client.GetOrchestrationStats
// (duroxide's Client::get_orchestration_stats, since 0.1.27) over the
// provider's GetInstanceStats with the runtime running: a waiting
// instance's current-execution history as stored and the KV values its
// turn set; the same after it completed; nil for an unknown instance and an
// error for an empty id (a Go test: duroxide tests the client call in its
// runtime tests).
func ClientGetOrchestrationStats(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "client-stats"
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Stats", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("k1", "value-1")
		ctx.SetKVValue("k2", "v2")
		return ctx.ScheduleWait("go").Get()
	}))
	startRuntime(t, p, reg, raceOptions(10*time.Millisecond, 100*time.Millisecond))
	client := runtime.NewClient(p)
	require.NoError(t, client.StartOrchestration(t.Context(), inst, "Stats", ""))

	var stats *duroxide.SystemStats
	require.Eventually(t, func() bool {
		var err error
		stats, err = client.GetOrchestrationStats(t.Context(), inst)
		return assert.NoError(t, err) && stats != nil && stats.KVUserKeyCount == 2
	}, raceWait, 10*time.Millisecond, "the first turn's KV values never showed in the stats")
	history := readExecution(t, p, inst, 1)
	require.Equal(t, uint64(len(history)), stats.HistoryEventCount, "the waiting execution's events")
	require.Positive(t, stats.HistorySizeBytes)
	require.Equal(t, uint64(len("value-1")+len("v2")), stats.KVTotalValueBytes)
	require.Zero(t, stats.QueuePendingCount)

	require.NoError(t, client.RaiseEvent(t.Context(), inst, "go", "done"))
	st := waitStatus(t, p, inst)
	requireCompletedWith(t, st, "done")
	after, err := client.GetOrchestrationStats(t.Context(), inst)
	require.NoError(t, err)
	require.NotNil(t, after)
	require.Equal(t, uint64(len(readExecution(t, p, inst, 1))), after.HistoryEventCount, "the completed execution's events")
	require.Greater(t, after.HistoryEventCount, stats.HistoryEventCount)
	require.Equal(t, uint64(2), after.KVUserKeyCount)

	missing, err := client.GetOrchestrationStats(t.Context(), "client-stats-missing")
	require.NoError(t, err)
	require.Nil(t, missing, "an unknown instance has no stats")
	_, err = client.GetOrchestrationStats(t.Context(), "")
	require.Error(t, err, "an empty instance id is refused")
}
