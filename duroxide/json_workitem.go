package duroxide

import "fmt"

// This file is the serde wire format of WorkItem (duroxide's
// providers/mod.rs: enum WorkItem, externally tagged, snake_case fields in
// declaration order):
//
//	{"ActivityCompleted":{"instance":"i","execution_id":1,"id":2,"result":"ok"}}

// workItemTypes lists the WorkItem variants in Rust declaration order (with
// the test-only replay-version-test feature off).
var workItemTypes = []string{
	string(WorkItemStartOrchestration), string(WorkItemActivityExecute), string(WorkItemActivityCompleted),
	string(WorkItemActivityFailed), string(WorkItemTimerFired), string(WorkItemExternalRaised),
	string(WorkItemSubOrchCompleted), string(WorkItemSubOrchFailed), string(WorkItemCancelInstance),
	string(WorkItemContinueAsNew), string(WorkItemQueueMessage),
}

// MarshalJSON encodes w as serde encodes duroxide's WorkItem: an externally
// tagged object {"Variant":{fields...}} with the fields in Rust declaration
// order; version, parent_instance and parent_id are null when nil,
// session_id, tag and initial_custom_status are left out when nil, and
// carry_forward_events is always written ([] when empty). The bytes are
// what serde_json writes. It fails when Kind is nil or not one of this
// package's *Item types (a pointer to one included), or holds ErrorDetails
// that cannot be encoded.
//
// encoding/json re-escapes '<', '>', '&', U+2028 and U+2029 in what a
// MarshalJSON method returns unless the Encoder has SetEscapeHTML(false);
// call MarshalJSON directly for serde_json's exact bytes.
func (w WorkItem) MarshalJSON() ([]byte, error) {
	return marshalValue("WorkItem", w, appendWorkItem)
}

// UnmarshalJSON decodes duroxide's serde form of WorkItem. As with serde:
// unknown fields are ignored; an object with other than one key, an unknown
// variant, a missing required field, a repeated field, a value of the wrong
// JSON type, null where Rust has no Option, a negative, fractional or
// overflowing integer, and malformed JSON (JSON null included) are errors.
// serde_json's array form of a variant's fields ({"CancelInstance":["i","r"]})
// is accepted too. On error w is unchanged.
func (w *WorkItem) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "WorkItem", decodeWorkItem, w)
}

// appendWorkItem appends w's serde JSON to b.
func appendWorkItem(b []byte, w WorkItem) ([]byte, error) {
	if err := checkKind(w.Kind); err != nil {
		return nil, err
	}
	o := beginObject(appendExternallyTagged(b, string(w.Kind.WorkItemType())))
	switch k := w.Kind.(type) {
	case StartOrchestrationItem:
		o.str("instance", k.Instance)
		o.str("orchestration", k.Orchestration)
		o.str("input", k.Input)
		o.strOrNull("version", k.Version)
		o.strOrNull("parent_instance", k.ParentInstance)
		o.u64OrNull("parent_id", k.ParentID)
		o.u64OmitNil("parent_execution_id", k.ParentExecutionID)
		o.u64("execution_id", k.ExecutionID)
		o.strOmitNil("trace_context", k.TraceContext)
	case ActivityExecuteItem:
		o.str("instance", k.Instance)
		o.u64("execution_id", k.ExecutionID)
		o.u64("id", k.ID)
		o.str("name", k.Name)
		o.str("input", k.Input)
		o.strOmitNil("session_id", k.SessionID)
		o.strOmitNil("tag", k.Tag)
		o.strOmitNil("trace_context", k.TraceContext)
	case ActivityCompletedItem:
		o.str("instance", k.Instance)
		o.u64("execution_id", k.ExecutionID)
		o.u64("id", k.ID)
		o.str("result", k.Result)
	case ActivityFailedItem:
		o.str("instance", k.Instance)
		o.u64("execution_id", k.ExecutionID)
		o.u64("id", k.ID)
		if err := o.errorDetails("details", k.Details); err != nil {
			return nil, err
		}
	case TimerFiredItem:
		o.str("instance", k.Instance)
		o.u64("execution_id", k.ExecutionID)
		o.u64("id", k.ID)
		o.u64("fire_at_ms", k.FireAtMs)
	case ExternalRaisedItem:
		o.str("instance", k.Instance)
		o.str("name", k.Name)
		o.str("data", k.Data)
	case SubOrchCompletedItem:
		o.str("parent_instance", k.ParentInstance)
		o.u64("parent_execution_id", k.ParentExecutionID)
		o.u64("parent_id", k.ParentID)
		o.str("result", k.Result)
	case SubOrchFailedItem:
		o.str("parent_instance", k.ParentInstance)
		o.u64("parent_execution_id", k.ParentExecutionID)
		o.u64("parent_id", k.ParentID)
		if err := o.errorDetails("details", k.Details); err != nil {
			return nil, err
		}
	case CancelInstanceItem:
		o.str("instance", k.Instance)
		o.str("reason", k.Reason)
	case ContinueAsNewItem:
		o.str("instance", k.Instance)
		o.str("orchestration", k.Orchestration)
		o.str("input", k.Input)
		o.strOrNull("version", k.Version)
		o.strOmitNil("parent_instance", k.ParentInstance)
		o.u64OmitNil("parent_id", k.ParentID)
		o.u64OmitNil("parent_execution_id", k.ParentExecutionID)
		o.nameDataList("carry_forward_events", k.CarryForwardEvents)
		o.strOmitNil("initial_custom_status", k.InitialCustomStatus)
		o.strOmitNil("trace_context", k.TraceContext)
	case QueueMessageItem:
		o.str("instance", k.Instance)
		o.str("name", k.Name)
		o.str("data", k.Data)
	default:
		return nil, fmt.Errorf("unsupported work item kind type %T", w.Kind)
	}
	return append(o.end(), '}'), nil
}

