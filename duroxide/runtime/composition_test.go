package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Composition and dropped-future tests (duroxide's
// tests/replay_engine/composition.rs and unobserved_futures.rs).

func activityVsTimer(ctx *OrchestrationContext, _ string) (string, error) {
	act := ctx.ScheduleActivity("Slow", "in")
	timer := ctx.ScheduleTimer(time.Minute)
	winner, v, err := ctx.Select(act, timer)
	if err != nil {
		return "", err
	}
	if winner == 1 {
		return "timer_won", nil
	}
	return "activity_won:" + v, nil
}

func TestJoinReturnsResultsInOrder(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "T", "a"), actSched(3, "T", "b"), actSched(4, "T", "c"),
		actDone(5, 4, "C"), actDone(6, 2, "A"), actDone(7, 3, "B"))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		rs := ctx.Join(ctx.ScheduleActivity("T", "a"), ctx.ScheduleActivity("T", "b"), ctx.ScheduleActivity("T", "c"))
		out := ""
		for _, r := range rs {
			out += r.Value
		}
		return out, nil
	}), "ABC")
}

func TestJoinPendingUntilAllComplete(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "T", "a"), actSched(3, "T", "b"), actDone(4, 3, "B"))
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.Join(ctx.ScheduleActivity("T", "a"), ctx.ScheduleActivity("T", "b"))
		return "joined", nil
	}))
}

func TestSelectFirstFreshTurnSchedulesBoth(t *testing.T) {
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, activityVsTimer))
	if got := deltaTypes(e); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeActivityScheduled, duroxide.EventTypeTimerCreated}) {
		t.Fatalf("delta = %v", got)
	}
}

func TestSelectTimerWinsCancelsActivity(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(3)})
	wantCompleted(t, run(e, activityVsTimer), "timer_won")
	if !slices.Equal(e.cancelledActivityIDs, []uint64{2}) {
		t.Fatalf("cancelled activities = %v", e.cancelledActivityIDs)
	}
	last := e.historyDelta[len(e.historyDelta)-1]
	k, ok := last.Kind.(duroxide.ActivityCancelRequested)
	if !ok || k.Reason != "dropped_future" || *last.SourceEventID != 2 {
		t.Fatalf("breadcrumb = %+v", last)
	}
}

func TestSelectActivityWinsTimerNotCancelled(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "done")})
	wantCompleted(t, run(e, activityVsTimer), "activity_won:done")
	if len(e.cancelledActivityIDs) != 0 {
		t.Fatalf("cancelled = %v", e.cancelledActivityIDs)
	}
	if got := deltaTypes(e); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeActivityCompleted}) {
		t.Fatalf("a timer loser needs no event: %v", got)
	}
}

func TestSelectBiasedTowardsFirstWhenBothReady(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100))
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "done"), timerMsg(3)})
	// The completion comes first in history, so the activity wins.
	wantCompleted(t, run(e, activityVsTimer), "activity_won:done")
}

func TestSelectWinnerDecidedByHistoryOrder(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(3), actDoneMsg(2, "done")})
	wantCompleted(t, run(e, activityVsTimer), "timer_won")
}

func TestReplaySelectLoserDoesNotResendCancellation(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100), timerFired(4, 3, 100),
		ev(5, src(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	// Completion after the cancel request is tolerated.
	e.prepCompletions([]duroxide.WorkItem{actDoneMsg(2, "late")})
	wantCompleted(t, run(e, activityVsTimer), "timer_won")
	if len(e.cancelledActivityIDs) != 0 {
		t.Fatalf("side channel re-sent: %v", e.cancelledActivityIDs)
	}
}

func TestReplayFailsWhenPersistedCancellationNoLongerMade(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "Slow", "in"), timerCreated(3, 100), timerFired(4, 3, 100),
		ev(5, src(2), duroxide.ActivityCancelRequested{Reason: "dropped_future"}))
	// New code awaits both instead of racing them.
	wantNondeterminism(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.Join(ctx.ScheduleActivity("Slow", "in"), ctx.ScheduleTimer(time.Minute))
		return "joined", nil
	}), "cancellation mismatch (activities)")
}

func TestExplicitCancelActivity(t *testing.T) {
	e := engineFor(startedEv(1))
	wantContinue(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.ScheduleActivity("Unwanted", "").Cancel()
		return ctx.ScheduleTimer(time.Second).Get()
	}))
	if !slices.Equal(e.cancelledActivityIDs, []uint64{2}) {
		t.Fatalf("cancelled = %v", e.cancelledActivityIDs)
	}
	if got := deltaTypes(e); !slices.Equal(got, []duroxide.EventType{duroxide.EventTypeActivityScheduled, duroxide.EventTypeTimerCreated, duroxide.EventTypeActivityCancelRequested}) {
		t.Fatalf("delta = %v", got)
	}
}

