package duroxide

// WorkItem is a message in one of the provider's queues (duroxide's
// WorkItem). Kind is one of the WorkItemKind types of this package.
//
// Routing (duroxide's contract): ActivityExecuteItem goes to the worker
// queue; every other kind goes to the orchestrator queue of the instance
// Instance returns (a sub-orchestration completion goes to the parent).
//
// On the wire (encoding/json) a WorkItem is externally tagged, as serde
// writes Rust enums: {"ActivityCompleted":{"instance":"i","execution_id":1,
// "id":2,"result":"r"}}.
type WorkItem struct {
	Kind WorkItemKind // the payload; never nil in a valid item
}

// Type returns the wire tag of the item's kind, or "" when Kind is nil or a
// nil pointer.
func (w WorkItem) Type() WorkItemType {
	if isNilKind(w.Kind) {
		return ""
	}
	return w.Kind.WorkItemType()
}

// Instance returns the instance whose queue the item belongs to: the
// instance field of every kind except SubOrchCompletedItem and
// SubOrchFailedItem, which target their ParentInstance. It returns "" when
// Kind is nil or a nil pointer.
func (w WorkItem) Instance() string {
	if isNilKind(w.Kind) {
		return ""
	}
	return w.Kind.TargetInstance()
}

// IsForWorker reports whether the item belongs on the worker queue (only
// ActivityExecuteItem does).
func (w WorkItem) IsForWorker() bool {
	_, ok := w.Kind.(ActivityExecuteItem)
	return ok
}

// WorkItemType is the wire tag of a work item kind.
type WorkItemType string

// The wire tags of every work item kind.
const (
	WorkItemStartOrchestration WorkItemType = "StartOrchestration"
	WorkItemActivityExecute    WorkItemType = "ActivityExecute"
	WorkItemActivityCompleted  WorkItemType = "ActivityCompleted"
	WorkItemActivityFailed     WorkItemType = "ActivityFailed"
	WorkItemTimerFired         WorkItemType = "TimerFired"
	WorkItemExternalRaised     WorkItemType = "ExternalRaised"
	WorkItemSubOrchCompleted   WorkItemType = "SubOrchCompleted"
	WorkItemSubOrchFailed      WorkItemType = "SubOrchFailed"
	WorkItemCancelInstance     WorkItemType = "CancelInstance"
	WorkItemContinueAsNew      WorkItemType = "ContinueAsNew"
	WorkItemQueueMessage       WorkItemType = "QueueMessage"
)

// WorkItemKind is the payload of a WorkItem; the set is closed to the *Item
// types of this package.
type WorkItemKind interface {
	// WorkItemType returns the kind's wire tag.
	WorkItemType() WorkItemType
	// TargetInstance returns the instance whose queue the item belongs to.
	TargetInstance() string
	isWorkItemKind()
}

// StartOrchestrationItem starts an orchestration instance. Version nil means
// the runtime resolves it from its registry; ParentInstance/ParentID are set
// for sub-orchestrations. The instance record itself is created by the
// provider from ack metadata, never on enqueue (duroxide's contract).
type StartOrchestrationItem struct {
	Instance       string  // "instance": the instance to start
	Orchestration  string  // "orchestration": the registered orchestration name
	Input          string  // "input": the serialized input
	Version        *string // "version": nil (null) lets the runtime pick
	ParentInstance *string // "parent_instance": nil (null) for a root
	ParentID       *uint64 // "parent_id": the parent's SubOrchestrationScheduled event id; nil (null) for a root
	// ParentExecutionID is the parent's execution that scheduled the child,
	// so the child's completion is routed to it without a read (duroxide
	// 0.1.30); nil, omitted on the wire, for a root or an item written
	// before 0.1.30, when the runtime reads the parent's current execution.
	ParentExecutionID *uint64
	ExecutionID       uint64 // "execution_id": usually InitialExecutionID
	// TraceContext is the W3C traceparent ("00-<trace id>-<span id>-<flags>")
	// of the span the orchestration's work belongs to, so that its turns
	// and activities join one trace across processes; nil when not traced.
	// An addition of this port, omitted on the wire when nil: duroxide's
	// serde ignores the unknown field "trace_context", and items it writes
	// decode with nil.
	TraceContext *string
}

