package runtimetest

// Listener hooks (Temporal's SetOnActivityStartedListener and the like):
// callbacks the environment calls as the instances' turns commit, for
// tests that assert the order of things.

import (
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Listeners are called as the environment's instances record what they
// do, in the order their history records it: once per event, when the
// turn that appended it commits. Each field may be nil. They run on the
// runtime's dispatcher goroutines: calls for one instance come in history
// order, calls for different instances may run at once, and a listener
// must not block (record, then assert in the test).
type Listeners struct {
	// ActivityScheduled: the orchestration scheduled activity name.
	ActivityScheduled func(instance, name, input string)
	// ActivityCompleted: activity name's result (err nil) or failure (a
	// *runtime.TaskFailedError's message as err) reached the
	// orchestration.
	ActivityCompleted func(instance, name, result string, err error)
	// TimerCreated and TimerFired: a durable timer due at fireAt.
	TimerCreated func(instance string, fireAt time.Time)
	TimerFired   func(instance string, fireAt time.Time)
	// EventReceived: the external event name (or a message of queue name)
	// reached the instance, whether or not a wait was pending (see
	// runtime.DroppedExternalEvents).
	EventReceived func(instance, name, data string)
	// Event is called for every event, before the typed listeners.
	Event func(instance string, ev duroxide.Event)
}

// Listen adds l to the environment's listeners, from the next committed
// turn on.
func (e *Env) Listen(l Listeners) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.listeners = append(e.listeners, l)
}

// activityKey identifies an ActivityScheduled event.
type activityKey struct {
	instance    string
	executionID uint64
	id          uint64
}

// failureError is an activity failure as a listener sees it.
type failureError struct{ msg string }

func (f failureError) Error() string { return f.msg }

// turnCommitted is the runtime's OnTurnCommitted hook: it calls the
// listeners for the events a turn appended.
func (e *Env) turnCommitted(instance string, appended []duroxide.Event) {
	e.mu.Lock()
	ls := append([]Listeners(nil), e.listeners...)
	names := map[uint64]string{} // this turn's completions' activity names
	for _, ev := range appended {
		switch k := ev.Kind.(type) {
		case duroxide.ActivityScheduled:
			e.scheduled[activityKey{instance, ev.ExecutionID, ev.EventID}] = k.Name
		case duroxide.ActivityCompleted, duroxide.ActivityFailed:
			if ev.SourceEventID != nil {
				key := activityKey{instance, ev.ExecutionID, *ev.SourceEventID}
				names[ev.EventID] = e.scheduled[key]
				delete(e.scheduled, key)
			}
		}
	}
	e.mu.Unlock()
	if len(ls) == 0 {
		return
	}
	for _, ev := range appended {
		for _, l := range ls {
			if l.Event != nil {
				l.Event(instance, ev)
			}
			switch k := ev.Kind.(type) {
			case duroxide.ActivityScheduled:
				if l.ActivityScheduled != nil {
					l.ActivityScheduled(instance, k.Name, k.Input)
				}
			case duroxide.ActivityCompleted:
				if l.ActivityCompleted != nil {
					l.ActivityCompleted(instance, names[ev.EventID], k.Result, nil)
				}
			case duroxide.ActivityFailed:
				if l.ActivityCompleted != nil {
					l.ActivityCompleted(instance, names[ev.EventID], "", failureError{k.Details.DisplayMessage()})
				}
			case duroxide.TimerCreated:
				if l.TimerCreated != nil {
					l.TimerCreated(instance, time.UnixMilli(int64(k.FireAtMs)))
				}
			case duroxide.TimerFired:
				if l.TimerFired != nil {
					l.TimerFired(instance, time.UnixMilli(int64(k.FireAtMs)))
				}
			case duroxide.ExternalEvent:
				if l.EventReceived != nil {
					l.EventReceived(instance, k.Name, k.Data)
				}
			case duroxide.QueueEventDelivered:
				if l.EventReceived != nil {
					l.EventReceived(instance, k.Name, k.Data)
				}
			}
		}
	}
}
