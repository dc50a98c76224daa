package duroxide

import (
	"errors"
	"fmt"
	"slices"
)

// This file is the serde wire format of Event (duroxide's lib.rs: struct
// Event with #[serde(flatten)] kind: EventKind, and EventKind with
// #[serde(tag = "type")]). An event is one flat object: the common fields
// in declaration order, then "type" and the kind's fields in declaration
// order:
//
//	{"event_id":2,"source_event_id":1,"instance_id":"i","execution_id":1,
//	 "timestamp_ms":1700000000000,"duroxide_version":"0.1.26",
//	 "type":"ActivityCompleted","result":"ok"}

// eventCommonFields are the fields of Event itself, in declaration order.
var eventCommonFields = []string{"event_id", "source_event_id", "instance_id", "execution_id", "timestamp_ms", "duroxide_version"}

// eventTypes lists the EventKind variants in Rust declaration order (with
// the test-only replay-version-test feature off); serde accepts a variant's
// index in place of its name as the "type" tag.
var eventTypes = []EventType{
	EventTypeOrchestrationStarted, EventTypeOrchestrationCompleted, EventTypeOrchestrationFailed,
	EventTypeActivityScheduled, EventTypeActivityCompleted, EventTypeActivityFailed,
	EventTypeActivityCancelRequested, EventTypeTimerCreated, EventTypeTimerFired,
	EventTypeExternalSubscribed, EventTypeExternalEvent, EventTypeOrchestrationChained,
	EventTypeSubOrchestrationScheduled, EventTypeSubOrchestrationCompleted,
	EventTypeSubOrchestrationFailed, EventTypeSubOrchestrationCancelRequested,
	EventTypeOrchestrationContinuedAsNew, EventTypeOrchestrationCancelRequested,
	EventTypeExternalSubscribedCancelled, EventTypeQueueSubscribed, EventTypeQueueEventDelivered,
	EventTypeQueueSubscriptionCancelled, EventTypeCustomStatusUpdated, EventTypeKeyValueSet,
	EventTypeKeyValueCleared, EventTypeKeyValuesCleared,
}

// MarshalJSON encodes e as serde encodes duroxide's Event: one flat object
// with event_id, source_event_id (null when nil), instance_id,
// execution_id, timestamp_ms, duroxide_version, then "type" and the kind's
// fields, with no whitespace: byte for byte what serde_json writes. It
// fails when Kind is nil or not one of this package's kind types (a
// pointer to one included), or holds ErrorDetails that cannot be encoded.
//
// encoding/json re-escapes '<', '>', '&', U+2028 and U+2029 in what a
// MarshalJSON method returns unless the Encoder has SetEscapeHTML(false)
// (json.Marshal always escapes them); the result means the same to
// serde_json, but call MarshalJSON directly for serde_json's exact bytes.
func (e Event) MarshalJSON() ([]byte, error) {
	return marshalValue("Event", e, appendEvent)
}

// UnmarshalJSON decodes duroxide's serde form of Event. As with serde:
// unknown fields are ignored; a missing required field, a repeated field,
// an unknown "type", a value of the wrong JSON type, null where Rust has no
// Option, a negative, fractional or overflowing integer, and malformed JSON
// (JSON null included) are errors. On error e is unchanged.
func (e *Event) UnmarshalJSON(data []byte) error {
	// serde buffers a struct with #[serde(flatten)] whole before reading
	// it, which checks every string and number eagerly.
	return unmarshalValue(data, parseEager, "Event", decodeEvent, e)
}

// appendEvent appends e's serde JSON to b.
func appendEvent(b []byte, e Event) ([]byte, error) {
	if err := checkKind(e.Kind); err != nil {
		return nil, err
	}
	o := beginObject(b)
	o.u64("event_id", e.EventID)
	o.u64OrNull("source_event_id", e.SourceEventID)
	o.str("instance_id", e.InstanceID)
	o.u64("execution_id", e.ExecutionID)
	o.u64("timestamp_ms", e.TimestampMs)
	o.str("duroxide_version", e.DuroxideVersion)
	o.str("type", string(e.Kind.EventType()))
	if err := appendEventKindFields(o, e.Kind); err != nil {
		return nil, err
	}
	return o.end(), nil
}

