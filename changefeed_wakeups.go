// Change-feed wake-ups (on unless Config.DisableChangeFeedWakeups): the
// provider's side of its change-feed reader (package internal/changefeed
// holds the reading, its idle backoff and the polling policy it allows):
// starting it, handing the documents it returns to the candidate pools,
// the leases and the status watches, and telling it of this process's
// writes.

package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
)

// Wake-ups across processes through the change feed. Unless
// Config.DisableChangeFeedWakeups, one change-feed reader per Provider
// (not per dispatcher) follows the container: every queue message another
// process writes becomes a candidate of this process's pool and wakes its
// waiting fetches at once, instead of at their next candidate query. While
// the reader is healthy, the answer of a candidate query is trusted for
// 10 s instead of LongPollInterval, and waiting fetches query again only
// that often, as a safety net (every 4 × LongPollInterval while its reads
// fail); a long poll that reaches its deadline trusts such an answer too.
// The reader reads every ChangeFeedInterval while other processes send
// this one work (servesSlot), every 4 × ChangeFeedInterval after a
// second without, and backs off when that lasts 5 s (internal/changefeed's
// package doc): an idle process costs 0.8 requests per second for its
// reads (one read per 1.25 s per physical partition) plus the lease
// heartbeat and one candidate query per lease view every 10 s; a busy
// one whose work stays in its own slots does not pay a read per 80 ms.

// viewLifetime is how long the answer of a candidate query stands for the
// queue (candidates.Pool's views): 10 s while the change-feed reader is
// healthy, LongPollInterval otherwise.
func (p *Provider) viewLifetime() time.Duration {
	return p.feed.ViewLifetime(p.cfg.LongPollInterval)
}

// feedHealthy reports whether the change-feed reader runs and its last
// read succeeded.
func (p *Provider) feedHealthy() bool { return p.feed.Healthy() }

// fallbackPoll is how long a waiting fetch sleeps before it queries again
// when nothing wakes it.
func (p *Provider) fallbackPoll() time.Duration {
	return p.feed.FallbackPoll(p.cfg.LongPollInterval)
}

// startChangeFeed starts the reader (it fails when its first read fails
// after the retries of any read: throttling, 5xx, timeouts) and the
// goroutine that feeds this process's pools from it; Close stops it.
func (p *Provider) startChangeFeed(ctx context.Context) error {
	r := changefeed.New(p.container, changefeed.Options{
		Interval: p.cfg.ChangeFeedInterval,
		Context:  cosmos.WithCall(context.Background(), "change_feed"),
	})
	if err := p.retry.do(ctx, readRequest, r.Start); err != nil {
		return fmt.Errorf("cdb: start the change feed reader: %w", err)
	}
	p.feed = r
	p.wg.Add(1)
	go p.followChangeFeed()
	return nil
}

// followChangeFeed hands every page of changed documents the reader
// returns to changedDocuments, and tells the reader of the pages that
// held work from another process (activity: it reads at its base
// interval again), until the reader is closed.
func (p *Provider) followChangeFeed() {
	defer p.wg.Done()
	for {
		docs, err := p.feed.Next(context.Background())
		switch {
		case errors.Is(err, changefeed.ErrClosed):
			return
		case err != nil:
			p.log.Debug("change feed read failed; retrying", zap.Error(err))
		default:
			if p.changedDocuments(docs) {
				p.feed.Active()
			}
		}
	}
}

// servesSlot reports whether this process alone serves slot of the
// worker or orchestrator queue (split): with leases in the container, a
// slot it queries (owned, or its part of a suspect owner's); with other
// lease providers, which do not split slots among processes, none
// (split false: every process may serve every slot).
func (p *Provider) servesSlot(worker bool, slot uint8) (mine, split bool) {
	lp := p.orchLeases
	if worker {
		lp = p.workerLeases
	}
	if cl, ok := lp.(containerLeases); ok {
		return cl.q.Queries(slot), true
	}
	return false, false
}

// feedWrite tells the change-feed reader of a queue message this process
// wrote (or made visible again) unless this process alone serves its
// slot: the answer of the process that serves it comes back through the
// feed, so the reader reads at its base interval again
// (changefeed.Reader.Active). A message this process alone serves is not
// activity: its fetches learn of it from the pool.
func (p *Provider) feedWrite(e candidates.Entry) {
	if p.feed == nil {
		return
	}
	if mine, split := p.servesSlot(e.Worker, e.Slot); !mine || !split {
		p.feed.Active()
	}
}

// changedDocuments turns documents other processes (or this one) wrote
// into candidates: queue messages are hinted to their queue's pool (unless
// they are echoes of messages this process locked); an instance document
// whose lock is released ends this process's record of that lock, and one
// whose status or custom status changed wakes the clients waiting on it.
// It reports whether docs held work another process sent this one: a
// queue message new to this process in a slot it queries, or a copy of an
// instance document one of its clients waits on. Lease documents, echoes
// of this process's own messages and the traffic of other processes in
// their own slots are not activity.
func (p *Provider) changedDocuments(docs [][]byte) (activity bool) {
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
			if pool.Echo(e, d.LockedUntil, p.nowMs()) {
				mine, split := p.servesSlot(e.Worker, e.Slot)
				activity = activity || mine || !split
				if !e.Worker {
					// Another process's message: the instance's held turn
					// takes it too, once its lock (if any) has expired.
					e.VisibleAt = max(e.VisibleAt, d.LockedUntil)
					p.heldStates.Message(e)
				}
			}
		case leases.SlotType, leases.OwnerType:
			if p.leases != nil && d.InstanceID == LeasePartitionKey {
				p.leases.Observed(raw)
			}
		case typeInstance:
			if p.statusWatches.Observed(d.InstanceID, d.Status, d.CustomStatusVersion) {
				activity = true
			}
			// A copy showing no lock ends the lock this process saw
			// another process hold, unless this process holds the
			// instance now (the copy is older than its lock).
			if now := p.nowMs(); d.LockedUntil <= now && !p.locks.HoldsInstance(d.InstanceID, now) {
				p.orchPool.Unlock(d.InstanceID)
			}
		}
	}
	return activity
}

// Changes returns a channel closed the next time the change-feed reader
// delivers documents written to the container (by any process), once
// this provider has handled them: code that waits for another process's
// writes (a client waiting for an orchestration's completion) takes the
// channel, checks its state, and waits on the channel (with a timeout of
// its own). Without the reader (Config.DisableChangeFeedWakeups) it
// returns nil, which blocks forever in a select: such code must then poll.
// After a quiet period the reader reads less often (README, "Several
// replicas"): a change is then delivered within the reader's pause, at
// most 1.25 s per physical partition.
func (p *Provider) Changes() <-chan struct{} {
	if p.feed == nil {
		return nil
	}
	return p.feed.Changed()
}