func TestUnobservedFuturesCancelledWhenFunctionReturns(t *testing.T) {
	e := engineFor(startedEv(1))
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.ScheduleActivity("A", "")
		ctx.ScheduleTimer(time.Minute)
		ctx.ScheduleWait("Ev")
		ctx.ScheduleSubOrchestration("Child", "x")
		return "all_dropped", nil
	}), "all_dropped")
	if !slices.Equal(e.cancelledActivityIDs, []uint64{2}) {
		t.Fatalf("cancelled activities = %v", e.cancelledActivityIDs)
	}
	if !slices.Equal(e.cancelledSubOrchestrate, []string{"sub::5"}) {
		t.Fatalf("cancelled children = %v", e.cancelledSubOrchestrate)
	}
	want := []duroxide.EventType{
		duroxide.EventTypeActivityScheduled, duroxide.EventTypeTimerCreated, duroxide.EventTypeExternalSubscribed,
		duroxide.EventTypeSubOrchestrationScheduled, duroxide.EventTypeActivityCancelRequested,
		duroxide.EventTypeSubOrchestrationCancelRequested, duroxide.EventTypeExternalSubscribedCancelled,
	}
	if got := deltaTypes(e); !slices.Equal(got, want) {
		t.Fatalf("delta = %v\nwant    %v", got, want)
	}
}

func TestCompletedFutureIsNotCancelled(t *testing.T) {
	e := engineFor(startedEv(1), actSched(2, "A", ""), actDone(3, 2, "result"))
	wantCompleted(t, run(e, oneActivity("A", "")), "result")
	if len(e.cancelledActivityIDs) != 0 || len(e.historyDelta) != 0 {
		t.Fatalf("cancelled=%v delta=%v", e.cancelledActivityIDs, deltaTypes(e))
	}
}

func TestSubOrchestrationSelectLoserCancelled(t *testing.T) {
	e := engineFor(startedEv(1), subSched(2, "Child", "sub::2", "x"), timerCreated(3, 100))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(3)})
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		w, _, _ := ctx.Select(ctx.ScheduleSubOrchestration("Child", "x"), ctx.ScheduleTimer(time.Minute))
		if w == 1 {
			return "timer_won_sub_orch_cancelled", nil
		}
		return "child_won", nil
	}), "timer_won_sub_orch_cancelled")
	if !slices.Equal(e.cancelledSubOrchestrate, []string{"sub::2"}) {
		t.Fatalf("cancelled children = %v", e.cancelledSubOrchestrate)
	}
}

func TestRetryWithTimeoutRacesEachAttempt(t *testing.T) {
	policy := RetryPolicy{MaxAttempts: 3, Timeout: time.Second, Backoff: BackoffStrategy{Kind: BackoffNone}}
	fn := func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Flaky", "x", policy).Get()
	}
	// Attempt 1 failed before its timer, attempt 2 timed out.
	e := engineFor(startedEv(1), actSched(2, "Flaky", "x"), timerCreated(3, 1), actFailed(4, 2, "e1"),
		actSched(5, "Flaky", "x"), timerCreated(6, 1))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(6)})
	r := run(e, fn)
	a := r.details.Application
	if r.kind != turnFailed || a == nil || a.Message != ErrActivityTimedOut.Error() {
		t.Fatalf("got %s", describeTurn(r))
	}
	if !slices.Equal(e.cancelledActivityIDs, []uint64{5}) {
		t.Fatalf("the timed-out attempt must be cancelled: %v", e.cancelledActivityIDs)
	}
}

func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	policy := RetryPolicy{MaxAttempts: 2, Backoff: BackoffStrategy{Kind: BackoffFixed, Base: time.Second}}
	e := engineFor(startedEv(1), actSched(2, "Flaky", "x"), actFailed(3, 2, "e1"),
		timerCreated(4, 1), timerFired(5, 4, 1), actSched(6, "Flaky", "x"), actFailed(7, 6, "e2"))
	r := run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("Flaky", "x", policy).Get()
	})
	if r.kind != turnFailed || r.details.Application == nil || r.details.Application.Message != "e2" {
		t.Fatalf("got %s", describeTurn(r))
	}
}

