package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
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
