package stress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The end-of-run history check of the stress harness: every scheduled
// activity and sub-orchestration has exactly one result in history (none is
// a lost result, two a duplicated one), event ids run 1, 2, 3, ... without a
// gap or repeat, the history starts with one OrchestrationStarted and ends
// with one OrchestrationCompleted, and no activity ran twice.

// scheduledWork is an ActivityScheduled or SubOrchestrationScheduled event
// and the results history holds for it.
type scheduledWork struct {
	eventID  uint64
	name     string
	input    string
	instance string // the child instance of a sub-orchestration
	results  []string
	failures []string
}

// stressHistory is one instance's history, indexed for the checks.
type stressHistory struct {
	instance   string
	output     string
	activities []*scheduledWork
	subs       []*scheduledWork
	// problems are the structural faults found while indexing.
	problems []string
}

// readStressHistory reads instance's (only) execution and checks its
// structure; the returned error is a problem description for a read
// failure.
func readStressHistory(ctx context.Context, p duroxide.Provider, instance string) (*stressHistory, error) {
	events, err := p.ReadWithExecution(ctx, instance, duroxide.InitialExecutionID)
	if err != nil {
		return nil, fmt.Errorf("%s: read history: %w", instance, err)
	}
	return indexStressHistory(instance, events), nil
}

// indexStressHistory indexes events and records every structural fault.
func indexStressHistory(instance string, events []duroxide.Event) *stressHistory {
	h := &stressHistory{instance: instance}
	if len(events) == 0 {
		h.problem("no history")
		return h
	}
	byID := map[uint64]*scheduledWork{}
	started, terminal := 0, 0
	for i, ev := range events {
		if ev.EventID != uint64(i+1) {
			h.problem("event %d has id %d (ids must run 1, 2, 3, ... without gaps or repeats)", i+1, ev.EventID)
		}
		if ev.InstanceID != instance || ev.ExecutionID != duroxide.InitialExecutionID {
			h.problem("event %d belongs to %s execution %d", ev.EventID, ev.InstanceID, ev.ExecutionID)
		}
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			started++
			if i != 0 {
				h.problem("OrchestrationStarted at position %d", i+1)
			}
		case duroxide.ActivityScheduled:
			w := &scheduledWork{eventID: ev.EventID, name: k.Name, input: k.Input}
			h.activities = append(h.activities, w)
			byID[ev.EventID] = w
		case duroxide.SubOrchestrationScheduled:
			w := &scheduledWork{eventID: ev.EventID, name: k.Name, input: k.Input, instance: childInstance(instance, k.Instance)}
			h.subs = append(h.subs, w)
			byID[ev.EventID] = w
		case duroxide.ActivityCompleted:
			h.addResult(byID, ev, false, k.Result, "")
		case duroxide.ActivityFailed:
			h.addResult(byID, ev, false, "", k.Details.DisplayMessage())
		case duroxide.SubOrchestrationCompleted:
			h.addResult(byID, ev, true, k.Result, "")
		case duroxide.SubOrchestrationFailed:
			h.addResult(byID, ev, true, "", k.Details.DisplayMessage())
		case duroxide.OrchestrationCompleted:
			terminal++
			h.output = k.Output
			if i != len(events)-1 {
				h.problem("OrchestrationCompleted is event %d of %d", i+1, len(events))
			}
		case duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			terminal++
			h.problem("unexpected terminal event %s", ev.Type())
		case duroxide.ActivityCancelRequested, duroxide.SubOrchestrationCancelRequested, duroxide.OrchestrationCancelRequested:
			h.problem("unexpected cancellation %s (event %d)", ev.Type(), ev.EventID)
		}
	}
	if started != 1 {
		h.problem("%d OrchestrationStarted events, want 1", started)
	}
	if terminal != 1 {
		h.problem("%d terminal events, want 1", terminal)
	}
	return h
}

// addResult attaches a completion event to the work it answers.
func (h *stressHistory) addResult(byID map[uint64]*scheduledWork, ev duroxide.Event, sub bool, result, failure string) {
	if ev.SourceEventID == nil {
		h.problem("%s (event %d) has no source event id", ev.Type(), ev.EventID)
		return
	}
	w, ok := byID[*ev.SourceEventID]
	if !ok || (w.instance != "") != sub {
		h.problem("%s (event %d) answers event %d, which is not a matching scheduled event", ev.Type(), ev.EventID, *ev.SourceEventID)
		return
	}
	if failure != "" {
		w.failures = append(w.failures, failure)
		return
	}
	w.results = append(w.results, result)
}

func (h *stressHistory) problem(format string, args ...any) {
	h.problems = append(h.problems, h.instance+": "+fmt.Sprintf(format, args...))
}

