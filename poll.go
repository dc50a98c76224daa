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

// poll is a long poll in progress (duroxide's long-polling contract: a
// provider may wait up to the poll timeout; with a zero timeout it tries
// once and returns at once). The fetch loops: attempt, then, when it
// found nothing and it was not the last attempt, wait.
type poll struct {
	p        *Provider
	pool     *candidates.Pool
	timeout  time.Duration
	deadline time.Time
	woken    <-chan struct{}
}

// startPoll starts a long poll of pool's queue for pollTimeout.
func (p *Provider) startPoll(pollTimeout time.Duration, pool *candidates.Pool) *poll {
	return &poll{p: p, pool: pool, timeout: pollTimeout, deadline: time.Now().Add(pollTimeout)}
}

// attempt starts an attempt and reports whether it must look at the queue
// rather than trust an empty candidate pool (final: the only attempt of a
// zero timeout, and the last one, at the deadline, unless the change-feed
// reader is healthy: then the pool has every message written since its
// last query, and the query would cost one request per lease view at the
// end of every poll timeout of an idle process) and whether it is the last.
func (l *poll) attempt() (final, last bool) {
	l.woken = l.pool.Wake().Wait()
	last = l.timeout <= 0 || !time.Now().Before(l.deadline)
	return l.timeout <= 0 || (last && !l.p.feedHealthy()), last
}

// wait sleeps after an attempt that found nothing: for the poll interval,
// until a known candidate of the pool becomes visible, or until this
// process writes to the queue (woken since the attempt started). It
// reports whether the fetch ends instead, with ctx's error when ctx ended,
// nil when the provider closed.
func (l *poll) wait(ctx context.Context) (end bool, err error) {
	p := l.p
	wait := min(time.Until(l.deadline), p.fallbackPoll())
	now := p.nowMs()
	if at, ok := l.pool.NextChange(now); ok {
		wait = min(wait, time.Duration(at-now)*time.Millisecond)
	}
	p.traceFetch(pollWait)
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-p.stop:
		return true, nil
	case <-l.woken:
		p.traceFetch(pollNotified)
	case <-t.C:
		p.traceFetch(pollTimer)
	}
	return false, nil
}
