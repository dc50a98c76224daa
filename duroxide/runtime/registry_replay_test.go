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
