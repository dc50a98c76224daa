package duroxide

import (
	"encoding/json"
	"strings"
	"testing"
)

// The golden texts below are what serde_json::to_string writes for
// duroxide 0.1.26's Event (src/lib.rs: struct Event with
// #[serde(flatten)] kind, EventKind with #[serde(tag = "type")]), derived by
// hand from those attributes: the common fields in declaration order,
// then "type", then the variant's fields in declaration order; Option
// fields without skip_serializing_if are written as null; no whitespace.
// Where a duroxide source holds a literal of the same shape, the entry
// says so in source.

// goldenEvent is one Event and its exact serde_json text.
type goldenEvent struct {
	name   string
	source string
	json   string
	event  Event
}

// ev builds an event of instance "order-123", execution 1, written at
// 1700000000000 by duroxide 0.1.26.
func ev(eventID uint64, source *uint64, kind EventKind) Event {
	return Event{
		EventID:         eventID,
		SourceEventID:   source,
		InstanceID:      "order-123",
		ExecutionID:     1,
		TimestampMs:     1700000000000,
		DuroxideVersion: "0.1.26",
		Kind:            kind,
	}
}

// common is the JSON of ev's common fields for eventID and source ("null"
// for none), up to and including the comma before "type".
func common(eventID, source string) string {
	return `{"event_id":` + eventID + `,"source_event_id":` + source +
		`,"instance_id":"order-123","execution_id":1,"timestamp_ms":1700000000000,"duroxide_version":"0.1.26",`
}

