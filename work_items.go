// Work items and enqueues: FetchWorkItem, AckWorkItem, RenewWorkItemLock,
// AbandonWorkItem, the session claims behind them (RenewSessionLock,
// CleanupOrphanedSessions), and EnqueueForOrchestrator and EnqueueForWorker.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
	"go.uber.org/zap"
)

// Work items: FetchWorkItem, AckWorkItem, RenewWorkItemLock and
// AbandonWorkItem.

// FetchWorkItem locks the oldest visible worker-queue message that the tag
// filter accepts and, with session routing, whose session is unowned,
// expired or owned by session.OwnerID (DESIGN.md §3.2, duroxide's
// SQLite fetch_work_item); nil when there is none. With a nil session only
// messages without a session are eligible. A fetch never returns a lock or
// session lease that has expired: a lock timeout under 1 ms finds nothing,
// a session lease under 1 ms leaves session items out, and an item whose
// lock or lease expired during the fetch's requests is released (1 more
// request) and not returned.
//
// Requests: 1 when the candidate is known and locked at the first try: a
// patch of the message whose filter predicate requires it to be a visible,
// unlocked worker-queue message (lock token, expiry, attempt count + 1),
// or, for a session item, a transactional batch of that patch and the
// session's claim (a create, or a replace with If-Match when the session
// exists; 1 point read first when the session's state is not known).
//
// Candidates come from this process's candidate pool: the last
// candidate query of the fetch's lease slots (and filter), and the
// messages this process wrote since (a turn's activities, an abandoned
// item). 1 more request, a cross-partition query of the lease's slots for
// visible, unlocked messages matching the filters (and, with session
// routing, the active sessions, to skip items other workers own), is made
// when the pool's view is older than LongPollInterval (10 s while a
// healthy change feed hints other processes' messages), or when it offers
// nothing to a fetch that must answer now (a zero poll timeout, or the end
// of the poll timeout without a healthy change feed); a fetch that is
// still waiting trusts an empty, recent view, so messages written by other
// processes are seen within LongPollInterval (ChangeFeedInterval). A
// candidate another process took costs 1 request and
// the next one is tried, up to 4; when the view holds no usable candidate
// and its last query stopped at a full page, every page is read. With a
// positive pollTimeout the fetch waits for this process's writes, the
// visibility of a known message, or the next poll (every LongPollInterval),
// until work appears or the timeout passes. A lock write whose answer was
// lost (a dropped connection, a 408, a 500) costs 1 point read of the
// message, or 2 for a session item whose claim landed: the fetch goes on
// with the lock that landed, or tries the still free message again.
//
// While it waits, the fetch can be handed an activity a turn's ack of
// this process created locked for it (eager dispatch, DESIGN.md §17;
// Config.DisableEagerDispatch): 0 requests of its own, the lock as if the
// fetch had taken it (lock timeout from the fetch, attempt count 1).
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	ctx = cosmos.WithCall(ctx, "fetch_work_item")
	const op = "fetch_work_item"
	tagClause, tagParams, ok := tagFilterClause(tagFilter)
	if !ok {
		return nil, nil // TagFilterNone: this worker processes no activities
	}
	if lockTimeout.Milliseconds() <= 0 {
		return nil, nil // a lock that would have expired on return
	}
	done, err := p.fetchStarted(ctx, 1)
	if err != nil {
		return nil, mapError(op, err)
	}
	defer done()
	poll := p.startPoll(pollTimeout, p.workPool)
	for {
		final, last := poll.attempt()
		locked, err := p.fetchWorkOnce(ctx, lockTimeout, session, tagFilter, tagClause, tagParams, final)
		if err != nil {
			return nil, mapError(op, err)
		}
		if locked != nil || last {
			return locked, nil
		}
		locked, taken, end, err := waitOrTake(ctx, poll, p.workWaiters, workWait{lockTimeout: lockTimeout, tagFilter: tagFilter}, p.abandonEagerWork)
		if taken {
			p.traceFetch(fetchtrace.PollEagerWork)
			return locked, nil
		}
		if end {
			return nil, mapError(op, err)
		}
	}
}

// fetchWorkOnce is one attempt: it tries the candidates of a lease's
// slots, and of other leases when its own has none.
func (p *Provider) fetchWorkOnce(ctx context.Context, lockTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter, tagClause string, tagParams []azcosmos.QueryParameter, final bool) (*duroxide.LockedWorkItem, error) {
	accept := func(e *candidates.Entry) bool {
		return tagFilter.Matches(e.Tag) && (session != nil || e.SessionID == nil)
	}
	var owner *string
	if session != nil {
		owner = &session.OwnerID
	}
	leases := &leaseWalk{leases: p.workerLeases, pool: p.workPool, suffix: workViewSuffix(tagFilter, session), covers: accept}
	for {
		lease, v, err := leases.next(ctx)
		if err != nil || lease == nil {
			return nil, err
		}
		p.traceFetch(fetchtrace.WorkAttempt)
		locked, err := p.tryWorkCandidates(ctx, lease, v, owner, accept, session, tagClause, tagParams, lockTimeout, final)
		lease.Release()
		if err != nil || locked != nil || !leases.elsewhere(v, p.nowMs()) {
			return locked, err
		}
	}
}

