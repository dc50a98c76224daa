package runtime

// Replaying recorded histories against the registered code, outside any
// runtime: the entry point of package runtimetest's replayer.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// ErrNotRegistered is wrapped by the error Registry.Replay returns when the
// orchestration (at the version) a history recorded is not registered.
var ErrNotRegistered = errors.New("orchestration not registered")

// ErrMalformedHistory is wrapped by the error Registry.Replay returns for a
// history it cannot replay at all: empty, or an execution that does not
// begin with OrchestrationStarted.
var ErrMalformedHistory = errors.New("malformed history")

// NondeterminismError reports that the registered code no longer
// reproduces a recorded history: the first recorded event it does not
// reproduce, and what the code does there instead. Registry.Replay returns
// it; match it with errors.As. Its Error() reads, for example,
//
//	instance "order-7" execution 1 (ProcessOrder@1.0.0): event 7: history has ActivityScheduled "ChargeCard", code scheduled activity "Charge"
type NondeterminismError struct {
	// Instance is the instance whose history was replayed.
	Instance string
	// ExecutionID is the execution that diverged (1, then one more per
	// continue-as-new).
	ExecutionID uint64
	// Orchestration and Version name the code that was replayed: the
	// name and version the execution's OrchestrationStarted recorded.
	Orchestration, Version string
	// EventIndex is the position (from 0) of the diverging event in the
	// execution's history.
	EventIndex int
	// EventID is the diverging event's id (from 1; EventIndex+1 in any
	// history a runtime wrote). The message says "event <EventID>".
	EventID uint64
	// Event is the recorded event the code does not reproduce.
	Event duroxide.Event
	// History describes Event, e.g. `ActivityScheduled "ChargeCard"`.
	History string
	// Code describes what the code does at that point, e.g.
	// `scheduled activity "Charge"`, `created a timer`, `scheduled
	// nothing more (it returned)`.
	Code string
	// Detail is the replay engine's own message, the one a runtime would
	// fail the orchestration with (duroxide's Nondeterminism text), or
	// empty when the divergence is at the end of the history (the history
	// ends one way, the code another), which a runtime never replays.
	Detail string
	// Hint, when the code now calls something recorded in history that
	// reads as harmless (UtcNow, NewGUID, SetCustomStatus, a KV write),
	// says so and gives the safe way to add it (a new version); empty
	// otherwise.
	Hint string
}

