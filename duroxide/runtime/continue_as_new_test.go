package runtime_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Continue-as-new at the edges duroxide 0.1.27-0.1.30 fixed: children of
// later executions, children that continue as new, queue events past the
// carry-forward limit, reserved child ids.

// TestChildrenOfLaterExecutionsGetDistinctIDs: a parent that schedules a
// generated-id child in every execution gets "<parent>::sub::<event id>" in
// the first and "<parent>::sub::<execution>_<event id>" after that; before,
// execution 2's child reused execution 1's id, collided with the finished
// child and never completed.
func TestChildrenOfLaterExecutionsGetDistinctIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return "child " + in + " as " + ctx.InstanceID(), nil
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			out, err := ctx.ScheduleSubOrchestration("Child", in).Get()
			if err != nil {
				return "", err
			}
			n, _ := strconv.Atoi(in)
			if n < 3 {
				return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
			}
			return out, nil
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("can-parent", "Parent", "1"), "child 3 as can-parent::sub::3_2")
	for _, child := range []string{"can-parent::sub::2", "can-parent::sub::2_2", "can-parent::sub::3_2"} {
		st := e.wait(child)
		if st.Kind != runtime.StatusCompleted {
			t.Errorf("child %s: %s %v", child, st.Kind, st.Err())
		}
	}
}

// TestChildThatContinuesAsNewNotifiesItsParent: a sub-orchestration that
// continues as new keeps its link to the parent call, so the execution that
// finally completes answers it; before, the link was lost at the first
// continue-as-new and the parent waited for ever.
func TestChildThatContinuesAsNewNotifiesItsParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Looper", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			n, _ := strconv.Atoi(in)
			if n < 3 {
				return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
			}
			return fmt.Sprintf("done after %d executions", ctx.ExecutionID()), nil
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleSubOrchestration("Looper", in).Get()
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("can-child-parent", "Parent", "1"), "done after 3 executions")

	h, err := e.provider.ReadWithExecution(e.ctx, "can-child-parent::sub::2", 3)
	if err != nil || len(h) == 0 {
		t.Fatalf("the child's third execution: %v, %v", h, err)
	}
	s, ok := h[0].Kind.(duroxide.OrchestrationStarted)
	if !ok || s.ParentInstance == nil || *s.ParentInstance != "can-child-parent" || s.ParentID == nil || *s.ParentID != 2 ||
		s.ParentExecutionID == nil || *s.ParentExecutionID != 1 {
		t.Fatalf("the third execution's start lost the parent link: %+v", h[0].Kind)
	}
}

// TestQueueEventsPastTheCarryForwardLimitReachTheSuccessor: more unread
// queue events than MaxCarryForwardEvents all reach the next execution, in
// order; before, those past the limit were dropped with a warning.
func TestQueueEventsPastTheCarryForwardLimitReachTheSuccessor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	total := duroxide.MaxCarryForwardEvents + 20
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Mailbox", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		if ctx.ExecutionID() == 1 {
			if _, err := ctx.ScheduleWait("go").Get(); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew("next")
		}
		var got []string
		for range total {
			v, err := ctx.DequeueEvent("inbox").Get()
			if err != nil {
				return "", err
			}
			got = append(got, v)
		}
		return strings.Join(got, ","), nil
	}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, "mailbox", "Mailbox", ""); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, e, "mailbox")
	want := make([]string, total)
	for i := range want {
		want[i] = strconv.Itoa(i)
		if err := e.client.EnqueueEvent(e.ctx, "mailbox", "inbox", want[i]); err != nil {
			t.Fatal(err)
		}
	}
	waitForEvent(t, e, "mailbox", duroxide.EventTypeExternalSubscribed)
	if err := e.client.RaiseEvent(e.ctx, "mailbox", "go", ""); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait("mailbox"), strings.Join(want, ","))
}

// TestStartRefusesReservedChildIDs: a root start on an id of the shape the
// runtime gives children ("sub::…", "…::sub::…") is refused before the
// provider is called, with ErrReservedInstanceID.
func TestStartRefusesReservedChildIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range []string{"sub::1", "order::sub::2", "a::sub::3_4"} {
		err := e.client.StartOrchestration(e.ctx, id, "Any", "")
		if !errors.Is(err, runtime.ErrReservedInstanceID) {
			t.Errorf("start %q: %v, want ErrReservedInstanceID", id, err)
		}
		if st, _ := e.client.GetOrchestrationStatus(e.ctx, id); st.Kind != runtime.StatusNotFound {
			t.Errorf("start %q stored something: %s", id, st.Kind)
		}
	}
	for _, id := range []string{"subscription::1", "my-sub::x", "a:sub::b"} {
		if err := e.client.StartOrchestration(e.ctx, id, "Any", ""); err != nil {
			t.Errorf("start %q refused: %v", id, err)
		}
	}
}

// TestContinueAsNewCarriesAMessageAHeldWaitNeverRead: an execution this
// runtime starts (stamped 0.1.31) carries across continue-as-new exactly
// the queue messages no wait read, duroxide main's rule: a message that
// arrived while a dequeue the code holds but never awaits was subscribed
// reaches the successor. The legacy rule (executions stamped 0.1.30) counts
// that subscription as the message's reader and drops it (see
// TestNewEngineContinueAsNewCarriesExactlyTheUnreadArrivals).
func TestContinueAsNewCarriesAMessageAHeldWaitNeverRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Holder", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		if in == "first" {
			_ = ctx.DequeueEvent("q") // held, never awaited
			if _, err := ctx.DequeueEvent("go").Get(); err != nil {
				return "", err
			}
			return "", ctx.ContinueAsNew("second")
		}
		w, v, err := ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(5*time.Second))
		if err != nil || w == 1 {
			return "lost", err
		}
		return "carried " + v, nil
	}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, "held-wait-carry", "Holder", "first"); err != nil {
		t.Fatal(err)
	}
	for _, m := range [][2]string{{"q", "kept"}, {"go", "now"}} {
		if err := e.client.EnqueueEvent(e.ctx, "held-wait-carry", m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	wantOutput(t, e.wait("held-wait-carry"), "carried kept")
}