// ActivityExecuteItem asks a worker to run activity Name with Input; ID is
// the ActivityScheduled event id. SessionID pins it to a session (nil when
// none) and Tag routes it to workers whose TagFilter accepts the tag (nil =
// the default, untagged queue); both are omitted on the wire when nil.
type ActivityExecuteItem struct {
	Instance    string  // "instance"
	ExecutionID uint64  // "execution_id": the execution that scheduled it
	ID          uint64  // "id": the ActivityScheduled event id
	Name        string  // "name": the registered activity name
	Input       string  // "input": the serialized input
	SessionID   *string // "session_id": omitted when nil
	Tag         *string // "tag": omitted when nil
	// TraceContext is the W3C traceparent ("00-<trace id>-<span id>-<flags>")
	// of the span the orchestration's work belongs to, so that its turns
	// and activities join one trace across processes; nil when not traced.
	// An addition of this port, omitted on the wire when nil: duroxide's
	// serde ignores the unknown field "trace_context", and items it writes
	// decode with nil.
	TraceContext *string
}

// ActivityCompletedItem carries an activity's result to its orchestration;
// ID is the ActivityScheduled event id.
type ActivityCompletedItem struct {
	Instance    string // "instance"
	ExecutionID uint64 // "execution_id"
	ID          uint64 // "id": the ActivityScheduled event id
	Result      string // "result": the serialized result
}

// ActivityFailedItem carries an activity's failure to its orchestration.
type ActivityFailedItem struct {
	Instance    string       // "instance"
	ExecutionID uint64       // "execution_id"
	ID          uint64       // "id": the ActivityScheduled event id
	Details     ErrorDetails // "details"
}

// TimerFiredItem fires timer ID at FireAtMs (milliseconds since the Unix
// epoch); providers keep it invisible until then.
type TimerFiredItem struct {
	Instance    string // "instance"
	ExecutionID uint64 // "execution_id"
	ID          uint64 // "id": the TimerCreated event id
	FireAtMs    uint64 // "fire_at_ms": ms since the Unix epoch
}

// ExternalRaisedItem raises the external event Name with Data.
type ExternalRaisedItem struct {
	Instance string // "instance"
	Name     string // "name": the event name
	Data     string // "data": the serialized payload
}

// SubOrchCompletedItem carries a child's result to ParentInstance; ParentID
// is the parent's SubOrchestrationScheduled event id.
type SubOrchCompletedItem struct {
	ParentInstance    string // "parent_instance": the queue it goes to
	ParentExecutionID uint64 // "parent_execution_id"
	ParentID          uint64 // "parent_id": the SubOrchestrationScheduled event id
	Result            string // "result": the child's serialized output
}

// SubOrchFailedItem carries a child's failure to ParentInstance.
type SubOrchFailedItem struct {
	ParentInstance    string       // "parent_instance": the queue it goes to
	ParentExecutionID uint64       // "parent_execution_id"
	ParentID          uint64       // "parent_id": the SubOrchestrationScheduled event id
	Details           ErrorDetails // "details"
}

// CancelInstanceItem requests cancellation of Instance with Reason.
type CancelInstanceItem struct {
	Instance string // "instance"
	Reason   string // "reason"
}

// ContinueAsNewItem starts the next execution of Instance with Input.
// CarryForwardEvents are the persistent events carried over (always an array
// on the wire, [] when empty); InitialCustomStatus is omitted when nil.
type ContinueAsNewItem struct {
	Instance      string  // "instance"
	Orchestration string  // "orchestration"
	Input         string  // "input": the next execution's input
	Version       *string // "version": null when nil
	// ParentInstance, ParentID and ParentExecutionID keep a
	// sub-orchestration's link to its parent across continue-as-new, so the
	// execution that ends notifies the parent (duroxide 0.1.30); nil,
	// omitted on the wire, for a root or an item written before 0.1.30.
	ParentInstance      *string
	ParentID            *uint64
	ParentExecutionID   *uint64
	CarryForwardEvents  []NameData // "carry_forward_events": [] when empty
	InitialCustomStatus *string    // "initial_custom_status": omitted when nil
	// TraceContext is the W3C traceparent ("00-<trace id>-<span id>-<flags>")
	// of the span the orchestration's work belongs to, so that its turns
	// and activities join one trace across processes; nil when not traced.
	// An addition of this port, omitted on the wire when nil: duroxide's
	// serde ignores the unknown field "trace_context", and items it writes
	// decode with nil.
	TraceContext *string
}

