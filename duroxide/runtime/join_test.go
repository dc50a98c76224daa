package runtime

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestJoinPollsLinearlyInTheFanOut replays a fan-out of n activities whose
// completions arrive one by one in reverse order (the worst case for a join
// that re-polls everything on each wake-up) and checks that Join returns
// every result in schedule order while polling the futures O(n) times in
// all, not O(n²).
func TestJoinPollsLinearlyInTheFanOut(t *testing.T) {
	t.Parallel()
	const n = 500
	history := []duroxide.Event{startedEv(1)}
	for i := range n {
		history = append(history, actSched(uint64(2+i), "Work", strconv.Itoa(i)))
	}
	for i := n - 1; i >= 0; i-- {
		history = append(history, actDone(uint64(len(history)+1), uint64(2+i), strconv.Itoa(i)))
	}
	polls := 0
	fn := func(ctx *OrchestrationContext, _ string) (string, error) {
		futures := make([]*Future, n)
		for i := range futures {
			f := ctx.ScheduleActivity("Work", strconv.Itoa(i))
			check := f.check
			f.check = func(s *ctxState) (completion, bool) {
				polls++
				return check(s)
			}
			futures[i] = f
		}
		for i, r := range ctx.Join(futures...) {
			if r.Err != nil || r.Value != strconv.Itoa(i) {
				return "", fmt.Errorf("result %d = %q, %v", i, r.Value, r.Err)
			}
		}
		return "joined", nil
	}
	wantCompleted(t, run(engineFor(history...), fn), "joined")
	if polls > 3*n {
		t.Fatalf("Join polled its %d futures %d times: more than linear", n, polls)
	}
}