// goldenEvents covers every EventKind, and the optional-field shapes of
// those that have them.
var goldenEvents = []goldenEvent{
	{
		name:   "OrchestrationStarted/root",
		source: "docs/proposals-impl/event-schema-redesign.md, \"New format (OrchestrationStarted example)\", compacted",
		json:   `{"event_id":1,"source_event_id":null,"instance_id":"order-123","execution_id":1,"timestamp_ms":1700000000000,"duroxide_version":"0.1.0","type":"OrchestrationStarted","name":"ProcessOrder","version":"1.0.0","input":"{...}","parent_instance":null,"parent_id":null}`,
		event: Event{
			EventID: 1, InstanceID: "order-123", ExecutionID: 1, TimestampMs: 1700000000000, DuroxideVersion: "0.1.0",
			Kind: OrchestrationStarted{Name: "ProcessOrder", Version: "1.0.0", Input: "{...}"},
		},
	},
	{
		name:   "OrchestrationStarted/child-after-continue-as-new",
		source: "lib.rs attributes; kind fields as in microsoft/duroxide tests/parent_execution_id_serde_tests.rs",
		json: common("1", "null") + `"type":"OrchestrationStarted","name":"Child","version":"1.0.0","input":"child-input",` +
			`"parent_instance":"parent-1","parent_id":2,"carry_forward_events":[["Evt","payload"],["Evt","second"]],"initial_custom_status":"warm"}`,
		event: ev(1, nil, OrchestrationStarted{
			Name: "Child", Version: "1.0.0", Input: "child-input",
			ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2),
			CarryForwardEvents:  []NameData{{Name: "Evt", Data: "payload"}, {Name: "Evt", Data: "second"}},
			InitialCustomStatus: StringPtr("warm"),
		}),
	},
	{
		name:   "OrchestrationStarted/child-with-parent-execution",
		source: "duroxide 0.1.30: parent_execution_id after parent_id, skipped when None (tests/parent_execution_id_serde_tests.rs)",
		json: common("1", "null") + `"type":"OrchestrationStarted","name":"Child","version":"1.0.0","input":"child-input",` +
			`"parent_instance":"parent-1","parent_id":2,"parent_execution_id":3,"carry_forward_events":[["q","carried"]]}`,
		event: ev(1, nil, OrchestrationStarted{
			Name: "Child", Version: "1.0.0", Input: "child-input",
			ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: Uint64Ptr(3),
			CarryForwardEvents: []NameData{{Name: "q", Data: "carried"}},
		}),
	},
	{
		name:   "OrchestrationStarted/empty-carry-forward",
		source: "lib.rs attributes: Some(vec![]) is not skipped",
		json:   common("1", "null") + `"type":"OrchestrationStarted","name":"N","version":"2.0.0","input":"","parent_instance":null,"parent_id":null,"carry_forward_events":[]}`,
		event:  ev(1, nil, OrchestrationStarted{Name: "N", Version: "2.0.0", CarryForwardEvents: []NameData{}}),
	},
	{
		name:  "OrchestrationCompleted",
		json:  common("4", "null") + `"type":"OrchestrationCompleted","output":"\"done\""}`,
		event: ev(4, nil, OrchestrationCompleted{Output: `"done"`}),
	},
	{
		name: "OrchestrationFailed/application",
		json: common("4", "null") + `"type":"OrchestrationFailed","details":{"Application":{"kind":"OrchestrationFailed","message":"boom","retryable":false}}}`,
		event: ev(4, nil, OrchestrationFailed{Details: ErrorDetails{Application: &ApplicationDetails{
			Kind: AppErrorKind{Name: AppErrorOrchestrationFailed}, Message: "boom",
		}}}),
	},
	{
		name:  "OrchestrationFailed/cancelled",
		json:  common("5", "null") + `"type":"OrchestrationFailed","details":{"Application":{"kind":{"Cancelled":{"reason":"user request"}},"message":"","retryable":false}}}`,
		event: ev(5, nil, OrchestrationFailed{Details: CancelledError("user request")}),
	},
	{
		name:   "ActivityScheduled/untagged",
		source: `tests/tag_serde_tests.rs: {"type":"ActivityScheduled","name":"Build","input":"{}"} (kind part)`,
		json:   common("2", "null") + `"type":"ActivityScheduled","name":"Build","input":"{}"}`,
		event:  ev(2, nil, ActivityScheduled{Name: "Build", Input: "{}"}),
	},
	{
		name:  "ActivityScheduled/session-and-tag",
		json:  common("2", "null") + `"type":"ActivityScheduled","name":"Build","input":"{}","session_id":"s-1","tag":"gpu"}`,
		event: ev(2, nil, ActivityScheduled{Name: "Build", Input: "{}", SessionID: StringPtr("s-1"), Tag: StringPtr("gpu")}),
	},
	{
		name:   "ActivityCompleted",
		source: "docs/proposals-impl/event-schema-redesign.md, \"New format (ActivityCompleted example)\", compacted",
		json:   `{"event_id":2,"source_event_id":1,"instance_id":"order-123","execution_id":1,"timestamp_ms":1700000000000,"duroxide_version":"0.1.0","type":"ActivityCompleted","result":"\"success\""}`,
		event: Event{
			EventID: 2, SourceEventID: Uint64Ptr(1), InstanceID: "order-123", ExecutionID: 1, TimestampMs: 1700000000000, DuroxideVersion: "0.1.0",
			Kind: ActivityCompleted{Result: `"success"`},
		},
	},
	{
		name: "ActivityFailed/infrastructure",
		json: common("3", "2") + `"type":"ActivityFailed","details":{"Infrastructure":{"operation":"read","message":"timeout","retryable":true}}}`,
		event: ev(3, Uint64Ptr(2), ActivityFailed{Details: ErrorDetails{Infrastructure: &InfrastructureDetails{
			Operation: "read", Message: "timeout", Retryable: true,
		}}}),
	},
	{
		name:  "ActivityCancelRequested",
		json:  common("6", "2") + `"type":"ActivityCancelRequested","reason":"dropped_future"}`,
		event: ev(6, Uint64Ptr(2), ActivityCancelRequested{Reason: "dropped_future"}),
	},
	{
		name:  "TimerCreated",
		json:  common("2", "null") + `"type":"TimerCreated","fire_at_ms":1700000005000}`,
		event: ev(2, nil, TimerCreated{FireAtMs: 1700000005000}),
	},
	{
		name:  "TimerFired",
		json:  common("3", "2") + `"type":"TimerFired","fire_at_ms":1700000005000}`,
		event: ev(3, Uint64Ptr(2), TimerFired{FireAtMs: 1700000005000}),
	},
	{
		name:  "ExternalSubscribed",
		json:  common("2", "null") + `"type":"ExternalSubscribed","name":"approval"}`,
		event: ev(2, nil, ExternalSubscribed{Name: "approval"}),
	},
	{
		name:  "ExternalEvent",
		json:  common("3", "null") + `"type":"ExternalEvent","name":"approval","data":"{\"ok\":true}"}`,
		event: ev(3, nil, ExternalEvent{Name: "approval", Data: `{"ok":true}`}),
	},
	{
		name:  "OrchestrationChained",
		json:  common("2", "null") + `"type":"OrchestrationChained","name":"Audit","instance":"audit-1","input":"x"}`,
		event: ev(2, nil, OrchestrationChained{Name: "Audit", Instance: "audit-1", Input: "x"}),
	},
	{
		name:  "SubOrchestrationScheduled",
		json:  common("2", "null") + `"type":"SubOrchestrationScheduled","name":"Child","instance":"order-123::sub::2","input":"in"}`,
		event: ev(2, nil, SubOrchestrationScheduled{Name: "Child", Instance: "order-123::sub::2", Input: "in"}),
	},
	{
		name:  "SubOrchestrationCompleted",
		json:  common("3", "2") + `"type":"SubOrchestrationCompleted","result":"out"}`,
		event: ev(3, Uint64Ptr(2), SubOrchestrationCompleted{Result: "out"}),
	},
	{
		name: "SubOrchestrationFailed/configuration",
		json: common("3", "2") + `"type":"SubOrchestrationFailed","details":{"Configuration":{"kind":"Nondeterminism","resource":"Child","message":null}}}`,
		event: ev(3, Uint64Ptr(2), SubOrchestrationFailed{Details: ErrorDetails{Configuration: &ConfigurationDetails{
			Kind: ConfigErrorNondeterminism, Resource: "Child",
		}}}),
	},
	{
		name:  "SubOrchestrationCancelRequested",
		json:  common("4", "2") + `"type":"SubOrchestrationCancelRequested","reason":"parent canceled"}`,
		event: ev(4, Uint64Ptr(2), SubOrchestrationCancelRequested{Reason: "parent canceled"}),
	},
	{
		name:  "OrchestrationContinuedAsNew",
		json:  common("5", "null") + `"type":"OrchestrationContinuedAsNew","input":"next"}`,
		event: ev(5, nil, OrchestrationContinuedAsNew{Input: "next"}),
	},
	{
		name:  "OrchestrationCancelRequested",
		json:  common("2", "null") + `"type":"OrchestrationCancelRequested","reason":"user request"}`,
		event: ev(2, nil, OrchestrationCancelRequested{Reason: "user request"}),
	},
	{
		name:  "ExternalSubscribedCancelled",
		json:  common("4", "2") + `"type":"ExternalSubscribedCancelled","reason":"lost select"}`,
		event: ev(4, Uint64Ptr(2), ExternalSubscribedCancelled{Reason: "lost select"}),
	},
	{
		name:   "QueueSubscribed",
		source: `lib.rs: #[serde(rename = "ExternalSubscribedPersistent")] QueueSubscribed`,
		json:   common("2", "null") + `"type":"ExternalSubscribedPersistent","name":"inbox"}`,
		event:  ev(2, nil, QueueSubscribed{Name: "inbox"}),
	},
	{
		name:   "QueueEventDelivered",
		source: `lib.rs: #[serde(rename = "ExternalEventPersistent")] QueueEventDelivered`,
		json:   common("3", "null") + `"type":"ExternalEventPersistent","name":"inbox","data":"msg-1"}`,
		event:  ev(3, nil, QueueEventDelivered{Name: "inbox", Data: "msg-1"}),
	},
	{
		name:   "QueueSubscriptionCancelled",
		source: `lib.rs: #[serde(rename = "ExternalSubscribedPersistentCancelled")] QueueSubscriptionCancelled`,
		json:   common("4", "2") + `"type":"ExternalSubscribedPersistentCancelled","reason":"lost select"}`,
		event:  ev(4, Uint64Ptr(2), QueueSubscriptionCancelled{Reason: "lost select"}),
	},
	{
		name:  "CustomStatusUpdated/set",
		json:  common("2", "null") + `"type":"CustomStatusUpdated","status":"50%"}`,
		event: ev(2, nil, CustomStatusUpdated{Status: StringPtr("50%")}),
	},
	{
		name:  "CustomStatusUpdated/cleared",
		json:  common("3", "null") + `"type":"CustomStatusUpdated","status":null}`,
		event: ev(3, nil, CustomStatusUpdated{}),
	},
	{
		name:  "KeyValueSet",
		json:  common("2", "null") + `"type":"KeyValueSet","key":"my_key","value":"my_value","last_updated_at_ms":1700000000123}`,
		event: ev(2, nil, KeyValueSet{Key: "my_key", Value: "my_value", LastUpdatedAtMs: 1700000000123}),
	},
	{
		name:   "KeyValueCleared",
		source: `tests/tag_serde_tests.rs: {"type":"KeyValueCleared","key":"k"} (kind part)`,
		json:   common("3", "null") + `"type":"KeyValueCleared","key":"k"}`,
		event:  ev(3, nil, KeyValueCleared{Key: "k"}),
	},
	{
		name:   "KeyValuesCleared",
		source: `tests/tag_serde_tests.rs: {"type":"KeyValuesCleared"} (kind part)`,
		json:   common("4", "null") + `"type":"KeyValuesCleared"}`,
		event:  ev(4, nil, KeyValuesCleared{}),
	},
	{
		name:  "escaping",
		json:  common("2", "null") + `"type":"ActivityCompleted","result":"<a href=\"x\">&amp;</a>\\\n\t\r\b\f\u0000\u001f` + "\u007f\u2028é😀" + `"}`,
		event: ev(2, nil, ActivityCompleted{Result: "<a href=\"x\">&amp;</a>\\\n\t\r\b\f\x00\x1f\x7f\u2028é😀"}),
	},
}