// tryWorkCandidates tries to lock the candidates of view v of lease's
// slots as the pool's Walk says (see tryOrchCandidates), for a worker of
// session owner owner whose filter is accept, and returns the item it
// locked, nil when none.
func (p *Provider) tryWorkCandidates(ctx context.Context, lease *SlotLease, v *candidates.View, owner *string, accept func(*candidates.Entry) bool,
	session *duroxide.SessionFetchConfig, tagClause string, tagParams []azcosmos.QueryParameter, lockTimeout time.Duration, final bool) (*duroxide.LockedWorkItem, error) {
	walk := p.workPool.Walk(v, "", owner, accept, final, maxCandidatesPerFetch)
	for {
		step := walk.Next(p.nowMs())
		switch {
		case step.Refresh:
			if err := p.refreshWorkCandidates(ctx, v, lease, session, tagClause, tagParams, step.All); err != nil {
				return nil, err
			}
		case step.Try:
			locked, drop, err := p.tryLockWork(ctx, step.Candidate, session, lockTimeout)
			p.workPool.Release(step.Candidate, drop)
			if err != nil || locked != nil {
				return locked, err
			}
		default:
			return nil, nil
		}
	}
}

// workLockCondition is the filter predicate of a work item's lock: the
// document is still a worker-queue message (not a consumed message's
// tombstone), visible and unlocked at nowMs.
func workLockCondition(nowMs int64) string {
	n := strconv.FormatInt(nowMs, 10)
	return "FROM c WHERE c.type = '" + typeWorkerQueue + "' AND c.visibleAt <= " + n + " AND c.lockedUntil <= " + n
}

