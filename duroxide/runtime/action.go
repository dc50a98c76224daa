package runtime

import (
	"fmt"
	"strconv"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// actionKind enumerates duroxide's Action variants: the decisions an
// orchestration records while it runs, which the engine turns into history
// events and work items.
type actionKind int

const (
	actCallActivity actionKind = iota
	actCreateTimer
	actWaitExternal
	actDequeueEvent
	actStartSubOrchestration
	actStartDetached
	actContinueAsNew
	actUpdateCustomStatus
	actSetKeyValue
	actClearKeyValue
	actClearKeyValues
)

// subOrchPendingPrefix marks an auto-generated child id until the engine
// knows its event id and replaces it by "sub::<event id>" (duroxide's
// SUB_ORCH_PENDING_PREFIX).
const subOrchPendingPrefix = "sub::pending_"

// action is one recorded decision (duroxide's Action); which fields are used
// depends on kind.
type action struct {
	kind              actionKind
	schedulingEventID uint64
	name              string  // activity, orchestration, event or queue name
	input             string  // activity/orchestration input, CAN input
	sessionID         *string // activity session
	tag               *string // activity tag
	fireAtMs          uint64  // timer
	instance          string  // child or detached instance id
	version           *string // child, detached or CAN version
	status            *string // custom status (nil = cleared)
	key, value        string  // KV
	lastUpdatedAtMs   uint64  // KV set time
}

// String describes the action for nondeterminism messages.
func (a action) String() string {
	switch a.kind {
	case actCallActivity:
		return fmt.Sprintf("CallActivity{name:%q, input:%q}", a.name, a.input)
	case actCreateTimer:
		return "CreateTimer{fire_at_ms:" + strconv.FormatUint(a.fireAtMs, 10) + "}"
	case actWaitExternal:
		return fmt.Sprintf("WaitExternal{name:%q}", a.name)
	case actDequeueEvent:
		return fmt.Sprintf("DequeueEvent{name:%q}", a.name)
	case actStartSubOrchestration:
		return fmt.Sprintf("StartSubOrchestration{name:%q, instance:%q, input:%q}", a.name, a.instance, a.input)
	case actStartDetached:
		return fmt.Sprintf("StartOrchestrationDetached{name:%q, instance:%q, input:%q}", a.name, a.instance, a.input)
	case actContinueAsNew:
		return fmt.Sprintf("ContinueAsNew{input:%q}", a.input)
	case actUpdateCustomStatus:
		return "UpdateCustomStatus"
	case actSetKeyValue:
		return fmt.Sprintf("SetKeyValue{key:%q, value:%q}", a.key, a.value)
	case actClearKeyValue:
		return fmt.Sprintf("ClearKeyValue{key:%q}", a.key)
	case actClearKeyValues:
		return "ClearKeyValues"
	}
	return "UnknownAction"
}

// withEventID returns the action bound to eventID of execution executionID
// (duroxide's update_action_event_id); an auto-generated child id becomes
// "sub::<event id>" in the first execution and "sub::<execution>_<event id>"
// in later ones (duroxide 0.1.30), so a child of an execution that followed
// a continue-as-new never collides with a child of an earlier one.
func (a action) withEventID(eventID, executionID uint64) action {
	switch a.kind {
	case actContinueAsNew, actUpdateCustomStatus, actSetKeyValue, actClearKeyValue, actClearKeyValues:
		return a
	case actStartSubOrchestration:
		if len(a.instance) >= len(subOrchPendingPrefix) && a.instance[:len(subOrchPendingPrefix)] == subOrchPendingPrefix {
			a.instance = duroxide.SubOrchAutoPrefix + strconv.FormatUint(eventID, 10)
			if executionID > duroxide.InitialExecutionID {
				a.instance = duroxide.SubOrchAutoPrefix + strconv.FormatUint(executionID, 10) + "_" + strconv.FormatUint(eventID, 10)
			}
		}
	}
	a.schedulingEventID = eventID
	return a
}

// toEventKind returns the history event the action records (duroxide's
// action_to_event); ok is false for ContinueAsNew, which has its own
// terminal event.
func (a action) toEventKind() (kind duroxide.EventKind, ok bool) {
	switch a.kind {
	case actCallActivity:
		return duroxide.ActivityScheduled{Name: a.name, Input: a.input, SessionID: a.sessionID, Tag: a.tag}, true
	case actCreateTimer:
		return duroxide.TimerCreated{FireAtMs: a.fireAtMs}, true
	case actWaitExternal:
		return duroxide.ExternalSubscribed{Name: a.name}, true
	case actDequeueEvent:
		return duroxide.QueueSubscribed{Name: a.name}, true
	case actStartSubOrchestration:
		return duroxide.SubOrchestrationScheduled{Name: a.name, Instance: a.instance, Input: a.input}, true
	case actStartDetached:
		return duroxide.OrchestrationChained{Name: a.name, Instance: a.instance, Input: a.input}, true
	case actUpdateCustomStatus:
		return duroxide.CustomStatusUpdated{Status: a.status}, true
	case actSetKeyValue:
		return duroxide.KeyValueSet{Key: a.key, Value: a.value, LastUpdatedAtMs: a.lastUpdatedAtMs}, true
	case actClearKeyValue:
		return duroxide.KeyValueCleared{Key: a.key}, true
	case actClearKeyValues:
		return duroxide.KeyValuesCleared{}, true
	}
	return nil, false
}

// matchesEvent reports whether the action replays the recorded event
// (duroxide's action_matches_event_kind): activities by name, input, session
// and tag; timers by position only; waits by name; children by name and
// input; detached starts by name, instance and input; custom status by kind;
// KV by key and value (never by timestamp).
func (a action) matchesEvent(kind duroxide.EventKind) bool {
	switch k := kind.(type) {
	case duroxide.ActivityScheduled:
		return a.kind == actCallActivity && a.name == k.Name && a.input == k.Input &&
			eqStrPtr(a.sessionID, k.SessionID) && eqStrPtr(a.tag, k.Tag)
	case duroxide.TimerCreated:
		return a.kind == actCreateTimer
	case duroxide.ExternalSubscribed:
		return a.kind == actWaitExternal && a.name == k.Name
	case duroxide.QueueSubscribed:
		return a.kind == actDequeueEvent && a.name == k.Name
	case duroxide.SubOrchestrationScheduled:
		return a.kind == actStartSubOrchestration && a.name == k.Name && a.input == k.Input
	case duroxide.OrchestrationChained:
		return a.kind == actStartDetached && a.name == k.Name && a.instance == k.Instance && a.input == k.Input
	case duroxide.CustomStatusUpdated:
		return a.kind == actUpdateCustomStatus
	case duroxide.KeyValueSet:
		return a.kind == actSetKeyValue && a.key == k.Key && a.value == k.Value
	case duroxide.KeyValueCleared:
		return a.kind == actClearKeyValue && a.key == k.Key
	case duroxide.KeyValuesCleared:
		return a.kind == actClearKeyValues
	}
	return false
}

func eqStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// describeEvent formats an event kind for nondeterminism messages.
func describeEvent(kind duroxide.EventKind) string {
	if kind == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s%+v", kind.EventType(), kind)
}
