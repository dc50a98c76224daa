package runtimetest

// An instance under test: waiting for it, signalling it, and assertions
// on its status and history.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Instance is an orchestration instance of an Env. Its assertions report
// a failure with t.Error, followed by the instance's history; its other
// methods stop the test (t.Fatal) when the provider fails.
type Instance struct {
	env *Env
	// ID is the instance's id.
	ID string
}

// Call is an activity or sub-orchestration an orchestration scheduled.
type Call struct {
	// Name is the activity's or orchestration's name.
	Name string
	// Input is the input it was scheduled with.
	Input string
	// Instance is a sub-orchestration's instance id as recorded (a
	// generated one reads "sub::<event id>"); empty for activities.
	// AssertSubOrchestrations compares it only when the wanted Call sets
	// it.
	Instance string
}

// Timer is a durable timer an orchestration created.
type Timer struct {
	// CreatedAt is when the TimerCreated event was recorded, and FireAt
	// when the timer fires (both to the millisecond).
	CreatedAt, FireAt time.Time
	// Fired reports whether its TimerFired is in history.
	Fired bool
}

// Delay is FireAt - CreatedAt: the delay the orchestration asked for, less
// the few milliseconds between the call and the recording of its event.
func (t Timer) Delay() time.Duration { return t.FireAt.Sub(t.CreatedAt) }

// Wait waits until the instance completes or fails (at most the
// environment's wait timeout) and returns its status. It stops the test,
// printing the history, when the wait times out.
func (i *Instance) Wait() runtime.OrchestrationStatus {
	i.env.t.Helper()
	i.env.mu.Lock()
	i.env.waiting++
	i.env.mu.Unlock()
	defer func() {
		i.env.mu.Lock()
		i.env.waiting--
		i.env.mu.Unlock()
	}()
	st, err := i.env.client.WaitForOrchestration(i.env.ctx, i.ID, i.env.waitTimeout)
	if err != nil {
		if p := i.env.problem(); p != nil {
			i.env.t.Fatalf("%v", p)
		}
		i.env.t.Fatalf("runtimetest: wait for %q: %v\n%s", i.ID, err, i.env.describe(i.ID))
	}
	return st
}

// Status returns the instance's current status.
func (i *Instance) Status() runtime.OrchestrationStatus {
	i.env.t.Helper()
	st, err := i.env.client.GetOrchestrationStatus(i.env.t.Context(), i.ID)
	if err != nil {
		i.env.t.Fatalf("runtimetest: status of %q: %v", i.ID, err)
	}
	return st
}

// History returns the events of every execution of the instance, in
// order: none before its first turn ran (the start is still queued).
func (i *Instance) History() []duroxide.Event {
	i.env.t.Helper()
	return History{Executions: i.executions()}.Events()
}

// String prints the instance's history, execution by execution.
func (i *Instance) String() string { return i.env.describe(i.ID) }

// RaiseEvent raises the external event name with data once the instance
// waits for it, and returns once the instance received it. It first waits
// until the instance's current execution has subscribed to name more times
// than it received name, since an event raised before the orchestration
// waits for it is dropped (duroxide's rule). Each wait lasts at most the
// environment's wait timeout; past it the test stops.
func (i *Instance) RaiseEvent(name, data string) {
	i.env.t.Helper()
	before, stopWaiting := i.waitUntilWaiting(name)
	defer stopWaiting()
	i.sendAfter(stopWaiting, fmt.Sprintf("receive event %q", name), func() error {
		return i.env.client.RaiseEvent(i.env.t.Context(), i.ID, name, data)
	}, func(execs []Execution) bool {
		_, got := eventCounts(execs, name)
		return got > before
	})
}

// EnqueueEvent sends data to the instance's queue (DequeueEvent) and
// returns once the instance received it (at most the environment's wait
// timeout); queued messages are kept until dequeued.
func (i *Instance) EnqueueEvent(queue, data string) {
	i.env.t.Helper()
	delivered := func(execs []Execution) int {
		n := 0
		for _, x := range execs {
			for _, ev := range x.Events {
				if k, ok := ev.Kind.(duroxide.QueueEventDelivered); ok && k.Name == queue {
					n++
				}
			}
		}
		return n
	}
	before := delivered(i.executions())
	i.send(fmt.Sprintf("receive a message on %q", queue), func() error {
		return i.env.client.EnqueueEvent(i.env.t.Context(), i.ID, queue, data)
	}, func(execs []Execution) bool { return delivered(execs) > before })
}

