package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instanceCreationCases ports duroxide's src/provider_validation/instance_creation.rs; see README.md for
// the table from each Rust test to its Go function.
var instanceCreationCases = []Case{
	{"test_instance_creation_via_metadata", InstanceCreationViaMetadata},
	{"test_no_instance_creation_on_enqueue", NoInstanceCreationOnEnqueue},
	{"test_null_version_handling", NullVersionHandling},
	{"test_sub_orchestration_instance_creation", SubOrchestrationInstanceCreation},
	{"test_ack_tolerates_status_only_metadata", AckToleratesStatusOnlyMetadata},
	{"test_duplicate_start_keeps_instance_name", DuplicateStartKeepsInstanceName},
}

// InstanceCreationViaMetadata checks that a new instance is served from its
// start message, and that the first ack's metadata creates the instance
// record with the version the runtime resolved, which later fetches report
// (duroxide's test_instance_creation_via_metadata).
func InstanceCreationViaMetadata(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "instance-A"

	enqueueOrch(t, p, startItem(inst))
	item := fetchOrch(t, p, longLock)
	require.Equal(t, inst, item.Instance)
	require.Equal(t, testOrch, item.OrchestrationName, "the name comes from the start message")
	require.Equal(t, uint64(1), item.ExecutionID)
	require.Empty(t, item.History, "no history yet")

	ackTurn(t, p, item.LockToken, 1,
		[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, "2.0.0")},
		orchMetadata(testOrch, "2.0.0")) // the version the runtime resolved

	enqueueOrch(t, p, startItem(inst))
	again := fetchOrch(t, p, longLock)
	require.Equal(t, inst, again.Instance)
	require.Equal(t, testOrch, again.OrchestrationName)
	require.Equal(t, "2.0.0", again.Version, "the version comes from the metadata, not the work item")
	require.Equal(t, uint64(1), again.ExecutionID)
	require.Len(t, again.History, 1, "the OrchestrationStarted event")

	ackTurn(t, p, again.LockToken, 1, nil, duroxide.ExecutionMetadata{})
}

// NoInstanceCreationOnEnqueue checks that enqueueing a start creates no
// instance, yet the start can be fetched and acked (duroxide's
// test_no_instance_creation_on_enqueue). duroxide leaves the "no instance
// yet" check to the provider; when the provider has ProviderAdmin this port
// checks it: GetInstanceInfo fails until the ack.
func NoInstanceCreationOnEnqueue(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const inst = "instance-B"

	enqueueOrch(t, p, startItem(inst))
	admin, hasAdmin := duroxide.AsManagementCapability(p)
	if hasAdmin {
		_, err := admin.GetInstanceInfo(ctx, inst)
		require.Error(t, err, "the instance should not exist after enqueue")
	}

	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "should be able to fetch a work item even if the instance doesn't exist")
	require.Equal(t, inst, item.Instance)

	ackTurn(t, p, item.LockToken, 1,
		[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, testOrchVersion)},
		orchMetadata(testOrch, testOrchVersion))
	if hasAdmin {
		info, err := admin.GetInstanceInfo(ctx, inst)
		require.NoError(t, err, "the ack's metadata should create the instance")
		require.Equal(t, testOrch, info.OrchestrationName)
		require.Equal(t, testOrchVersion, info.OrchestrationVersion)
	}
}

// NullVersionHandling checks that a start without a version can be fetched
// and that the ack's metadata then sets the version (duroxide's
// test_null_version_handling).
func NullVersionHandling(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const inst = "instance-C"

	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: inst, Orchestration: testOrch, Input: "{}", ExecutionID: 1, // no version
	}})
	item := fetchOrch(t, p, longLock)
	require.Equal(t, inst, item.Instance)

	ackTurn(t, p, item.LockToken, 1,
		[]duroxide.Event{startedEvent(inst, 1, 1, testOrch, "3.0.0")},
		orchMetadata(testOrch, "3.0.0"))

	enqueueOrch(t, p, startItem(inst))
	again := fetchOrch(t, p, longLock)
	require.Equal(t, "3.0.0", again.Version, "the version comes from the metadata")

	ackTurn(t, p, again.LockToken, 1, nil, duroxide.ExecutionMetadata{})
}

// SubOrchestrationInstanceCreation checks that a sub-orchestration started
// from a parent's ack is not created on enqueue but by its own first ack's
// metadata (duroxide's test_sub_orchestration_instance_creation).
func SubOrchestrationInstanceCreation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	const parent, child = "parent-instance", "parent-instance::child-instance"

	enqueueOrch(t, p, startItem(parent))
	parentItem := fetchOrch(t, p, longLock)
	require.NoError(t, p.AckOrchestrationItem(ctx, parentItem.LockToken, 1,
		[]duroxide.Event{startedEvent(parent, 1, 1, "ParentOrch", "1.0.0")},
		nil,
		[]duroxide.WorkItem{{Kind: duroxide.StartOrchestrationItem{
			Instance: child, Orchestration: "ChildOrch", Input: "{}",
			ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(1), ExecutionID: 1,
		}}},
		orchMetadata("ParentOrch", "1.0.0"), nil))

	childItem := fetchOrch(t, p, longLock)
	require.Equal(t, child, childItem.Instance)
	require.Equal(t, "ChildOrch", childItem.OrchestrationName)

	childStarted := duroxide.NewEvent(1, child, 1, nil, duroxide.OrchestrationStarted{
		Name: "ChildOrch", Version: "1.5.0", Input: "{}",
		ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(1),
	})
	ackTurn(t, p, childItem.LockToken, 1, []duroxide.Event{childStarted}, orchMetadata("ChildOrch", "1.5.0"))

	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "ChildOrch", Input: "{}", ExecutionID: 1,
	}})
	again := fetchOrch(t, p, longLock)
	require.Equal(t, child, again.Instance)
	require.Equal(t, "1.5.0", again.Version, "the version comes from the metadata")

	ackTurn(t, p, again.LockToken, 1, nil, duroxide.ExecutionMetadata{})
}

