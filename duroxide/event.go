package duroxide

import (
	"reflect"
	"time"
)

// Event is one entry of an orchestration's append-only history (duroxide's
// Event). The common fields sit on Event; the kind-specific payload is Kind,
// one of the EventKind types of this package.
//
// On the wire (encoding/json) an Event is one flat object: the common fields
// event_id, source_event_id, instance_id, execution_id, timestamp_ms and
// duroxide_version, then a "type" tag and the kind's own fields beside it, the
// same JSON duroxide's serde produces (#[serde(flatten)] over an internally
// tagged enum), so history written here is readable by the Rust runtime and
// the other way round.
type Event struct {
	// EventID is the event's position in its execution's history, starting
	// at 1 and increasing by one. The runtime assigns it; providers store it
	// and never generate it.
	EventID uint64
	// SourceEventID links a completion to the event that scheduled it
	// (ActivityCompleted → ActivityScheduled, TimerFired → TimerCreated, ...);
	// nil for lifecycle and scheduling events. Serialized as null when nil.
	SourceEventID *uint64
	// InstanceID is the orchestration instance the event belongs to.
	InstanceID string
	// ExecutionID is the execution (1, then +1 per continue-as-new).
	ExecutionID uint64
	// TimestampMs is when the event was created, in milliseconds since the
	// Unix epoch.
	TimestampMs uint64
	// DuroxideVersion is the semver of the duroxide build that wrote the
	// event, e.g. "0.1.26".
	DuroxideVersion string
	// Kind is the event's type and payload; never nil in a valid event.
	Kind EventKind
}

// NewEvent returns an Event with the given ids and kind, stamped with the
// current time and DuroxideVersion (duroxide's Event::with_event_id).
func NewEvent(eventID uint64, instanceID string, executionID uint64, sourceEventID *uint64, kind EventKind) Event {
	return Event{
		EventID:         eventID,
		SourceEventID:   sourceEventID,
		InstanceID:      instanceID,
		ExecutionID:     executionID,
		TimestampMs:     uint64(time.Now().UnixMilli()),
		DuroxideVersion: DuroxideVersion,
		Kind:            kind,
	}
}

// Type returns the wire tag of the event's kind, or "" when Kind is nil
// or a nil pointer.
func (e Event) Type() EventType {
	if isNilKind(e.Kind) {
		return ""
	}
	return e.Kind.EventType()
}

