package runtimetest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

func TestAnActivityNeitherRegisteredNorMockedStopsTheTestAtOnceWithTheClosestNames(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("ChargeCard", func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
	must(t, reg.RegisterActivity("ReleaseStock", func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
	must(t, reg.RegisterOrchestration("Order", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("ChrageCard", in).Get() // misspelt
	}))
	var took time.Duration
	rec := capture(t, func(tb testing.TB) {
		env := runtimetest.New(tb, reg) // the default wait timeout: a minute
		env.OnActivity("ChargeCards", runtimetest.Anything()).Maybe()
		start := time.Now()
		defer func() { took = time.Since(start) }()
		env.Run("Order", "o1")
	})
	want := `runtimetest: activity "ChrageCard" (called by instance "Order-1") is neither registered nor mocked: did you mean "ChargeCard", "ChargeCards"?`
	if rec.fatal != want || len(rec.errors) != 1 || rec.errors[0] != want {
		t.Fatalf("fatal %q\nerrors %q\nwant %q", rec.fatal, rec.errors, want)
	}
	// The unit's figure: the first fetch of the activity (a few ms);
	// the bound asserted is the wait timeout's, not a speed target.
	t.Logf("stopped after %v", took)
	if took >= runtimetest.DefaultWaitTimeout {
		t.Fatalf("stopped after %v: the wait timed out instead", took)
	}
}

func TestAnUnknownOrchestrationStopsTheStartWithTheRegisteredNames(t *testing.T) {
	t.Parallel()
	reg := orders(t, "Reserve", "sub:Payment")
	rec := capture(t, func(tb testing.TB) {
		runtimetest.New(tb, reg).Start("o-1", "ProcessOrdr", "")
	})
	if !strings.Contains(rec.fatal, `orchestration "ProcessOrdr" (called by instance "o-1") is neither registered nor mocked: did you mean "ProcessOrder"?`) {
		t.Fatalf("fatal %q", rec.fatal)
	}
	rec = capture(t, func(tb testing.TB) {
		runtimetest.New(tb, reg).Start("o-2", "Zzz", "")
	})
	if !strings.Contains(rec.fatal, `registered: "Payment", "ProcessOrder"`) {
		t.Fatalf("fatal %q", rec.fatal)
	}
}

func TestAnUnknownSubOrchestrationStopsTheTest(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleSubOrchestration("Chlid", in).Get()
	}))
	must(t, reg.RegisterOrchestration("Child", func(*runtime.OrchestrationContext, string) (string, error) { return "", nil }))
	rec := capture(t, func(tb testing.TB) { runtimetest.New(tb, reg).Run("Parent", "") })
	if !strings.Contains(rec.fatal, `orchestration "Chlid" (called by instance "Parent-1::sub::2") is neither registered nor mocked: did you mean "Child"?`) {
		t.Fatalf("fatal %q", rec.fatal)
	}
}
