// Queries and requests: point operations and queries with their paging,
// the candidate queries over a fetch's dispatch slots with the walks a fetch
// attempt loops over (leases, candidates), and the long poll.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
)

// Requests to the container: partition keys and query parameters, point
// reads, creates, deletes and patches of one document, and cross-partition
// queries.

// Queries. Cross-partition queries go through the gateway, which serves
// only filters and projections (DESIGN.md §10): no ORDER
// BY, TOP, DISTINCT or aggregates there; the provider sorts and counts on
// the client. Single-partition queries are scoped by the partition key.

// pk returns the partition key of an instance.
func pk(instance string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(instance) }

// param builds a query parameter.
func param(name string, v any) azcosmos.QueryParameter {
	return azcosmos.QueryParameter{Name: name, Value: v}
}

// slotFilter returns " AND c.dispatchSlot IN (...)" for a lease, or "" when
// the lease holds every slot (DESIGN.md §10).
func slotFilter(l *SlotLease) string {
	if l == nil || l.All || len(l.Slots) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" AND c.dispatchSlot IN (")
	for i, s := range l.Slots {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(s)))
	}
	b.WriteByte(')')
	return b.String()
}

// tagFilterClause returns the worker-queue condition for a TagFilter (the
// SQLite provider's build_tag_clause) and its parameters; ok is false for
// TagFilterNone, which matches nothing.
func tagFilterClause(f duroxide.TagFilter) (clause string, params []azcosmos.QueryParameter, ok bool) {
	tags := f.Tags()
	in := func() string {
		names := make([]string, len(tags))
		for i, t := range tags {
			names[i] = "@tag" + strconv.Itoa(i)
			params = append(params, param(names[i], t))
		}
		return "c.tag IN (" + strings.Join(names, ",") + ")"
	}
	switch f.Mode() {
	case duroxide.TagFilterModeNone:
		return "", nil, false
	case duroxide.TagFilterModeAny:
		return "", nil, true
	case duroxide.TagFilterModeTags:
		return " AND " + in(), params, true
	case duroxide.TagFilterModeDefaultAnd:
		return " AND (IS_NULL(c.tag) OR " + in() + ")", params, true
	default:
		return " AND IS_NULL(c.tag)", nil, true
	}
}