// tryLockWork locks candidate message c (and claims its session); it
// returns nil, and no error, when another fetch won, the message is gone,
// its session belongs to another worker, or a lock write whose answer was
// lost turned out not to have landed. drop tells whether the candidate
// pool should forget c: it is done (locked now, or taken), and kept when
// it is still free (the fetch may try it again at once).
//
// A lock write whose answer was lost (a dropped connection, a 408, a 500)
// is read back (1 point read): when the message carries this lock the
// fetch goes on with it, when it is still free the candidate goes back to
// the pool, so the lost answer costs no wait for the next candidate query
// or for the lock's expiry.
func (p *Provider) tryLockWork(ctx context.Context, c candidates.Entry, session *duroxide.SessionFetchConfig, lockTimeout time.Duration) (*duroxide.LockedWorkItem, bool, error) {
	if c.SessionID != nil && (session == nil || session.LockTimeout.Milliseconds() <= 0) {
		return nil, true, nil // a session lease under 1 ms would have expired on return
	}
	now := p.nowMs()
	lockID := newLockID()
	until := now + lockTimeout.Milliseconds()
	var po azcosmos.PatchOperations
	po.SetCondition(workLockCondition(now))
	po.AppendSet("/lockToken", lockID)
	po.AppendSet("/lockedUntil", until)
	po.AppendIncrement("/attemptCount", 1)

	var d queueDoc
	var etag string
	p.traceFetch(fetchtrace.WorkPatch)
	if c.SessionID == nil {
		var body []byte
		err := p.retry.do(ctx, write, func(ctx context.Context) error {
			resp, err := p.container.PatchItem(ctx, pk(c.Instance), c.ID, po, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
			if err != nil {
				return err
			}
			body, etag = resp.Value, string(resp.ETag)
			return nil
		})
		switch {
		case cosmos.IsStatus(err, http.StatusPreconditionFailed), cosmos.IsStatus(err, http.StatusNotFound):
			p.traceFetch(fetchtrace.WorkSkipLockLost)
			return nil, true, nil
		case cosmos.IsAmbiguous(err):
			var o lockOutcome
			var rerr error
			d, etag, o, rerr = p.readBackWorkLock(ctx, c, lockID)
			p.logLockReadBack("work item lock", c.Instance, c.ID, o, until, err, rerr)
			if o != lockApplied {
				p.traceFetch(fetchtrace.WorkSkipLockLost)
				return nil, o == lockTaken, nil
			}
		case err != nil:
			return nil, false, err
		default:
			if err := json.Unmarshal(body, &d); err != nil {
				return nil, false, fmt.Errorf("decode locked work item: %w", err)
			}
		}
	} else {
		var o lockOutcome
		var err error
		d, etag, o, err = p.lockSessionItem(ctx, c, po, lockID, session, now)
		if err != nil || o != lockApplied {
			return nil, o == lockTaken, err
		}
	}
	item, err := decodeWorkItem(d.WorkItem)
	if err != nil {
		// An undecodable message can never be processed: keep it locked
		// and report it, so the runtime's poison handling can see it.
		return nil, false, permanent("fetch_work_item", fmt.Sprintf("worker-queue message %s of instance %q: %v", d.ID, d.InstanceID, err))
	}
	token := workerLockToken(c.Instance, c.ID, lockID)
	p.workPool.LockedMessage(c.Instance, c.ID, until)
	p.locks.PutWorker(token, &workerLock{instance: c.Instance, docID: c.ID, lockID: lockID, etag: etag, sessionID: d.SessionID, lockedUntil: until,
		enqueuedAt: d.EnqueuedAt, seq: d.Seq, tag: d.Tag}, now)
	if later := p.nowMs(); later >= until || (c.SessionID != nil && later >= now+session.LockTimeout.Milliseconds()) {
		// The lock or the session lease expired during the fetch's
		// requests: never hand it out.
		p.traceFetch(fetchtrace.WorkSkipLockLost)
		if err := p.AbandonWorkItem(ctx, token, 0, true); err != nil {
			p.log.Debug("releasing a work item whose lock expired during its fetch failed; it is fetchable anyway", zap.String("instance", c.Instance), zap.Error(err))
		}
		return nil, true, nil
	}
	p.traceFetch(fetchtrace.WorkFound)
	return &duroxide.LockedWorkItem{Item: item, LockToken: token, AttemptCount: uint32(max(min(d.AttemptCount, int64(^uint32(0))), 1))}, true, nil
}

// readBackWorkLock reads worker-queue message c after a write of lock
// lockID whose answer was lost (1 point read), and tells whether the
// write landed: the message as locked and its ETag when it did
// (lockApplied), lockNotApplied when the message is still unlocked,
// lockTaken when another lock holds it or it was consumed or deleted, and
// lockUnknown with the read's error when the read failed.
func (p *Provider) readBackWorkLock(ctx context.Context, c candidates.Entry, lockID string) (queueDoc, string, lockOutcome, error) {
	var d queueDoc
	etag, found, err := p.readDocPrimary(ctx, c.Instance, c.ID, &d)
	switch {
	case err != nil:
		return queueDoc{}, "", lockUnknown, err
	case !found || d.Type != typeWorkerQueue:
		return queueDoc{}, "", lockTaken, nil
	case d.LockToken != nil && *d.LockToken == lockID:
		return d, etag, lockApplied, nil
	case d.LockedUntil <= p.nowMs():
		return queueDoc{}, "", lockNotApplied, nil
	}
	return queueDoc{}, "", lockTaken, nil
}

// AckWorkItem consumes the locked message (it becomes a tombstone, so that
// a late repeated create cannot bring it back) and, when completion is non-nil, enqueues it on its
// instance's orchestrator queue, atomically (DESIGN.md §3.4).
// Requests: 1, a transactional batch in the instance's partition: the
// consumption, conditioned on the lock by If-Match on
// the ETag the fetch (or a renewal) left, and the completion's create (with
// a deterministic id, so a retry after a lost answer finds it). When this
// process did not take the lock, 1 point read first. A session item's
// session gets its last activity time refreshed afterwards, best effort (1
// patch). A message that is gone (cancelled), or whose lock expired or was
// taken, is a permanent error, and so is a completion that is not an
// activity's or names an invalid instance (nothing is written then).
//
// With eager dispatch (DESIGN.md §17), when this process holds the
// instance's state and an orchestration fetch of it waits, the same batch
// also locks the instance's next turn (the held lock batch's operations,
// the completion created locked) and answers with the documents, and the
// turn is handed to that fetch; a refusal of that part (another process
// changed the instance) costs 1 more request, the plain batch, never a
// failed ack.
func (p *Provider) AckWorkItem(ctx context.Context, lockToken string, completion *duroxide.WorkItem) error {
	ctx = cosmos.WithCall(ctx, "ack_work_item")
	const op = "ack_work_item"
	instance, docID, lockID, ok := parseWorkerLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	var ops []batchOp
	var intent *intentDoc
	var queued *candidates.Entry
	var completionDoc queueWrite
	if completion != nil {
		switch completion.Kind.(type) {
		case duroxide.ActivityCompletedItem, duroxide.ActivityFailedItem:
		default:
			return permanent(op, fmt.Sprintf("Invalid completion type for worker ack: %q", completion.Type()))
		}
		if err := validateInstanceID(op, completion.Instance()); err != nil {
			return err
		}
		d, err := newOrchDoc(*completion, completionDocID(lockID), p.nowMs(), p.nowMs())
		if err != nil {
			return permanent(op, err.Error())
		}
		if d.target == instance {
			ops = append(ops, createOp(d.id, d.doc))
			queued, completionDoc = &d.entry, d
		} else {
			intent = &intentDoc{ID: intentDocID(lockID, 0), InstanceID: instance, Type: typeOutboxIntent, CreatedAt: p.nowMs(),
				Deliveries: []delivery{{TargetInstanceID: d.target, Document: d.doc}}}
			b, err := json.Marshal(intent)
			if err != nil {
				return permanent(op, err.Error())
			}
			ops = append(ops, createOp(intent.ID, b))
		}
	}
	l, cached := p.locks.Worker(lockToken)
	// turn is the first attempt's eager turn (the completion created
	// locked with its instance's next turn, for a waiting orchestration
	// fetch of this process), settled before any return.
	var turn *eagerTurn
	handed := false
	defer func() { turn.landedUnseen() }()
	for attempt := 0; ; attempt++ {
		now := p.nowMs()
		if !cached || l.lockedUntil <= now {
			var d queueDoc
			etag, found, err := p.readDoc(ctx, instance, docID, &d)
			if err != nil {
				return mapError(op, err)
			}
			if !found || d.Type != typeWorkerQueue || d.LockToken == nil || *d.LockToken != lockID || d.LockedUntil <= now {
				return permanent(op, "Activity was cancelled or lock expired (worker queue row not found or lock invalid)")
			}
			l = workerLock{instance: instance, docID: docID, lockID: lockID, etag: etag, sessionID: d.SessionID, lockedUntil: d.LockedUntil}
			cached = true
		}
		all := append([]batchOp{consumeOp(docID, lockID, l.etag)}, ops...)
		if attempt == 0 && queued != nil {
			if turn = p.reserveEagerTurn(instance, completionDoc, now); turn != nil {
				all = append([]batchOp{all[0]}, turn.ops...)
			}
		}
		results, err := p.runBatch(ctx, instance, all, write, turn.pending())
		if err == nil {
			handed = turn.committed(ctx, results)
			break
		}
		if bf, ok := asBatchFailure(err); ok && turn.pending() {
			turn.refused()
			if bf.Index != 0 {
				// The eager turn's part was refused (another process
				// changed the instance): the plain ack, at once.
				continue
			}
		}
		if attempt >= 2 {
			return mapError(op, err)
		}
		if bf, ok := asBatchFailure(err); ok {
			if bf.Index == 0 && bf.Status == http.StatusPreconditionFailed {
				cached = false // renewed elsewhere, or taken: check again
				continue
			}
			if bf.Index == 0 && bf.Status == http.StatusNotFound {
				return permanent(op, "Activity was cancelled or lock expired (worker queue row not found or lock invalid)")
			}
			return mapError(op, err)
		}
		if !cosmos.IsAmbiguous(err) {
			if !outcomeUnknown(ctx, err) {
				turn.refused() // nothing was written
			} // else the context ended with the batch on its way: the deferred landedUnseen releases what may have landed
			return mapError(op, err)
		}
		// The answer was lost: the ack landed if the message is now the
		// tombstone this lock left (the completion, if any, was created
		// in the same batch, and so was an eager turn's lock).
		var d queueDoc
		_, found, rerr := p.readDocPrimary(ctx, instance, docID, &d)
		if rerr != nil {
			return mapError(op, err)
		}
		if !found {
			turn.refused() // the batch would have left the tombstone
			return permanent(op, "Activity was cancelled (worker queue row not found)")
		}
		if d.Type == typeConsumed && d.ConsumedBy == lockID {
			turn.landedUnseen()
			break
		}
		turn.refused() // it did not land: the next attempt is plain
		cached = false
	}
	p.locks.DropWorker(lockToken)
	if queued != nil && !handed {
		p.hint(*queued)
	}
	if intent != nil {
		if err := p.deliverIntent(ctx, *intent, quickRetrier.withClosed(p.stop)); err != nil {
			p.log.Info("outbox delivery deferred to the reconciler", zap.String("intent", intent.ID), zap.Error(err))
		}
	}
	if l.sessionID != nil {
		p.touchSession(ctx, instance, *l.sessionID)
	}
	return nil
}

// RenewWorkItemLock extends the message's lock to now + extendFor and
// reports the state of its execution: Running, Terminal (the execution's
// status is Completed, Failed or ContinuedAsNew) or Missing (no such
// execution). Requests: 2: a patch of the message conditioned by a filter
// predicate on the lock and its expiry, and a point read of the execution
// document (when that finds nothing, 1 more: the read at the primary that
// confirms Missing); a session item's session gets its last activity refreshed, best
// effort (1 patch). A message that is gone (the activity was cancelled), or
// whose lock expired or was taken, is a permanent error.
func (p *Provider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) (duroxide.ExecutionState, error) {
	ctx = cosmos.WithCall(ctx, "renew_work_item_lock")
	const op = "renew_work_item_lock"
	instance, docID, lockID, ok := parseWorkerLockToken(lockToken)
	if !ok {
		return duroxide.ExecutionState{}, permanent(op, "Invalid lock token")
	}
	now := p.nowMs()
	until := now + extendFor.Milliseconds()
	var po azcosmos.PatchOperations
	po.SetCondition(workerLockCondition(lockID, now))
	po.AppendSet("/lockedUntil", until)
	var body []byte
	var etag string
	err := p.retry.do(ctx, idempotentWrite, func(ctx context.Context) error {
		resp, err := p.container.PatchItem(ctx, pk(instance), docID, po, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
		if err != nil {
			return err
		}
		body, etag = resp.Value, string(resp.ETag)
		return nil
	})
	if cosmos.IsStatus(err, http.StatusPreconditionFailed) || cosmos.IsStatus(err, http.StatusNotFound) {
		return duroxide.ExecutionState{}, permanent(op, "Lock renewal failed - activity was cancelled or lock expired")
	}
	if err != nil {
		return duroxide.ExecutionState{}, mapError(op, err)
	}
	var d queueDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return duroxide.ExecutionState{}, mapError(op, err)
	}
	p.locks.UpdateWorker(lockToken, func(l *workerLock) { l.etag, l.lockedUntil = etag, until })
	if d.SessionID != nil {
		p.touchSession(ctx, instance, *d.SessionID)
	}
	if d.ExecutionID == nil {
		return duroxide.ExecutionState{Kind: duroxide.ExecutionRunning}, nil
	}
	var ex executionDoc
	_, found, err := p.readDoc(ctx, instance, executionDocID(*d.ExecutionID), &ex)
	if err == nil && !found {
		// Missing cancels the activity: confirmed at the primary, since
		// the read may come from a replica behind the ack that wrote the
		// execution (DESIGN.md §16).
		_, found, err = p.readDocPrimary(ctx, instance, executionDocID(*d.ExecutionID), &ex)
	}
	switch {
	case err != nil:
		return duroxide.ExecutionState{}, mapError(op, err)
	case !found:
		return duroxide.ExecutionState{Kind: duroxide.ExecutionMissing}, nil
	case ex.Status != duroxide.StatusRunning:
		return duroxide.ExecutionState{Kind: duroxide.ExecutionTerminal, Status: ex.Status}, nil
	}
	return duroxide.ExecutionState{Kind: duroxide.ExecutionRunning}, nil
}

// AbandonWorkItem releases the message's lock; it becomes visible after
// delay (zero: at once) and, with ignoreAttempt, its attempt count goes
// back down by one. Requests: 1 (a patch conditioned by a filter predicate
// on the lock; when its answer is lost, 1 point read tells whether it
// landed). An unknown or already released lock is a permanent error.
func (p *Provider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	ctx = cosmos.WithCall(ctx, "abandon_work_item")
	const op = "abandon_work_item"
	instance, docID, lockID, ok := parseWorkerLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token or already acked")
	}
	var po azcosmos.PatchOperations
	po.SetCondition(workerLockCondition(lockID, 0))
	po.AppendSet("/lockToken", jsonNull)
	po.AppendSet("/lockedUntil", 0)
	po.AppendSet("/releasedLock", lockID)
	if ignoreAttempt {
		po.AppendIncrement("/attemptCount", -1)
	}
	visibleAt := p.nowMs() + max(delay, 0).Milliseconds()
	po.AppendSet("/visibleAt", visibleAt)
	_, err := p.patchDoc(ctx, instance, docID, po, write)
	if cosmos.IsAmbiguous(err) {
		// The answer was lost: the abandon landed if the message names
		// this lock as the last one released.
		var d queueDoc
		if _, found, rerr := p.readDocPrimary(ctx, instance, docID, &d); rerr == nil && found && d.ReleasedLock == lockID {
			err = nil
		}
	}
	if cosmos.IsStatus(err, http.StatusPreconditionFailed) || cosmos.IsStatus(err, http.StatusNotFound) {
		return permanent(op, "Invalid lock token or already acked")
	}
	if err != nil {
		return mapError(op, err)
	}
	if l, ok := p.locks.Worker(lockToken); ok {
		p.workPool.Hint(candidates.Entry{Key: candidates.WorkKey(instance, docID), Instance: instance, ID: docID, Slot: DispatchSlot(instance), Worker: true,
			VisibleAt: visibleAt, EnqueuedAt: l.enqueuedAt, Seq: l.seq, SessionID: l.sessionID, Tag: l.tag})
	}
	p.locks.DropWorker(lockToken)
	return nil
}