// TestEventGoldenEncode checks Go value → exact serde_json bytes, through
// MarshalJSON and through an encoding/json Encoder without HTML escaping.
func TestEventGoldenEncode(t *testing.T) {
	for _, g := range goldenEvents {
		t.Run(g.name, func(t *testing.T) { checkEncode(t, g.event, g.json) })
	}
}

// TestEventGoldenDecode checks serde_json bytes → the Go value, through
// json.Unmarshal.
func TestEventGoldenDecode(t *testing.T) {
	for _, g := range goldenEvents {
		t.Run(g.name, func(t *testing.T) { checkDecode(t, g.json, g.event) })
	}
}

// TestEventGoldenCoversEveryKind makes sure no EventKind lacks a golden.
func TestEventGoldenCoversEveryKind(t *testing.T) {
	seen := map[EventType]bool{}
	for _, g := range goldenEvents {
		seen[g.event.Type()] = true
	}
	for _, et := range eventTypes {
		if !seen[et] {
			t.Errorf("no golden for %s", et)
		}
	}
	checkEqual(t, 26, len(eventTypes))
}

// TestJSONMarshalEscapesHTML records encoding/json's behaviour that callers
// must know: json.Marshal re-escapes '<', '>' and '&' in MarshalJSON output.
// The text still means the same to serde_json, and decodes back here.
func TestJSONMarshalEscapesHTML(t *testing.T) {
	e := ev(2, nil, ActivityCompleted{Result: "<&>"})
	b, err := json.Marshal(e)
	mustNoError(t, err)
	if !strings.Contains(string(b), `"result":"\u003c\u0026\u003e"`) {
		t.Errorf("json.Marshal did not escape: %s", b)
	}
	var back Event
	mustNoError(t, json.Unmarshal(b, &back))
	checkEqual(t, e, back)
}