// Cancel asks the instance to stop, with reason, and returns once the
// instance recorded the request (at most the environment's wait timeout).
func (i *Instance) Cancel(reason string) {
	i.env.t.Helper()
	i.send("record the cancellation", func() error {
		return i.env.client.CancelInstance(i.env.t.Context(), i.ID, reason)
	}, func(execs []Execution) bool {
		for _, ev := range lastEvents(execs) {
			if _, ok := ev.Kind.(duroxide.OrchestrationCancelRequested); ok {
				return true
			}
		}
		return false
	})
}

// send runs do, then waits until received holds or the instance ended;
// meanwhile the environment does not skip time, so that a timer cannot
// overtake what the test sent.
func (i *Instance) send(what string, do func() error, received func([]Execution) bool) {
	i.env.t.Helper()
	i.sendAfter(func() {}, what, do, received)
}

// sendAfter is send, calling before once sending is counted.
func (i *Instance) sendAfter(before func(), what string, do func() error, received func([]Execution) bool) {
	i.env.t.Helper()
	i.env.mu.Lock()
	i.env.sending++
	i.env.mu.Unlock()
	before()
	defer func() {
		i.env.mu.Lock()
		i.env.sending--
		i.env.mu.Unlock()
	}()
	if err := do(); err != nil {
		i.env.t.Fatalf("runtimetest: %q: %s: %v", i.ID, what, err)
	}
	i.until(what, func(execs []Execution) bool {
		return received(execs) || openWork(lastEvents(execs)).end == endDone
	})
}

