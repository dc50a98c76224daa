package runtime

import (
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// History builders for replay-engine tests (duroxide's
// tests/replay_engine/helpers.rs).

const testInstance = "inst"

func ev(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.NewEvent(id, testInstance, 1, source, kind)
}

func src(id uint64) *uint64 { return duroxide.Uint64Ptr(id) }

func startedEv(id uint64) duroxide.Event {
	return ev(id, nil, duroxide.OrchestrationStarted{Name: "TestOrch", Version: "1.0.0", Input: "input"})
}

func actSched(id uint64, name, input string) duroxide.Event {
	return ev(id, nil, duroxide.ActivityScheduled{Name: name, Input: input})
}

func actDone(id, source uint64, result string) duroxide.Event {
	return ev(id, src(source), duroxide.ActivityCompleted{Result: result})
}

func actFailed(id, source uint64, msg string) duroxide.Event {
	return ev(id, src(source), duroxide.ActivityFailed{Details: duroxide.ApplicationError(duroxide.AppErrorActivityFailed, msg)})
}

func timerCreated(id, fireAt uint64) duroxide.Event {
	return ev(id, nil, duroxide.TimerCreated{FireAtMs: fireAt})
}

func timerFired(id, source, fireAt uint64) duroxide.Event {
	return ev(id, src(source), duroxide.TimerFired{FireAtMs: fireAt})
}

func extSubscribed(id uint64, name string) duroxide.Event {
	return ev(id, nil, duroxide.ExternalSubscribed{Name: name})
}

func extEvent(id uint64, name, data string) duroxide.Event {
	return ev(id, nil, duroxide.ExternalEvent{Name: name, Data: data})
}

func queueSubscribed(id uint64, name string) duroxide.Event {
	return ev(id, nil, duroxide.QueueSubscribed{Name: name})
}

func queueDelivered(id uint64, name, data string) duroxide.Event {
	return ev(id, nil, duroxide.QueueEventDelivered{Name: name, Data: data})
}

func subSched(id uint64, name, instance, input string) duroxide.Event {
	return ev(id, nil, duroxide.SubOrchestrationScheduled{Name: name, Instance: instance, Input: input})
}

func subDone(id, source uint64, result string) duroxide.Event {
	return ev(id, src(source), duroxide.SubOrchestrationCompleted{Result: result})
}

func msg(kind duroxide.WorkItemKind) duroxide.WorkItem { return duroxide.WorkItem{Kind: kind} }

func actDoneMsg(id uint64, result string) duroxide.WorkItem {
	return msg(duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: id, Result: result})
}

func timerMsg(id uint64) duroxide.WorkItem {
	return msg(duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: id, FireAtMs: 1})
}

// engineFor returns an engine over a fully persisted history.
func engineFor(history ...duroxide.Event) *replayEngine {
	return newReplayEngine(testInstance, 1, history, len(history), nil, nil)
}

func run(e *replayEngine, fn OrchestrationFunc) turnResult {
	return e.execute(fn, "input", "TestOrch", "1.0.0")
}

func wantCompleted(t *testing.T, r turnResult, output string) {
	t.Helper()
	if r.kind != turnCompleted || r.output != output {
		t.Fatalf("want Completed(%q), got %s", output, describeTurn(r))
	}
}

func wantContinue(t *testing.T, r turnResult) {
	t.Helper()
	if r.kind != turnContinue {
		t.Fatalf("want Continue, got %s", describeTurn(r))
	}
}

func wantNondeterminism(t *testing.T, r turnResult, substr string) {
	t.Helper()
	c := r.details.Configuration
	if r.kind != turnFailed || c == nil || c.Kind != duroxide.ConfigErrorNondeterminism {
		t.Fatalf("want nondeterminism, got %s", describeTurn(r))
	}
	if substr != "" && (c.Message == nil || !strings.Contains(*c.Message, substr)) {
		t.Fatalf("want nondeterminism containing %q, got %s", substr, describeTurn(r))
	}
}

func describeTurn(r turnResult) string {
	switch r.kind {
	case turnContinue:
		return "Continue"
	case turnCompleted:
		return "Completed(" + r.output + ")"
	case turnFailed:
		return "Failed(" + r.details.Category() + ": " + r.details.DisplayMessage() + ")"
	case turnContinueAsNew:
		return "ContinueAsNew(" + r.input + ")"
	case turnCancelled:
		return "Cancelled(" + r.reason + ")"
	}
	return "?"
}

// deltaTypes lists the event types of the engine's new events.
func deltaTypes(e *replayEngine) []duroxide.EventType {
	out := make([]duroxide.EventType, len(e.historyDelta))
	for i, ev := range e.historyDelta {
		out[i] = ev.Type()
	}
	return out
}
