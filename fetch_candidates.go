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

// leaseWalk is a fetch attempt's way through the leases: a lease and the
// pool's view of its slots (suffix distinguishes views of the same slots
// with other filters, covers says which messages such a view holds),
// then, while the fetch found nothing and the pool holds candidates
// outside those slots that a fetch of scope could take (elsewhere), the
// next lease the provider hands out; no lease is tried twice.
type leaseWalk struct {
	leases LeaseProvider
	pool   *candidates.Pool
	suffix string
	scope  string
	covers func(*candidates.Entry) bool
	seen   map[string]bool
}

// next acquires the next lease and the pool's view of its slots; nil, and
// no error, when there is none left to try: a lease on no slot (a process
// that owns none now) or one already tried. The caller releases the lease.
func (w *leaseWalk) next(ctx context.Context) (*SlotLease, *candidates.View, error) {
	lease, err := w.leases.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !lease.All && len(lease.Slots) == 0 {
		lease.Release()
		return nil, nil, nil
	}
	key := leaseKey(lease) + w.suffix
	if w.seen[key] {
		lease.Release()
		return nil, nil, nil
	}
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[key] = true
	return lease, w.pool.View(key, lease.All, lease.Slots, w.covers), nil
}

// elsewhere reports, after the fetch found nothing in v, whether the pool
// holds candidates outside v's slots that the fetch could take.
func (w *leaseWalk) elsewhere(v *candidates.View, nowMs int64) bool {
	return w.pool.EligibleElsewhere(v, nowMs, w.scope)
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
