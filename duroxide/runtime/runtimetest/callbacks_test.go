package runtimetest_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// approvalRegistry's Approve waits for "Approval" for at most 24 hours,
// after a first hour of review.
func approvalRegistry(t testing.TB) *runtime.Registry {
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("Approve", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.ScheduleTimer(time.Hour).Get(); err != nil {
			return "", err
		}
		w, by, err := ctx.Select(ctx.ScheduleWait("Approval"), ctx.ScheduleTimer(24*time.Hour))
		if err != nil || w == 1 {
			return "expired", err
		}
		return "approved by " + by, nil
	}))
	return reg
}

func TestAnEventRaisedAtAVirtualHourArrivesThen(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	inst := env.Start("a-1", "Approve", "")
	inst.RaiseEventAt(3*time.Hour, "Approval", "ann")
	inst.Wait()
	inst.AssertCompleted("approved by ann")
	var started, raised uint64
	for _, ev := range inst.History() {
		switch ev.Type() {
		case duroxide.EventTypeOrchestrationStarted:
			started = ev.TimestampMs
		case duroxide.EventTypeExternalEvent:
			raised = ev.TimestampMs
		}
	}
	// Hour 3 counts from New, a few milliseconds before the start.
	if at := time.Duration(raised-started) * time.Millisecond; at < 3*time.Hour-time.Second || at > 3*time.Hour+time.Minute {
		t.Fatalf("the event arrived at virtual %v after the start, want 3h", at)
	}
}

func TestAnEventRaisedBeforeTheWaitAtAVirtualHourIsDropped(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	inst := env.Start("a-2", "Approve", "")
	inst.RaiseEventAt(30*time.Minute, "Approval", "too early") // during the first hour
	inst.Wait()
	inst.AssertCompleted("expired")
	dropped := runtime.DroppedExternalEvents(inst.History())
	if len(dropped) != 1 || dropped[0].Reason != runtime.DroppedNoWaitPending {
		t.Fatalf("dropped %+v", dropped)
	}
}

func TestDelayedCallbacksRunInVirtualTimeOrder(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	var mu sync.Mutex
	var order []string
	at := func(name string) func() {
		return func() { mu.Lock(); order = append(order, name); mu.Unlock() }
	}
	env.RegisterDelayedCallback(5*time.Hour, at("5h"))
	env.RegisterDelayedCallback(2*time.Hour, at("2h"))
	env.Run("Approve", "") // runs 25 virtual hours: both are due
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, []string{"2h", "5h"}) {
		t.Fatalf("order %q", order)
	}
}

func TestWaitUntilWaitingReturnsOnceTheInstanceWaits(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, approvalRegistry(t))
	inst := env.Start("a-3", "Approve", "")
	inst.WaitUntilWaiting("Approval") // skips the first hour, not the 24
	timers := inst.Timers()
	if len(timers) != 2 || !timers[0].Fired || timers[1].Fired {
		t.Fatalf("timers %+v, want the hour fired and the day pending", timers)
	}
	if err := env.Client().RaiseEvent(context.Background(), "a-3", "Approval", "bob"); err != nil {
		t.Fatal(err)
	}
	inst.Wait()
	inst.AssertCompleted("approved by bob")
}

func TestHistoryAndActivitiesBeforeTheFirstTurnAreEmpty(t *testing.T) {
	t.Parallel()
	// An instance that was never started has no history either, and
	// reading it is not a failure.
	env := runtimetest.New(t, approvalRegistry(t))
	inst := env.Instance("never-started")
	if h, a := inst.History(), inst.Activities(); len(h) != 0 || len(a) != 0 {
		t.Fatalf("history %v, activities %v", h, a)
	}
}

func TestAnActivityTestedAloneSeesItsIDsAttemptAndCancellation(t *testing.T) {
	t.Parallel()
	charge := func(ctx *runtime.ActivityContext, in string) (string, error) {
		if ctx.AttemptCount() > 1 {
			return "", errors.New("redelivered: check the gateway first")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Millisecond):
		}
		return ctx.InstanceID() + "/" + ctx.ActivityName() + "/" + ctx.OrchestrationName() + "/" + in, nil
	}
	ctx, cancel := runtimetest.NewActivityContext(t, runtime.ActivityInfo{InstanceID: "order-7", ActivityName: "Charge"})
	defer cancel()
	if out, err := charge(ctx, "500"); err != nil || out != "order-7/Charge/test-orchestration/500" {
		t.Fatalf("%q, %v", out, err)
	}
	if ctx.ExecutionID() != 1 || ctx.ActivityID() != 1 || ctx.AttemptCount() != 1 || ctx.Client() == nil {
		t.Fatalf("defaults: execution %d, id %d, attempt %d", ctx.ExecutionID(), ctx.ActivityID(), ctx.AttemptCount())
	}
	again, cancelAgain := runtimetest.NewActivityContext(t, runtime.ActivityInfo{AttemptCount: 2})
	defer cancelAgain()
	if _, err := charge(again, ""); err == nil {
		t.Fatal("attempt 2 should refuse")
	}
	cancel()
	if !ctx.IsCancelled() {
		t.Fatal("not cancelled")
	}
	if _, err := charge(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled activity returned %v", err)
	}
}

// In real time a delayed callback runs on a timer's goroutine: the test's
// cleanup waits for one that is running (it may report through t), and
// one not yet due never runs after the test.
func TestARealTimeDelayedCallbackDoesNotOutliveItsTest(t *testing.T) {
	t.Parallel()
	var returned bool // written by the callback, read once the subtest ended
	t.Run("env", func(t *testing.T) {
		env := runtimetest.New(t, approvalRegistry(t), runtimetest.WithRealTime())
		entered := make(chan struct{})
		env.RegisterDelayedCallback(0, func() {
			close(entered)
			time.Sleep(50 * time.Millisecond) // still running when the subtest ends
			returned = true
		})
		env.RegisterDelayedCallback(time.Hour, func() { t.Error("a callback due after the test ran") })
		<-entered
	})
	if !returned {
		t.Fatal("the subtest ended while its delayed callback was still running")
	}
}
