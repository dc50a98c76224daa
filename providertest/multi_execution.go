package providertest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// multiExecutionCases ports duroxide's src/provider_validation/multi_execution.rs; see README.md for
// the table from each Rust test to its Go function.
var multiExecutionCases = []Case{
	{"test_execution_isolation", ExecutionIsolation},
	{"test_latest_execution_detection", LatestExecutionDetection},
	{"test_execution_id_sequencing", ExecutionIDSequencing},
	{"test_continue_as_new_creates_new_execution", ContinueAsNewCreatesNewExecution},
	{"test_execution_history_persistence", ExecutionHistoryPersistence},
}

// ExecutionIsolation checks that each execution keeps its own history and
// that Read returns the latest one (duroxide's test_execution_isolation).
func ExecutionIsolation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	multiExecTurn(t, p, inst, 1, []duroxide.Event{
		startedEvent(inst, duroxide.InitialEventID, 1, testOrch, testOrchVersion),
		duroxide.NewEvent(2, inst, 1, nil, duroxide.ActivityScheduled{Name: "Activity1", Input: "input1"}),
		duroxide.NewEvent(3, inst, 1, nil, duroxide.OrchestrationCompleted{Output: "result1"}),
	})
	multiExecTurn(t, p, inst, 2, []duroxide.Event{
		startedEvent(inst, duroxide.InitialEventID, 2, testOrch, testOrchVersion),
		duroxide.NewEvent(2, inst, 2, nil, duroxide.OrchestrationCompleted{Output: "result2"}),
	})

	history1, err := p.ReadWithExecution(ctx, inst, 1)
	require.NoError(t, err)
	require.Equal(t, []duroxide.EventType{
		duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeActivityScheduled, duroxide.EventTypeOrchestrationCompleted,
	}, multiExecEventTypes(history1), "execution 1's history")

	history2, err := p.ReadWithExecution(ctx, inst, 2)
	require.NoError(t, err)
	require.Equal(t, []duroxide.EventType{
		duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeOrchestrationCompleted,
	}, multiExecEventTypes(history2), "execution 2's history")

	latest, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, []duroxide.EventType{
		duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeOrchestrationCompleted,
	}, multiExecEventTypes(latest), "Read returns the latest execution's history")
}

// LatestExecutionDetection checks that Read returns the latest execution
// and ReadWithExecution an older one (duroxide's
// test_latest_execution_detection).
func LatestExecutionDetection(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	multiExecTurn(t, p, inst, 1, []duroxide.Event{
		duroxide.NewEvent(1, inst, 1, nil, duroxide.ActivityScheduled{Name: "A"}),
	})
	multiExecTurn(t, p, inst, 2, []duroxide.Event{
		duroxide.NewEvent(1, inst, 2, nil, duroxide.ActivityScheduled{Name: "B"}),
	})

	latest, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, []string{"B"}, multiExecActivityNames(t, latest), "Read returns execution 2")

	exec1, err := p.ReadWithExecution(ctx, inst, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"A"}, multiExecActivityNames(t, exec1), "execution 1 keeps its history")
}

// ExecutionIDSequencing checks that a fetch reports the instance's current
// execution: 1 for a new instance, 2 after a turn acked as execution 2
// (duroxide's test_execution_id_sequencing).
func ExecutionIDSequencing(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "instance-A"

	enqueueOrch(t, p, multiExecStartItem(inst, 1))
	item1 := fetchOrch(t, p, longLock)
	require.Equal(t, uint64(1), item1.ExecutionID, "the first execution is 1")
	ackTurn(t, p, item1.LockToken, 1, []duroxide.Event{startedEvent(inst, duroxide.InitialEventID, 1, testOrch, testOrchVersion)}, orchMetadata(testOrch, testOrchVersion))

	// The fetch still reports execution 1; acking with 2 creates execution 2.
	enqueueOrch(t, p, multiExecStartItem(inst, 2))
	item2 := fetchOrch(t, p, longLock)
	ackTurn(t, p, item2.LockToken, 2, []duroxide.Event{startedEvent(inst, duroxide.InitialEventID, 2, testOrch, testOrchVersion)}, orchMetadata(testOrch, testOrchVersion))

	enqueueOrch(t, p, multiExecStartItem(inst, 3))
	item3 := fetchOrch(t, p, longLock)
	require.Equal(t, uint64(2), item3.ExecutionID, "current execution should be 2")
}

