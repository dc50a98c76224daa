// Orchestration locks after fetch: RenewOrchestrationItemLock,
// AbandonOrchestrationItem and releasing a lock with its messages.

package cdb

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// loadOrchLock reads what an ack, renew or abandon needs when its lock is
// not in this process's cache (one single-partition query), and returns
// nil when lockID is not the instance's current lock.
func (p *Provider) loadOrchLock(ctx context.Context, instance, lockID string) (*orchLock, error) {
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending', 'kv') OR (c.type = 'orch_queue' AND c.lockToken = @l)",
		[]azcosmos.QueryParameter{param("@l", lockID)}, queryOpts{})
	if err != nil {
		return nil, err
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, err
	}
	if st.inst == nil || st.inst.LockToken == nil || *st.inst.LockToken != lockID {
		return nil, nil
	}
	l := &orchLock{instance: instance, lockID: lockID, doc: *st.inst, kv: st.kv, lockedUntil: st.inst.LockedUntil}
	for _, m := range st.msgs {
		l.messageIDs = append(l.messageIDs, m.ID)
	}
	return l, nil
}

// lockCondition is the patch filter predicate that holds while lockID is
// the document's lock (and, with nowMs > 0, has not expired).
func lockCondition(lockID string, nowMs int64) string {
	c := "FROM c WHERE c.lockToken = '" + lockID + "'"
	if nowMs > 0 {
		c += " AND c.lockedUntil > " + strconv.FormatInt(nowMs, 10)
	}
	return c
}

// RenewOrchestrationItemLock extends the instance lock to now + extendFor.
// Requests: 1 (a transactional batch: a patch of the instance document
// conditioned by a filter predicate on the lock and its expiry, plus the
// tagged messages' expiry when this process took the lock). A lock that
// expired, was taken by another fetch, or was released is a permanent
// error.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	ctx = cosmos.WithCall(ctx, "renew_orchestration_item_lock")
	const op = "renew_orchestration_item_lock"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	now := p.nowMs()
	until := now + extendFor.Milliseconds()
	var po azcosmos.PatchOperations
	po.SetCondition(lockCondition(lockID, now))
	po.AppendSet("/lockedUntil", until)
	ops := []batchOp{patchOp(instanceDocID, po, "")}
	if l, ok := p.locks.Orch(lockToken); ok {
		for _, id := range l.messageIDs {
			var mo azcosmos.PatchOperations
			mo.AppendSet("/lockedUntil", until)
			ops = append(ops, patchOp(id, mo, ""))
		}
	}
	results, err := p.runBatch(ctx, instance, ops, idempotentWrite, false)
	if bf, ok := asBatchFailure(err); ok && bf.Index == 0 {
		return permanent(op, "Lock token invalid, expired, or already acked")
	}
	if err != nil {
		return mapError(op, err)
	}
	p.locks.UpdateOrch(lockToken, func(l *orchLock) {
		l.doc.LockedUntil, l.lockedUntil, l.doc.ETag = until, until, string(results[0].ETag)
	})
	p.orchPool.Lock(instance, until)
	return nil
}

// AbandonOrchestrationItem releases the instance lock without committing;
// the messages the fetch tagged become visible again after delay (zero: at
// once) and, with ignoreAttempt, their attempt counts go back down by one.
// Requests: 1 transactional batch (a patch of the instance document
// conditioned on the lock, and one patch per tagged message), plus 1 query
// for the tagged messages when another process took the lock, plus 1 point
// read when the batch's answer is lost (did it land?). An unknown
// or already released lock is a permanent error; an expired lock no other
// fetch has taken is released normally.
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.abandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt, "")
}