// Sessions: claiming and touching session documents at work-item fetch,
// RenewSessionLock and CleanupOrphanedSessions.

// Session affinity (DESIGN.md §8). A session document lives
// in the partition of the instance whose activities use the session, so a
// work item and its session are claimed in one transactional batch. A
// session is owned by OwnerID until its lockedUntil; the owner's fetches
// refresh it, ack and renewal of its items refresh its last activity, and
// RenewSessionLock extends the sessions that were active recently.

// sessionClaimOp returns the batch operation that claims c's session for
// the fetching worker: a replace with If-Match of the session the fetch
// saw it owns, or, for a session the candidate pool does not know as
// active, a create (none exists) or a replace with If-Match of the expired
// one (1 point read). It returns nil when another worker owns the session,
// and otherwise also the session as the claim writes it (without its new
// ETag).
func (p *Provider) sessionClaimOp(ctx context.Context, c candidates.Row, owned *candidates.Row, session *duroxide.SessionFetchConfig, nowMs int64) (*batchOp, candidates.Row, error) {
	sid := *c.SessionID
	doc := sessionDoc{
		ID: sessionDocID(sid), InstanceID: c.InstanceID, Type: typeSession, DispatchSlot: int(DispatchSlot(c.InstanceID)),
		SessionID: sid, OwnerID: session.OwnerID, LockedUntil: nowMs + session.LockTimeout.Milliseconds(),
		LastActivity: nowMs, CreatedAt: nowMs,
	}
	etag := ""
	if owned != nil {
		doc.CreatedAt, etag = owned.CreatedAt, owned.ETag
	} else {
		var cur sessionDoc
		e, found, err := p.readDoc(ctx, c.InstanceID, doc.ID, &cur)
		if err != nil {
			return nil, candidates.Row{}, err
		}
		if found {
			if cur.LockedUntil > nowMs && cur.OwnerID != session.OwnerID {
				return nil, candidates.Row{}, nil
			}
			doc.CreatedAt, etag = cur.CreatedAt, e
		}
	}
	row := candidates.Row{ID: doc.ID, InstanceID: doc.InstanceID, Type: typeSession, SessionID: &doc.SessionID, OwnerID: doc.OwnerID,
		LockedUntil: doc.LockedUntil, CreatedAt: doc.CreatedAt, DispatchSlot: doc.DispatchSlot}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, candidates.Row{}, err
	}
	if etag == "" {
		op := createOp(doc.ID, body)
		return &op, row, nil
	}
	op := replaceOp(doc.ID, body, etag)
	return &op, row, nil
}