// appendEventKindFields writes the kind's fields in Rust declaration order,
// with the serde attributes of each.
func appendEventKindFields(o *objectWriter, kind EventKind) error {
	switch k := kind.(type) {
	case OrchestrationStarted:
		o.str("name", k.Name)
		o.str("version", k.Version)
		o.str("input", k.Input)
		o.strOrNull("parent_instance", k.ParentInstance)
		o.u64OrNull("parent_id", k.ParentID)
		o.u64OmitNil("parent_execution_id", k.ParentExecutionID)
		if k.CarryForwardEvents != nil { // skip_serializing_if = "Option::is_none"
			o.nameDataList("carry_forward_events", k.CarryForwardEvents)
		}
		o.strOmitNil("initial_custom_status", k.InitialCustomStatus)
		o.strOmitNil("trace_context", k.TraceContext)
	case OrchestrationCompleted:
		o.str("output", k.Output)
	case OrchestrationFailed:
		return o.errorDetails("details", k.Details)
	case ActivityScheduled:
		o.str("name", k.Name)
		o.str("input", k.Input)
		o.strOmitNil("session_id", k.SessionID)
		o.strOmitNil("tag", k.Tag)
	case ActivityCompleted:
		o.str("result", k.Result)
	case ActivityFailed:
		return o.errorDetails("details", k.Details)
	case ActivityCancelRequested:
		o.str("reason", k.Reason)
	case TimerCreated:
		o.u64("fire_at_ms", k.FireAtMs)
	case TimerFired:
		o.u64("fire_at_ms", k.FireAtMs)
	case ExternalSubscribed:
		o.str("name", k.Name)
	case ExternalEvent:
		o.str("name", k.Name)
		o.str("data", k.Data)
	case OrchestrationChained:
		o.str("name", k.Name)
		o.str("instance", k.Instance)
		o.str("input", k.Input)
	case SubOrchestrationScheduled:
		o.str("name", k.Name)
		o.str("instance", k.Instance)
		o.str("input", k.Input)
	case SubOrchestrationCompleted:
		o.str("result", k.Result)
	case SubOrchestrationFailed:
		return o.errorDetails("details", k.Details)
	case SubOrchestrationCancelRequested:
		o.str("reason", k.Reason)
	case OrchestrationContinuedAsNew:
		o.str("input", k.Input)
	case OrchestrationCancelRequested:
		o.str("reason", k.Reason)
	case ExternalSubscribedCancelled:
		o.str("reason", k.Reason)
	case QueueSubscribed:
		o.str("name", k.Name)
	case QueueEventDelivered:
		o.str("name", k.Name)
		o.str("data", k.Data)
	case QueueSubscriptionCancelled:
		o.str("reason", k.Reason)
	case CustomStatusUpdated:
		o.strOrNull("status", k.Status)
	case KeyValueSet:
		o.str("key", k.Key)
		o.str("value", k.Value)
		o.u64("last_updated_at_ms", k.LastUpdatedAtMs)
	case KeyValueCleared:
		o.str("key", k.Key)
	case KeyValuesCleared:
		// A unit variant: the tag alone.
	default:
		return fmt.Errorf("unsupported event kind type %T", kind)
	}
	return nil
}