// Error describes the divergence on one line, followed by the hint when
// there is one.
func (e *NondeterminismError) Error() string {
	msg := fmt.Sprintf("instance %q execution %d (%s@%s): event %d: history has %s, code %s",
		e.Instance, e.ExecutionID, e.Orchestration, e.Version, e.EventID, e.History, e.Code)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// recordedCallHint is NondeterminismError.Hint for code whose diverging
// action is a call Temporal users expect to be harmless in replay.
func recordedCallHint(a *action) string {
	if a == nil {
		return ""
	}
	var what string
	switch {
	case a.kind == actCallActivity && a.name == syscallUtcNowMs:
		what = "ctx.UtcNow() records a system activity"
	case a.kind == actCallActivity && a.name == syscallNewGUID:
		what = "ctx.NewGUID() records a system activity"
	case a.kind == actCallActivity && a.name == syscallGetKVValue:
		what = "ctx.GetKVValueFromInstance records a system activity"
	case a.kind == actUpdateCustomStatus:
		what = "SetCustomStatus records a CustomStatusUpdated event"
	case a.kind == actSetKeyValue || a.kind == actClearKeyValue || a.kind == actClearKeyValues:
		what = "KV writes record events"
	default:
		return ""
	}
	return what + " in history, so adding it to an orchestration with running instances breaks their replay: " +
		"register the changed code as a new version (RegisterOrchestrationVersion) and keep the old version registered until its instances end"
}

// Replay replays the recorded history of one instance against the code
// registered in r, with the replay engine every runtime turn uses, and
// reports the first event the code no longer reproduces. history is one
// execution's events, or several executions in order (each beginning with
// its OrchestrationStarted), as Provider.ReadWithExecution returns them;
// the instance's KV values carry from one execution to the next as they do
// in a provider. Nothing runs but the orchestration functions: activities,
// timers and children come from the history.
//
// Each execution replays with the orchestration name and exact version its
// OrchestrationStarted recorded (the latest registered one when it
// recorded none). The check is duroxide's: every schedule, wait,
// sub-orchestration, detached start, custom-status and KV change, and
// dropped-future cancellation in history must be what the code does at
// that point, in order (activities by name, input, session and tag;
// timers by position, not by delay; children by name and input). Beyond
// that, an execution that ended must end the same way: a history that
// completed or failed (the code returned, the output or error itself is
// not compared), continued as new, or was cancelled, where the code must
// not schedule more, still wait, or panic when the history recorded no
// panic. A history still running may continue with new calls after its
// last event: that is a compatible change.
//
// Replay returns nil when every execution replays; a *NondeterminismError
// for the first that does not; an error wrapping ErrNotRegistered or
// ErrMalformedHistory when it cannot replay; or the replay's own failure
// (a runtime limit, say) as an error. It is safe for concurrent use.
func (r *Registry) Replay(instance string, history []duroxide.Event) error {
	if r == nil {
		return errNilRegistry
	}
	if len(history) == 0 {
		return fmt.Errorf("runtime: replay %q: %w: no events", instance, ErrMalformedHistory)
	}
	kv := map[string]duroxide.KvEntry{}
	for start := 0; start < len(history); {
		end := start + 1
		for end < len(history) {
			if _, next := history[end].Kind.(duroxide.OrchestrationStarted); next {
				break
			}
			end++
		}
		execution := history[start:end]
		applyKVEvents(kv, execution)
		if err := r.replayExecution(instance, execution, kv); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// applyKVEvents applies an execution's KV events to kv: the provider's KV
// store once the execution's turns committed.
func applyKVEvents(kv map[string]duroxide.KvEntry, events []duroxide.Event) {
	for _, ev := range events {
		switch k := ev.Kind.(type) {
		case duroxide.KeyValueSet:
			kv[k.Key] = duroxide.KvEntry{Value: k.Value, LastUpdatedAtMs: k.LastUpdatedAtMs}
		case duroxide.KeyValueCleared:
			delete(kv, k.Key)
		case duroxide.KeyValuesCleared:
			clear(kv)
		}
	}
}

// replayExecution replays one execution's events (the first one its
// OrchestrationStarted) with kv, the KV store at its end.
func (r *Registry) replayExecution(instance string, events []duroxide.Event, kv map[string]duroxide.KvEntry) error {
	started, ok := events[0].Kind.(duroxide.OrchestrationStarted)
	if !ok {
		return fmt.Errorf("runtime: replay %q: %w: execution begins with %s, not OrchestrationStarted", instance, ErrMalformedHistory, events[0].Type())
	}
	executionID := events[0].ExecutionID
	var version *string
	if started.Version != "" {
		version = &started.Version
	}
	fn, resolved, ok := r.resolveOrchestration(started.Name, version)
	if !ok {
		return fmt.Errorf("runtime: replay %q execution %d: %w: %s@%s", instance, executionID, ErrNotRegistered, started.Name, started.Version)
	}

	// The terminal event and what follows it (the breadcrumbs of a
	// terminal turn) are the outcome the code must reproduce, not input.
	terminal := len(events)
	for i, ev := range events {
		if ev.IsTerminal() {
			terminal = i
			break
		}
	}
	baseline := events[:terminal]
	snapshot := make(map[string]duroxide.KvEntry, len(kv))
	for k, v := range kv {
		snapshot[k] = v
	}
	engine := newReplayEngine(instance, executionID, baseline, len(baseline), snapshot, nil)
	engine.wholeHistory = true
	turn := engine.execute(fn, started.Input, started.Name, resolved.String())

	report := func(index int, event duroxide.Event, code, detail string) *NondeterminismError {
		return &NondeterminismError{
			Instance: instance, ExecutionID: executionID, Orchestration: started.Name, Version: resolved.String(),
			EventIndex: index, EventID: event.EventID, Event: event, History: describeRecorded(event, nil), Code: code, Detail: detail,
		}
	}

	if turn.kind == turnFailed {
		if c := turn.details.Configuration; c != nil && c.Kind == duroxide.ConfigErrorNondeterminism {
			detail := ""
			if c.Message != nil {
				detail = *c.Message
			}
			d := engine.divergence
			if d == nil {
				return &NondeterminismError{
					Instance: instance, ExecutionID: executionID, Orchestration: started.Name, Version: resolved.String(),
					EventIndex: -1, History: "(unknown)", Code: detail, Detail: detail,
				}
			}
			ne := report(d.index, d.event, describeCode(d), detail)
			ne.History = describeRecorded(d.event, d.action)
			ne.Hint = recordedCallHint(d.action)
			return ne
		}
		if turn.details.Infrastructure != nil {
			return fmt.Errorf("runtime: replay %q execution %d: %s", instance, executionID, turn.details.DisplayMessage())
		}
	}
	if terminal == len(events) {
		return nil // still running: whatever the code does next is new
	}
	end := events[terminal]
	for _, a := range engine.pendingActions {
		if a.kind != actContinueAsNew { // continue-as-new is an outcome, compared below
			ne := report(terminal, end, describeAction(a), "")
			ne.Hint = recordedCallHint(&a)
			return ne
		}
	}
	recordedPanic := false
	if f, ok := end.Kind.(duroxide.OrchestrationFailed); ok && f.Details.Application != nil && f.Details.Application.Kind.Name == duroxide.AppErrorPanicked {
		recordedPanic = true
	}
	if turn.kind == turnFailed && turn.details.Application != nil && turn.details.Application.Kind.Name == duroxide.AppErrorPanicked && !recordedPanic {
		return report(terminal, end, "panicked: "+turn.details.Application.Message, "")
	}
	var want []turnResultKind
	switch k := end.Kind.(type) {
	case duroxide.OrchestrationCompleted:
		want = []turnResultKind{turnCompleted, turnFailed}
	case duroxide.OrchestrationContinuedAsNew:
		want = []turnResultKind{turnContinueAsNew}
	case duroxide.OrchestrationFailed:
		switch {
		case k.Details.Application == nil:
			return nil // a runtime's failure (poison, infrastructure, configuration): no code decided it
		case k.Details.Application.Kind.Name == duroxide.AppErrorCancelled:
			want = []turnResultKind{turnCancelled}
		default:
			want = []turnResultKind{turnCompleted, turnFailed}
		}
	default:
		return nil
	}
	for _, w := range want {
		if turn.kind == w {
			return nil
		}
	}
	return report(terminal, end, describeOutcome(turn), "")
}

// describeOutcome says how a turn ended, for a history that ended another
// way.
func describeOutcome(t turnResult) string {
	switch t.kind {
	case turnCompleted:
		return "returned (completes the orchestration)"
	case turnFailed:
		if t.details.Application != nil {
			return "returned an error (fails the orchestration): " + t.details.Application.Message
		}
		return "failed: " + t.details.DisplayMessage()
	case turnContinueAsNew:
		return "continued as new"
	case turnCancelled:
		return "was cancelled"
	}
	return "still waits (for work the history never completes)"
}

// describeCode says what the code did where a replay diverged.
func describeCode(d *divergence) string {
	if d.action != nil {
		return describeActionAgainst(*d.action, d.event)
	}
	switch d.event.Kind.(type) {
	case duroxide.ActivityCancelRequested, duroxide.SubOrchestrationCancelRequested,
		duroxide.ExternalSubscribedCancelled, duroxide.QueueSubscriptionCancelled:
		return "no longer drops that future (it awaits it, or never scheduled it)"
	case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.TimerFired,
		duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
		return "has no open schedule it completes"
	}
	if d.returned {
		if d.panicked != nil {
			return "scheduled nothing more (it panicked: " + *d.panicked + ")"
		}
		if d.err != nil {
			return "scheduled nothing more (it returned an error: " + d.err.Error() + ")"
		}
		return "scheduled nothing more (it returned)"
	}
	return "scheduled nothing more (it waits for earlier work)"
}

// describeAction says what an action does, in the form "scheduled
// activity "Charge"".
func describeAction(a action) string {
	switch a.kind {
	case actCallActivity:
		switch a.name {
		case syscallUtcNowMs:
			return "called ctx.UtcNow() (system activity " + syscallUtcNowMs + ")"
		case syscallNewGUID:
			return "called ctx.NewGUID() (system activity " + syscallNewGUID + ")"
		}
		return fmt.Sprintf("scheduled activity %q", a.name)
	case actCreateTimer:
		return "created a timer"
	case actWaitExternal:
		return fmt.Sprintf("waits for external event %q", a.name)
	case actDequeueEvent:
		return fmt.Sprintf("dequeues from queue %q", a.name)
	case actStartSubOrchestration:
		return fmt.Sprintf("scheduled sub-orchestration %q", a.name)
	case actStartDetached:
		return fmt.Sprintf("started detached orchestration %q (instance %q)", a.name, a.instance)
	case actContinueAsNew:
		return "continued as new"
	case actUpdateCustomStatus:
		if a.status == nil {
			return "reset the custom status"
		}
		return fmt.Sprintf("set the custom status to %q", *a.status)
	case actSetKeyValue:
		return fmt.Sprintf("set KV %q", a.key)
	case actClearKeyValue:
		return fmt.Sprintf("cleared KV %q", a.key)
	case actClearKeyValues:
		return "cleared every KV value"
	}
	return a.String()
}

// describeActionAgainst is describeAction, plus the fields that differ
// from ev when the action and ev are the same call (same kind and name).
func describeActionAgainst(a action, ev duroxide.Event) string {
	return describeAction(a) + differences(a, ev, false)
}

// describeRecorded describes a recorded event, in the form
// `ActivityScheduled "ChargeCard"`, plus the fields that differ from a
// when a is the same call.
func describeRecorded(ev duroxide.Event, a *action) string {
	var b strings.Builder
	b.WriteString(string(ev.Type()))
	switch k := ev.Kind.(type) {
	case duroxide.ActivityScheduled:
		fmt.Fprintf(&b, " %q", k.Name)
	case duroxide.ExternalSubscribed:
		fmt.Fprintf(&b, " %q", k.Name)
	case duroxide.QueueSubscribed:
		fmt.Fprintf(&b, " %q", k.Name)
	case duroxide.SubOrchestrationScheduled:
		fmt.Fprintf(&b, " %q", k.Name)
	case duroxide.OrchestrationChained:
		fmt.Fprintf(&b, " %q (instance %q)", k.Name, k.Instance)
	case duroxide.KeyValueSet:
		fmt.Fprintf(&b, " %q", k.Key)
	case duroxide.KeyValueCleared:
		fmt.Fprintf(&b, " %q", k.Key)
	case duroxide.CustomStatusUpdated:
		if k.Status != nil {
			fmt.Fprintf(&b, " %q", *k.Status)
		}
	}
	if ev.SourceEventID != nil {
		fmt.Fprintf(&b, " (of event %d)", *ev.SourceEventID)
	}
	if a != nil {
		b.WriteString(differences(*a, ev, true))
	}
	return b.String()
}

// differences lists, for an action and a recorded event of the same call
// (same kind and name), the fields in which they differ, from the
// history's side (recorded) or the code's: ` with input "3"`.
func differences(a action, ev duroxide.Event, recorded bool) string {
	pick := func(code, hist string) string {
		if recorded {
			return hist
		}
		return code
	}
	strPtr := func(p *string) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprintf("%q", *p)
	}
	var diffs []string
	switch k := ev.Kind.(type) {
	case duroxide.ActivityScheduled:
		if a.kind != actCallActivity || a.name != k.Name {
			return ""
		}
		if a.input != k.Input {
			diffs = append(diffs, fmt.Sprintf("input %q", pick(a.input, k.Input)))
		}
		if !eqStrPtr(a.sessionID, k.SessionID) {
			diffs = append(diffs, "session "+pick(strPtr(a.sessionID), strPtr(k.SessionID)))
		}
		if !eqStrPtr(a.tag, k.Tag) {
			diffs = append(diffs, "tag "+pick(strPtr(a.tag), strPtr(k.Tag)))
		}
	case duroxide.SubOrchestrationScheduled:
		if a.kind != actStartSubOrchestration || a.name != k.Name || a.input == k.Input {
			return ""
		}
		diffs = append(diffs, fmt.Sprintf("input %q", pick(a.input, k.Input)))
	case duroxide.OrchestrationChained:
		if a.kind != actStartDetached || a.name != k.Name {
			return ""
		}
		if a.instance != k.Instance {
			diffs = append(diffs, fmt.Sprintf("instance %q", pick(a.instance, k.Instance)))
		}
		if a.input != k.Input {
			diffs = append(diffs, fmt.Sprintf("input %q", pick(a.input, k.Input)))
		}
	case duroxide.KeyValueSet:
		if a.kind != actSetKeyValue || a.key != k.Key || a.value == k.Value {
			return ""
		}
		diffs = append(diffs, fmt.Sprintf("value %q", pick(a.value, k.Value)))
	}
	if len(diffs) == 0 {
		return ""
	}
	return " with " + strings.Join(diffs, ", ")
}