// touchSession records activity on a session whose lock still holds (the
// piggybacked last-activity update of ack and renewal). Best effort.
func (p *Provider) touchSession(ctx context.Context, instance, sessionID string) {
	now := p.nowMs()
	var po azcosmos.PatchOperations
	po.SetCondition("FROM c WHERE c.lockedUntil > " + strconv.FormatInt(now, 10))
	po.AppendSet("/lastActivity", now)
	etag, err := p.patchDoc(ctx, instance, sessionDocID(sessionID), po, idempotentWrite)
	if err == nil {
		p.workPool.SessionWritten(instance, sessionID, etag, 0)
	} else if !cosmos.IsStatus(err, http.StatusPreconditionFailed) && !cosmos.IsStatus(err, http.StatusNotFound) {
		p.log.Debug("session last-activity update failed", zap.String("instance", instance), zap.Error(err))
	}
}

// RenewSessionLock extends to now + extendFor the locks of the sessions
// owned by any of ownerIDs whose lock still holds and that were active
// within idleTimeout, and returns how many it renewed. Requests: 1
// cross-partition query, plus 1 conditional patch per session (its filter
// predicate repeats the lock and idleness conditions, so a session that
// changed in between is not renewed).
func (p *Provider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	ctx = cosmos.WithCall(ctx, "renew_session_lock")
	const op = "renew_session_lock"
	if len(ownerIDs) == 0 {
		return 0, nil
	}
	now := p.nowMs()
	cutoff := now - idleTimeout.Milliseconds()
	params := []azcosmos.QueryParameter{param("@now", now), param("@cutoff", cutoff)}
	names := make([]string, len(ownerIDs))
	for i, o := range ownerIDs {
		names[i] = "@o" + strconv.Itoa(i)
		params = append(params, param(names[i], o))
	}
	raws, err := p.query(ctx, nil, "SELECT c.id, c.instanceId, c.sessionId FROM c WHERE c.type = 'session' AND c.ownerId IN ("+
		strings.Join(names, ",")+") AND c.lockedUntil > @now AND c.lastActivity > @cutoff", params, queryOpts{})
	if err != nil {
		return 0, mapError(op, err)
	}
	n := 0
	for _, raw := range raws {
		var s struct {
			ID         string `json:"id"`
			InstanceID string `json:"instanceId"`
			SessionID  string `json:"sessionId"`
		}
		if json.Unmarshal(raw, &s) != nil {
			continue
		}
		var po azcosmos.PatchOperations
		po.SetCondition("FROM c WHERE c.lockedUntil > " + strconv.FormatInt(now, 10) + " AND c.lastActivity > " + strconv.FormatInt(cutoff, 10))
		until := now + extendFor.Milliseconds()
		po.AppendSet("/lockedUntil", until)
		etag, err := p.patchDoc(ctx, s.InstanceID, s.ID, po, idempotentWrite)
		if err == nil {
			p.workPool.SessionWritten(s.InstanceID, s.SessionID, etag, until)
		}
		if err := countWrite(&n, err); err != nil {
			return n, mapError(op, err)
		}
	}
	return n, nil
}

