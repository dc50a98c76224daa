package duroxide

import (
	"testing"
	"time"
)

func TestEventTypeAndTerminal(t *testing.T) {
	terminal := map[EventType]bool{
		EventTypeOrchestrationCompleted:      true,
		EventTypeOrchestrationFailed:         true,
		EventTypeOrchestrationContinuedAsNew: true,
	}
	for _, g := range goldenEvents {
		et := g.event.Kind.EventType()
		checkEqual(t, et, g.event.Type(), g.name)
		checkEqual(t, terminal[et], g.event.IsTerminal(), g.name)
	}
	var empty Event
	checkEqual(t, EventType(""), empty.Type())
	checkEqual(t, false, empty.IsTerminal())

	// A nil pointer kind reads as no kind instead of panicking.
	var nilCompleted *OrchestrationCompleted
	nilPtr := Event{Kind: nilCompleted}
	checkEqual(t, EventType(""), nilPtr.Type())
	checkEqual(t, false, nilPtr.IsTerminal())
}

func TestNewEvent(t *testing.T) {
	before := uint64(time.Now().UnixMilli())
	e := NewEvent(3, "i", 2, Uint64Ptr(1), TimerFired{FireAtMs: 5})
	after := uint64(time.Now().UnixMilli())
	checkEqual(t, uint64(3), e.EventID)
	checkEqual(t, "i", e.InstanceID)
	checkEqual(t, uint64(2), e.ExecutionID)
	checkEqual(t, Uint64Ptr(1), e.SourceEventID)
	checkEqual(t, DuroxideVersion, e.DuroxideVersion)
	checkEqual(t, EventKind(TimerFired{FireAtMs: 5}), e.Kind)
	if e.TimestampMs < before || e.TimestampMs > after {
		t.Errorf("TimestampMs %d outside [%d, %d]", e.TimestampMs, before, after)
	}
}

func TestExecutionStateString(t *testing.T) {
	checkEqual(t, "Running", ExecutionState{Kind: ExecutionRunning}.String())
	checkEqual(t, "Terminal(Completed)", ExecutionState{Kind: ExecutionTerminal, Status: StatusCompleted}.String())
	checkEqual(t, "Missing", ExecutionState{Kind: ExecutionMissing}.String())
}