// until polls the instance's history until cond holds, for at most the
// environment's wait timeout, then stops the test.
func (i *Instance) until(what string, cond func([]Execution) bool) {
	i.env.t.Helper()
	deadline := time.Now().Add(i.env.waitTimeout)
	for !cond(i.executions()) {
		if p := i.env.problem(); p != nil {
			i.env.t.Fatalf("%v", p)
		}
		if !time.Now().Before(deadline) {
			i.env.t.Fatalf("runtimetest: %q did not %s within %v\n%s", i.ID, what, i.env.waitTimeout, i.env.describe(i.ID))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// executions reads the instance's executions (none before its first turn).
func (i *Instance) executions() []Execution {
	i.env.t.Helper()
	execs, err := i.env.history(i.ID)
	if err != nil && !errors.Is(err, ErrNoHistory) {
		i.env.t.Fatalf("%v", err) // ReadProvider's errors name the instance
	}
	return execs
}

// lastEvents returns the events of the last execution, or none.
func lastEvents(execs []Execution) []duroxide.Event {
	if len(execs) == 0 {
		return nil
	}
	return execs[len(execs)-1].Events
}

// Activities returns the activities the instance scheduled, in order
// across executions (duroxide's system activities, behind NewGUID, UtcNow
// and GetKVValueFromInstance, left out).
func (i *Instance) Activities() []Call {
	var out []Call
	for _, ev := range i.History() {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && !strings.HasPrefix(k.Name, "__duroxide_syscall:") {
			out = append(out, Call{Name: k.Name, Input: k.Input})
		}
	}
	return out
}

// SubOrchestrations returns the sub-orchestrations the instance
// scheduled, in order across executions.
func (i *Instance) SubOrchestrations() []Call {
	var out []Call
	for _, ev := range i.History() {
		if k, ok := ev.Kind.(duroxide.SubOrchestrationScheduled); ok {
			out = append(out, Call{Name: k.Name, Input: k.Input, Instance: k.Instance})
		}
	}
	return out
}

// Timers returns the durable timers the instance created, in order across
// executions.
func (i *Instance) Timers() []Timer {
	var out []Timer
	index := map[[2]uint64]int{}
	for _, ev := range i.History() {
		switch k := ev.Kind.(type) {
		case duroxide.TimerCreated:
			index[[2]uint64{ev.ExecutionID, ev.EventID}] = len(out)
			out = append(out, Timer{CreatedAt: time.UnixMilli(int64(ev.TimestampMs)), FireAt: time.UnixMilli(int64(k.FireAtMs))})
		case duroxide.TimerFired:
			if ev.SourceEventID != nil {
				if n, ok := index[[2]uint64{ev.ExecutionID, *ev.SourceEventID}]; ok {
					out[n].Fired = true
				}
			}
		}
	}
	return out
}

// fail reports a failed assertion with the instance's history.
func (i *Instance) fail(format string, args ...any) {
	i.env.t.Helper()
	i.env.t.Errorf("%s: %s\n%s", i.ID, fmt.Sprintf(format, args...), i.env.describe(i.ID))
}

// AssertCompleted checks that the instance completed with output.
func (i *Instance) AssertCompleted(output string) {
	i.env.t.Helper()
	st := i.Status()
	switch {
	case st.Kind != runtime.StatusCompleted:
		i.fail("status %s (%v), want Completed with output %q", st.Kind, st.Err(), output)
	case st.Output != output:
		i.fail("output %q, want %q", st.Output, output)
	}
}

// AssertFailed checks that the instance failed with an error whose
// message contains message (duroxide's display message, e.g.
// "orchestration failed: card declined").
func (i *Instance) AssertFailed(message string) {
	i.env.t.Helper()
	st := i.Status()
	switch {
	case st.Kind != runtime.StatusFailed:
		i.fail("status %s (output %q), want Failed with %q", st.Kind, st.Output, message)
	case !strings.Contains(fmt.Sprint(st.Err()), message):
		i.fail("failed with %q, want it to contain %q", fmt.Sprint(st.Err()), message)
	}
}

// AssertActivities checks that the instance scheduled exactly want, in
// order, names and inputs.
func (i *Instance) AssertActivities(want ...Call) {
	i.env.t.Helper()
	i.assertCalls("activities", i.Activities(), want)
}

// AssertActivityNames checks that the instance scheduled exactly the
// activities named, in order, whatever their inputs.
func (i *Instance) AssertActivityNames(want ...string) {
	i.env.t.Helper()
	var got []string
	for _, c := range i.Activities() {
		got = append(got, c.Name)
	}
	if !slices.Equal(got, want) {
		i.fail("activities %q, want %q", got, want)
	}
}

// AssertSubOrchestrations checks that the instance scheduled exactly want,
// in order: names and inputs, and instance ids where want sets them.
func (i *Instance) AssertSubOrchestrations(want ...Call) {
	i.env.t.Helper()
	got := i.SubOrchestrations()
	cmp := make([]Call, len(got))
	for n, c := range got {
		if n < len(want) && want[n].Instance == "" {
			c.Instance = ""
		}
		cmp[n] = c
	}
	i.assertCalls("sub-orchestrations", cmp, want)
}

func (i *Instance) assertCalls(what string, got, want []Call) {
	i.env.t.Helper()
	same := len(got) == len(want)
	for n := 0; same && n < len(got); n++ {
		same = got[n] == want[n]
	}
	if !same {
		i.fail("%s\n got %s\nwant %s", what, formatCalls(got), formatCalls(want))
	}
}

// AssertTimers checks that the instance created one timer per delay of
// want, in order, each within a second of its delay (Timer.Delay is
// measured from the event's timestamp).
func (i *Instance) AssertTimers(want ...time.Duration) {
	i.env.t.Helper()
	got := i.Timers()
	same := len(got) == len(want)
	for n := 0; same && n < len(got); n++ {
		d := got[n].Delay() - want[n]
		same = d > -time.Second && d < time.Second
	}
	if !same {
		delays := make([]time.Duration, len(got))
		for n, t := range got {
			delays[n] = t.Delay()
		}
		i.fail("timers of %v, want %v", delays, want)
	}
}

// formatCalls prints calls as [Name("input"), ...].
func formatCalls(calls []Call) string {
	parts := make([]string, len(calls))
	for n, c := range calls {
		parts[n] = fmt.Sprintf("%s(%q)", c.Name, c.Input)
		if c.Instance != "" {
			parts[n] += " as " + fmt.Sprintf("%q", c.Instance)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