// QueueMessageItem enqueues the persistent event Name with Data (mailbox
// semantics: it waits until the orchestration dequeues it). A provider drops
// it, with a warning, when the instance was never started.
type QueueMessageItem struct {
	Instance string // "instance"
	Name     string // "name": the queue name
	Data     string // "data": the serialized payload
}

// WorkItemType returns WorkItemStartOrchestration.
func (StartOrchestrationItem) WorkItemType() WorkItemType { return WorkItemStartOrchestration }

// WorkItemType returns WorkItemActivityExecute.
func (ActivityExecuteItem) WorkItemType() WorkItemType { return WorkItemActivityExecute }

// WorkItemType returns WorkItemActivityCompleted.
func (ActivityCompletedItem) WorkItemType() WorkItemType { return WorkItemActivityCompleted }

// WorkItemType returns WorkItemActivityFailed.
func (ActivityFailedItem) WorkItemType() WorkItemType { return WorkItemActivityFailed }

// WorkItemType returns WorkItemTimerFired.
func (TimerFiredItem) WorkItemType() WorkItemType { return WorkItemTimerFired }

// WorkItemType returns WorkItemExternalRaised.
func (ExternalRaisedItem) WorkItemType() WorkItemType { return WorkItemExternalRaised }

// WorkItemType returns WorkItemSubOrchCompleted.
func (SubOrchCompletedItem) WorkItemType() WorkItemType { return WorkItemSubOrchCompleted }

// WorkItemType returns WorkItemSubOrchFailed.
func (SubOrchFailedItem) WorkItemType() WorkItemType { return WorkItemSubOrchFailed }

// WorkItemType returns WorkItemCancelInstance.
func (CancelInstanceItem) WorkItemType() WorkItemType { return WorkItemCancelInstance }

// WorkItemType returns WorkItemContinueAsNew.
func (ContinueAsNewItem) WorkItemType() WorkItemType { return WorkItemContinueAsNew }

// WorkItemType returns WorkItemQueueMessage.
func (QueueMessageItem) WorkItemType() WorkItemType { return WorkItemQueueMessage }

// TargetInstance returns Instance.
func (w StartOrchestrationItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w ActivityExecuteItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w ActivityCompletedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w ActivityFailedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w TimerFiredItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w ExternalRaisedItem) TargetInstance() string { return w.Instance }

// TargetInstance returns ParentInstance: completions go to the parent.
func (w SubOrchCompletedItem) TargetInstance() string { return w.ParentInstance }

// TargetInstance returns ParentInstance: failures go to the parent.
func (w SubOrchFailedItem) TargetInstance() string { return w.ParentInstance }

// TargetInstance returns Instance.
func (w CancelInstanceItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w ContinueAsNewItem) TargetInstance() string { return w.Instance }

// TargetInstance returns Instance.
func (w QueueMessageItem) TargetInstance() string { return w.Instance }

func (StartOrchestrationItem) isWorkItemKind() {}
func (ActivityExecuteItem) isWorkItemKind()    {}
func (ActivityCompletedItem) isWorkItemKind()  {}
func (ActivityFailedItem) isWorkItemKind()     {}
func (TimerFiredItem) isWorkItemKind()         {}
func (ExternalRaisedItem) isWorkItemKind()     {}
func (SubOrchCompletedItem) isWorkItemKind()   {}
func (SubOrchFailedItem) isWorkItemKind()      {}
func (CancelInstanceItem) isWorkItemKind()     {}
func (ContinueAsNewItem) isWorkItemKind()      {}
func (QueueMessageItem) isWorkItemKind()       {}

// StartParent returns the parent instance named by the first
// StartOrchestration among items (a sub-orchestration's start), nil when
// that start is a root's or there is none. Providers record it on a
// pending instance, so that a child's start that no turn has run yet is
// deleted with its root's tree, never alone.
func StartParent(items []WorkItem) *string {
	for _, it := range items {
		if k, ok := it.Kind.(StartOrchestrationItem); ok {
			return k.ParentInstance
		}
	}
	return nil
}
