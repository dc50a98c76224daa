package emulator

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"time"
)

// Latency is a simulated per-request latency: every request waits Fixed
// plus a uniform draw in [-Jitter, +Jitter] (never less than zero), half
// before the request is applied and half before its answer is sent, as the
// network's round trip splits around the service's work on a real account.
// The zero value adds nothing. Azure Cosmos DB documents single-digit
// millisecond point operations in the same region (Learn: "Azure Cosmos DB
// service quotas", latency SLA); 5 ms ± 2 ms is a typical figure from a
// client in another zone of the same region.
type Latency struct {
	// Fixed is the mean added latency; negative is treated as zero.
	Fixed time.Duration
	// Jitter is the largest deviation from Fixed, drawn uniformly; negative
	// is treated as zero.
	Jitter time.Duration
}

// IsZero reports whether l adds no latency.
func (l Latency) IsZero() bool { return l.Fixed <= 0 && l.Jitter <= 0 }

// String returns l as ParseLatency reads it, e.g. "5ms±2ms" ("0s" for none).
func (l Latency) String() string {
	if l.Jitter <= 0 {
		return max(l.Fixed, 0).String()
	}
	return max(l.Fixed, 0).String() + "±" + l.Jitter.String()
}

// ParseLatency reads a latency written as a Go duration ("5ms") optionally
// followed by "±" or "+-" and the jitter ("5ms±2ms", "5ms+-2ms"). It fails
// on anything else, and on negative durations.
func ParseLatency(s string) (Latency, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Latency{}, nil
	}
	fixedText, jitterText, hasJitter := strings.Cut(s, "±")
	if !hasJitter {
		fixedText, jitterText, hasJitter = strings.Cut(s, "+-")
	}
	var l Latency
	var err error
	if l.Fixed, err = time.ParseDuration(strings.TrimSpace(fixedText)); err != nil {
		return Latency{}, fmt.Errorf("emulator: latency %q: %w", s, err)
	}
	if hasJitter {
		if l.Jitter, err = time.ParseDuration(strings.TrimSpace(jitterText)); err != nil {
			return Latency{}, fmt.Errorf("emulator: latency %q: jitter: %w", s, err)
		}
	}
	if l.Fixed < 0 || l.Jitter < 0 {
		return Latency{}, fmt.Errorf("emulator: latency %q: durations must not be negative", s)
	}
	return l, nil
}

// latencySim draws each request's simulated latency.
type latencySim struct {
	def  Latency
	byOp map[OpKind]Latency

	mu  sync.Mutex
	rng *rand.Rand
}

func newLatencySim(def Latency, byOp map[OpKind]Latency, seed int64) *latencySim {
	if def.IsZero() && len(byOp) == 0 {
		return nil
	}
	m := make(map[OpKind]Latency, len(byOp))
	for k, v := range byOp {
		m[k] = v
	}
	return &latencySim{def: def, byOp: m, rng: rand.New(rand.NewSource(seed))}
}

// draw returns the total latency of one request of kind op.
func (ls *latencySim) draw(op OpKind) time.Duration {
	if ls == nil {
		return 0
	}
	l, ok := ls.byOp[op]
	if !ok {
		l = ls.def
	}
	d := max(l.Fixed, 0)
	if j := max(l.Jitter, 0); j > 0 {
		ls.mu.Lock()
		off := time.Duration(ls.rng.Int63n(int64(2*j)+1)) - j
		ls.mu.Unlock()
		d += off
	}
	return max(d, 0)
}

// sleepCtx waits d or until done is closed.
func sleepCtx(d time.Duration, done <-chan struct{}) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}
