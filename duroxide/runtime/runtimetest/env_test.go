package runtimetest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

func TestEnvRunsTheRegistryAndRecordsEveryActivityCall(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders(t, "Reserve", "Charge"))
	inst := env.Run("ProcessOrder", "o7")
	if inst.ID != "ProcessOrder-1" {
		t.Errorf("instance id %q", inst.ID)
	}
	inst.AssertCompleted("Reserve,Charge")
	inst.AssertActivities(runtimetest.Call{Name: "Reserve", Input: "o7"}, runtimetest.Call{Name: "Charge", Input: "o7"})
	inst.AssertActivityNames("Reserve", "Charge")
	calls := env.ActivityCalls()
	if len(calls) != 2 || calls[0].Name != "Reserve" || calls[1].Name != "Charge" {
		t.Fatalf("%+v", calls)
	}
	for _, c := range calls {
		if c.Input != "o7" || c.Attempt != 1 || c.Result != c.Name || c.Err != nil || c.Instance != inst.ID || c.ExecutionID != 1 || c.ActivityID == 0 {
			t.Errorf("%+v", c)
		}
	}
}

func TestActivityMockReturnsFailsOrRunsInsteadOfTheRegisteredActivity(t *testing.T) {
	t.Parallel()
	reg := orders(t, "Reserve", "Charge")

	env := runtimetest.New(t, reg)
	env.MockActivity("Charge").Returns("receipt-1")
	env.MockActivity("Reserve").Runs(func(_ *runtime.ActivityContext, in string) (string, error) { return "held " + in, nil })
	inst := env.Run("ProcessOrder", "o7")
	inst.AssertCompleted("Reserve,Charge")
	if c := env.MockActivity("Charge").Calls(); len(c) != 1 || c[0].Result != "receipt-1" || c[0].Input != "o7" {
		t.Errorf("Charge: %+v", c)
	}
	if c := env.ActivityCalls("Reserve"); len(c) != 1 || c[0].Result != "held o7" {
		t.Errorf("Reserve: %+v", c)
	}

	env = runtimetest.New(t, reg)
	env.MockActivity("Charge").Fails(errors.New("card declined"))
	inst = env.Run("ProcessOrder", "o8")
	inst.AssertFailed("card declined")
	inst.AssertActivityNames("Reserve", "Charge")

	// The user's registry is untouched: a third environment runs the
	// registered activities.
	env = runtimetest.New(t, reg)
	env.Run("ProcessOrder", "o9").AssertCompleted("Reserve,Charge")
	if c := env.ActivityCalls("Charge"); len(c) != 1 || c[0].Result != "Charge" {
		t.Errorf("registered Charge: %+v", c)
	}
}

func TestActivityMockFailsTheFirstCallsToExerciseARetryPolicy(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Charge", func(_ *runtime.ActivityContext, in string) (string, error) { return "charged " + in, nil }))
	must(t, reg.RegisterOrchestration("Pay", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Charge", input, runtime.RetryPolicy{
			MaxAttempts: 3, Backoff: runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: time.Millisecond},
		}).Get()
	}))
	env := runtimetest.New(t, reg)
	charge := env.MockActivity("Charge").FailsFirst(2, errors.New("gateway busy"))
	inst := env.Run("Pay", "o7")
	inst.AssertCompleted("charged o7")
	calls := charge.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls: %+v", len(calls), calls)
	}
	for n, c := range calls {
		wantErr := n < 2
		if c.Attempt != n+1 || (c.Err != nil) != wantErr || c.Input != "o7" {
			t.Errorf("call %d: %+v", n, c)
		}
	}
	inst.AssertActivityNames("Charge", "Charge", "Charge")
	if n := len(inst.Timers()); n != 2 {
		t.Errorf("%d backoff timers, want 2", n)
	}

	// Past the policy's attempts the orchestration fails with the last error.
	env = runtimetest.New(t, reg)
	env.MockActivity("Charge").FailsFirst(3, errors.New("gateway down"))
	env.Run("Pay", "o8").AssertFailed("gateway down")
}

