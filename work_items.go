// Work items: FetchWorkItem, AckWorkItem, RenewWorkItemLock and
// AbandonWorkItem.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

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
	var locked *duroxide.LockedWorkItem
	err = p.longPoll(ctx, pollTimeout, p.workPool, func(ctx context.Context, final bool) (bool, error) {
		var err error
		locked, err = p.fetchWorkOnce(ctx, lockTimeout, session, tagFilter, tagClause, tagParams, final)
		return locked != nil, err
	})
	if err != nil {
		return nil, mapError(op, err)
	}
	return locked, nil
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
	var locked *duroxide.LockedWorkItem
	err := p.acrossLeases(ctx, p.workerLeases, p.workPool, workViewSuffix(tagFilter, session), "", accept, func(lease *SlotLease, v *candidates.View) (bool, error) {
		p.traceFetch(workAttempt)
		return p.tryCandidates(p.workPool, v, "", owner, accept, final, func(all bool) error {
			return p.refreshWorkCandidates(ctx, v, lease, session, tagClause, tagParams, all)
		}, func(c candidates.Entry) (bool, bool, error) {
			var err error
			var drop bool
			locked, drop, err = p.tryLockWork(ctx, c, session, lockTimeout)
			return locked != nil, drop, err
		})
	})
	return locked, err
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
	p.traceFetch(workPatch)
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
			p.traceFetch(workSkipLockLost)
			return nil, true, nil
		case cosmos.IsAmbiguous(err):
			var o lockOutcome
			var rerr error
			d, etag, o, rerr = p.readBackWorkLock(ctx, c, lockID)
			p.logLockReadBack("work item lock", c.Instance, c.ID, o, until, err, rerr)
			if o != lockApplied {
				p.traceFetch(workSkipLockLost)
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
		p.traceFetch(workSkipLockLost)
		if err := p.AbandonWorkItem(ctx, token, 0, true); err != nil {
			p.log.Debug("releasing a work item whose lock expired during its fetch failed; it is fetchable anyway", zap.String("instance", c.Instance), zap.Error(err))
		}
		return nil, true, nil
	}
	p.traceFetch(workFound)
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
	etag, found, err := p.readDoc(ctx, c.Instance, c.ID, &d)
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
			queued = &d.entry
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
		_, err := p.runBatch(ctx, instance, all, write, false)
		if err == nil {
			break
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
			return mapError(op, err)
		}
		// The answer was lost: the ack landed if the message is now the
		// tombstone this lock left (the completion, if any, was created
		// in the same batch).
		var d queueDoc
		_, found, rerr := p.readDoc(ctx, instance, docID, &d)
		if rerr != nil {
			return mapError(op, err)
		}
		if !found {
			return permanent(op, "Activity was cancelled (worker queue row not found)")
		}
		if d.Type == typeConsumed && d.ConsumedBy == lockID {
			break
		}
		cached = false
	}
	p.locks.DropWorker(lockToken)
	if queued != nil {
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
// document; a session item's session gets its last activity refreshed, best
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
		if _, found, rerr := p.readDoc(ctx, instance, docID, &d); rerr == nil && found && d.ReleasedLock == lockID {
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