// decodeWorkItem reads a WorkItem.
func decodeWorkItem(v *jsonValue) (WorkItem, error) {
	tag, payload, err := enumVariant("WorkItem", v)
	if err != nil {
		return WorkItem{}, err
	}
	var f *structFields
	fields := func(names ...string) *structFields {
		f = structVariant("WorkItem::"+tag, payload, names...)
		return f
	}
	var k WorkItemKind
	switch WorkItemType(tag) {
	case WorkItemStartOrchestration:
		fields("instance", "orchestration", "input", "version", "parent_instance", "parent_id", "parent_execution_id", "execution_id", "trace_context")
		k = StartOrchestrationItem{
			Instance:          f.str("instance"),
			Orchestration:     f.str("orchestration"),
			Input:             f.str("input"),
			Version:           f.optStr("version", false),
			ParentInstance:    f.optStr("parent_instance", false),
			ParentID:          f.optU64("parent_id", false),
			ParentExecutionID: f.optU64("parent_execution_id", true),
			ExecutionID:       f.u64("execution_id"),
			TraceContext:      f.optStr("trace_context", true),
		}
	case WorkItemActivityExecute:
		fields("instance", "execution_id", "id", "name", "input", "session_id", "tag", "trace_context")
		k = ActivityExecuteItem{
			Instance:     f.str("instance"),
			ExecutionID:  f.u64("execution_id"),
			ID:           f.u64("id"),
			Name:         f.str("name"),
			Input:        f.str("input"),
			SessionID:    f.optStr("session_id", true),
			Tag:          f.optStr("tag", true),
			TraceContext: f.optStr("trace_context", true),
		}
	case WorkItemActivityCompleted:
		fields("instance", "execution_id", "id", "result")
		k = ActivityCompletedItem{Instance: f.str("instance"), ExecutionID: f.u64("execution_id"), ID: f.u64("id"), Result: f.str("result")}
	case WorkItemActivityFailed:
		fields("instance", "execution_id", "id", "details")
		k = ActivityFailedItem{Instance: f.str("instance"), ExecutionID: f.u64("execution_id"), ID: f.u64("id"), Details: f.errorDetails("details")}
	case WorkItemTimerFired:
		fields("instance", "execution_id", "id", "fire_at_ms")
		k = TimerFiredItem{Instance: f.str("instance"), ExecutionID: f.u64("execution_id"), ID: f.u64("id"), FireAtMs: f.u64("fire_at_ms")}
	case WorkItemExternalRaised:
		fields("instance", "name", "data")
		k = ExternalRaisedItem{Instance: f.str("instance"), Name: f.str("name"), Data: f.str("data")}
	case WorkItemSubOrchCompleted:
		fields("parent_instance", "parent_execution_id", "parent_id", "result")
		k = SubOrchCompletedItem{
			ParentInstance:    f.str("parent_instance"),
			ParentExecutionID: f.u64("parent_execution_id"),
			ParentID:          f.u64("parent_id"),
			Result:            f.str("result"),
		}
	case WorkItemSubOrchFailed:
		fields("parent_instance", "parent_execution_id", "parent_id", "details")
		k = SubOrchFailedItem{
			ParentInstance:    f.str("parent_instance"),
			ParentExecutionID: f.u64("parent_execution_id"),
			ParentID:          f.u64("parent_id"),
			Details:           f.errorDetails("details"),
		}
	case WorkItemCancelInstance:
		fields("instance", "reason")
		k = CancelInstanceItem{Instance: f.str("instance"), Reason: f.str("reason")}
	case WorkItemContinueAsNew:
		fields("instance", "orchestration", "input", "version", "parent_instance", "parent_id", "parent_execution_id",
			"carry_forward_events", "initial_custom_status", "trace_context")
		k = ContinueAsNewItem{
			Instance:            f.str("instance"),
			Orchestration:       f.str("orchestration"),
			Input:               f.str("input"),
			Version:             f.optStr("version", false),
			ParentInstance:      f.optStr("parent_instance", true),
			ParentID:            f.optU64("parent_id", true),
			ParentExecutionID:   f.optU64("parent_execution_id", true),
			CarryForwardEvents:  f.nameDataListDefault("carry_forward_events"),
			InitialCustomStatus: f.optStr("initial_custom_status", true),
			TraceContext:        f.optStr("trace_context", true),
		}
	case WorkItemQueueMessage:
		fields("instance", "name", "data")
		k = QueueMessageItem{Instance: f.str("instance"), Name: f.str("name"), Data: f.str("data")}
	default:
		return WorkItem{}, unknownVariant("WorkItem", tag, workItemTypes...)
	}
	if f.err != nil {
		return WorkItem{}, f.err
	}
	return WorkItem{Kind: k}, nil
}
