// Fetch candidates: refreshing the candidate pools from queries over the
// owned dispatch slots, trying candidates across leases, and hints that add
// a known queue message to a pool.

package cdb

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
)

// How a fetch finds its candidates: from this process's candidate pool
// (pool.go), refreshed by a cross-partition candidate query of the fetch's
// lease slots when the pool's view of them is old or has nothing for a
// fetch that must answer now.

// acrossLeases runs try with a lease and the pool's view of its slots
// (suffix distinguishes views of the same slots with other filters, covers
// says which messages such a view holds), then, while try found nothing and
// the pool holds candidates outside those slots that a fetch of scope could
// take, with the next lease the provider hands out; no lease is tried twice
// in one call.
func (p *Provider) acrossLeases(ctx context.Context, leases LeaseProvider, pool *candidates.Pool, suffix, scope string, covers func(*candidates.Entry) bool, try func(*SlotLease, *candidates.View) (bool, error)) error {
	seen := map[string]bool{}
	for {
		lease, err := leases.Acquire(ctx)
		if err != nil {
			return err
		}
		if !lease.All && len(lease.Slots) == 0 {
			// A lease on no slot (a process that owns none now): nothing
			// to query.
			lease.Release()
			return nil
		}
		key := leaseKey(lease) + suffix
		if seen[key] {
			lease.Release()
			return nil
		}
		seen[key] = true
		v := pool.View(key, lease.All, lease.Slots, covers)
		found, err := try(lease, v)
		lease.Release()
		if err != nil || found || !pool.EligibleElsewhere(v, p.nowMs(), scope) {
			return err
		}
	}
}

