package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// workCandidate is a row of the work-item candidate query: a worker-queue
// message or an active session.
type workCandidate struct {
	ID           string  `json:"id"`
	InstanceID   string  `json:"instanceId"`
	Type         string  `json:"type"`
	EnqueuedAt   int64   `json:"enqueuedAt"`
	Seq          string  `json:"seq"`
	ETag         string  `json:"_etag"`
	SessionID    *string `json:"sessionId"`
	OwnerID      string  `json:"ownerId"`
	LockedUntil  int64   `json:"lockedUntil"`
	CreatedAt    int64   `json:"createdAt"`
	DispatchSlot int     `json:"dispatchSlot"`
}

// FetchWorkItem locks the oldest visible worker-queue message that the tag
// filter accepts and, with session routing, whose session is unowned,
// expired or owned by session.OwnerID (seeds/cdb-spec.md §3.2, duroxide's
// SQLite fetch_work_item); nil when there is none. With a nil session only
// messages without a session are eligible. Requests: 2:
//
//  1. a cross-partition query over this fetch's slots for visible,
//     unlocked messages matching the filters (and, with session routing,
//     the active sessions, to skip items owned by other workers);
//  2. a patch of the message with If-Match on the ETag just read (lock
//     token, expiry, attempt count + 1), or, for a session item, a
//     transactional batch of that patch and the session's claim (a create,
//     or a replace with If-Match when the session exists).
//
// A lost race costs 1 request more and the next candidate is tried, up to
// 4; when a full page of candidates held only items of sessions other
// workers own, the query's further pages are read too. With a positive pollTimeout the fetch polls again every
// LongPollInterval until work appears or the timeout passes.
func (p *Provider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	const op = "fetch_work_item"
	tagClause, tagParams, ok := tagFilterClause(tagFilter)
	if !ok {
		return nil, nil // TagFilterNone: this worker processes no activities
	}
	var locked *duroxide.LockedWorkItem
	err := p.longPoll(ctx, pollTimeout, func(ctx context.Context) (bool, error) {
		var err error
		locked, err = p.fetchWorkOnce(ctx, lockTimeout, session, tagClause, tagParams)
		return locked != nil, err
	})
	if err != nil {
		return nil, mapError(op, err)
	}
	return locked, nil
}

func (p *Provider) fetchWorkOnce(ctx context.Context, lockTimeout time.Duration, session *duroxide.SessionFetchConfig, tagClause string, tagParams []azcosmos.QueryParameter) (*duroxide.LockedWorkItem, error) {
	lease, err := p.workerLeases.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	now := p.nowMs()
	where := "(c.type = 'worker_queue' AND c.visibleAt <= @now AND c.lockedUntil <= @now" + tagClause
	if session == nil {
		where += " AND IS_NULL(c.sessionId))"
	} else {
		where += ") OR (c.type = 'session' AND c.lockedUntil > @now)"
	}
	q := "SELECT c.id, c.instanceId, c.type, c.enqueuedAt, c.seq, c._etag, c.sessionId, c.ownerId, c.lockedUntil, c.createdAt, c.dispatchSlot FROM c WHERE (" + where + ")" + slotFilter(lease)
	params := append([]azcosmos.QueryParameter{param("@now", now)}, tagParams...)
	// A full page holding only items of sessions other workers own is
	// followed by a read of all pages.
	var locked *duroxide.LockedWorkItem
	err = p.scanCandidates(ctx, q, params, func(raws [][]byte) (bool, error) {
		var tried int
		var err error
		locked, tried, err = p.tryWorkCandidates(ctx, raws, session, lockTimeout)
		return err != nil || locked != nil || tried > 0, err
	})
	return locked, err
}

// tryWorkCandidates tries to lock the oldest eligible messages among the
// candidate query's rows, up to maxCandidatesPerFetch of them, and reports
// how many it tried.
func (p *Provider) tryWorkCandidates(ctx context.Context, raws [][]byte, session *duroxide.SessionFetchConfig, lockTimeout time.Duration) (*duroxide.LockedWorkItem, int, error) {
	var items []workCandidate
	sessions := map[[2]string]workCandidate{}
	for _, raw := range raws {
		var c workCandidate
		if json.Unmarshal(raw, &c) != nil {
			continue
		}
		switch c.Type {
		case typeWorkerQueue:
			items = append(items, c)
		case typeSession:
			if c.SessionID != nil {
				sessions[[2]string{c.InstanceID, *c.SessionID}] = c
			}
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].EnqueuedAt != items[j].EnqueuedAt {
			return items[i].EnqueuedAt < items[j].EnqueuedAt
		}
		return items[i].Seq < items[j].Seq
	})
	tries := 0
	for _, c := range items {
		var owned *workCandidate
		if c.SessionID != nil {
			if session == nil {
				continue
			}
			if s, ok := sessions[[2]string{c.InstanceID, *c.SessionID}]; ok {
				if s.OwnerID != session.OwnerID {
					continue // owned by another worker
				}
				owned = &s
			}
		}
		if tries == maxCandidatesPerFetch {
			break
		}
		tries++
		locked, err := p.tryLockWork(ctx, c, owned, session, lockTimeout)
		if err != nil || locked != nil {
			return locked, tries, err
		}
	}
	return nil, tries, nil
}

