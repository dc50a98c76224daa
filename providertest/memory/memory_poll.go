package memory

import (
	"context"
	"time"
)

// longPoll runs attempt (under p.mu) until it reports success or
// pollTimeout has passed, sleeping in between until the provider signals a
// change or the next visibility or lock time arrives. A zero pollTimeout
// tries once and returns at once (short polling). A cancelled context ends
// the wait with a retryable error.
func (p *MemoryProvider) longPoll(ctx context.Context, op string, pollTimeout time.Duration, attempt func(now int64) bool) error {
	deadline := time.Now().Add(pollTimeout)
	for {
		p.mu.Lock()
		now := p.nowMs()
		found := attempt(now)
		changed := p.changed
		wake := p.nextWake(now)
		p.mu.Unlock()
		if found || pollTimeout <= 0 {
			return nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		if wake > 0 {
			wait = min(wait, max(time.Duration(wake-now)*time.Millisecond, time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return memCtxErr(op, ctx)
		case <-changed:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// nextWake returns the earliest future time (ms) at which a queued message
// becomes visible or a lock expires, or 0 when nothing is pending; the
// caller holds p.mu.
func (p *MemoryProvider) nextWake(now int64) int64 {
	var wake int64
	consider := func(t int64) {
		if t > now && (wake == 0 || t < wake) {
			wake = t
		}
	}
	for _, r := range p.orchQueue {
		consider(r.visibleAt)
	}
	for _, l := range p.locks {
		consider(l.lockedUntil)
	}
	for _, r := range p.workQueue {
		consider(r.visibleAt)
		if r.lockToken != "" {
			consider(r.lockedUntil)
		}
	}
	for _, s := range p.sessions {
		consider(s.lockedUntil)
	}
	return wake
}