// tryCandidates tries to lock the candidates of view v, oldest first, up
// to maxCandidatesPerFetch, and reports whether one was locked. It queries
// (refresh) first when v is stale (older than the pool's view lifetime,
// Provider.viewLifetime, or a known lock expired since); when v offers
// nothing, it queries all pages if v's last query stopped at a full page,
// and one page if it has not queried yet and the fetch must answer now
// (final) or v is not fresh. scope is the fetch's skip scope (see
// candidates.Pool.skip), owner the fetching worker's session owner
// (nil: items with a session are not eligible) and accept the fetch's own
// filter (nil: any). lock reports whether it locked c and whether the pool
// should forget c.
func (p *Provider) tryCandidates(pool *candidates.Pool, v *candidates.View, scope string, owner *string, accept func(*candidates.Entry) bool, final bool,
	refresh func(all bool) error, lock func(c candidates.Entry) (found, drop bool, err error)) (bool, error) {
	queried, queriedAll := false, false
	if pool.Stale(v) {
		p.idle.add(1) // the safety query of a view whose answer aged
		if err := refresh(false); err != nil {
			return false, err
		}
		queried = true
	}
	for tries := 0; tries < maxCandidatesPerFetch; {
		c, ok := pool.Pick(v, p.nowMs(), scope, owner, accept)
		if !ok {
			var err error
			switch {
			case pool.Partial(v) && !queriedAll:
				queried, queriedAll = true, true
				err = refresh(true)
			case !queried && (final || !pool.Fresh(v)):
				queried = true
				err = refresh(false)
			default:
				return false, nil
			}
			if err != nil {
				return false, err
			}
			continue
		}
		tries++
		found, drop, err := lock(c)
		pool.Release(c, drop)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// candidateQueryOpts reads one page of candidates, or all of them.
func candidateQueryOpts(all bool) queryOpts {
	if all {
		return queryOpts{pageSize: candidatePageSize}
	}
	return queryOpts{maxPages: 1, pageSize: candidatePageSize}
}

// refreshOrchCandidates runs the orchestrator queue's candidate query over
// lease's slots (1 request per page): the visible, unlocked messages, and
// the instances locked now, whose messages are then not tried until the
// lock expires or this process releases it.
func (p *Provider) refreshOrchCandidates(ctx context.Context, v *candidates.View, lease *SlotLease, all bool) error {
	pool := p.orchPool
	start := pool.BeginRefresh()
	at, now := time.Now(), p.nowMs()
	q := "SELECT c.id, c.instanceId, c.type, c.dispatchSlot, c.enqueuedAt, c.seq, c.visibleAt, c.lockedUntil FROM c WHERE " +
		"((c.type = 'orch_queue' AND c.visibleAt <= @now AND c.lockedUntil <= @now) OR " +
		"(c.type IN ('instance', 'instance_pending') AND c.lockedUntil > @now))" + slotFilter(lease)
	p.traceFetch(orchCandidateQuery)
	raws, err := p.query(ctx, nil, q, []azcosmos.QueryParameter{param("@now", now)}, candidateQueryOpts(all))
	if err != nil {
		pool.AbortRefresh()
		return err
	}
	var rows []candidates.Entry
	locks := map[string]candidates.Hold{}
	for _, raw := range raws {
		var r struct {
			ID           string `json:"id"`
			InstanceID   string `json:"instanceId"`
			Type         string `json:"type"`
			DispatchSlot int    `json:"dispatchSlot"`
			EnqueuedAt   int64  `json:"enqueuedAt"`
			Seq          string `json:"seq"`
			VisibleAt    int64  `json:"visibleAt"`
			LockedUntil  int64  `json:"lockedUntil"`
		}
		if json.Unmarshal(raw, &r) != nil || r.InstanceID == "" || r.DispatchSlot < 0 || r.DispatchSlot >= NumDispatchSlots {
			continue
		}
		if r.Type == typeOrchQueue {
			e := candidates.Entry{Key: r.InstanceID, Instance: r.InstanceID, ID: r.ID, Slot: uint8(r.DispatchSlot),
				VisibleAt: r.VisibleAt, EnqueuedAt: r.EnqueuedAt, Seq: r.Seq}
			p.heldStates.Message(e) // another process's, perhaps: the held turn takes it too
			rows = append(rows, e)
		} else {
			locks[r.InstanceID] = candidates.Hold{Until: r.LockedUntil, Slot: uint8(r.DispatchSlot)}
		}
	}
	pool.Refreshed(v, start, at, now, rows, !all && len(raws) >= candidatePageSize, locks, nil)
	return nil
}

// refreshWorkCandidates runs the worker queue's candidate query over
// lease's slots (1 request per page): the visible, unlocked messages the
// tag filter accepts (only those without a session when session is nil)
// and, with session routing, the active sessions, to skip items other
// workers own.
func (p *Provider) refreshWorkCandidates(ctx context.Context, v *candidates.View, lease *SlotLease, session *duroxide.SessionFetchConfig, tagClause string, tagParams []azcosmos.QueryParameter, all bool) error {
	pool := p.workPool
	start := pool.BeginRefresh()
	at, now := time.Now(), p.nowMs()
	where := "(c.type = 'worker_queue' AND c.visibleAt <= @now AND c.lockedUntil <= @now" + tagClause
	if session == nil {
		where += " AND IS_NULL(c.sessionId))"
	} else {
		where += ") OR (c.type = 'session' AND c.lockedUntil > @now)"
	}
	q := "SELECT c.id, c.instanceId, c.type, c.enqueuedAt, c.seq, c.visibleAt, c.tag, c._etag, c.sessionId, c.ownerId, c.lockedUntil, c.createdAt, c.dispatchSlot FROM c WHERE (" +
		where + ")" + slotFilter(lease)
	params := append([]azcosmos.QueryParameter{param("@now", now)}, tagParams...)
	p.traceFetch(workCandidateQuery)
	raws, err := p.query(ctx, nil, q, params, candidateQueryOpts(all))
	if err != nil {
		pool.AbortRefresh()
		return err
	}
	var rows []candidates.Entry
	var sessions []candidates.Row
	if session != nil {
		sessions = []candidates.Row{}
	}
	for _, raw := range raws {
		var c candidates.Row
		if json.Unmarshal(raw, &c) != nil || c.DispatchSlot < 0 || c.DispatchSlot >= NumDispatchSlots {
			continue
		}
		switch c.Type {
		case typeWorkerQueue:
			rows = append(rows, candidates.Entry{Key: candidates.WorkKey(c.InstanceID, c.ID), Worker: true, Instance: c.InstanceID, ID: c.ID, Slot: uint8(c.DispatchSlot),
				VisibleAt: c.VisibleAt, EnqueuedAt: c.EnqueuedAt, Seq: c.Seq, SessionID: c.SessionID, Tag: c.Tag})
		case typeSession:
			if c.SessionID != nil && sessions != nil {
				sessions = append(sessions, c)
			}
		}
	}
	pool.Refreshed(v, start, at, now, rows, !all && len(raws) >= candidatePageSize, nil, sessions)
	return nil
}

// workViewSuffix names the worker-queue views of a tag filter and session
// mode.
func workViewSuffix(f duroxide.TagFilter, session *duroxide.SessionFetchConfig) string {
	var b strings.Builder
	b.WriteString("|")
	b.WriteString(strconv.Itoa(int(f.Mode())))
	for _, t := range f.Tags() {
		b.WriteString(",")
		b.WriteString(strconv.Quote(t))
	}
	if session != nil {
		b.WriteString("|sessions")
	}
	return b.String()
}

// queueEntry is the pool entry of a queue document.
func queueEntry(d *queueDoc) candidates.Entry {
	e := candidates.Entry{Key: d.InstanceID, Instance: d.InstanceID, ID: d.ID, Slot: uint8(d.DispatchSlot & 0xff),
		VisibleAt: d.VisibleAt, EnqueuedAt: d.EnqueuedAt, Seq: d.Seq, SessionID: d.SessionID, Tag: d.Tag}
	if d.Type == typeWorkerQueue {
		e.Key, e.Worker = candidates.WorkKey(d.InstanceID, d.ID), true
	}
	return e
}

// hint adds a queue message this process wrote, or made visible again, to
// the candidate pool of its queue.
func (p *Provider) hint(e candidates.Entry) {
	if e.Worker {
		p.workPool.Hint(e)
	} else {
		p.heldStates.Message(e)
		p.orchPool.Hint(e)
	}
}

// hintDocument is hint for a document's JSON (an outbox delivery); other
// documents than queue messages are ignored. A delivered start (a
// sub-orchestration's) is held, so that the child's first fetch can be its
// lock batch alone.
func (p *Provider) hintDocument(raw []byte) {
	var d queueDoc
	if json.Unmarshal(raw, &d) != nil || d.InstanceID == "" || (d.Type != typeOrchQueue && d.Type != typeWorkerQueue) {
		return
	}
	e := queueEntry(&d)
	p.hint(e)
	if d.Type == typeOrchQueue && p.heldStates != nil {
		if w, err := decodeWorkItem(d.WorkItem); err == nil {
			if s, ok := w.Kind.(duroxide.StartOrchestrationItem); ok {
				p.heldStates.StartWritten(d.InstanceID, held.StartOf(e, s))
			}
		}
	}
}

// leaseKey names a lease's slot set.
func leaseKey(l *SlotLease) string {
	if l == nil || l.All || len(l.Slots) == 0 {
		return "all"
	}
	var b strings.Builder
	for i, s := range l.Slots {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(s)))
	}
	return b.String()
}
