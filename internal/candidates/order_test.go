package candidates

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pickByScan is what Pick answers, found by reading every entry of v: the
// oldest eligible one (nil when none).
func pickByScan(p *Pool, v *View, nowMs int64, accept func(*Entry) bool) *Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *Entry
	for key, e := range v.entries {
		if !p.eligibleLocked(key, e, nowMs, "") || (accept != nil && !accept(e)) || !p.sessionAllowsLocked(e, nil, nowMs) {
			continue
		}
		if best == nil || e.before(best) || (!best.before(e) && e.Key < best.Key) {
			best = e
		}
	}
	return best
}

// TestPickAgreesWithAScanOfTheView drives a pool through random hints,
// candidate queries, picks, releases, locks and the passing of time, and
// checks at every pick that the ordered index hands out the entry a scan
// of the whole view would: the oldest one that may be taken.
func TestPickAgreesWithAScanOfTheView(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		now := int64(1_000)
		p := New(hour, testSlot, func() int64 { return now })
		v := p.View("all", true, nil, nil)
		var picked []Entry
		entry := func() Entry {
			inst := fmt.Sprintf("i%d", rng.IntN(40))
			enq := now - int64(rng.IntN(500))
			e := Entry{Key: inst, Instance: inst, ID: fmt.Sprintf("m%d", rng.IntN(1_000)), Slot: testSlot(inst), EnqueuedAt: enq, VisibleAt: enq, Seq: fmt.Sprintf("%03d", rng.IntN(100))}
			if rng.IntN(4) == 0 {
				e.VisibleAt = now + int64(rng.IntN(300)) // a timer
			}
			return e
		}
		odd := func(e *Entry) bool { return e.Key[len(e.Key)-1]%2 == 1 }
		for step := range 3_000 {
			switch op := rng.IntN(10); {
			case op < 3:
				p.Hint(entry())
			case op == 3:
				rows := make([]Entry, rng.IntN(8))
				for i := range rows {
					rows[i] = entry()
				}
				p.Refreshed(v, p.BeginRefresh(), time.Now(), now, rows, false, nil, nil)
			case op < 7:
				var accept func(*Entry) bool
				if rng.IntN(3) == 0 {
					accept = odd
				}
				want := pickByScan(p, v, now, accept)
				got, ok := p.Pick(v, now, "", nil, accept)
				if want == nil {
					require.False(t, ok, "seed %d step %d: picked %q where a scan finds nothing", seed, step, got.Key)
					continue
				}
				require.True(t, ok, "seed %d step %d: picked nothing where a scan finds %q", seed, step, want.Key)
				require.Equal(t, want.Key, got.Key, "seed %d step %d", seed, step)
				picked = append(picked, got)
			case op == 7 && len(picked) > 0:
				i := rng.IntN(len(picked))
				p.Release(picked[i], rng.IntN(2) == 0)
				picked = append(picked[:i], picked[i+1:]...)
			case op == 8:
				inst := fmt.Sprintf("i%d", rng.IntN(40))
				if rng.IntN(2) == 0 {
					p.Lock(inst, now+int64(rng.IntN(200)))
				} else {
					p.Unlock(inst)
				}
			default:
				now += int64(rng.IntN(60))
			}
		}
	}
}

// TestPickIndexStaysBoundedUnderChurn checks that the ordered index of a
// view does not grow with the entries that passed through it.
func TestPickIndexStaysBoundedUnderChurn(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	for i := range 10_000 {
		p.Hint(orchEntry(fmt.Sprintf("i%d", i), int64(i)))
		e, ok := p.Pick(v, int64(i), "", nil, nil)
		require.True(t, ok)
		p.Release(e, true)
	}
	require.LessOrEqual(t, len(v.ready.s)+len(v.waiting.s), 2*len(v.entries)+64)
}