// CleanupOrphanedSessions removes the sessions whose lock expired and that
// have no pending worker-queue message, and returns how many it removed.
// Requests: 2 cross-partition queries (expired sessions, messages with a
// session), plus 1 delete per orphan, conditioned on its ETag so that a
// session claimed in between survives.
func (p *Provider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	ctx = cosmos.WithCall(ctx, "cleanup_orphaned_sessions")
	const op = "cleanup_orphaned_sessions"
	now := p.nowMs()
	raws, err := p.query(ctx, nil, "SELECT c.id, c.instanceId, c.sessionId, c._etag FROM c WHERE c.type = 'session' AND c.lockedUntil < @now",
		[]azcosmos.QueryParameter{param("@now", now)}, queryOpts{})
	if err != nil {
		return 0, mapError(op, err)
	}
	if len(raws) == 0 {
		return 0, nil
	}
	pendingRaws, err := p.query(ctx, nil, "SELECT c.instanceId, c.sessionId FROM c WHERE c.type = 'worker_queue' AND NOT IS_NULL(c.sessionId)", nil, queryOpts{})
	if err != nil {
		return 0, mapError(op, err)
	}
	pending := map[[2]string]bool{}
	for _, raw := range pendingRaws {
		var w candidates.Row
		if json.Unmarshal(raw, &w) == nil && w.SessionID != nil {
			pending[[2]string{w.InstanceID, *w.SessionID}] = true
		}
	}
	n := 0
	for _, raw := range raws {
		var s candidates.Row
		if json.Unmarshal(raw, &s) != nil || s.SessionID == nil || pending[[2]string{s.InstanceID, *s.SessionID}] {
			continue
		}
		if err := countWrite(&n, p.deleteDoc(ctx, s.InstanceID, s.ID, s.ETag)); err != nil {
			return n, mapError(op, err)
		}
	}
	return n, nil
}

// countWrite adds one to *n for a conditional write that succeeded, skips
// one whose condition no longer held or whose document is gone (412, 404),
// and returns any other error.
func countWrite(n *int, err error) error {
	switch {
	case err == nil:
		*n++
	case cosmos.IsStatus(err, http.StatusPreconditionFailed), cosmos.IsStatus(err, http.StatusNotFound):
	default:
		return err
	}
	return nil
}

