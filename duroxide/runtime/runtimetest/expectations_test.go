package runtimetest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// checkout charges the order's card, then ships through the
// sub-orchestration Ship.
func checkoutRegistry(t testing.TB) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Charge", func(*runtime.ActivityContext, string) (string, error) {
		return "", errors.New("the real gateway must not be called in this test")
	}))
	must(t, reg.RegisterOrchestration("Checkout", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		receipt, err := ctx.ScheduleActivity("Charge", in).Get()
		if err != nil {
			return "", err
		}
		tracking, err := ctx.ScheduleSubOrchestration("Ship", in).Get()
		if err != nil {
			return "", err
		}
		return receipt + "/" + tracking, nil
	}))
	return reg
}

func TestExpectationsAnswerByInputAndCountCalls(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, checkoutRegistry(t))
	env.OnActivity("Charge", runtimetest.JSONEquals(map[string]int{"cents": 500, "id": 7})).Returns("r-7").Once()
	env.OnActivity("Charge", runtimetest.MatchedBy("a big order", func(in string) bool { return strings.Contains(in, `"cents":9999`) })).
		Fails(runtime.NonRetryable(errors.New("declined"))).Maybe()
	ship := env.OnOrchestration("Ship", runtimetest.Anything()).Runs(func(in string) (string, error) { return "track-" + in[6:7], nil })
	env.Start("c-7", "Checkout", `{"id":7, "cents":500}`).Wait()
	env.Instance("c-7").AssertCompleted("r-7/track-7")
	if ship.Calls() != 1 {
		t.Fatalf("Ship answered %d calls, want 1", ship.Calls())
	}
	env.AssertExpectations()
}

func TestAssertExpectationsFailsForAMockNeverCalledAndWrongCounts(t *testing.T) {
	t.Parallel()
	rec := capture(t, func(tb testing.TB) {
		env := runtimetest.New(tb, checkoutRegistry(tb))
		env.OnActivity("Refund", runtimetest.Anything()).Returns("ok")               // never called
		env.OnActivity("Charge", runtimetest.Anything()).Returns("r").Times(2)       // called once
		env.OnOrchestration("Ship", runtimetest.Equals("nope")).Returns("x").Maybe() // optional
		env.OnOrchestration("Ship", runtimetest.Anything()).Returns("t")
		env.Run("Checkout", "o1").AssertCompleted("r/t")
		env.AssertExpectations()
	})
	if rec.fatal != "" || len(rec.errors) != 2 {
		t.Fatalf("fatal %q, errors %q", rec.fatal, rec.errors)
	}
	for i, want := range []string{
		`activity "Refund" with input anything, expected at least once, called 0 time(s)`,
		`activity "Charge" with input anything, expected 2 time(s), called 1 time(s)`,
	} {
		if !containsSub(rec.errors, want) {
			t.Errorf("error %d %q missing from %q", i, want, rec.errors)
		}
	}
}

func TestACallNoExpectationAcceptsFailsTheTestAndTheCall(t *testing.T) {
	t.Parallel()
	rec := capture(t, func(tb testing.TB) {
		env := runtimetest.New(tb, checkoutRegistry(tb))
		env.OnActivity("Charge", runtimetest.Anything()).Never()
		env.OnOrchestration("Ship", runtimetest.Anything()).Returns("t").Maybe()
		env.Run("Checkout", "o1").AssertFailed("unexpected call of activity \"Charge\"")
	})
	if rec.fatal != "" || len(rec.errors) != 1 || !strings.Contains(rec.errors[0], `unexpected call of activity "Charge" with input "o1"`) ||
		!strings.Contains(rec.errors[0], "expected 0 time(s)") {
		t.Fatalf("fatal %q, errors %q", rec.fatal, rec.errors)
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
