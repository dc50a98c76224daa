package duroxide

import (
	"encoding/json"
	"strings"
	"testing"
)

// The tests of duroxide main's tests/parent_execution_id_serde_tests.rs and
// tests/continue_as_new_parent_link_serde_tests.rs, one Go test each under
// the Rust name: the parent links duroxide 0.1.30 added are omitted when
// nil (so a root's JSON is the previous release's, byte for byte), read as
// nil when missing, round-trip when set, and are ignored by a node of the
// previous release. That node is mirrored, as upstream mirrors it with
// serde structs, by encoding/json structs of the 0.1.26 shapes, which
// ignore unknown members as serde does. The goldens
// (json_workitem_golden_test.go, json_event_golden_test.go) pin the exact
// bytes of the same shapes.

// preUpgradeStartOrchestration is a 0.1.26 node's WorkItem::StartOrchestration.
type preUpgradeStartOrchestration struct {
	StartOrchestration *struct {
		Instance       string  `json:"instance"`
		Orchestration  string  `json:"orchestration"`
		Input          string  `json:"input"`
		Version        *string `json:"version"`
		ParentInstance *string `json:"parent_instance"`
		ParentID       *uint64 `json:"parent_id"`
		ExecutionID    uint64  `json:"execution_id"`
	}
}

// preUpgradeOrchestrationStarted is a 0.1.26 node's
// EventKind::OrchestrationStarted.
type preUpgradeOrchestrationStarted struct {
	Type           string  `json:"type"`
	Name           string  `json:"name"`
	Version        string  `json:"version"`
	Input          string  `json:"input"`
	ParentInstance *string `json:"parent_instance"`
	ParentID       *uint64 `json:"parent_id"`
}

// preUpgradeContinueAsNewBody is a 0.1.26 node's WorkItem::ContinueAsNew
// fields, in serde's order.
type preUpgradeContinueAsNewBody struct {
	Instance            string      `json:"instance"`
	Orchestration       string      `json:"orchestration"`
	Input               string      `json:"input"`
	Version             *string     `json:"version"`
	CarryForwardEvents  [][2]string `json:"carry_forward_events"`
	InitialCustomStatus *string     `json:"initial_custom_status,omitempty"`
}

// preUpgradeContinueAsNew is a 0.1.26 node's WorkItem::ContinueAsNew.
type preUpgradeContinueAsNew struct {
	ContinueAsNew *preUpgradeContinueAsNewBody
}

func childStarted(parentExecutionID *uint64) OrchestrationStarted {
	return OrchestrationStarted{
		Name: "Child", Version: "1.0.0", Input: "child-input",
		ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: parentExecutionID,
	}
}

func childStartItem(parentExecutionID *uint64) WorkItem {
	return WorkItem{Kind: StartOrchestrationItem{
		Instance: "parent-1::sub::2", Orchestration: "Child", Input: "child-input", Version: StringPtr("1.0.0"),
		ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: parentExecutionID,
		ExecutionID: InitialExecutionID,
	}}
}

func childContinueAsNew(parentInstance *string, parentID, parentExecutionID *uint64) WorkItem {
	return WorkItem{Kind: ContinueAsNewItem{
		Instance: "parent-1::sub::2", Orchestration: "Child", Input: "next-input", Version: StringPtr("1.0.0"),
		ParentInstance: parentInstance, ParentID: parentID, ParentExecutionID: parentExecutionID,
		CarryForwardEvents: []NameData{{Name: "Evt", Data: "payload"}},
	}}
}

// startedEvent is event 1 of execution 1 of "parent-1::sub::2" with kind k.
func startedEvent(k OrchestrationStarted) Event {
	return NewEvent(1, "parent-1::sub::2", 1, nil, k)
}