// lockSessionItem locks session item c with patch po (lock lockID) and
// claims its session in one transactional batch, and returns the message
// as locked and its ETag with lockApplied; lockTaken when the message or
// the session is taken; lockNotApplied when a batch whose answer was lost
// did not land (the message and its session are as they were: the
// candidate may be tried again at once). A claim that fails because the
// session this process knew changed since (another of its updates, or
// another process's) is tried once more with the session read again, so
// that a session's items keep their order. A batch whose answer was lost
// is read back (1 point read of the message, and of the session when it
// landed).
func (p *Provider) lockSessionItem(ctx context.Context, c candidates.Entry, po azcosmos.PatchOperations, lockID string, session *duroxide.SessionFetchConfig, now int64) (queueDoc, string, lockOutcome, error) {
	key := [2]string{c.Instance, *c.SessionID}
	cand := candidates.Row{ID: c.ID, InstanceID: c.Instance, SessionID: c.SessionID}
	var owned *candidates.Row
	if s, ok := p.workPool.Session(key); ok && s.LockedUntil > now && s.OwnerID == session.OwnerID {
		owned = &s
	}
	for {
		claim, claimed, err := p.sessionClaimOp(ctx, cand, owned, session, now)
		if err != nil {
			return queueDoc{}, "", lockUnknown, err
		}
		if claim == nil {
			return queueDoc{}, "", lockTaken, nil
		}
		results, err := p.runBatch(ctx, c.Instance, []batchOp{patchOp(c.ID, po, ""), *claim}, write, true)
		if err == nil {
			var d queueDoc
			if err := json.Unmarshal(results[0].ResourceBody, &d); err != nil {
				return queueDoc{}, "", lockUnknown, fmt.Errorf("decode locked work item: %w", err)
			}
			claimed.ETag = string(results[1].ETag)
			p.workPool.SetSession(claimed)
			return d, string(results[0].ETag), lockApplied, nil
		}
		if cosmos.IsAmbiguous(err) {
			return p.readBackSessionClaim(ctx, c, lockID, claimed, err)
		}
		bf, isBatch := asBatchFailure(err)
		if !isBatch {
			return queueDoc{}, "", lockUnknown, err
		}
		p.workPool.ForgetSession(key)
		if bf.Index == 1 && owned != nil {
			owned = nil // the session changed since this process saw it
			continue
		}
		p.traceFetch(fetchtrace.WorkSkipLockLost)
		return queueDoc{}, "", lockTaken, nil
	}
}

// readBackSessionClaim reads back the lock and session claim of session
// item c (lock lockID) after the batch's answer was lost (cause), logs
// what it found, and returns what lockSessionItem does. The batch is
// transactional: the message carrying the lock means the claim landed
// too, and the session is read for its ETag (if that read fails the pool
// forgets the session, and the next claim reads it).
func (p *Provider) readBackSessionClaim(ctx context.Context, c candidates.Entry, lockID string, claimed candidates.Row, cause error) (queueDoc, string, lockOutcome, error) {
	key := [2]string{c.Instance, *c.SessionID}
	d, etag, o, rerr := p.readBackWorkLock(ctx, c, lockID)
	p.logLockReadBack("session claim", c.Instance, c.ID, o, claimed.LockedUntil, cause, rerr)
	switch o {
	case lockApplied:
		var cur sessionDoc
		setag, found, err := p.readDocPrimary(ctx, c.Instance, claimed.ID, &cur)
		if err == nil && found && cur.OwnerID == claimed.OwnerID {
			claimed.ETag, claimed.LockedUntil = setag, cur.LockedUntil
			p.workPool.SetSession(claimed)
		} else {
			p.workPool.ForgetSession(key)
		}
		return d, etag, lockApplied, nil
	case lockNotApplied:
		p.traceFetch(fetchtrace.WorkSkipLockLost)
		return queueDoc{}, "", lockNotApplied, nil
	}
	p.workPool.ForgetSession(key)
	p.traceFetch(fetchtrace.WorkSkipLockLost)
	return queueDoc{}, "", o, nil
}

// Enqueue: EnqueueForOrchestrator and EnqueueForWorker, writing one queue
// message.

// EnqueueForOrchestrator adds item to its instance's orchestrator queue,
// visible after delay (duroxide's enqueue_for_orchestrator). It never
// creates the instance: that happens in the first ack, from its metadata; a
// QueueMessageItem for an instance that was never started is dropped, with
// a warning, by the fetch that finds it. An ActivityExecuteItem, an item
// without a kind or an invalid instance id is a permanent error with
// nothing written. Requests: 1 (a create; a retry after a lost answer
// reuses the document id, so its 409 means the first try landed).
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	ctx = cosmos.WithCall(ctx, "enqueue_for_orchestrator")
	const op = "enqueue_for_orchestrator"
	if err := checkOrchestratorItem(item); err != nil {
		return permanent(op, err.Error())
	}
	if err := validateInstanceID(op, item.Instance()); err != nil {
		return err
	}
	now := p.nowMs()
	d, err := newOrchDoc(item, newOrchQueueDocID(), now, now+max(delay, 0).Milliseconds())
	if err != nil {
		return permanent(op, err.Error())
	}
	if err := p.createQueueDoc(ctx, op, d); err != nil {
		return err
	}
	if s, ok := item.Kind.(duroxide.StartOrchestrationItem); ok {
		// The instance's first fetch can be its lock batch alone.
		p.heldStates.StartWritten(d.target, held.StartOf(d.entry, s))
	}
	return nil
}

