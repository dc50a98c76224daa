package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// selectOrJoin registers TestOrch: a race of activity A against a timer
// (the loser dropped) when race is true, otherwise a join of both.
func selectOrJoin(t *testing.T, race bool) *Registry {
	t.Helper()
	reg := NewRegistry()
	if err := reg.RegisterOrchestration("TestOrch", func(ctx *OrchestrationContext, _ string) (string, error) {
		a, timer := ctx.ScheduleActivity("A", "x"), ctx.ScheduleTimer(0)
		if race {
			_, _, err := ctx.Select(a, timer)
			return "", err
		}
		ctx.Join(a, timer)
		return "", nil
	}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// raceHistory is what selectOrJoin(race=true) records when the timer wins.
func raceHistory() []duroxide.Event {
	return []duroxide.Event{
		startedEv(1), actSched(2, "A", "x"), timerCreated(3, 5), timerFired(4, 3, 5),
		ev(5, src(2), duroxide.ActivityCancelRequested{Reason: reasonDroppedFuture}),
		ev(6, nil, duroxide.OrchestrationCompleted{Output: ""}),
	}
}

func TestRegistryReplayOfUnchangedCodeReturnsNil(t *testing.T) {
	t.Parallel()
	if err := selectOrJoin(t, true).Replay(testInstance, raceHistory()); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryReplayReportsADroppedFutureTheCodeNoLongerDrops(t *testing.T) {
	t.Parallel()
	err := selectOrJoin(t, false).Replay(testInstance, raceHistory())
	var nd *NondeterminismError
	if !errors.As(err, &nd) {
		t.Fatalf("%v", err)
	}
	if nd.EventID != 5 || nd.EventIndex != 4 || nd.Event.Type() != duroxide.EventTypeActivityCancelRequested ||
		!strings.Contains(nd.Error(), "event 5: history has ActivityCancelRequested (of event 2), code no longer drops that future") ||
		!strings.Contains(nd.Detail, "cancellation mismatch") {
		t.Fatalf("%+v\n%s", nd, nd)
	}
}

func TestRegistryReplayRefusesMalformedHistories(t *testing.T) {
	t.Parallel()
	reg := selectOrJoin(t, true)
	for name, h := range map[string][]duroxide.Event{
		"empty":         nil,
		"no start":      {actSched(1, "A", "x")},
		"start missing": raceHistory()[1:],
	} {
		if err := reg.Replay(testInstance, h); !errors.Is(err, ErrMalformedHistory) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var nilReg *Registry
	if err := nilReg.Replay(testInstance, raceHistory()); err == nil {
		t.Error("a nil registry replayed")
	}
}

func TestRegistryCloneCopiesRegistrationsAndWrapsActivities(t *testing.T) {
	t.Parallel()
	reg := selectOrJoin(t, true)
	if err := reg.RegisterActivity("A", func(*ActivityContext, string) (string, error) { return "a", nil }); err != nil {
		t.Fatal(err)
	}
	var wrapped []string
	clone := reg.Clone(func(name string, fn ActivityFunc) ActivityFunc {
		wrapped = append(wrapped, name)
		return func(ctx *ActivityContext, in string) (string, error) {
			out, err := fn(ctx, in)
			return out + "!", err
		}
	})
	if err := clone.RegisterActivity("B", func(*ActivityContext, string) (string, error) { return "b", nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.resolveActivity("B"); ok {
		t.Error("a registration on the clone reached the original")
	}
	fn, ok := clone.resolveActivity("A")
	if !ok {
		t.Fatal("A is not in the clone")
	}
	if out, _ := fn(nil, ""); out != "a!" || len(wrapped) != 1 {
		t.Errorf("wrapped A returns %q; wrapped %v", out, wrapped)
	}
	if _, _, ok := clone.resolveOrchestration("TestOrch", nil); !ok {
		t.Error("TestOrch is not in the clone")
	}
	if err := clone.Replay(testInstance, raceHistory()); err != nil {
		t.Error(err)
	}
}

func TestTheReplayerNamesUtcNowAndCustomStatusAddedToRunningCodeAndTheSafeWay(t *testing.T) {
	t.Parallel()
	// Recorded by code that called activity A, then returned.
	history := []duroxide.Event{startedEv(1), actSched(2, "A", "x"), actDone(3, 2, "a"), ev(4, nil, duroxide.OrchestrationCompleted{Output: "a"})}
	for _, c := range []struct {
		name  string
		added func(ctx *OrchestrationContext)
		code  string
		hint  string
	}{
		{"UtcNow", func(ctx *OrchestrationContext) { ctx.UtcNow() }, "code called ctx.UtcNow() (system activity __duroxide_syscall:utc_now_ms)", "ctx.UtcNow() records a system activity in history"},
		{"NewGUID", func(ctx *OrchestrationContext) { ctx.NewGUID() }, "code called ctx.NewGUID()", "ctx.NewGUID() records a system activity in history"},
		{"SetCustomStatus", func(ctx *OrchestrationContext) { ctx.SetCustomStatus("charging") }, `code set the custom status to "charging"`, "SetCustomStatus records a CustomStatusUpdated event in history"},
	} {
		reg := NewRegistry()
		if err := reg.RegisterOrchestration("TestOrch", func(ctx *OrchestrationContext, _ string) (string, error) {
			c.added(ctx)
			return ctx.ScheduleActivity("A", "x").Get()
		}); err != nil {
			t.Fatal(err)
		}
		var nd *NondeterminismError
		if err := reg.Replay(testInstance, history); !errors.As(err, &nd) {
			t.Fatalf("%s: %v", c.name, err)
		}
		msg := nd.Error()
		if !strings.Contains(msg, `event 2: history has ActivityScheduled "A", `+c.code) || !strings.Contains(msg, c.hint) ||
			!strings.Contains(msg, "register the changed code as a new version (RegisterOrchestrationVersion)") {
			t.Errorf("%s: %s", c.name, msg)
		}
	}
}