func marshalString(t *testing.T, v json.Marshaler) string {
	t.Helper()
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOrchestrationStartedWithParentExecutionIDRoundtrips is
// orchestration_started_with_parent_execution_id_roundtrips.
func TestOrchestrationStartedWithParentExecutionIDRoundtrips(t *testing.T) {
	t.Parallel()
	var back Event
	if err := json.Unmarshal([]byte(marshalString(t, startedEvent(childStarted(Uint64Ptr(3))))), &back); err != nil {
		t.Fatal(err)
	}
	s, ok := back.Kind.(OrchestrationStarted)
	if !ok || s.ParentExecutionID == nil || *s.ParentExecutionID != 3 {
		t.Fatalf("decoded %+v, want parent_execution_id 3", back.Kind)
	}
}

// TestOrchestrationStartedNoneParentExecutionIDOmittedInJSON is
// orchestration_started_none_parent_execution_id_omitted_in_json.
func TestOrchestrationStartedNoneParentExecutionIDOmittedInJSON(t *testing.T) {
	t.Parallel()
	if s := marshalString(t, startedEvent(childStarted(nil))); strings.Contains(s, "parent_execution_id") {
		t.Fatalf("a nil parent_execution_id must be omitted: %s", s)
	}
}

// TestOrchestrationStartedMissingParentExecutionIDDeserializesAsNone is
// orchestration_started_missing_parent_execution_id_deserializes_as_none
// (on the Event envelope, which is what the Go API decodes).
func TestOrchestrationStartedMissingParentExecutionIDDeserializesAsNone(t *testing.T) {
	t.Parallel()
	const in = `{"event_id":1,"source_event_id":null,"instance_id":"parent-1::sub::2","execution_id":1,"timestamp_ms":0,"duroxide_version":"0.1.26",` +
		`"type":"OrchestrationStarted","name":"Child","version":"1.0.0","input":"child-input","parent_instance":"parent-1","parent_id":2}`
	var ev Event
	if err := json.Unmarshal([]byte(in), &ev); err != nil {
		t.Fatal(err)
	}
	s, ok := ev.Kind.(OrchestrationStarted)
	if !ok || s.ParentExecutionID != nil || s.ParentInstance == nil || *s.ParentInstance != "parent-1" || s.ParentID == nil || *s.ParentID != 2 {
		t.Fatalf("decoded %+v, want no parent_execution_id and the rest of the link", ev.Kind)
	}
}

// TestOrchestrationStartedWithParentExecutionIDDecodesOnPreUpgradeNode is
// orchestration_started_with_parent_execution_id_decodes_on_pre_upgrade_node.
func TestOrchestrationStartedWithParentExecutionIDDecodesOnPreUpgradeNode(t *testing.T) {
	t.Parallel()
	s := marshalString(t, startedEvent(childStarted(Uint64Ptr(3))))
	if !strings.Contains(s, "parent_execution_id") {
		t.Fatalf("precondition: the field is written: %s", s)
	}
	var old preUpgradeOrchestrationStarted
	if err := json.Unmarshal([]byte(s), &old); err != nil {
		t.Fatalf("a 0.1.26 node must tolerate the added field: %v", err)
	}
	if old.Type != "OrchestrationStarted" || old.ParentInstance == nil || *old.ParentInstance != "parent-1" || old.ParentID == nil || *old.ParentID != 2 {
		t.Fatalf("a 0.1.26 node read %+v", old)
	}
}

// TestFullEventEnvelopeRoundtripsParentExecutionID is
// full_event_envelope_roundtrips_parent_execution_id.
func TestFullEventEnvelopeRoundtripsParentExecutionID(t *testing.T) {
	t.Parallel()
	ev := startedEvent(childStarted(Uint64Ptr(4)))
	var back Event
	if err := json.Unmarshal([]byte(marshalString(t, ev)), &back); err != nil {
		t.Fatal(err)
	}
	if marshalString(t, back) != marshalString(t, ev) {
		t.Fatalf("round trip changed the event: %+v, want %+v", back, ev)
	}
	if s, ok := back.Kind.(OrchestrationStarted); !ok || s.ParentExecutionID == nil || *s.ParentExecutionID != 4 {
		t.Fatalf("decoded %+v, want parent_execution_id 4", back.Kind)
	}
}

// TestWorkItemStartOrchestrationWithParentExecutionIDRoundtrips is
// work_item_start_orchestration_with_parent_execution_id_roundtrips.
func TestWorkItemStartOrchestrationWithParentExecutionIDRoundtrips(t *testing.T) {
	t.Parallel()
	item := childStartItem(Uint64Ptr(3))
	var back WorkItem
	if err := json.Unmarshal([]byte(marshalString(t, item)), &back); err != nil {
		t.Fatal(err)
	}
	s, ok := back.Kind.(StartOrchestrationItem)
	if !ok || s.ParentExecutionID == nil || *s.ParentExecutionID != 3 || marshalString(t, back) != marshalString(t, item) {
		t.Fatalf("round trip: %+v, want %+v", back.Kind, item.Kind)
	}
}

// TestWorkItemStartOrchestrationNoneParentExecutionIDOmittedInJSON is
// work_item_start_orchestration_none_parent_execution_id_omitted_in_json.
func TestWorkItemStartOrchestrationNoneParentExecutionIDOmittedInJSON(t *testing.T) {
	t.Parallel()
	if s := marshalString(t, childStartItem(nil)); strings.Contains(s, "parent_execution_id") {
		t.Fatalf("a nil parent_execution_id must be omitted: %s", s)
	}
}

// TestWorkItemStartOrchestrationMissingParentExecutionIDDeserializesAsNone is
// work_item_start_orchestration_missing_parent_execution_id_deserializes_as_none.
func TestWorkItemStartOrchestrationMissingParentExecutionIDDeserializesAsNone(t *testing.T) {
	t.Parallel()
	const in = `{"StartOrchestration":{"instance":"parent-1::sub::2","orchestration":"Child","input":"child-input","version":"1.0.0","parent_instance":"parent-1","parent_id":2,"execution_id":1}}`
	var item WorkItem
	if err := json.Unmarshal([]byte(in), &item); err != nil {
		t.Fatal(err)
	}
	s, ok := item.Kind.(StartOrchestrationItem)
	if !ok || s.ParentExecutionID != nil || s.ParentInstance == nil || *s.ParentInstance != "parent-1" || s.ParentID == nil || *s.ParentID != 2 {
		t.Fatalf("decoded %+v, want no parent_execution_id and the rest of the link", item.Kind)
	}
}

// TestWorkItemStartOrchestrationWithParentExecutionIDDecodesOnPreUpgradeNode is
// work_item_start_orchestration_with_parent_execution_id_decodes_on_pre_upgrade_node.
func TestWorkItemStartOrchestrationWithParentExecutionIDDecodesOnPreUpgradeNode(t *testing.T) {
	t.Parallel()
	s := marshalString(t, childStartItem(Uint64Ptr(3)))
	if !strings.Contains(s, "parent_execution_id") {
		t.Fatalf("precondition: the field is written: %s", s)
	}
	var old preUpgradeStartOrchestration
	if err := json.Unmarshal([]byte(s), &old); err != nil {
		t.Fatalf("a 0.1.26 node must tolerate the added field: %v", err)
	}
	if o := old.StartOrchestration; o == nil || o.ParentInstance == nil || *o.ParentInstance != "parent-1" || o.ParentID == nil || *o.ParentID != 2 {
		t.Fatalf("a 0.1.26 node read %+v", old.StartOrchestration)
	}
}

// TestContinueAsNewWithParentLinkRoundtrips is
// continue_as_new_with_parent_link_roundtrips.
func TestContinueAsNewWithParentLinkRoundtrips(t *testing.T) {
	t.Parallel()
	item := childContinueAsNew(StringPtr("parent-1"), Uint64Ptr(2), Uint64Ptr(3))
	var back WorkItem
	if err := json.Unmarshal([]byte(marshalString(t, item)), &back); err != nil {
		t.Fatal(err)
	}
	c, ok := back.Kind.(ContinueAsNewItem)
	if !ok || c.ParentInstance == nil || *c.ParentInstance != "parent-1" || c.ParentID == nil || *c.ParentID != 2 ||
		c.ParentExecutionID == nil || *c.ParentExecutionID != 3 || marshalString(t, back) != marshalString(t, item) {
		t.Fatalf("round trip: %+v, want %+v", back.Kind, item.Kind)
	}
}

// TestContinueAsNewNoneParentLinkOmittedInJSON is
// continue_as_new_none_parent_link_omitted_in_json.
func TestContinueAsNewNoneParentLinkOmittedInJSON(t *testing.T) {
	t.Parallel()
	s := marshalString(t, childContinueAsNew(nil, nil, nil))
	for _, key := range []string{"parent_instance", "parent_id", "parent_execution_id"} {
		if strings.Contains(s, key) {
			t.Errorf("%s: nil must be omitted: %s", key, s)
		}
	}
}

// TestContinueAsNewMissingParentLinkDeserializesAsNone is
// continue_as_new_missing_parent_link_deserializes_as_none.
func TestContinueAsNewMissingParentLinkDeserializesAsNone(t *testing.T) {
	t.Parallel()
	const in = `{"ContinueAsNew":{"instance":"parent-1::sub::2","orchestration":"Child","input":"next-input","version":"1.0.0","carry_forward_events":[["Evt","payload"]]}}`
	var item WorkItem
	if err := json.Unmarshal([]byte(in), &item); err != nil {
		t.Fatal(err)
	}
	c, ok := item.Kind.(ContinueAsNewItem)
	if !ok || c.ParentInstance != nil || c.ParentID != nil || c.ParentExecutionID != nil ||
		len(c.CarryForwardEvents) != 1 || c.CarryForwardEvents[0] != (NameData{Name: "Evt", Data: "payload"}) {
		t.Fatalf("decoded %+v, want no parent link and the carried event", item.Kind)
	}
}

// TestContinueAsNewWithParentLinkDecodesOnPreUpgradeNode is
// continue_as_new_with_parent_link_decodes_on_pre_upgrade_node.
func TestContinueAsNewWithParentLinkDecodesOnPreUpgradeNode(t *testing.T) {
	t.Parallel()
	s := marshalString(t, childContinueAsNew(StringPtr("parent-1"), Uint64Ptr(2), Uint64Ptr(3)))
	for _, key := range []string{"parent_instance", "parent_id", "parent_execution_id"} {
		if !strings.Contains(s, key) {
			t.Fatalf("precondition: %s is written: %s", key, s)
		}
	}
	var old preUpgradeContinueAsNew
	if err := json.Unmarshal([]byte(s), &old); err != nil {
		t.Fatalf("a 0.1.26 node must tolerate the added fields: %v", err)
	}
	if o := old.ContinueAsNew; o == nil || o.Instance != "parent-1::sub::2" || o.Orchestration != "Child" ||
		len(o.CarryForwardEvents) != 1 || o.CarryForwardEvents[0] != [2]string{"Evt", "payload"} {
		t.Fatalf("a 0.1.26 node read %+v", old.ContinueAsNew)
	}
}

// TestContinueAsNewWireFormatUnchangedWithoutParentLink is
// continue_as_new_wire_format_unchanged_without_parent_link: a root's
// ContinueAsNew is, byte for byte, what a 0.1.26 node writes.
func TestContinueAsNewWireFormatUnchangedWithoutParentLink(t *testing.T) {
	t.Parallel()
	oldJSON, err := json.Marshal(preUpgradeContinueAsNew{ContinueAsNew: &preUpgradeContinueAsNewBody{
		Instance: "parent-1::sub::2", Orchestration: "Child", Input: "next-input", Version: StringPtr("1.0.0"),
		CarryForwardEvents: [][2]string{{"Evt", "payload"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := marshalString(t, childContinueAsNew(nil, nil, nil)); got != string(oldJSON) {
		t.Fatalf("a root's ContinueAsNew changed on the wire:\n got %s\nwant %s", got, oldJSON)
	}
}