// ContinueAsNewCreatesNewExecution checks that a ContinueAsNew turn acked
// as execution 2 creates execution 2 beside execution 1, consumes the
// ContinueAsNew message, and makes Read return the new execution
// (duroxide's test_continue_as_new_creates_new_execution). duroxide checks
// the execution id of a last fetch only if it returns an item, which it
// cannot once the ack consumed the message (and with empty metadata no
// instance record exists, so sqlite would report execution 1); this port
// checks instead that the fetch returns nothing and that the latest
// history is execution 2's.
func ContinueAsNewCreatesNewExecution(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	multiExecTurn(t, p, inst, 1, []duroxide.Event{startedEvent(inst, duroxide.InitialEventID, 1, testOrch, testOrchVersion)})

	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
		Instance:      inst,
		Orchestration: "TestOrch",
		Input:         "new-input",
		Version:       duroxide.StringPtr("1.0.0"),
	}})
	item2 := fetchOrch(t, p, longLock)
	require.Equal(t, inst, item2.Instance)
	require.Equal(t, []duroxide.WorkItemType{duroxide.WorkItemContinueAsNew}, multiExecItemTypes(item2.Messages))
	ackTurn(t, p, item2.LockToken, 2, []duroxide.Event{duroxide.NewEvent(duroxide.InitialEventID, inst, 2, nil, duroxide.OrchestrationStarted{
		Name: testOrch, Version: testOrchVersion, Input: "new-input",
	})}, duroxide.ExecutionMetadata{})

	requireNoOrch(t, p, longLock, "the ack consumed the ContinueAsNew message")

	require.Equal(t, []string{"new-input"}, multiExecStartedInputs(t, p, inst, 2), "execution 2's history")
	require.Equal(t, []string{"{}"}, multiExecStartedInputs(t, p, inst, 1), "execution 1 keeps its history")
	latest, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, latest, 1, "Read returns the new execution's history")
	require.Equal(t, uint64(2), latest[0].ExecutionID, "continue-as-new should create execution 2")
}

// ExecutionHistoryPersistence checks that three executions keep independent
// histories and that the latest is execution 3 (duroxide's
// test_execution_history_persistence).
func ExecutionHistoryPersistence(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-A"

	for exec := uint64(1); exec <= 3; exec++ {
		multiExecTurn(t, p, inst, exec, []duroxide.Event{
			duroxide.NewEvent(1, inst, exec, nil, duroxide.ActivityScheduled{
				Name: fmt.Sprintf("Activity-%d", exec), Input: fmt.Sprintf("input-%d", exec),
			}),
		})
	}

	for exec := uint64(1); exec <= 3; exec++ {
		history, err := p.ReadWithExecution(ctx, inst, exec)
		require.NoError(t, err)
		require.Equal(t, []string{fmt.Sprintf("Activity-%d", exec)}, multiExecActivityNames(t, history),
			"execution %d's history", exec)
	}

	latest, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Equal(t, []string{"Activity-3"}, multiExecActivityNames(t, latest), "the latest execution is 3")
}

// multiExecStartItem is a StartOrchestration of TestOrch 1.0.0 for
// execution executionID of instance.
func multiExecStartItem(instance string, executionID uint64) duroxide.WorkItem {
	item := startItem(instance)
	start := item.Kind.(duroxide.StartOrchestrationItem)
	start.ExecutionID = executionID
	return duroxide.WorkItem{Kind: start}
}

// multiExecTurn enqueues a start for execution executionID of instance,
// fetches it and acks it as that execution with history and empty
// metadata.
func multiExecTurn(t *testing.T, p duroxide.Provider, instance string, executionID uint64, history []duroxide.Event) {
	t.Helper()
	enqueueOrch(t, p, multiExecStartItem(instance, executionID))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, instance, item.Instance)
	ackTurn(t, p, item.LockToken, executionID, history, duroxide.ExecutionMetadata{})
}

// multiExecEventTypes returns the wire tags of events, in order.
func multiExecEventTypes(events []duroxide.Event) []duroxide.EventType {
	types := make([]duroxide.EventType, len(events))
	for i, e := range events {
		types[i] = e.Type()
	}
	return types
}

// multiExecItemTypes returns the wire tags of items, in order.
func multiExecItemTypes(items []duroxide.WorkItem) []duroxide.WorkItemType {
	types := make([]duroxide.WorkItemType, len(items))
	for i, w := range items {
		types[i] = w.Type()
	}
	return types
}

// multiExecActivityNames returns the activity names of events, failing t
// unless every event is an ActivityScheduled.
func multiExecActivityNames(t *testing.T, events []duroxide.Event) []string {
	t.Helper()
	return multiExecKindFields(t, events, func(k duroxide.ActivityScheduled) string { return k.Name })
}

// multiExecStartedInputs reads execution executionID of instance and
// returns the inputs of its events, failing t unless every event is an
// OrchestrationStarted.
func multiExecStartedInputs(t *testing.T, p duroxide.Provider, instance string, executionID uint64) []string {
	t.Helper()
	history, err := p.ReadWithExecution(t.Context(), instance, executionID)
	require.NoError(t, err)
	return multiExecKindFields(t, history, func(k duroxide.OrchestrationStarted) string { return k.Input })
}

// multiExecKindFields returns field of every event's kind, failing t
// unless every event is of kind K.
func multiExecKindFields[K duroxide.EventKind](t *testing.T, events []duroxide.Event, field func(K) string) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		k, ok := e.Kind.(K)
		require.True(t, ok, "expected %T, got %s", k, e.Type())
		out[i] = field(k)
	}
	return out
}