// abandonOrchestrationItem is AbandonOrchestrationItem that also writes
// reason (when not "") as the pending reason of a pending instance, in the
// same patch of its document (pending.go).
func (p *Provider) abandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	ctx = cosmos.WithCall(ctx, "abandon_orchestration_item")
	const op = "abandon_orchestration_item"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	var ids []string
	again := candidates.Entry{Key: instance, Instance: instance, Slot: DispatchSlot(instance), VisibleAt: p.nowMs() + max(delay, 0).Milliseconds()}
	if l, ok := p.locks.Orch(lockToken); ok {
		ids = l.messageIDs
		again.EnqueuedAt, again.Seq = l.oldestEnqueuedAt, l.oldestSeq
		if !l.doc.pending() {
			reason = "" // only a pending instance keeps a reason
		}
	} else {
		raws, err := p.query(ctx, &instance, "SELECT c.id FROM c WHERE c.type = 'orch_queue' AND c.lockToken = @l",
			[]azcosmos.QueryParameter{param("@l", lockID)}, queryOpts{})
		if err != nil {
			return mapError(op, err)
		}
		for _, raw := range raws {
			var h docHeader
			if json.Unmarshal(raw, &h) == nil {
				ids = append(ids, h.ID)
			}
		}
	}
	err := p.releaseOrchLockNoting(ctx, instance, lockID, ids, delay, ignoreAttempt, reason)
	if cosmos.IsAmbiguous(err) {
		// The answer was lost: the release landed if the instance
		// document names this lock as the last one released.
		var cur instanceDoc
		if _, found, rerr := p.readDoc(ctx, instance, instanceDocID, &cur); rerr == nil && found && cur.LastReleasedLock == lockID {
			err = nil
		}
	}
	if bf, ok := asBatchFailure(err); ok && bf.Index == 0 {
		return permanent(op, "Invalid lock token")
	}
	if err != nil {
		return mapError(op, err)
	}
	p.locks.DropOrch(lockToken)
	p.orchPool.Hint(again)
	p.orchPool.Unlock(instance)
	return nil
}

// releaseOrchLock clears lockID from the instance document (conditioned on
// it still being the lock, and recording it as the last lock released) and
// from messageIDs, in one batch. A lost answer is an *cosmos.AmbiguousError.
func (p *Provider) releaseOrchLock(ctx context.Context, instance, lockID string, messageIDs []string, delay time.Duration, ignoreAttempt bool) error {
	return p.releaseOrchLockNoting(ctx, instance, lockID, messageIDs, delay, ignoreAttempt, "")
}

// releaseOrchLockNoting is releaseOrchLock that also sets the instance
// document's pending reason to reason when reason is not "".
func (p *Provider) releaseOrchLockNoting(ctx context.Context, instance, lockID string, messageIDs []string, delay time.Duration, ignoreAttempt bool, reason string) error {
	now := p.nowMs()
	var po azcosmos.PatchOperations
	po.SetCondition(lockCondition(lockID, 0))
	po.AppendSet("/lockToken", jsonNull)
	po.AppendSet("/lockedUntil", 0)
	po.AppendSet("/lastReleasedLock", lockID)
	if reason != "" {
		po.AppendSet("/pendingReason", reason)
	}
	ops := []batchOp{patchOp(instanceDocID, po, "")}
	for _, id := range messageIDs {
		var mo azcosmos.PatchOperations
		mo.SetCondition(lockCondition(lockID, 0))
		mo.AppendSet("/lockToken", jsonNull)
		mo.AppendSet("/lockedUntil", 0)
		if delay > 0 {
			mo.AppendSet("/visibleAt", now+delay.Milliseconds())
		}
		if ignoreAttempt {
			mo.AppendIncrement("/attemptCount", -1)
		}
		ops = append(ops, patchOp(id, mo, ""))
	}
	_, err := p.runBatch(ctx, instance, ops, write, false)
	if bf, ok := asBatchFailure(err); ok && bf.Index > 0 && (bf.Status == http.StatusPreconditionFailed || bf.Status == http.StatusNotFound) {
		// A message is no longer ours (or gone): release the instance alone.
		_, err = p.runBatch(ctx, instance, ops[:1], write, false)
	}
	return err
}