func TestBackoffStrategies(t *testing.T) {
	cases := []struct {
		b    BackoffStrategy
		n    uint32
		want time.Duration
	}{
		{BackoffStrategy{}, 1, 100 * time.Millisecond},
		{BackoffStrategy{}, 3, 400 * time.Millisecond},
		{BackoffStrategy{}, 30, 30 * time.Second},
		{BackoffStrategy{Kind: BackoffNone}, 5, 0},
		{BackoffStrategy{Kind: BackoffFixed, Base: time.Second}, 7, time.Second},
		{BackoffStrategy{Kind: BackoffLinear, Base: time.Second, Max: 3 * time.Second}, 2, 2 * time.Second},
		{BackoffStrategy{Kind: BackoffLinear, Base: time.Second, Max: 3 * time.Second}, 9, 3 * time.Second},
		{BackoffStrategy{Kind: BackoffExponential, Base: 10 * time.Millisecond, Multiplier: 3, Max: time.Second}, 3, 90 * time.Millisecond},
	}
	for _, c := range cases {
		if got := c.b.DelayForAttempt(c.n); got != c.want {
			t.Errorf("%+v attempt %d: got %v want %v", c.b, c.n, got, c.want)
		}
	}
}

// joinRetried runs two retried activities in parallel and joins them.
func joinRetried(ctx *OrchestrationContext, _ string) (string, error) {
	policy := RetryPolicy{MaxAttempts: 3, Backoff: BackoffStrategy{Kind: BackoffFixed, Base: time.Second}}
	res := ctx.Join(ctx.ScheduleActivityWithRetry("A", "a", policy), ctx.ScheduleActivityWithRetry("B", "b", policy))
	if res[0].Err != nil || res[1].Err != nil {
		return "", fmt.Errorf("%v / %v", res[0].Err, res[1].Err)
	}
	return res[0].Value + "," + res[1].Value, nil
}

// Two retried activities run in parallel: both first attempts are
// scheduled in the first turn, A's failure schedules its backoff timer
// and, once that fires, its second attempt, while B completes meanwhile;
// the join returns both results.
func TestRetriedActivitiesFanOutAndJoin(t *testing.T) {
	t.Parallel()
	first := engineFor(startedEv(1))
	r := run(first, joinRetried)
	wantContinue(t, r)
	var names []string
	for _, ev := range first.historyDelta {
		if a, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
			names = append(names, a.Name)
		}
	}
	if !slices.Equal(names, []string{"A", "B"}) {
		t.Fatalf("first turn scheduled %v, want both first attempts", names)
	}

	e := engineFor(startedEv(1), actSched(2, "A", "a"), actSched(3, "B", "b"), actFailed(4, 2, "boom"),
		timerCreated(5, 1), actDone(6, 3, "B-ok"), timerFired(7, 5, 1), actSched(8, "A", "a"), actDone(9, 8, "A-ok"))
	wantCompleted(t, run(e, joinRetried), "A-ok,B-ok")
}

// A retried activity can lose a Select: the running attempt is cancelled.
func TestRetriedActivityLosesSelectAndIsCancelled(t *testing.T) {
	t.Parallel()
	policy := RetryPolicy{MaxAttempts: 3, Backoff: BackoffStrategy{Kind: BackoffNone}}
	e := engineFor(startedEv(1), actSched(2, "A", "a"), timerCreated(3, 1), actFailed(4, 2, "boom"), actSched(5, "A", "a"))
	e.prepCompletions([]duroxide.WorkItem{timerMsg(3)})
	wantCompleted(t, run(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		w, _, _ := ctx.Select(ctx.ScheduleActivityWithRetry("A", "a", policy), ctx.ScheduleTimer(time.Minute))
		return fmt.Sprint("winner ", w), nil
	}), "winner 1")
	if !slices.Equal(e.cancelledActivityIDs, []uint64{5}) {
		t.Fatalf("the running attempt must be cancelled: %v", e.cancelledActivityIDs)
	}
}

// MaxAttempts 0 resolves the future with an error at once.
func TestRetryWithoutAttemptsFailsAtOnce(t *testing.T) {
	t.Parallel()
	r := run(engineFor(startedEv(1)), func(ctx *OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivityWithRetry("A", "a", RetryPolicy{}).Get()
	})
	if r.kind != turnFailed || r.details.Application == nil || !strings.Contains(r.details.Application.Message, "MaxAttempts must be at least 1") {
		t.Fatalf("got %s", describeTurn(r))
	}
}