// decodeEvent reads an Event: the common fields by name, and every other
// member, "type" aside, left for the kind (serde's flatten).
func decodeEvent(v *jsonValue) (Event, error) {
	if v.kind != jsonObject {
		return Event{}, v.invalidType("struct Event")
	}
	common := jsonValue{kind: jsonObject}
	rest := jsonValue{kind: jsonObject}
	var tag *jsonValue
	for i := range v.members {
		m := &v.members[i]
		switch {
		case m.key == "type":
			if tag != nil {
				return Event{}, errors.New("duplicate field `type`")
			}
			tag = &m.value
		case slices.Contains(eventCommonFields, m.key):
			common.members = append(common.members, *m)
		default:
			rest.members = append(rest.members, *m)
		}
	}
	f := readStruct("Event", &common, false, eventCommonFields...)
	ev := Event{
		EventID:         f.u64("event_id"),
		SourceEventID:   f.optU64("source_event_id", false),
		InstanceID:      f.str("instance_id"),
		ExecutionID:     f.u64("execution_id"),
		TimestampMs:     f.u64("timestamp_ms"),
		DuroxideVersion: f.str("duroxide_version"),
	}
	if f.err != nil {
		return Event{}, f.err
	}
	if tag == nil {
		return Event{}, errors.New("missing field `type`")
	}
	et, err := eventTypeOf(tag)
	if err != nil {
		return Event{}, err
	}
	if ev.Kind, err = decodeEventKind(et, &rest); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// eventTypeOf reads the "type" tag: a variant name, or (serde's variant
// identifier accepts it) a variant index.
func eventTypeOf(tag *jsonValue) (EventType, error) {
	const what = "EventKind"
	switch tag.kind {
	case jsonString:
		s, err := tag.str()
		if err != nil {
			return "", err
		}
		if !slices.Contains(eventTypes, EventType(s)) {
			names := make([]string, len(eventTypes))
			for i, t := range eventTypes {
				names[i] = string(t)
			}
			return "", unknownVariant(what, s, names...)
		}
		return EventType(s), nil
	case jsonNumber:
		i, err := tag.uint(uint64(len(eventTypes)-1), fmt.Sprintf("variant index 0 <= i < %d", len(eventTypes)))
		if err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		return eventTypes[i], nil
	}
	return "", fmt.Errorf("%s: %w", what, tag.invalidType("variant identifier"))
}

// decodeEventKind reads the fields of kind et from body, an object holding
// every member of the event except the common fields and the tag.
func decodeEventKind(et EventType, body *jsonValue) (EventKind, error) {
	what := "EventKind::" + string(et)
	var f *structFields
	fields := func(names ...string) *structFields {
		f = readStruct(what, body, false, names...)
		f.content = true
		return f
	}
	var k EventKind
	switch et {
	case EventTypeOrchestrationStarted:
		fields("name", "version", "input", "parent_instance", "parent_id", "parent_execution_id",
			"carry_forward_events", "initial_custom_status", "trace_context")
		k = OrchestrationStarted{
			Name:                f.str("name"),
			Version:             f.str("version"),
			Input:               f.str("input"),
			ParentInstance:      f.optStr("parent_instance", false),
			ParentID:            f.optU64("parent_id", false),
			ParentExecutionID:   f.optU64("parent_execution_id", true),
			CarryForwardEvents:  f.optNameDataList("carry_forward_events"),
			InitialCustomStatus: f.optStr("initial_custom_status", true),
			TraceContext:        f.optStr("trace_context", true),
		}
	case EventTypeOrchestrationCompleted:
		k = OrchestrationCompleted{Output: fields("output").str("output")}
	case EventTypeOrchestrationFailed:
		k = OrchestrationFailed{Details: fields("details").errorDetails("details")}
	case EventTypeActivityScheduled:
		fields("name", "input", "session_id", "tag")
		k = ActivityScheduled{
			Name:      f.str("name"),
			Input:     f.str("input"),
			SessionID: f.optStr("session_id", true),
			Tag:       f.optStr("tag", true),
		}
	case EventTypeActivityCompleted:
		k = ActivityCompleted{Result: fields("result").str("result")}
	case EventTypeActivityFailed:
		k = ActivityFailed{Details: fields("details").errorDetails("details")}
	case EventTypeActivityCancelRequested:
		k = ActivityCancelRequested{Reason: fields("reason").str("reason")}
	case EventTypeTimerCreated:
		k = TimerCreated{FireAtMs: fields("fire_at_ms").u64("fire_at_ms")}
	case EventTypeTimerFired:
		k = TimerFired{FireAtMs: fields("fire_at_ms").u64("fire_at_ms")}
	case EventTypeExternalSubscribed:
		k = ExternalSubscribed{Name: fields("name").str("name")}
	case EventTypeExternalEvent:
		fields("name", "data")
		k = ExternalEvent{Name: f.str("name"), Data: f.str("data")}
	case EventTypeOrchestrationChained:
		fields("name", "instance", "input")
		k = OrchestrationChained{Name: f.str("name"), Instance: f.str("instance"), Input: f.str("input")}
	case EventTypeSubOrchestrationScheduled:
		fields("name", "instance", "input")
		k = SubOrchestrationScheduled{Name: f.str("name"), Instance: f.str("instance"), Input: f.str("input")}
	case EventTypeSubOrchestrationCompleted:
		k = SubOrchestrationCompleted{Result: fields("result").str("result")}
	case EventTypeSubOrchestrationFailed:
		k = SubOrchestrationFailed{Details: fields("details").errorDetails("details")}
	case EventTypeSubOrchestrationCancelRequested:
		k = SubOrchestrationCancelRequested{Reason: fields("reason").str("reason")}
	case EventTypeOrchestrationContinuedAsNew:
		k = OrchestrationContinuedAsNew{Input: fields("input").str("input")}
	case EventTypeOrchestrationCancelRequested:
		k = OrchestrationCancelRequested{Reason: fields("reason").str("reason")}
	case EventTypeExternalSubscribedCancelled:
		k = ExternalSubscribedCancelled{Reason: fields("reason").str("reason")}
	case EventTypeQueueSubscribed:
		k = QueueSubscribed{Name: fields("name").str("name")}
	case EventTypeQueueEventDelivered:
		fields("name", "data")
		k = QueueEventDelivered{Name: f.str("name"), Data: f.str("data")}
	case EventTypeQueueSubscriptionCancelled:
		k = QueueSubscriptionCancelled{Reason: fields("reason").str("reason")}
	case EventTypeCustomStatusUpdated:
		k = CustomStatusUpdated{Status: fields("status").optStr("status", false)}
	case EventTypeKeyValueSet:
		fields("key", "value", "last_updated_at_ms")
		k = KeyValueSet{Key: f.str("key"), Value: f.str("value"), LastUpdatedAtMs: f.u64Default("last_updated_at_ms")}
	case EventTypeKeyValueCleared:
		k = KeyValueCleared{Key: fields("key").str("key")}
	case EventTypeKeyValuesCleared:
		// A unit variant: other members are ignored.
		return KeyValuesCleared{}, nil
	default:
		return nil, fmt.Errorf("%s: no decoder (decoder bug)", what)
	}
	if f.err != nil {
		return nil, f.err
	}
	return k, nil
}