// expectActivities checks that history scheduled want activities (named
// name, or any name when name is empty), that each has exactly one result,
// and that resultOK accepts each (input, result) pair.
func (h *stressHistory) expectActivities(name string, want int, resultOK func(input, result string) bool) []string {
	var problems []string
	got := 0
	for _, w := range h.activities {
		if name != "" && w.name != name {
			problems = append(problems, fmt.Sprintf("%s: unexpected activity %q (event %d)", h.instance, w.name, w.eventID))
			continue
		}
		got++
		problems = append(problems, h.exactlyOnce("activity", w)...)
		for _, r := range w.results {
			if !resultOK(w.input, r) {
				problems = append(problems, fmt.Sprintf("%s: activity %s (event %d) has a result that does not match its input", h.instance, w.name, w.eventID))
			}
		}
	}
	if got != want {
		problems = append(problems, fmt.Sprintf("%s: %d activities scheduled, want %d", h.instance, got, want))
	}
	return problems
}

// expectSubOrchestrations checks that history scheduled want
// sub-orchestrations and that each has exactly one result.
func (h *stressHistory) expectSubOrchestrations(want int) []string {
	var problems []string
	if len(h.subs) != want {
		problems = append(problems, fmt.Sprintf("%s: %d sub-orchestrations scheduled, want %d", h.instance, len(h.subs), want))
	}
	for _, w := range h.subs {
		problems = append(problems, h.exactlyOnce("sub-orchestration", w)...)
	}
	return problems
}

// exactlyOnce reports a lost, failed or duplicated result of w.
func (h *stressHistory) exactlyOnce(what string, w *scheduledWork) []string {
	var problems []string
	switch n := len(w.results) + len(w.failures); {
	case n == 0:
		problems = append(problems, fmt.Sprintf("%s: %s %s (event %d) has no result: lost", h.instance, what, w.name, w.eventID))
	case n > 1:
		problems = append(problems, fmt.Sprintf("%s: %s %s (event %d) has %d results: duplicated", h.instance, what, w.name, w.eventID, n))
	}
	for _, f := range w.failures {
		problems = append(problems, fmt.Sprintf("%s: %s %s (event %d) failed: %s", h.instance, what, w.name, w.eventID, f))
	}
	return problems
}

// childInstance is the instance id a SubOrchestrationScheduled event's id
// stands for: a generated id ("sub::N") is relative to the parent, which
// the runtime prefixes ("<parent>::sub::N", duroxide's
// build_child_instance_id); any other id is used as given.
func childInstance(parent, child string) string {
	if strings.HasPrefix(child, duroxide.SubOrchAutoPrefix) {
		return parent + "::" + child
	}
	return child
}

// children returns the child instances of the scheduled sub-orchestrations.
func (h *stressHistory) children() []string {
	out := make([]string, 0, len(h.subs))
	for _, w := range h.subs {
		out = append(out, w.instance)
	}
	return out
}

// subResult returns the single result recorded for child.
func (h *stressHistory) subResult(child string) (string, bool) {
	for _, w := range h.subs {
		if w.instance == child && len(w.results) == 1 {
			return w.results[0], true
		}
	}
	return "", false
}

// executionKey identifies one scheduled activity.
type executionKey struct {
	instance    string
	executionID uint64
	activityID  uint64
}

// executionLog counts how often each activity ran; in a run without faults
// every activity runs once, so a second run means the provider handed the
// same work item to two workers or redelivered an acknowledged one.
type executionLog struct {
	mu    sync.Mutex
	count map[executionKey]int
}

func newExecutionLog() *executionLog {
	return &executionLog{count: map[executionKey]int{}}
}

// wrap returns fn recording each of its executions.
func (l *executionLog) wrap(fn runtime.ActivityFunc) runtime.ActivityFunc {
	return func(ctx *runtime.ActivityContext, input string) (string, error) {
		k := executionKey{instance: ctx.InstanceID(), executionID: ctx.ExecutionID(), activityID: ctx.ActivityID()}
		l.mu.Lock()
		l.count[k]++
		l.mu.Unlock()
		return fn(ctx, input)
	}
}

// duplicates describes the activities of instance and of its
// sub-orchestrations ("<instance>::..." ids) that ran more than once.
func (l *executionLog) duplicates(instance string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, n := range l.count {
		if n > 1 && (k.instance == instance || strings.HasPrefix(k.instance, instance+"::")) {
			out = append(out, fmt.Sprintf("%s: activity %d of execution %d ran %d times", k.instance, k.activityID, k.executionID, n))
		}
	}
	slices.Sort(out)
	return out
}