// readDoc point-reads document id of instance into v. found is false on 404.
func (p *Provider) readDoc(ctx context.Context, instance, id string, v any) (etag string, found bool, err error) {
	var raw []byte
	err = p.retry.do(ctx, readRequest, func(ctx context.Context) error {
		resp, err := p.container.ReadItem(ctx, pk(instance), id, nil)
		if err != nil {
			return err
		}
		raw = resp.Value
		return nil
	})
	if cosmos.IsStatus(err, http.StatusNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	etag, err = decodeDoc(raw, v)
	return etag, err == nil, err
}

// readDocPrimary is readDoc at the partition's primary replica: a
// transactional batch of one read, which Cosmos DB decides at the primary
// whatever the account's consistency, so that it sees every committed
// write, another process's included. For the reads that decide on an
// absence or on whether a write landed (DESIGN.md §16). Requests: 1.
func (p *Provider) readDocPrimary(ctx context.Context, instance, id string, v any) (etag string, found bool, err error) {
	results, err := p.runBatch(ctx, instance, []batchOp{readOp(id)}, readRequest, true)
	if bf, ok := asBatchFailure(err); ok && bf.Status == http.StatusNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	etag, err = decodeDoc(results[0].ResourceBody, v)
	return etag, err == nil, err
}

// loadInstance validates instance and point-reads its instance document
// (created or pending); it returns nil, and no error, when there is none.
func (p *Provider) loadInstance(ctx context.Context, op, instance string) (*instanceDoc, error) {
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	var doc instanceDoc
	etag, found, err := p.readDoc(ctx, instance, instanceDocID, &doc)
	if err != nil {
		return nil, mapError(op, err)
	}
	if !found {
		return nil, nil
	}
	doc.ETag = etag
	return &doc, nil
}

// requireInstance reads instance's document at the primary (for
// PruneExecutions, which deletes by it): a missing or pending one is a
// permanent "not found" error. A point read could come from a replica
// behind another process's acks (an activity pruning its own instance
// found it missing; an admin pruning after a wait elsewhere saw an older
// current execution and pruned less), and the primary's answer brings
// this process's session up to it, so that the query that follows sees as
// much.
func (p *Provider) requireInstance(ctx context.Context, op, instance string) (*instanceDoc, error) {
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	var doc instanceDoc
	etag, found, err := p.readDocPrimary(ctx, instance, instanceDocID, &doc)
	if err != nil {
		return nil, mapError(op, err)
	}
	if !found || !doc.exists() {
		return nil, permanent(op, fmt.Sprintf("Instance %s not found", instance))
	}
	doc.ETag = etag
	return &doc, nil
}

// queryOpts are the options of one query.
type queryOpts struct {
	// maxPages stops after this many non-empty pages (0: all).
	maxPages int
	// pageSize is the page size hint (0: the service's default, 100
	// documents; -1: as many as fit in the service's 4 MB page).
	pageSize int32
}

// query runs a query, single-partition when instance is non-nil and
// cross-partition otherwise, and returns the raw documents of every page.
// Each page is one request, retried on its own.
func (p *Provider) query(ctx context.Context, instance *string, q string, params []azcosmos.QueryParameter, o queryOpts) ([][]byte, error) {
	key := azcosmos.NewPartitionKey()
	if instance != nil {
		key = pk(*instance)
	}
	var out [][]byte
	var cont *string
	pages := 0
	for {
		opts := azcosmos.QueryOptions{QueryParameters: params, ContinuationToken: cont, PageSizeHint: o.pageSize}
		var page azcosmos.QueryItemsResponse
		err := p.retry.do(ctx, readRequest, func(ctx context.Context) error {
			pager := p.container.NewQueryItemsPager(q, key, &opts)
			var err error
			page, err = pager.NextPage(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.Items) > 0 {
			pages++
		}
		if page.ContinuationToken == nil || *page.ContinuationToken == "" || (o.maxPages > 0 && pages >= o.maxPages) {
			return out, nil
		}
		cont = page.ContinuationToken
	}
}

// createDoc creates a document; kind says whether a lost answer may be
// retried (a create whose 409 the caller accepts is idempotent).
func (p *Provider) createDoc(ctx context.Context, instance string, body []byte, kind requestKind) error {
	return p.retry.do(ctx, kind, func(ctx context.Context) error {
		_, err := p.container.CreateItem(ctx, pk(instance), body, nil)
		return err
	})
}

// deleteDoc deletes a document, with If-Match when etag is non-empty.
func (p *Provider) deleteDoc(ctx context.Context, instance, id, etag string) error {
	var opts *azcosmos.ItemOptions
	if etag != "" {
		e := azcore.ETag(etag)
		opts = &azcosmos.ItemOptions{IfMatchEtag: &e}
	}
	return p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		_, err := p.container.DeleteItem(ctx, pk(instance), id, opts)
		return err
	})
}

// patchDoc applies a patch (whose filter predicate, if any, is in ops) and
// returns the document's new ETag.
func (p *Provider) patchDoc(ctx context.Context, instance, id string, ops azcosmos.PatchOperations, kind requestKind) (string, error) {
	var etag string
	err := p.retry.do(ctx, kind, func(ctx context.Context) error {
		resp, err := p.container.PatchItem(ctx, pk(instance), id, ops, nil)
		if err != nil {
			return err
		}
		etag = string(resp.ETag)
		return nil
	})
	return etag, err
}

// strp returns a pointer to s.
func strp(s string) *string { return &s }

// Fetch candidates: refreshing the candidate pools from queries over the
// owned dispatch slots, the walk of a fetch attempt over the leases
// (leaseWalk), and hints that add a known queue message to a pool.

// How a fetch finds its candidates: from this process's candidate pool
// (internal/candidates), refreshed by a cross-partition candidate query of the fetch's
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

// deletionFenceHoldMs is how long a candidate query's sight of an instance
// fenced for its deletion keeps the instance's messages from being tried.
const deletionFenceHoldMs = 1000

// refreshOrchCandidates runs the orchestrator queue's candidate query over
// lease's slots (1 request per page): the unlocked messages visible now or
// within the view's lifetime (a timer that fires before the next query),
// and the instances locked now, whose messages are then not tried until
// the lock expires or this process releases it. The timers matter when
// this process took the slots over since it last queried them: they were
// written by the slots' previous owner, before this view existed, and no
// write or change-feed copy of them is to come, so without them the
// instances would wait for the next query, up to the view's lifetime
// (issue 33: a continue-as-new successor stopped after its TimerCreated
// when the leases rebalanced as the second replica started).
func (p *Provider) refreshOrchCandidates(ctx context.Context, v *candidates.View, lease *SlotLease, all bool) error {
	pool := p.orchPool
	start := pool.BeginRefresh()
	at, now := time.Now(), p.nowMs()
	q := "SELECT c.id, c.instanceId, c.type, c.dispatchSlot, c.enqueuedAt, c.seq, c.visibleAt, c.lockedUntil FROM c WHERE " +
		"((c.type = 'orch_queue' AND c.visibleAt <= @soon AND c.lockedUntil <= @now) OR " +
		"(c.type IN ('instance', 'instance_pending') AND c.lockedUntil > @now))" + slotFilter(lease)
	p.traceFetch(fetchtrace.OrchCandidateQuery)
	soon := now + p.viewLifetime().Milliseconds()
	raws, err := p.query(ctx, nil, q, []azcosmos.QueryParameter{param("@now", now), param("@soon", soon)}, candidateQueryOpts(all))
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
			// A deletion's fence is held until it ends, not until its
			// expiry (the end of time): the instance is gone, or started
			// again, a moment later, and the answer may come from a
			// replica that has not seen that yet.
			until := r.LockedUntil
			if until >= deletionLockedUntil {
				until = now + deletionFenceHoldMs
			}
			locks[r.InstanceID] = candidates.Hold{Until: until, Slot: uint8(r.DispatchSlot)}
		}
	}
	pool.Refreshed(v, start, at, now, rows, !all && len(raws) >= candidatePageSize, locks, nil)
	return nil
}