// AckToleratesStatusOnlyMetadata checks duroxide main's rule (no Rust
// validation test of this name; the provider side of
// test_continue_as_new_duplicate_start, for the stamps it uses, 0.1.30 and
// 0.1.31): an ack whose metadata carries a status only (no orchestration
// name or version, as that test's seeding acks) is accepted; the history
// reads back exactly as written, stamp included; and the next fetch
// returns the duplicate start, the ContinueAsNew and the queue message the
// ack enqueued, in that order, with the execution it continued as its
// history.
func AckToleratesStatusOnlyMetadata(t *testing.T, f Factory) {
	for _, stamp := range []string{"0.1.30", "0.1.31"} {
		t.Run(stamp, func(t *testing.T) {
			t.Parallel()
			p := f.NewProvider(t)
			inst := "provider-can-duplicate-parent::can-child-" + stamp
			history := []duroxide.Event{
				stamped(duroxide.NewEvent(1, inst, 1, nil, duroxide.OrchestrationStarted{Name: "Transition", Version: "1.0.0"}), stamp),
				duroxide.NewEvent(2, inst, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
			}
			messages := []duroxide.WorkItem{
				{Kind: duroxide.StartOrchestrationItem{Instance: inst, Orchestration: "WrongHandler", Input: "duplicate", ExecutionID: 1}},
				{Kind: duroxide.ContinueAsNewItem{Instance: inst, Orchestration: "Transition", Input: "next", Version: duroxide.StringPtr("1.0.0"),
					CarryForwardEvents: []duroxide.NameData{{Name: "q", Data: "carried"}}}},
				{Kind: duroxide.QueueMessageItem{Instance: inst, Name: "q", Data: "late"}},
			}
			seedTurn(t, p, inst, history, messages, duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})

			got, err := p.ReadWithExecution(t.Context(), inst, 1)
			require.NoError(t, err)
			require.Equal(t, history, got, "read_with_execution returns what was written")
			item := fetchOrch(t, p, longLock)
			require.Equal(t, inst, item.Instance)
			require.Equal(t, []string{"StartOrchestration:WrongHandler", "ContinueAsNew:Transition", "QueueMessage:late"}, messageSummary(item.Messages))
			require.Equal(t, uint64(1), item.ExecutionID, "the successor starts when the runtime acks it")
			require.Equal(t, history, item.History)
			require.Equal(t, stamp, item.History[0].DuroxideVersion, "a fetch never restamps history")
		})
	}
}

// DuplicateStartKeepsInstanceName checks the provider side of duroxide's
// test_duplicate_start_preserves_pinned_handler (no Rust validation test
// of this name): a turn that records a running execution of Original
// 1.0.0 and enqueues, in the same ack, a
// duplicate StartOrchestration naming another handler and an activity
// completion. The next fetch returns both messages in the order the ack
// enqueued them, and still names the instance Original 1.0.0: a start
// message never renames a running instance (the runtime then drops it).
func DuplicateStartKeepsInstanceName(t *testing.T, f Factory) {
	for _, duplicate := range []string{"Original", "WrongHandler"} {
		t.Run(duplicate, func(t *testing.T) {
			t.Parallel()
			p := f.NewProvider(t)
			inst := "provider-pinned-handler-" + duplicate
			history := []duroxide.Event{
				duroxide.NewEvent(1, inst, 1, nil, duroxide.OrchestrationStarted{Name: "Original", Version: "1.0.0", Input: "original-input"}),
				duroxide.NewEvent(2, inst, 1, nil, duroxide.ActivityScheduled{Name: "tick", Input: "v1"}),
			}
			messages := []duroxide.WorkItem{
				{Kind: duroxide.StartOrchestrationItem{Instance: inst, Orchestration: duplicate, Input: "wrong-input", ExecutionID: 1}},
				{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "ok"}},
			}
			md := orchMetadata("Original", "1.0.0")
			md.Status = duroxide.StringPtr(duroxide.StatusRunning)
			seedTurn(t, p, inst, history, messages, md)

			item := fetchOrch(t, p, longLock)
			require.Equal(t, inst, item.Instance)
			require.Equal(t, "Original", item.OrchestrationName, "a duplicate start must not rename the running instance")
			require.Equal(t, "1.0.0", item.Version)
			require.Equal(t, uint64(1), item.ExecutionID)
			require.Equal(t, []string{"StartOrchestration:" + duplicate, "ActivityCompleted:2"}, messageSummary(item.Messages))
			require.Equal(t, history, item.History)
		})
	}
}