// EnqueueStart stores a client's start of an orchestration, refusing it
// when the instance exists (duroxide.InstanceStarter): it has run (until it
// is deleted), its start is already stored, or a parent's start of it has
// been fetched. A refusal is a permanent *duroxide.ProviderError wrapping
// duroxide.ErrInstanceExists, with nothing written; when the instance is
// pending (duroxide.StatusPending: its start stored, not run yet) it wraps
// duroxide.ErrInstancePending, which matches ErrInstanceExists too, and
// its message says so, with the reason a runtime recorded
// (duroxide.PendingStartMessage). Requests: 1, as any
// enqueue (2 when refused or after a lost answer).
func (p *Provider) EnqueueStart(ctx context.Context, start duroxide.StartOrchestrationItem) error {
	ctx = cosmos.WithCall(ctx, "enqueue_start")
	const op = "enqueue_start"
	item := duroxide.WorkItem{Kind: start}
	if err := validateInstanceID(op, start.Instance); err != nil {
		return err
	}
	now := p.nowMs()
	d, err := newOrchDoc(item, newOrchQueueDocID(), now, now)
	if err != nil {
		return permanent(op, err.Error())
	}
	return p.startInstance(ctx, op, start, d, now)
}

// startInstance stores a start in one transactional batch: the instance
// document, pending (no instance query sees it until the first ack creates
// the instance) and created only if absent, and the start message. The
// pending document names the message, so that a retry whose first try
// landed recognises its own start in the 409 and succeeds.
func (p *Provider) startInstance(ctx context.Context, op string, start duroxide.StartOrchestrationItem, d queueWrite, nowMs int64) error {
	if len(d.doc) > maxItemBytes {
		return permanent(op, fmt.Sprintf("work item is %d bytes; Cosmos DB items are limited to %d", len(d.doc), maxItemBytes))
	}
	pending := instanceDoc{
		ID: instanceDocID, InstanceID: d.target, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(d.target)),
		OrchestrationName: start.Orchestration, OrchestrationVersion: start.Version, StartMessageID: d.id,
		CreatedAt: nowMs, UpdatedAt: nowMs,
	}
	body, err := json.Marshal(pending)
	if err != nil {
		return permanent(op, err.Error())
	}
	results, err := p.runBatch(ctx, d.target, []batchOp{createOp(instanceDocID, body), createOp(d.id, d.doc)}, idempotentWrite, false)
	if err == nil {
		// The first fetch of the instance needs only its lock batch.
		m := held.StartOf(d.entry, start)
		p.heldStates.Hold(d.target, heldStateOf(&pending, string(results[0].ETag), nil, nil), true, &m)
	}
	if bf, ok := asBatchFailure(err); ok && bf.Status == http.StatusConflict {
		var cur instanceDoc
		_, found, rerr := p.readDocPrimary(ctx, d.target, instanceDocID, &cur)
		switch {
		case rerr != nil:
			return mapError(op, rerr)
		case found && cur.StartMessageID == d.id:
			err = nil // this start, stored by a try whose answer was lost
		case found && cur.pending():
			return &duroxide.ProviderError{Operation: op, Message: duroxide.PendingStartMessage(d.target, cur.PendingReason), Cause: duroxide.ErrInstancePending}
		case found:
			return &duroxide.ProviderError{Operation: op, Message: fmt.Sprintf("instance %s already exists", duroxide.QuoteInstanceID(d.target)), Cause: duroxide.ErrInstanceExists}
		default:
			// Deleted since the batch was refused: the start may be tried again.
			return retryable(op, fmt.Sprintf("instance %s was being deleted; try the start again", duroxide.QuoteInstanceID(d.target)))
		}
	}
	if err != nil {
		return mapError(op, err)
	}
	p.hint(d.entry)
	return nil
}

// EnqueueForWorker adds an ActivityExecuteItem to the worker queue
// (DESIGN.md §3.10), with its session and tag. The document id is
// derived from the activity's execution and id, so enqueuing the same
// activity twice leaves one message. Requests: 1.
func (p *Provider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	ctx = cosmos.WithCall(ctx, "enqueue_for_worker")
	const op = "enqueue_for_worker"
	act, ok := item.Kind.(duroxide.ActivityExecuteItem)
	if !ok {
		return permanent(op, fmt.Sprintf("Invalid work item type %q: only ActivityExecute goes to the worker queue", item.Type()))
	}
	if err := validateInstanceID(op, act.Instance); err != nil {
		return err
	}
	d, err := newWorkerDoc(act, p.nowMs())
	if err != nil {
		return permanent(op, err.Error())
	}
	return p.createQueueDoc(ctx, op, d)
}

// createQueueDoc creates a queue document and adds it to this process's
// candidate pool (which wakes waiting fetches); 409 means it exists (a retried create that had landed, or the
// same activity enqueued again).
func (p *Provider) createQueueDoc(ctx context.Context, op string, d queueWrite) error {
	if len(d.doc) > maxItemBytes {
		return permanent(op, fmt.Sprintf("work item is %d bytes; Cosmos DB items are limited to %d", len(d.doc), maxItemBytes))
	}
	err := p.createDoc(ctx, d.target, d.doc, idempotentWrite)
	if err != nil && !cosmos.IsStatus(err, http.StatusConflict) {
		return mapError(op, err)
	}
	p.hint(d.entry)
	return nil
}
