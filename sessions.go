// Sessions: claiming and touching session documents at work-item fetch,
// RenewSessionLock and CleanupOrphanedSessions.

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
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

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
		p.traceFetch(workSkipLockLost)
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
		setag, found, err := p.readDoc(ctx, c.Instance, claimed.ID, &cur)
		if err == nil && found && cur.OwnerID == claimed.OwnerID {
			claimed.ETag, claimed.LockedUntil = setag, cur.LockedUntil
			p.workPool.SetSession(claimed)
		} else {
			p.workPool.ForgetSession(key)
		}
		return d, etag, lockApplied, nil
	case lockNotApplied:
		p.traceFetch(workSkipLockLost)
		return queueDoc{}, "", lockNotApplied, nil
	}
	p.workPool.ForgetSession(key)
	p.traceFetch(workSkipLockLost)
	return queueDoc{}, "", o, nil
}
