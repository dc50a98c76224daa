// Waiting for work: the notifier that wakes fetches and the long poll that
// retries a fetch until its poll timeout.

package cdb

import (
	"context"
	"time"

	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
)

// DefaultLongPollInterval is how often a fetch with a poll timeout queries
// again while it waits for work, and how long a candidate query's answer
// is trusted. A write made through the same Provider (an
// enqueue, an ack, an abandon) wakes waiting fetches at once, with the
// message it wrote as a candidate; writes by other processes are seen at
// the next query, at most this long after the previous one.
const DefaultLongPollInterval = 250 * time.Millisecond

// longPoll runs attempt until it finds work, fails, or pollTimeout passes
// (duroxide's long-polling contract: a provider may wait up to the poll
// timeout; with a zero timeout it tries once and returns at once). An
// attempt told final must look at the queue rather than trust an empty
// candidate pool: the only attempt of a zero timeout, and the last one, at
// the deadline, unless the change-feed reader is healthy (then the pool
// has every message written since its last query, and the query would
// cost one request per lease view at the end of every poll timeout of an
// idle process). Between attempts it sleeps for the poll interval, until
// a known candidate of pool becomes visible, or until this process writes
// to the queue.
func (p *Provider) longPoll(ctx context.Context, pollTimeout time.Duration, pool *candidates.Pool, attempt func(ctx context.Context, final bool) (bool, error)) error {
	deadline := time.Now().Add(pollTimeout)
	for {
		woken := pool.Wake().Wait()
		last := pollTimeout <= 0 || !time.Now().Before(deadline)
		found, err := attempt(ctx, pollTimeout <= 0 || (last && !p.feedHealthy()))
		if err != nil || found || last {
			return err
		}
		wait := min(time.Until(deadline), p.fallbackPoll())
		now := p.nowMs()
		if at, ok := pool.NextChange(now); ok {
			wait = min(wait, time.Duration(at-now)*time.Millisecond)
		}
		p.traceFetch(pollWait)
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-p.stop:
			t.Stop()
			return nil
		case <-woken:
			t.Stop()
			p.traceFetch(pollNotified)
		case <-t.C:
			p.traceFetch(pollTimer)
		}
	}
}