// isNilKind reports whether an event or work item kind is nil or a nil
// pointer to a kind type, on which calling a method would panic (the kind
// methods have value receivers).
func isNilKind(kind any) bool {
	if kind == nil {
		return true
	}
	v := reflect.ValueOf(kind)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// IsTerminal reports whether the event ends its execution:
// OrchestrationCompleted, OrchestrationFailed or OrchestrationContinuedAsNew
// (duroxide's Event::is_terminal).
func (e Event) IsTerminal() bool {
	switch e.Kind.(type) {
	case OrchestrationCompleted, OrchestrationFailed, OrchestrationContinuedAsNew:
		return true
	}
	return false
}

// Uint64Ptr returns a pointer to v; a convenience for SourceEventID and other
// optional numeric fields.
func Uint64Ptr(v uint64) *uint64 { return &v }

// StringPtr returns a pointer to s; a convenience for optional string fields.
func StringPtr(s string) *string { return &s }

// EventType is the "type" tag an event kind has on the wire. The Go names of
// the queue (persistent event) kinds differ from their tags, as in duroxide:
// QueueSubscribed is "ExternalSubscribedPersistent", QueueEventDelivered is
// "ExternalEventPersistent" and QueueSubscriptionCancelled is
// "ExternalSubscribedPersistentCancelled".
type EventType string

// The wire tags of every event kind.
const (
	EventTypeOrchestrationStarted            EventType = "OrchestrationStarted"
	EventTypeOrchestrationCompleted          EventType = "OrchestrationCompleted"
	EventTypeOrchestrationFailed             EventType = "OrchestrationFailed"
	EventTypeActivityScheduled               EventType = "ActivityScheduled"
	EventTypeActivityCompleted               EventType = "ActivityCompleted"
	EventTypeActivityFailed                  EventType = "ActivityFailed"
	EventTypeActivityCancelRequested         EventType = "ActivityCancelRequested"
	EventTypeTimerCreated                    EventType = "TimerCreated"
	EventTypeTimerFired                      EventType = "TimerFired"
	EventTypeExternalSubscribed              EventType = "ExternalSubscribed"
	EventTypeExternalEvent                   EventType = "ExternalEvent"
	EventTypeOrchestrationChained            EventType = "OrchestrationChained"
	EventTypeSubOrchestrationScheduled       EventType = "SubOrchestrationScheduled"
	EventTypeSubOrchestrationCompleted       EventType = "SubOrchestrationCompleted"
	EventTypeSubOrchestrationFailed          EventType = "SubOrchestrationFailed"
	EventTypeSubOrchestrationCancelRequested EventType = "SubOrchestrationCancelRequested"
	EventTypeOrchestrationContinuedAsNew     EventType = "OrchestrationContinuedAsNew"
	EventTypeOrchestrationCancelRequested    EventType = "OrchestrationCancelRequested"
	EventTypeExternalSubscribedCancelled     EventType = "ExternalSubscribedCancelled"
	EventTypeQueueSubscribed                 EventType = "ExternalSubscribedPersistent"
	EventTypeQueueEventDelivered             EventType = "ExternalEventPersistent"
	EventTypeQueueSubscriptionCancelled      EventType = "ExternalSubscribedPersistentCancelled"
	EventTypeCustomStatusUpdated             EventType = "CustomStatusUpdated"
	EventTypeKeyValueSet                     EventType = "KeyValueSet"
	EventTypeKeyValueCleared                 EventType = "KeyValueCleared"
	EventTypeKeyValuesCleared                EventType = "KeyValuesCleared"
)

// EventKind is the kind-specific payload of an Event (duroxide's EventKind).
// The set is closed: only the types of this package implement it. Switch on
// the concrete type:
//
//	switch k := ev.Kind.(type) {
//	case duroxide.ActivityCompleted:
//		use(k.Result)
//	}
type EventKind interface {
	// EventType returns the kind's wire tag.
	EventType() EventType
	isEventKind()
}

// NameData is one (name, data) pair, a Rust (String, String) tuple that is a
// two-element JSON array on the wire: ["name","data"]. Continue-as-new uses
// it to carry persistent events forward.
type NameData struct {
	Name string // the persistent event (queue) name
	Data string // the event payload
}

// OrchestrationStarted opens an execution: the orchestration's name, version
// and input, the parent link when it is a sub-orchestration, and what a
// continue-as-new carried forward.
type OrchestrationStarted struct {
	Name    string // "name": the registered orchestration name
	Version string // "version": the orchestration version, e.g. "1.0.0"
	Input   string // "input": the serialized input
	// ParentInstance and ParentID link a sub-orchestration to the parent's
	// SubOrchestrationScheduled event; nil for a root (serialized as null).
	ParentInstance *string
	ParentID       *uint64 // "parent_id": the parent's SubOrchestrationScheduled event id
	// ParentExecutionID is the parent execution that scheduled this child
	// (duroxide 0.1.30); nil, omitted on the wire, for a root or history
	// written before 0.1.30.
	ParentExecutionID *uint64
	// CarryForwardEvents holds the persistent events carried over by
	// continue-as-new; nil (omitted on the wire) otherwise.
	CarryForwardEvents []NameData
	// InitialCustomStatus is the custom status carried over by
	// continue-as-new; nil (omitted on the wire) otherwise.
	InitialCustomStatus *string
	// TraceContext is the W3C traceparent of the span the execution's
	// turns and activities are parented to (the runtime's tracing); nil
	// when not traced. An addition of this port, omitted on the wire when
	// nil: duroxide's serde ignores the unknown field "trace_context".
	TraceContext *string
}

// OrchestrationCompleted ends an execution successfully with Output.
type OrchestrationCompleted struct{ Output string }

// OrchestrationFailed ends an execution with an error.
type OrchestrationFailed struct{ Details ErrorDetails }

// ActivityScheduled records that an activity was scheduled; its EventID is
// the activity id completions refer to. SessionID and Tag are nil (omitted
// on the wire) when not used.
type ActivityScheduled struct {
	Name      string  // "name": the registered activity name
	Input     string  // "input": the serialized input
	SessionID *string // "session_id": the session the activity is pinned to
	Tag       *string // "tag": the routing tag (see TagFilter)
}

// ActivityCompleted records an activity's result; SourceEventID refers to the
// ActivityScheduled event.
type ActivityCompleted struct{ Result string }

// ActivityFailed records an activity's failure; SourceEventID refers to the
// ActivityScheduled event.
type ActivityFailed struct{ Details ErrorDetails }

// ActivityCancelRequested records a best-effort cancellation of an activity
// (for example the loser of a select); SourceEventID refers to the
// ActivityScheduled event.
type ActivityCancelRequested struct{ Reason string }

// TimerCreated records a durable timer that fires at FireAtMs (milliseconds
// since the Unix epoch).
type TimerCreated struct{ FireAtMs uint64 }

// TimerFired records that a timer fired; SourceEventID refers to the
// TimerCreated event.
type TimerFired struct{ FireAtMs uint64 }

// ExternalSubscribed records a subscription to the external event Name.
type ExternalSubscribed struct{ Name string }

// ExternalEvent records an external event raised with Name and Data; it is
// matched to subscriptions by name, without SourceEventID.
type ExternalEvent struct {
	Name string // "name": the event name
	Data string // "data": the serialized payload
}

// OrchestrationChained records a detached (fire-and-forget) orchestration
// start of Name as Instance with Input.
type OrchestrationChained struct {
	Name     string // "name": the orchestration started
	Instance string // "instance": its instance id
	Input    string // "input": its serialized input
}

// SubOrchestrationScheduled records a sub-orchestration start of Name as the
// child Instance with Input.
type SubOrchestrationScheduled struct {
	Name     string // "name": the child orchestration
	Instance string // "instance": the child instance id
	Input    string // "input": the child's serialized input
}

// SubOrchestrationCompleted records a child's result; SourceEventID refers to
// the SubOrchestrationScheduled event.
type SubOrchestrationCompleted struct{ Result string }

// SubOrchestrationFailed records a child's failure; SourceEventID refers to
// the SubOrchestrationScheduled event.
type SubOrchestrationFailed struct{ Details ErrorDetails }

// SubOrchestrationCancelRequested records a best-effort cancellation of a
// child; SourceEventID refers to the SubOrchestrationScheduled event.
type SubOrchestrationCancelRequested struct{ Reason string }

// OrchestrationContinuedAsNew ends an execution that continues as a new one
// with Input.
type OrchestrationContinuedAsNew struct{ Input string }

// OrchestrationCancelRequested records that cancellation of the instance was
// requested; a terminal OrchestrationFailed follows deterministically.
type OrchestrationCancelRequested struct{ Reason string }

// ExternalSubscribedCancelled records that an external-event subscription was
// cancelled (it lost a select); SourceEventID refers to the
// ExternalSubscribed event.
type ExternalSubscribedCancelled struct{ Reason string }

// QueueSubscribed records a persistent (mailbox, FIFO) subscription to the
// queue Name. Wire tag "ExternalSubscribedPersistent".
type QueueSubscribed struct{ Name string }

// QueueEventDelivered records a persistent event delivered to the queue Name.
// Wire tag "ExternalEventPersistent".
type QueueEventDelivered struct {
	Name string // "name": the queue name
	Data string // "data": the serialized payload
}

// QueueSubscriptionCancelled records that a persistent subscription was
// cancelled; SourceEventID refers to the QueueSubscribed event. Wire tag
// "ExternalSubscribedPersistentCancelled".
type QueueSubscriptionCancelled struct{ Reason string }

// CustomStatusUpdated records a custom status change: Status set, or nil when
// cleared (serialized as null).
type CustomStatusUpdated struct{ Status *string }

// KeyValueSet records that Key was set to Value at LastUpdatedAtMs
// (milliseconds since the Unix epoch; 0 for events written before duroxide
// stamped it, and the field defaults to 0 when absent on the wire).
type KeyValueSet struct {
	Key             string // "key"
	Value           string // "value"
	LastUpdatedAtMs uint64 // "last_updated_at_ms": ms since the Unix epoch
}

// KeyValueCleared records that Key was cleared.
type KeyValueCleared struct{ Key string }

// KeyValuesCleared records that every key of the instance was cleared.
type KeyValuesCleared struct{}

// EventType returns EventTypeOrchestrationStarted.
func (OrchestrationStarted) EventType() EventType { return EventTypeOrchestrationStarted }

// EventType returns EventTypeOrchestrationCompleted.
func (OrchestrationCompleted) EventType() EventType { return EventTypeOrchestrationCompleted }

// EventType returns EventTypeOrchestrationFailed.
func (OrchestrationFailed) EventType() EventType { return EventTypeOrchestrationFailed }

// EventType returns EventTypeActivityScheduled.
func (ActivityScheduled) EventType() EventType { return EventTypeActivityScheduled }

// EventType returns EventTypeActivityCompleted.
func (ActivityCompleted) EventType() EventType { return EventTypeActivityCompleted }

// EventType returns EventTypeActivityFailed.
func (ActivityFailed) EventType() EventType { return EventTypeActivityFailed }

// EventType returns EventTypeActivityCancelRequested.
func (ActivityCancelRequested) EventType() EventType { return EventTypeActivityCancelRequested }

// EventType returns EventTypeTimerCreated.
func (TimerCreated) EventType() EventType { return EventTypeTimerCreated }

// EventType returns EventTypeTimerFired.
func (TimerFired) EventType() EventType { return EventTypeTimerFired }

// EventType returns EventTypeExternalSubscribed.
func (ExternalSubscribed) EventType() EventType { return EventTypeExternalSubscribed }

// EventType returns EventTypeExternalEvent.
func (ExternalEvent) EventType() EventType { return EventTypeExternalEvent }

// EventType returns EventTypeOrchestrationChained.
func (OrchestrationChained) EventType() EventType { return EventTypeOrchestrationChained }

// EventType returns EventTypeSubOrchestrationScheduled.
func (SubOrchestrationScheduled) EventType() EventType { return EventTypeSubOrchestrationScheduled }

// EventType returns EventTypeSubOrchestrationCompleted.
func (SubOrchestrationCompleted) EventType() EventType { return EventTypeSubOrchestrationCompleted }

// EventType returns EventTypeSubOrchestrationFailed.
func (SubOrchestrationFailed) EventType() EventType { return EventTypeSubOrchestrationFailed }

// EventType returns EventTypeSubOrchestrationCancelRequested.
func (SubOrchestrationCancelRequested) EventType() EventType {
	return EventTypeSubOrchestrationCancelRequested
}

// EventType returns EventTypeOrchestrationContinuedAsNew.
func (OrchestrationContinuedAsNew) EventType() EventType { return EventTypeOrchestrationContinuedAsNew }

// EventType returns EventTypeOrchestrationCancelRequested.
func (OrchestrationCancelRequested) EventType() EventType {
	return EventTypeOrchestrationCancelRequested
}

// EventType returns EventTypeExternalSubscribedCancelled.
func (ExternalSubscribedCancelled) EventType() EventType { return EventTypeExternalSubscribedCancelled }

// EventType returns EventTypeQueueSubscribed.
func (QueueSubscribed) EventType() EventType { return EventTypeQueueSubscribed }

// EventType returns EventTypeQueueEventDelivered.
func (QueueEventDelivered) EventType() EventType { return EventTypeQueueEventDelivered }

// EventType returns EventTypeQueueSubscriptionCancelled.
func (QueueSubscriptionCancelled) EventType() EventType { return EventTypeQueueSubscriptionCancelled }

// EventType returns EventTypeCustomStatusUpdated.
func (CustomStatusUpdated) EventType() EventType { return EventTypeCustomStatusUpdated }

// EventType returns EventTypeKeyValueSet.
func (KeyValueSet) EventType() EventType { return EventTypeKeyValueSet }

// EventType returns EventTypeKeyValueCleared.
func (KeyValueCleared) EventType() EventType { return EventTypeKeyValueCleared }

// EventType returns EventTypeKeyValuesCleared.
func (KeyValuesCleared) EventType() EventType { return EventTypeKeyValuesCleared }

func (OrchestrationStarted) isEventKind()            {}
func (OrchestrationCompleted) isEventKind()          {}
func (OrchestrationFailed) isEventKind()             {}
func (ActivityScheduled) isEventKind()               {}
func (ActivityCompleted) isEventKind()               {}
func (ActivityFailed) isEventKind()                  {}
func (ActivityCancelRequested) isEventKind()         {}
func (TimerCreated) isEventKind()                    {}
func (TimerFired) isEventKind()                      {}
func (ExternalSubscribed) isEventKind()              {}
func (ExternalEvent) isEventKind()                   {}
func (OrchestrationChained) isEventKind()            {}
func (SubOrchestrationScheduled) isEventKind()       {}
func (SubOrchestrationCompleted) isEventKind()       {}
func (SubOrchestrationFailed) isEventKind()          {}
func (SubOrchestrationCancelRequested) isEventKind() {}
func (OrchestrationContinuedAsNew) isEventKind()     {}
func (OrchestrationCancelRequested) isEventKind()    {}
func (ExternalSubscribedCancelled) isEventKind()     {}
func (QueueSubscribed) isEventKind()                 {}
func (QueueEventDelivered) isEventKind()             {}
func (QueueSubscriptionCancelled) isEventKind()      {}
func (CustomStatusUpdated) isEventKind()             {}
func (KeyValueSet) isEventKind()                     {}
func (KeyValueCleared) isEventKind()                 {}
func (KeyValuesCleared) isEventKind()                {}
