// Change-feed wake-ups (on unless Config.DisableChangeFeedWakeups): the
// change-feed reader that hints other processes' queue messages to the
// candidate pools and wakes waiting fetches.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
)

// Wake-ups across processes through the change feed. Unless
// Config.DisableChangeFeedWakeups, one change-feed reader per Provider
// (not per dispatcher) follows the container (internal/changefeed): every
// queue message another process writes becomes a candidate of this process's
// pool and wakes its waiting fetches at once, instead of at their next
// candidate query. While the reader is healthy, the answer of a candidate
// query is trusted for 10 s instead of LongPollInterval, and waiting
// fetches query again only that often, as a safety net (every
// 4 × LongPollInterval while its reads fail); a long poll that reaches its
// deadline trusts such an answer too. So an idle process costs one
// change-feed read per ChangeFeedInterval (one request per physical
// partition) plus one candidate query per lease view every 10 s.

// changeFeedFallbackFactor multiplies LongPollInterval into the fallback
// poll of waiting fetches when the change feed wakes them but its reader is
// not healthy (its reads fail); while it is healthy they query only every
// changeFeedHealthyFallback, as a safety net.
const (
	changeFeedFallbackFactor  = 4
	changeFeedHealthyFallback = 10 * time.Second
)

// viewLifetime is how long the answer of a candidate query stands for the
// queue (candidates.Pool's views): while the change-feed reader is
// healthy, every message written since reaches the pool through it or
// through this process's own hints, so the answer stands for
// changeFeedHealthyFallback; otherwise for LongPollInterval.
func (p *Provider) viewLifetime() time.Duration {
	if p.feedHealthy() {
		return changeFeedHealthyFallback
	}
	return p.cfg.LongPollInterval
}

// feedHealthy reports whether the change-feed reader runs and its last
// read succeeded.
func (p *Provider) feedHealthy() bool { return p.feed != nil && p.feed.Healthy() }

// fallbackPoll is how long a waiting fetch sleeps before it queries again
// when nothing wakes it.
func (p *Provider) fallbackPoll() time.Duration {
	if p.feedHealthy() {
		return changeFeedHealthyFallback
	}
	return p.pollInterval
}

// startChangeFeed starts the reader; it fails when its first read fails
// after the retries of any read (throttling, 5xx, timeouts).
func (p *Provider) startChangeFeed(ctx context.Context) error {
	r := changefeed.New(p.container, changefeed.Options{
		Interval:    p.cfg.ChangeFeedInterval,
		Context:     cosmos.WithCall(context.Background(), "change_feed"),
		OnDocuments: p.changedDocuments,
		Stretch:     p.idle.stretch,
		OnError: func(err error) {
			p.log.Debug("change feed read failed; retrying", zap.Error(err))
		},
	})
	if err := p.retry.do(ctx, readRequest, r.Start); err != nil {
		return fmt.Errorf("cdb: start the change feed reader: %w", err)
	}
	p.feed = r
	p.pollInterval = changeFeedFallbackFactor * p.cfg.LongPollInterval
	return nil
}

// changedDocuments turns documents other processes (or this one) wrote
// into candidates: queue messages are hinted to their queue's pool (unless
// they are echoes of messages this process locked); an instance document
// whose lock is released ends this process's record of that lock, and one
// whose status or custom status changed wakes the clients waiting on it.
func (p *Provider) changedDocuments(docs [][]byte) {
	for _, raw := range docs {
		// One decode serves both kinds: a queue message's fields, and an
		// instance document's type, id, lock expiry and status.
		var d struct {
			queueDoc
			Status              string `json:"status"`
			CustomStatusVersion uint64 `json:"customStatusVersion"`
		}
		if json.Unmarshal(raw, &d) != nil || d.InstanceID == "" {
			continue
		}
		switch d.Type {
		case typeOrchQueue, typeWorkerQueue:
			e := queueEntry(&d.queueDoc)
			pool := p.orchPool
			if e.Worker {
				pool = p.workPool
			}
			if pool.Echo(e, d.LockedUntil, p.nowMs()) && !e.Worker {
				// Another process's message: the instance's held turn
				// takes it too, once its lock (if any) has expired.
				e.VisibleAt = max(e.VisibleAt, d.LockedUntil)
				p.heldStates.Message(e)
			}
		case leases.SlotType, leases.OwnerType:
			if p.leases != nil && d.InstanceID == LeasePartitionKey {
				p.leases.Observed(raw)
			}
		case typeInstance:
			p.statusWatches.Observed(d.InstanceID, d.Status, d.CustomStatusVersion)
			// A copy showing no lock ends the lock this process saw
			// another process hold, unless this process holds the
			// instance now (the copy is older than its lock).
			if now := p.nowMs(); d.LockedUntil <= now && !p.locks.HoldsInstance(d.InstanceID, now) {
				p.orchPool.Unlock(d.InstanceID)
			}
		}
	}
}

// Changes returns a channel closed the next time the change-feed reader
// delivers documents written to the container (by any process): code that
// waits for another process's writes (a client waiting for an
// orchestration's completion) takes the channel, checks its state, and
// waits on the channel (with a timeout of its own). Without the reader
// (Config.DisableChangeFeedWakeups) it returns nil, which blocks forever
// in a select: such code must then poll.
func (p *Provider) Changes() <-chan struct{} {
	if p.feed == nil {
		return nil
	}
	return p.feed.Changed()
}