// refreshWorkCandidates runs the worker queue's candidate query over
// lease's slots (1 request per page): the unlocked messages visible now or
// within the view's lifetime (an abandon's delay that ends before the next
// query: see refreshOrchCandidates) the tag filter accepts (only those
// without a session when session is nil) and, with session routing, the
// active sessions, to skip items other workers own. Messages another
// process holds locked until within the view's lifetime are held (their
// work key, so that the instance's other messages stay eligible): the view
// goes stale when the lock expires, and a waiting fetch queries then. A
// process killed while it ran activities leaves such locks, which expire
// with no write nor change-feed copy to say so; without the hold their
// messages waited for the view's lifetime (10 s while the change-feed
// reader is healthy), as the chaos run under lag showed.
func (p *Provider) refreshWorkCandidates(ctx context.Context, v *candidates.View, lease *SlotLease, session *duroxide.SessionFetchConfig, tagClause string, tagParams []azcosmos.QueryParameter, all bool) error {
	pool := p.workPool
	start := pool.BeginRefresh()
	at, now := time.Now(), p.nowMs()
	where := "(c.type = 'worker_queue' AND c.visibleAt <= @soon AND c.lockedUntil <= @soon" + tagClause
	if session == nil {
		where += " AND IS_NULL(c.sessionId))"
	} else {
		where += ") OR (c.type = 'session' AND c.lockedUntil > @now)"
	}
	q := "SELECT c.id, c.instanceId, c.type, c.enqueuedAt, c.seq, c.visibleAt, c.tag, c._etag, c.sessionId, c.ownerId, c.lockedUntil, c.lockToken, c.createdAt, c.dispatchSlot FROM c WHERE (" +
		where + ")" + slotFilter(lease)
	params := append([]azcosmos.QueryParameter{param("@now", now), param("@soon", now+p.viewLifetime().Milliseconds())}, tagParams...)
	p.traceFetch(fetchtrace.WorkCandidateQuery)
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
	holds := map[string]candidates.Hold{}
	for _, raw := range raws {
		var c struct {
			candidates.Row
			LockToken *string `json:"lockToken"`
		}
		if json.Unmarshal(raw, &c) != nil || c.DispatchSlot < 0 || c.DispatchSlot >= NumDispatchSlots {
			continue
		}
		switch c.Type {
		case typeWorkerQueue:
			if c.LockedUntil > now {
				// Locked: held until its lock expires, unless this
				// process holds it (its ack or abandon writes).
				if c.LockToken != nil {
					if _, mine := p.locks.Worker(workerLockToken(c.InstanceID, c.ID, *c.LockToken)); !mine {
						holds[candidates.WorkKey(c.InstanceID, c.ID)] = candidates.Hold{Until: c.LockedUntil, Slot: uint8(c.DispatchSlot)}
					}
				}
				continue
			}
			rows = append(rows, candidates.Entry{Key: candidates.WorkKey(c.InstanceID, c.ID), Worker: true, Instance: c.InstanceID, ID: c.ID, Slot: uint8(c.DispatchSlot),
				VisibleAt: c.VisibleAt, EnqueuedAt: c.EnqueuedAt, Seq: c.Seq, SessionID: c.SessionID, Tag: c.Tag})
		case typeSession:
			if c.SessionID != nil && sessions != nil {
				sessions = append(sessions, c.Row)
			}
		}
	}
	pool.Refreshed(v, start, at, now, rows, !all && len(raws) >= candidatePageSize, holds, sessions)
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
	p.feedWrite(e)
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

// Waiting for work: the long poll a fetch loops over (poll.attempt,
// poll.wait) until its poll timeout, woken by the pool's notifier.

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
// until a known candidate of the pool becomes visible, until this
// process writes to the queue (woken since the attempt started), or until
// ready is closed (an ack handed the fetch an item: waitOrTake). It
// reports whether the fetch ends instead, with ctx's error when ctx ended,
// nil when the provider closed.
func (l *poll) wait(ctx context.Context, ready <-chan struct{}) (end bool, err error) {
	p := l.p
	wait := min(time.Until(l.deadline), p.fallbackPoll())
	now := p.nowMs()
	if at, ok := l.pool.NextChange(now); ok {
		wait = min(wait, time.Duration(at-now)*time.Millisecond)
	}
	p.traceFetch(fetchtrace.PollWait)
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-p.stop:
		return true, nil
	case <-ready:
	case <-l.woken:
		p.traceFetch(fetchtrace.PollNotified)
	case <-t.C:
		p.traceFetch(fetchtrace.PollTimer)
	}
	return false, nil
}

// Paged queries: one request of a cross-partition query resumed from the
// service's continuation, for listings that hand the continuation to their
// caller (ListInstancesPage) instead of reading every page.

// queryPage runs one request of a cross-partition query: at most pageSize
// documents from the service's continuation cont ("" for the start), and
// the service's continuation after them ("" when the query is done). The
// service may return fewer documents than pageSize, none at all, and still
// a continuation (DESIGN.md §10). The request is retried as query's pages
// are.
func (p *Provider) queryPage(ctx context.Context, q string, params []azcosmos.QueryParameter, cont string, pageSize int32) (items [][]byte, next string, err error) {
	opts := azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: pageSize}
	if cont != "" {
		opts.ContinuationToken = &cont
	}
	var page azcosmos.QueryItemsResponse
	err = p.retry.do(ctx, readRequest, func(ctx context.Context) error {
		var err error
		page, err = p.container.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &opts).NextPage(ctx)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if page.ContinuationToken != nil {
		next = *page.ContinuationToken
	}
	return page.Items, next, nil
}
