package duroxide

import "testing"

// The golden texts below are what serde_json::to_string writes for
// duroxide 0.1.30's WorkItem (src/providers/mod.rs: an externally tagged
// enum), derived by hand from its attributes: {"Variant":{fields}} with the
// fields in declaration order; version, parent_instance and parent_id are
// Options without skip_serializing_if (null when None); session_id, tag and
// initial_custom_status are skipped when None; carry_forward_events is a
// plain Vec (always written). Where a duroxide source holds the same
// literal, the entry says so in source.

// goldenWorkItem is one WorkItem and its exact serde_json text.
type goldenWorkItem struct {
	name   string
	source string
	json   string
	item   WorkItem
}

// goldenWorkItems covers every WorkItem variant, and the optional-field
// shapes of those that have them.
var goldenWorkItems = []goldenWorkItem{
	{
		name:   "StartOrchestration/child",
		source: "microsoft/duroxide tests/parent_execution_id_serde_tests.rs, work_item_start_orchestration_missing_parent_execution_id_deserializes_as_none (the 0.1.26 shape)",
		json:   `{"StartOrchestration":{"instance":"parent-1::sub::2","orchestration":"Child","input":"child-input","version":"1.0.0","parent_instance":"parent-1","parent_id":2,"execution_id":1}}`,
		item: WorkItem{Kind: StartOrchestrationItem{
			Instance: "parent-1::sub::2", Orchestration: "Child", Input: "child-input", Version: StringPtr("1.0.0"),
			ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ExecutionID: 1,
		}},
	},
	{
		name:   "StartOrchestration/child-with-parent-execution",
		source: "duroxide 0.1.30: parent_execution_id after parent_id, skipped when None (tests/parent_execution_id_serde_tests.rs)",
		json:   `{"StartOrchestration":{"instance":"parent-1::sub::2","orchestration":"Child","input":"child-input","version":"1.0.0","parent_instance":"parent-1","parent_id":2,"parent_execution_id":3,"execution_id":1}}`,
		item: WorkItem{Kind: StartOrchestrationItem{
			Instance: "parent-1::sub::2", Orchestration: "Child", Input: "child-input", Version: StringPtr("1.0.0"),
			ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: Uint64Ptr(3), ExecutionID: 1,
		}},
	},
	{
		name: "StartOrchestration/root",
		json: `{"StartOrchestration":{"instance":"order-123","orchestration":"ProcessOrder","input":"{}","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`,
		item: WorkItem{Kind: StartOrchestrationItem{Instance: "order-123", Orchestration: "ProcessOrder", Input: "{}", ExecutionID: 1}},
	},
	{
		name:   "ActivityExecute/untagged",
		source: "tests/tag_serde_tests.rs, work_item_activity_execute_missing_tag_deserializes_as_none",
		json:   `{"ActivityExecute":{"instance":"i","execution_id":1,"id":1,"name":"Build","input":"{}"}}`,
		item:   WorkItem{Kind: ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 1, Name: "Build", Input: "{}"}},
	},
	{
		name: "ActivityExecute/session-and-tag",
		json: `{"ActivityExecute":{"instance":"i","execution_id":1,"id":1,"name":"Build","input":"{}","session_id":"s-1","tag":"gpu"}}`,
		item: WorkItem{Kind: ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 1, Name: "Build", Input: "{}", SessionID: StringPtr("s-1"), Tag: StringPtr("gpu")}},
	},
	{
		name: "ActivityCompleted",
		json: `{"ActivityCompleted":{"instance":"order-123","execution_id":1,"id":2,"result":"\"ok\""}}`,
		item: WorkItem{Kind: ActivityCompletedItem{Instance: "order-123", ExecutionID: 1, ID: 2, Result: `"ok"`}},
	},
	{
		name: "ActivityFailed",
		json: `{"ActivityFailed":{"instance":"order-123","execution_id":1,"id":2,"details":{"Application":{"kind":"ActivityFailed","message":"card declined","retryable":false}}}}`,
		item: WorkItem{Kind: ActivityFailedItem{Instance: "order-123", ExecutionID: 1, ID: 2, Details: ApplicationError(AppErrorActivityFailed, "card declined")}},
	},
	{
		name: "TimerFired",
		json: `{"TimerFired":{"instance":"order-123","execution_id":2,"id":3,"fire_at_ms":1700000005000}}`,
		item: WorkItem{Kind: TimerFiredItem{Instance: "order-123", ExecutionID: 2, ID: 3, FireAtMs: 1700000005000}},
	},
	{
		name:   "ExternalRaised",
		source: `docs/proposals/activity-implicit-sessions.md: {"ExternalRaised":{"instance":"...","name":"__session_migrated","data":"X"}}`,
		json:   `{"ExternalRaised":{"instance":"...","name":"__session_migrated","data":"X"}}`,
		item:   WorkItem{Kind: ExternalRaisedItem{Instance: "...", Name: "__session_migrated", Data: "X"}},
	},
	{
		name: "SubOrchCompleted",
		json: `{"SubOrchCompleted":{"parent_instance":"order-123","parent_execution_id":1,"parent_id":2,"result":"out"}}`,
		item: WorkItem{Kind: SubOrchCompletedItem{ParentInstance: "order-123", ParentExecutionID: 1, ParentID: 2, Result: "out"}},
	},
	{
		name: "SubOrchFailed",
		json: `{"SubOrchFailed":{"parent_instance":"order-123","parent_execution_id":1,"parent_id":2,"details":{"Application":{"kind":"Panicked","message":"index out of range","retryable":false}}}}`,
		item: WorkItem{Kind: SubOrchFailedItem{
			ParentInstance: "order-123", ParentExecutionID: 1, ParentID: 2,
			Details: ApplicationError(AppErrorPanicked, "index out of range"),
		}},
	},
	{
		name: "CancelInstance",
		json: `{"CancelInstance":{"instance":"order-123","reason":"user request"}}`,
		item: WorkItem{Kind: CancelInstanceItem{Instance: "order-123", Reason: "user request"}},
	},
	{
		name:   "ContinueAsNew/carry-forward",
		source: "microsoft/duroxide tests/continue_as_new_parent_link_serde_tests.rs, continue_as_new_missing_parent_link_deserializes_as_none (the 0.1.26 shape)",
		json:   `{"ContinueAsNew":{"instance":"parent-1::sub::2","orchestration":"Child","input":"next-input","version":"1.0.0","carry_forward_events":[["Evt","payload"]]}}`,
		item: WorkItem{Kind: ContinueAsNewItem{
			Instance: "parent-1::sub::2", Orchestration: "Child", Input: "next-input", Version: StringPtr("1.0.0"),
			CarryForwardEvents: []NameData{{Name: "Evt", Data: "payload"}},
		}},
	},
	{
		name:   "ContinueAsNew/child-with-parent-link",
		source: "duroxide 0.1.30: parent_instance, parent_id, parent_execution_id after version, each skipped when None (tests/continue_as_new_parent_link_serde_tests.rs)",
		json:   `{"ContinueAsNew":{"instance":"parent-1::sub::2","orchestration":"Child","input":"next-input","version":"1.0.0","parent_instance":"parent-1","parent_id":2,"parent_execution_id":3,"carry_forward_events":[["Evt","payload"]]}}`,
		item: WorkItem{Kind: ContinueAsNewItem{
			Instance: "parent-1::sub::2", Orchestration: "Child", Input: "next-input", Version: StringPtr("1.0.0"),
			ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: Uint64Ptr(3),
			CarryForwardEvents: []NameData{{Name: "Evt", Data: "payload"}},
		}},
	},
	{
		name: "ContinueAsNew/empty-with-status",
		json: `{"ContinueAsNew":{"instance":"order-123","orchestration":"Loop","input":"7","version":null,"carry_forward_events":[],"initial_custom_status":"round 7"}}`,
		item: WorkItem{Kind: ContinueAsNewItem{Instance: "order-123", Orchestration: "Loop", Input: "7", InitialCustomStatus: StringPtr("round 7")}},
	},
	{
		name: "QueueMessage",
		json: `{"QueueMessage":{"instance":"order-123","name":"inbox","data":"msg-1"}}`,
		item: WorkItem{Kind: QueueMessageItem{Instance: "order-123", Name: "inbox", Data: "msg-1"}},
	},
}

