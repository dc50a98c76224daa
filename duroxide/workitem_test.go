package duroxide

import "testing"

func TestWorkItemInstanceAndType(t *testing.T) {
	cases := []struct {
		item      WorkItemKind
		instance  string
		typ       WorkItemType
		forWorker bool
	}{
		{StartOrchestrationItem{Instance: "a", ParentInstance: StringPtr("p")}, "a", WorkItemStartOrchestration, false},
		{ActivityExecuteItem{Instance: "b"}, "b", WorkItemActivityExecute, true},
		{ActivityCompletedItem{Instance: "c"}, "c", WorkItemActivityCompleted, false},
		{ActivityFailedItem{Instance: "d"}, "d", WorkItemActivityFailed, false},
		{TimerFiredItem{Instance: "e"}, "e", WorkItemTimerFired, false},
		{ExternalRaisedItem{Instance: "f"}, "f", WorkItemExternalRaised, false},
		// Sub-orchestration completions route to the parent.
		{SubOrchCompletedItem{ParentInstance: "parent-g"}, "parent-g", WorkItemSubOrchCompleted, false},
		{SubOrchFailedItem{ParentInstance: "parent-h"}, "parent-h", WorkItemSubOrchFailed, false},
		{CancelInstanceItem{Instance: "i"}, "i", WorkItemCancelInstance, false},
		{ContinueAsNewItem{Instance: "j"}, "j", WorkItemContinueAsNew, false},
		{QueueMessageItem{Instance: "k"}, "k", WorkItemQueueMessage, false},
	}
	seen := map[WorkItemType]bool{}
	for _, c := range cases {
		w := WorkItem{Kind: c.item}
		checkEqual(t, c.instance, w.Instance(), string(c.typ))
		checkEqual(t, c.typ, w.Type(), string(c.typ))
		checkEqual(t, c.forWorker, w.IsForWorker(), string(c.typ))
		seen[c.typ] = true
	}
	checkEqual(t, len(workItemTypes), len(seen))

	var empty WorkItem
	checkEqual(t, "", empty.Instance())
	checkEqual(t, WorkItemType(""), empty.Type())
	checkEqual(t, false, empty.IsForWorker())

	// A nil pointer kind reads as no kind instead of panicking.
	var nilExec *ActivityExecuteItem
	nilPtr := WorkItem{Kind: nilExec}
	checkEqual(t, "", nilPtr.Instance())
	checkEqual(t, WorkItemType(""), nilPtr.Type())
	checkEqual(t, false, nilPtr.IsForWorker())
}