// tryLockWork locks one candidate message (and claims its session); it
// returns nil, nil when another fetch won.
func (p *Provider) tryLockWork(ctx context.Context, c workCandidate, owned *workCandidate, session *duroxide.SessionFetchConfig, lockTimeout time.Duration) (*duroxide.LockedWorkItem, error) {
	now := p.nowMs()
	lockID := newLockID()
	until := now + lockTimeout.Milliseconds()
	var po azcosmos.PatchOperations
	po.AppendSet("/lockToken", lockID)
	po.AppendSet("/lockedUntil", until)
	po.AppendIncrement("/attemptCount", 1)

	var body []byte
	var etag string
	if c.SessionID == nil {
		e := azcore.ETag(c.ETag)
		err := p.retry.do(ctx, write, func(ctx context.Context) error {
			resp, err := p.container.PatchItem(ctx, pk(c.InstanceID), c.ID, po, &azcosmos.ItemOptions{IfMatchEtag: &e, EnableContentResponseOnWrite: true})
			if err != nil {
				return err
			}
			body, etag = resp.Value, string(resp.ETag)
			return nil
		})
		switch {
		case isStatus(err, http.StatusPreconditionFailed), isStatus(err, http.StatusNotFound):
			return nil, nil
		case isAmbiguous(err):
			return nil, nil // if it landed, the lock expires unused
		case err != nil:
			return nil, err
		}
	} else {
		claim, err := p.sessionClaimOp(ctx, c, owned, session, now)
		if err != nil || claim == nil {
			return nil, err
		}
		results, err := p.runBatch(ctx, c.InstanceID, []batchOp{patchOp(c.ID, po, c.ETag), *claim}, write, true)
		if err != nil {
			if _, ok := asBatchFailure(err); ok || isAmbiguous(err) {
				return nil, nil
			}
			return nil, err
		}
		body, etag = results[0].ResourceBody, string(results[0].ETag)
	}
	var d queueDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("decode locked work item: %w", err)
	}
	item, err := decodeWorkItem(d.WorkItem)
	if err != nil {
		// An undecodable message can never be processed: keep it locked
		// and report it, so the runtime's poison handling can see it.
		return nil, permanent("fetch_work_item", fmt.Sprintf("worker-queue message %s of instance %q: %v", d.ID, d.InstanceID, err))
	}
	token := workerLockToken(c.InstanceID, c.ID, lockID)
	p.locks.putWorker(token, &workerLock{instance: c.InstanceID, docID: c.ID, lockID: lockID, etag: etag, sessionID: d.SessionID, lockedUntil: until}, now)
	return &duroxide.LockedWorkItem{Item: item, LockToken: token, AttemptCount: uint32(max(min(d.AttemptCount, int64(^uint32(0))), 1))}, nil
}

// AckWorkItem consumes the locked message (it becomes a tombstone:
// tombstone.go) and, when completion is non-nil, enqueues it on its
// instance's orchestrator queue, atomically (seeds/cdb-spec.md §3.4).
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
	const op = "ack_work_item"
	instance, docID, lockID, ok := parseWorkerLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	var ops []batchOp
	var intent *intentDoc
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
	l, cached := p.locks.getWorker(lockToken)
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
		if !isAmbiguous(err) {
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
	p.locks.dropWorker(lockToken)
	p.changes.notify()
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
	if isStatus(err, http.StatusPreconditionFailed) || isStatus(err, http.StatusNotFound) {
		return duroxide.ExecutionState{}, permanent(op, "Lock renewal failed - activity was cancelled or lock expired")
	}
	if err != nil {
		return duroxide.ExecutionState{}, mapError(op, err)
	}
	var d queueDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return duroxide.ExecutionState{}, mapError(op, err)
	}
	p.locks.updateWorker(lockToken, func(l *workerLock) { l.etag, l.lockedUntil = etag, until })
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
	po.AppendSet("/visibleAt", p.nowMs()+max(delay, 0).Milliseconds())
	if ignoreAttempt {
		po.AppendIncrement("/attemptCount", -1)
	}
	_, err := p.patchDoc(ctx, instance, docID, po, write)
	if isAmbiguous(err) {
		// The answer was lost: the abandon landed if the message names
		// this lock as the last one released.
		var d queueDoc
		if _, found, rerr := p.readDoc(ctx, instance, docID, &d); rerr == nil && found && d.ReleasedLock == lockID {
			err = nil
		}
	}
	if isStatus(err, http.StatusPreconditionFailed) || isStatus(err, http.StatusNotFound) {
		return permanent(op, "Invalid lock token or already acked")
	}
	if err != nil {
		return mapError(op, err)
	}
	p.locks.dropWorker(lockToken)
	p.changes.notify()
	return nil
}