// eventDecodeOnly are texts serde accepts that it would not write in this
// form: other field orders, whitespace, absent optional fields, unknown
// fields, and a variant index as the tag. Each must decode to event.
var eventDecodeOnly = []goldenEvent{
	{
		name:   "pretty-printed",
		source: "docs/proposals-impl/event-schema-redesign.md, \"New format (ActivityCompleted example)\", verbatim",
		json: `{
  "event_id": 2,
  "source_event_id": 1,
  "instance_id": "order-123",
  "execution_id": 1,
  "timestamp_ms": 1700000000000,
  "duroxide_version": "0.1.0",
  "type": "ActivityCompleted",
  "result": "\"success\""
}`,
		event: Event{
			EventID: 2, SourceEventID: Uint64Ptr(1), InstanceID: "order-123", ExecutionID: 1, TimestampMs: 1700000000000, DuroxideVersion: "0.1.0",
			Kind: ActivityCompleted{Result: `"success"`},
		},
	},
	{
		name:   "KeyValueSet without last_updated_at_ms",
		source: `tests/tag_serde_tests.rs kv_event_kinds_backward_compat: {"type":"KeyValueSet","key":"k","value":"v"}`,
		json:   common("2", "null") + `"type":"KeyValueSet","key":"k","value":"v"}`,
		event:  ev(2, nil, KeyValueSet{Key: "k", Value: "v"}),
	},
	{
		name:   "OrchestrationStarted with parent_execution_id before parent_id",
		source: "microsoft/duroxide tests/parent_execution_id_serde_tests.rs: serde reads fields in any order",
		json:   common("1", "null") + `"type":"OrchestrationStarted","name":"Child","version":"1.0.0","input":"child-input","parent_execution_id":3,"parent_instance":"parent-1","parent_id":2}`,
		event:  ev(1, nil, OrchestrationStarted{Name: "Child", Version: "1.0.0", Input: "child-input", ParentInstance: StringPtr("parent-1"), ParentID: Uint64Ptr(2), ParentExecutionID: Uint64Ptr(3)}),
	},
	{
		name:  "source_event_id absent, type first, fields shuffled",
		json:  `{"type":"ExternalEvent","data":"d","timestamp_ms":1700000000000,"name":"n","duroxide_version":"0.1.26","execution_id":1,"instance_id":"order-123","event_id":3}`,
		event: ev(3, nil, ExternalEvent{Name: "n", Data: "d"}),
	},
	{
		name:  "carry_forward_events and initial_custom_status null",
		json:  common("1", "null") + `"type":"OrchestrationStarted","name":"N","version":"1.0.0","input":"","parent_instance":null,"parent_id":null,"carry_forward_events":null,"initial_custom_status":null}`,
		event: ev(1, nil, OrchestrationStarted{Name: "N", Version: "1.0.0"}),
	},
	{
		name:  "CustomStatusUpdated without status (a missing Option is None)",
		json:  common("3", "null") + `"type":"CustomStatusUpdated"}`,
		event: ev(3, nil, CustomStatusUpdated{}),
	},
	{
		name:  "KeyValuesCleared with extra members",
		json:  common("4", "null") + `"type":"KeyValuesCleared","key":"ignored","n":[1,{"x":null}]}`,
		event: ev(4, nil, KeyValuesCleared{}),
	},
	{
		name:  "variant index as tag (serde's variant identifier accepts it)",
		json:  common("2", "1") + `"type":4,"result":"r"}`,
		event: ev(2, Uint64Ptr(1), ActivityCompleted{Result: "r"}),
	},
	{
		name:  "escapes serde_json does not write",
		json:  common("2", "null") + `"type":"ActivityCompleted","result":"\/\u0041\u00e9\ud83d\ude00\u003c"}`,
		event: ev(2, nil, ActivityCompleted{Result: "/Aé😀<"}),
	},
	{
		name:  "unit variant as single-key map",
		json:  common("3", "null") + `"type":"OrchestrationFailed","details":{"Configuration":{"kind":{"Nondeterminism":null},"resource":"r","message":"m"}}}`,
		event: ev(3, nil, OrchestrationFailed{Details: NondeterminismError("r", "m")}),
	},
	{
		name:  "unit AppErrorKind as empty map (serde's flattened content accepts {} as unit)",
		json:  common("3", "null") + `"type":"ActivityFailed","details":{"Application":{"kind":{"Panicked":{}},"message":"m","retryable":false}}}`,
		event: ev(3, nil, ActivityFailed{Details: ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorPanicked}, Message: "m"}}}),
	},
	{
		name:  "unit ConfigErrorKind as empty map",
		json:  common("3", "null") + `"type":"OrchestrationFailed","details":{"Configuration":{"kind":{"Nondeterminism":{}},"resource":"r","message":"m"}}}`,
		event: ev(3, nil, OrchestrationFailed{Details: NondeterminismError("r", "m")}),
	},
	{
		name:  "struct variant in array form",
		json:  common("3", "null") + `"type":"OrchestrationFailed","details":{"Application":[{"Cancelled":["why"]},"m",true]}}`,
		event: ev(3, nil, OrchestrationFailed{Details: ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorCancelled, Reason: "why"}, Message: "m", Retryable: true}}}),
	},
}

// TestEventDecodeAccepted checks the texts serde accepts but does not write.
func TestEventDecodeAccepted(t *testing.T) {
	for _, g := range eventDecodeOnly {
		t.Run(g.name, func(t *testing.T) { checkDecode(t, g.json, g.event) })
	}
}