func TestActivityMockStandsInForAnUnregisteredActivity(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("AskFraudService", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		return ctx.ScheduleActivity("FraudScore", input).Get()
	}))
	env := runtimetest.New(t, reg)
	env.MockActivity("FraudScore").Returns("0.02")
	env.Run("AskFraudService", "o7").AssertCompleted("0.02")

	// A mock with no behaviour and nothing registered fails the call.
	env = runtimetest.New(t, reg)
	env.MockActivity("FraudScore")
	env.Run("AskFraudService", "o8").AssertFailed("no behaviour")
}

func TestEnvShowsSubOrchestrationsTimersAndEvents(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders(t, "Reserve", "timer", "sub:Payment", "wait:approval"))
	inst := env.Start("order-7", "ProcessOrder", "o7")
	inst.RaiseEvent("approval", "yes")
	if st := inst.Wait(); st.Kind != runtime.StatusCompleted {
		t.Fatalf("%+v\n%s", st, inst)
	}
	inst.AssertCompleted("Reserve,timer,sub:Payment,wait:approval")
	inst.AssertSubOrchestrations(runtimetest.Call{Name: "Payment", Input: "o7"})
	inst.AssertSubOrchestrations(runtimetest.Call{Name: "Payment", Input: "o7", Instance: "sub::6"})
	inst.AssertTimers(time.Millisecond)
	if timers := inst.Timers(); len(timers) != 1 || !timers[0].Fired {
		t.Errorf("%+v", timers)
	}
	env.Instance("order-7::sub::6").AssertCompleted("Payment")
}

func TestFailedAssertionsPrintTheHistory(t *testing.T) {
	t.Parallel()
	reg := orders(t, "Reserve")
	var env *runtimetest.Env
	var inst *runtimetest.Instance
	rec := capture(t, func(tb testing.TB) {
		env = runtimetest.New(tb, reg)
		inst = env.Run("ProcessOrder", "o7")
		inst.AssertCompleted("something else")
		inst.AssertFailed("boom")
		inst.AssertActivities(runtimetest.Call{Name: "Reserve", Input: "o8"})
		inst.AssertActivityNames("Reserve", "Ship")
		inst.AssertSubOrchestrations(runtimetest.Call{Name: "Payment"})
		inst.AssertTimers(time.Hour)
	})
	if rec.fatal != "" || len(rec.errors) != 6 {
		t.Fatalf("fatal %q, %d errors: %q", rec.fatal, len(rec.errors), rec.errors)
	}
	for n, want := range []string{
		`output "Reserve", want "something else"`,
		`status Completed (output "Reserve"), want Failed with "boom"`,
		"activities\n got [Reserve(\"o7\")]\nwant [Reserve(\"o8\")]",
		`activities ["Reserve"], want ["Reserve" "Ship"]`,
		"sub-orchestrations\n got []\nwant [Payment(\"\")]",
		"timers of [], want [1h0m0s]",
	} {
		e := rec.errors[n]
		if !strings.Contains(e, want) || !strings.Contains(e, `history of "ProcessOrder-1", execution 1:`) || !strings.Contains(e, "ActivityScheduled") {
			t.Errorf("error %d lacks %q or the history:\n%s", n, want, e)
		}
	}
}

func TestEnvRunsOnTheProviderGiven(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	env := runtimetest.New(t, orders(t, "Reserve"), runtimetest.WithProvider(p), runtimetest.WithOptions(runtime.Options{WorkerConcurrency: 1}))
	if env.Provider() != p {
		t.Fatal("not the provider given")
	}
	env.Run("ProcessOrder", "o7").AssertCompleted("Reserve")
	ids, err := p.ListInstances(t.Context())
	must(t, err)
	if len(ids) != 1 || ids[0] != "ProcessOrder-1" {
		t.Fatalf("%q", ids)
	}
}

func TestWaitStopsTheTestWithTheHistoryWhenTheInstanceNeverEnds(t *testing.T) {
	t.Parallel()
	reg := orders(t, "Reserve", "wait:approval")
	rec := capture(t, func(tb testing.TB) {
		env := runtimetest.New(tb, reg, runtimetest.WithWaitTimeout(50*time.Millisecond))
		env.Start("order-7", "ProcessOrder", "o7").Wait()
	})
	if !strings.Contains(rec.fatal, `wait for "order-7"`) || !strings.Contains(rec.fatal, "history of") {
		t.Fatalf("%q", rec.fatal)
	}
}
