package runtime

import (
	"log/slog"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// historyManager holds an execution's persisted history and the events a
// turn adds to it (duroxide's HistoryManager), with what the latest
// OrchestrationStarted says.
type historyManager struct {
	history []duroxide.Event
	delta   []duroxide.Event

	started                           *duroxide.OrchestrationStarted
	completed, failed, continuedAsNew bool
}

func newHistoryManager(history []duroxide.Event) *historyManager {
	h := &historyManager{history: history}
	last := -1
	for i := range history {
		// Only the index: taking the address of the asserted value here
		// would allocate it for every event of every turn.
		if _, ok := history[i].Kind.(duroxide.OrchestrationStarted); ok {
			last = i
		}
	}
	if last >= 0 {
		s := history[last].Kind.(duroxide.OrchestrationStarted)
		h.started = &s
	scan:
		for _, ev := range history[last+1:] {
			switch ev.Kind.(type) {
			case duroxide.OrchestrationCompleted:
				h.completed = true
				break scan
			case duroxide.OrchestrationFailed:
				h.failed = true
				break scan
			case duroxide.OrchestrationContinuedAsNew:
				h.continuedAsNew = true
				break scan
			}
		}
	}
	return h
}

func (h *historyManager) isEmpty() bool { return len(h.history) == 0 && len(h.delta) == 0 }

func (h *historyManager) full() []duroxide.Event {
	out := make([]duroxide.Event, 0, len(h.history)+len(h.delta))
	return append(append(out, h.history...), h.delta...)
}

// nextEventID is one past the highest event id so far.
func (h *historyManager) nextEventID() uint64 {
	var m uint64
	for _, ev := range h.history {
		m = max(m, ev.EventID)
	}
	for _, ev := range h.delta {
		m = max(m, ev.EventID)
	}
	return m + 1
}

// appendNew appends an event with the next event id.
func (h *historyManager) appendNew(instance string, executionID uint64, source *uint64, kind duroxide.EventKind) {
	h.delta = append(h.delta, duroxide.NewEvent(h.nextEventID(), instance, executionID, source, kind))
}

// startedEvent returns the latest OrchestrationStarted, looking at the
// delta too (a brand-new execution has it only there).
func (h *historyManager) startedEvent() *duroxide.OrchestrationStarted {
	for i := len(h.delta) - 1; i >= 0; i-- {
		if s, ok := h.delta[i].Kind.(duroxide.OrchestrationStarted); ok {
			return &s
		}
	}
	return h.started
}

// version returns the orchestration version of the latest
// OrchestrationStarted, nil when unknown or the "0.0.0" placeholder.
func (h *historyManager) version() *string {
	s := h.startedEvent()
	if s == nil || s.Version == "0.0.0" {
		return nil
	}
	return duroxide.StringPtr(s.Version)
}

// parentRef is a sub-orchestration's link to the parent call that started
// it: the parent instance, its SubOrchestrationScheduled event id and, since
// duroxide 0.1.30, the parent execution that scheduled it.
type parentRef struct {
	instance  string
	id        uint64
	execution *uint64 // nil when the start was written before 0.1.30
}

// resolveExecution returns the parent execution a child's completion goes to:
// the recorded one, or (for starts written before 0.1.30) what read finds.
func (p parentRef) resolveExecution(read parentExecutionFunc, child string) uint64 {
	if p.execution != nil {
		return *p.execution
	}
	return read(p.instance, p.id, child)
}

// parentLink returns the link to the parent call when this execution is a
// sub-orchestration's.
func (h *historyManager) parentLink() (parentRef, bool) {
	s := h.startedEvent()
	if s == nil || s.ParentInstance == nil || s.ParentID == nil {
		return parentRef{}, false
	}
	return parentRef{instance: *s.ParentInstance, id: *s.ParentID, execution: s.ParentExecutionID}, true
}

// inflightActivities returns the activities scheduled and neither completed
// nor already asked to cancel, in schedule order (duroxide's
// compute_inflight_activities).
func (h *historyManager) inflightActivities(instance string, executionID uint64) []duroxide.ScheduledActivityIdentifier {
	all := h.full()
	closed := map[uint64]bool{}
	for _, ev := range all {
		switch ev.Kind.(type) {
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.ActivityCancelRequested:
			if ev.SourceEventID != nil {
				closed[*ev.SourceEventID] = true
			}
		}
	}
	var out []duroxide.ScheduledActivityIdentifier
	for _, ev := range all {
		if _, ok := ev.Kind.(duroxide.ActivityScheduled); ok && !closed[ev.EventID] {
			out = append(out, duroxide.ScheduledActivityIdentifier{Instance: instance, ExecutionID: executionID, ActivityID: ev.EventID})
		}
	}
	return out
}

// workItemReader splits a turn's messages into the start item (a
// StartOrchestration or ContinueAsNew) and the completions, and says what to
// run (duroxide's WorkItemReader).
type workItemReader struct {
	start       *duroxide.WorkItem
	completions []duroxide.WorkItem
	// duplicates are the StartOrchestration messages that do not start
	// anything: a second start in the batch, a start beside the
	// ContinueAsNew, or a start of an instance whose execution already
	// began. Their parents, if any, are told the instance already exists
	// unless the start is a redelivery of the call that created it.
	duplicates []duroxide.StartOrchestrationItem
	// named is true when a start message or the history names the
	// orchestration to run (duroxide's Some(orchestration_name)); name may
	// still be "", which then resolves to nothing like any unregistered
	// name.
	named             bool
	name              string
	input             string
	version           *string
	parentInstance    *string
	parentID          *uint64
	parentExecutionID *uint64
	continueAsNew     bool
}

func newWorkItemReader(messages []duroxide.WorkItem, h *historyManager, instance string, logger *slog.Logger) workItemReader {
	var r workItemReader
	var starts []duroxide.StartOrchestrationItem
	for _, m := range messages {
		switch k := m.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			starts = append(starts, k)
		case duroxide.ContinueAsNewItem:
			// The durable successor of a continue-as-new always wins over a
			// start in the same batch: dropping it would leave the instance
			// Running with no execution (duroxide main's race rules).
			if _, dup := startKind(r.start).(duroxide.ContinueAsNewItem); dup {
				logger.Warn("second ContinueAsNew in one batch ignored", "instance", instance)
				continue
			}
			m := m
			r.start = &m
		case duroxide.ActivityExecuteItem:
			// never on the orchestrator queue
		default:
			r.completions = append(r.completions, m)
		}
	}
	for _, s := range starts {
		if r.start != nil || h.started != nil {
			// A start of an instance that exists never changes what runs:
			// name, version and input come from the instance, never the
			// message. It is dropped with a warning, as duroxide's
			// WorkItemReader drops a second start of a batch.
			running := ""
			if h.started != nil {
				running = h.started.Name
			}
			logger.Warn("start of an instance that already exists is inert; it keeps running what its history started",
				"instance", instance, "requested", s.Orchestration, "running", running)
			r.duplicates = append(r.duplicates, s)
			continue
		}
		m := duroxide.WorkItem{Kind: s}
		r.start = &m
	}
	switch s := startKind(r.start).(type) {
	case duroxide.StartOrchestrationItem:
		r.named = true
		r.name, r.input, r.version = s.Orchestration, s.Input, s.Version
		r.parentInstance, r.parentID, r.parentExecutionID = s.ParentInstance, s.ParentID, s.ParentExecutionID
	case duroxide.ContinueAsNewItem:
		// Carried-forward queue messages come first, ahead of anything
		// raised since, to keep FIFO order across the boundary.
		carried := make([]duroxide.WorkItem, 0, len(s.CarryForwardEvents)+len(r.completions))
		for _, nd := range s.CarryForwardEvents {
			carried = append(carried, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: nd.Name, Data: nd.Data}})
		}
		r.completions = append(carried, r.completions...)
		r.named = true
		r.name, r.input, r.version, r.continueAsNew = s.Orchestration, s.Input, s.Version, true
		r.parentInstance, r.parentID, r.parentExecutionID = s.ParentInstance, s.ParentID, s.ParentExecutionID
	default:
		if st := h.started; st != nil {
			r.named = true
			r.name, r.input, r.version = st.Name, st.Input, h.version()
			r.parentInstance, r.parentID, r.parentExecutionID = st.ParentInstance, st.ParentID, st.ParentExecutionID
		} else if len(r.completions) > 0 {
			logger.Warn("completion messages for unstarted instance", "instance", instance)
		}
	}
	return r
}

func startKind(w *duroxide.WorkItem) duroxide.WorkItemKind {
	if w == nil {
		return nil
	}
	return w.Kind
}