// TestWorkItemGoldenEncode checks Go value → exact serde_json bytes.
func TestWorkItemGoldenEncode(t *testing.T) {
	for _, g := range goldenWorkItems {
		t.Run(g.name, func(t *testing.T) { checkEncode(t, g.item, g.json) })
	}
}

// TestWorkItemGoldenDecode checks serde_json bytes → the Go value.
func TestWorkItemGoldenDecode(t *testing.T) {
	for _, g := range goldenWorkItems {
		t.Run(g.name, func(t *testing.T) { checkDecode(t, g.json, g.item) })
	}
}

// TestWorkItemGoldenCoversEveryVariant makes sure no variant lacks a golden.
func TestWorkItemGoldenCoversEveryVariant(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range goldenWorkItems {
		seen[string(g.item.Type())] = true
	}
	for _, wt := range workItemTypes {
		if !seen[wt] {
			t.Errorf("no golden for %s", wt)
		}
	}
	checkEqual(t, 11, len(workItemTypes))
}

// workItemDecodeOnly are texts serde accepts that it would not write in
// this form.
var workItemDecodeOnly = []goldenWorkItem{
	{
		name:   "ContinueAsNew with a null parent link",
		source: "duroxide 0.1.30: the parent-link fields are Options with serde(default); null reads as None",
		json:   `{"ContinueAsNew":{"instance":"c","orchestration":"Child","input":"i","version":"1.0.0","parent_instance":null,"parent_id":null,"parent_execution_id":null,"carry_forward_events":[]}}`,
		item:   WorkItem{Kind: ContinueAsNewItem{Instance: "c", Orchestration: "Child", Input: "i", Version: StringPtr("1.0.0")}},
	},
	{
		name: "ContinueAsNew without carry_forward_events (serde default)",
		json: `{"ContinueAsNew":{"instance":"c","orchestration":"o","input":"i","version":null}}`,
		item: WorkItem{Kind: ContinueAsNewItem{Instance: "c", Orchestration: "o", Input: "i"}},
	},
	{
		name: "StartOrchestration without its Option fields",
		json: `{"StartOrchestration":{"execution_id":1,"input":"","orchestration":"o","instance":"i"}}`,
		item: WorkItem{Kind: StartOrchestrationItem{Instance: "i", Orchestration: "o", ExecutionID: 1}},
	},
	{
		name: "whitespace and null optional skipped fields",
		json: " {\n\t\"ActivityExecute\" : { \"instance\":\"i\", \"execution_id\":1, \"id\":2, \"name\":\"n\", \"input\":\"\", \"session_id\":null, \"tag\":null } } \r\n",
		item: WorkItem{Kind: ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "n"}},
	},
	{
		name: "array form of a struct variant",
		json: `{"CancelInstance":["i","r"]}`,
		item: WorkItem{Kind: CancelInstanceItem{Instance: "i", Reason: "r"}},
	},
	{
		name: "array form leaving out trailing serde(default) fields",
		json: `{"ActivityExecute":["i",1,2,"n","in"]}`,
		item: WorkItem{Kind: ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "n", Input: "in"}},
	},
	{
		name: "lone surrogate in an ignored field (serde_json skips it unread)",
		json: `{"QueueMessage":{"instance":"i","name":"n","data":"d","extra":"\udc00","more":{"\ud800":1}}}`,
		item: WorkItem{Kind: QueueMessageItem{Instance: "i", Name: "n", Data: "d"}},
	},
}

// TestWorkItemDecodeAccepted checks the texts serde accepts but does not
// write.
func TestWorkItemDecodeAccepted(t *testing.T) {
	for _, g := range workItemDecodeOnly {
		t.Run(g.name, func(t *testing.T) { checkDecode(t, g.json, g.item) })
	}
}
