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
)

const (
	// maxMessagesPerTurn caps the messages one fetch locks, so that the
	// lock batch (instance + one patch per message) and the ack's batch
	// (instance, execution, KV, one delete per message, at least one
	// intent) stay within 100 operations; the rest wait for the next turn.
	maxMessagesPerTurn = 90
	// maxCandidatesPerFetch is how many candidates one fetch attempt tries
	// to lock before it reports no work.
	maxCandidatesPerFetch = 4
	// candidatePageSize is the page size of the candidate query; a fetch
	// reads one non-empty page of candidates.
	candidatePageSize = 200
	// notReadySkipMs is how long an instance whose messages wait for a
	// StartOrchestration, or whose pinned version the filter excludes, is
	// not tried again.
	notReadySkipMs = 1000
)

// jsonNull is a JSON null for patch operations (a nil value would be
// omitted from the operation).
var jsonNull = json.RawMessage("null")

// unknownVersion is the version a fetch reports when none was recorded
// (duroxide's SQLite provider).
const unknownVersion = "unknown"

// FetchOrchestrationItem locks the next instance with visible
// orchestrator-queue messages and returns its turn (seeds/cdb-spec.md §3.1,
// seeds/cdb-architecture.md §6.1), or nil when there is none.
//
// Requests: 2 when the candidate is known and locked at the first try:
//
//  1. a single-partition query returning the instance document, its
//     messages, its KV documents and the history documents of the
//     execution this process last saw current (the first one when it saw
//     none); capability filtering and the QueueMessage-without-instance
//     rule are decided here, before the lock, and the history is decoded
//     only once the lock is held;
//  2. a transactional batch that takes the lock (a patch of the instance
//     document with If-Match on the ETag just read, or the creation of a
//     pending instance document) and tags the visible messages (lock token,
//     lock expiry, attempt count + 1).
//
// Candidates come from this process's candidate pool (pool.go): the last
// candidate query of the fetch's lease slots, and the messages this
// process wrote since. 1 more request, a cross-partition query of the
// lease's slots for visible, unlocked messages and for locked instances
// (whose messages are then not tried), is made when the pool's view of the
// slots is older than LongPollInterval, or when it offers nothing to a
// fetch that must answer now (a zero poll timeout, or the end of the poll
// timeout); a fetch that is still waiting trusts an empty, recent view, so
// messages written by other processes are seen within LongPollInterval. 1
// more, a history query, when the instance is on another execution than
// the one read with its state (or that read missed events). A candidate
// that cannot be locked (it is locked, its messages wait for a start,
// another process won the race) costs 1 or 2 more requests and the next
// one is tried, up to 4; when the view holds no usable candidate and its
// last query stopped at a full page (200 messages), every page is read.
// With a positive pollTimeout the fetch waits for this process's writes,
// the visibility of a known message, or the next poll (every
// LongPollInterval), until work appears or the timeout passes. An
// undecodable history is returned in HistoryError with the lock held; a
// failure after the lock was taken releases it before the error is
// returned.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	ctx = withCall(ctx, "fetch_orchestration_item")
	const op = "fetch_orchestration_item"
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil, nil // supports nothing
	}
	var item *duroxide.OrchestrationItem
	err := p.longPoll(ctx, pollTimeout, p.orchPool, func(ctx context.Context, final bool) (bool, error) {
		var err error
		item, err = p.fetchOrchestrationOnce(ctx, lockTimeout, filter, final)
		return item != nil, err
	})
	if err != nil {
		return nil, mapError(op, err)
	}
	return item, nil
}

// fetchOrchestrationOnce is one attempt: it tries the candidates of a
// lease's slots, and of other leases when its own has none.
func (p *Provider) fetchOrchestrationOnce(ctx context.Context, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter, final bool) (*duroxide.OrchestrationItem, error) {
	var item *duroxide.OrchestrationItem
	scope := capabilityScope(filter)
	err := p.acrossLeases(ctx, p.orchLeases, p.orchPool, "", scope, nil, func(lease *SlotLease, v *poolView) (bool, error) {
		p.traceFetch(orchAttempt)
		found, err := p.tryCandidates(p.orchPool, v, scope, nil, nil, final, func(all bool) error {
			return p.refreshOrchCandidates(ctx, v, lease, all)
		}, func(c poolEntry) (bool, bool, error) {
			var err error
			var drop bool
			item, drop, err = p.tryLockInstance(ctx, c, lockTimeout, filter)
			return item != nil, drop, err
		})
		return found, err
	})
	return item, err
}

// readOrchState reads, with one single-partition query, the instance
// document, the orchestrator-queue messages, the KV documents and, when
// executionID is not 0, that execution's history documents (unsorted,
// staged ones included).
func (p *Provider) readOrchState(ctx context.Context, instance string, executionID uint64) (partitionState, error) {
	q := "SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending', 'orch_queue', 'kv')"
	var params []azcosmos.QueryParameter
	if executionID > 0 {
		q += " OR (c.type = 'history' AND c.executionId = @e)"
		params = append(params, param("@e", executionID))
	}
	raws, err := p.query(ctx, &instance, q, params, queryOpts{pageSize: -1})
	if err != nil {
		return partitionState{}, err
	}
	return parseState(raws)
}

// compatibleFirstRange applies a capability filter the way duroxide's
// phase 1 does (SQLite's packed comparison): only the first range counts,
// and versions compare by major.minor.patch.
func compatibleFirstRange(filter *duroxide.DispatcherCapabilityFilter, v *pinnedVersion) bool {
	r := filter.SupportedDuroxideVersions[0]
	core := func(x duroxide.Version) duroxide.Version {
		return duroxide.Version{Major: x.Major, Minor: x.Minor, Patch: x.Patch}
	}
	pv := v.toVersion()
	return pv.Compare(core(r.Min)) >= 0 && pv.Compare(core(r.Max)) <= 0
}

// capabilityScope names the fetches of a capability filter, for the
// candidate pool's skips: an instance one filter excludes is skipped by the
// fetches of that filter only.
func capabilityScope(filter *duroxide.DispatcherCapabilityFilter) string {
	if filter == nil {
		return ""
	}
	return "filter " + fmt.Sprint(filter.SupportedDuroxideVersions)
}

// startOf returns the orchestration name and version of the first
// StartOrchestration or ContinueAsNew message.
func startOf(items []duroxide.WorkItem) (name string, version *string, ok bool) {
	for _, it := range items {
		switch k := it.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			return k.Orchestration, k.Version, true
		case duroxide.ContinueAsNewItem:
			return k.Orchestration, k.Version, true
		}
	}
	return "", nil, false
}

func allQueueMessages(items []duroxide.WorkItem) bool {
	for _, it := range items {
		if _, ok := it.Kind.(duroxide.QueueMessageItem); !ok {
			return false
		}
	}
	return true
}

// tryLockInstance tries to lock candidate c's instance and build its turn;
// it returns nil, and no error, when the instance is not available, with
// drop telling whether the pool should forget the candidate (nothing of it
// is left to lock).
func (p *Provider) tryLockInstance(ctx context.Context, c poolEntry, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (item *duroxide.OrchestrationItem, drop bool, err error) {
	instance := c.instance
	execHint := max(p.orchPool.exec(instance), duroxide.InitialExecutionID)
	p.traceFetch(orchStateQuery)
	st, err := p.readOrchState(ctx, instance, execHint)
	if err != nil {
		return nil, false, err
	}
	now := p.nowMs()
	if st.inst != nil && st.inst.locked(now) {
		p.traceFetch(orchSkipLocked)
		p.orchPool.lock(instance, st.inst.LockedUntil)
		return nil, false, nil
	}
	var visible []*queueDoc
	for _, m := range st.msgs {
		if m.VisibleAt <= now && m.LockedUntil <= now {
			visible = append(visible, m)
		}
	}
	if len(visible) == 0 {
		p.traceFetch(orchSkipNoVisible)
		return nil, true, nil
	}
	rest := len(visible) > maxMessagesPerTurn
	if rest {
		visible = visible[:maxMessagesPerTurn]
	}
	items := make([]duroxide.WorkItem, 0, len(visible))
	for _, m := range visible {
		w, err := decodeWorkItem(m.WorkItem)
		if err != nil {
			p.log.Warn("undecodable orchestrator-queue message; it is consumed with the turn", zap.String("instance", instance), zap.String("id", m.ID), zap.Error(err))
			continue
		}
		items = append(items, w)
	}
	hasContext := st.inst != nil && (st.inst.exists() || st.inst.CurrentExecutionID > 0)
	startName, startVersion, hasStart := startOf(items)
	if !hasContext && !hasStart {
		if allQueueMessages(items) {
			p.dropOrphanQueueMessages(ctx, instance, visible)
			return nil, !rest, nil
		}
		p.traceFetch(orchSkipNotReady)
		p.orchPool.skip(instance, now+notReadySkipMs, "")
		return nil, false, nil
	}
	if filter != nil && hasContext && st.inst.PinnedDuroxideVersion != nil && !compatibleFirstRange(filter, st.inst.PinnedDuroxideVersion) {
		p.traceFetch(orchSkipFiltered)
		p.orchPool.skip(instance, now+notReadySkipMs, capabilityScope(filter))
		return nil, false, nil
	}

	lockID := newLockID()
	lockedUntil := now + lockTimeout.Milliseconds()
	var doc instanceDoc
	var ops []batchOp
	if st.inst == nil {
		doc = instanceDoc{
			ID: instanceDocID, InstanceID: instance, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(instance)),
			OrchestrationName: startName, OrchestrationVersion: startVersion,
			LockToken: strp(lockID), LockedUntil: lockedUntil, CreatedAt: now, UpdatedAt: now,
		}
		body, err := json.Marshal(doc)
		if err != nil {
			return nil, false, err
		}
		ops = append(ops, createOp(instanceDocID, body))
	} else {
		doc = *st.inst
		doc.LockToken, doc.LockedUntil = strp(lockID), lockedUntil
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		ops = append(ops, patchOp(instanceDocID, po, st.inst.ETag))
	}
	attempt := int64(0)
	ids := make([]string, 0, len(visible))
	for _, m := range visible {
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		po.AppendIncrement("/attemptCount", 1)
		ops = append(ops, patchOp(m.ID, po, ""))
		ids = append(ids, m.ID)
		attempt = max(attempt, m.AttemptCount+1)
	}
	p.traceFetch(orchLockBatch)
	results, err := p.runBatch(ctx, instance, ops, write, false)
	switch {
	case err == nil:
		doc.ETag = string(results[0].ETag)
	case isAmbiguous(err):
		// The lock batch may have committed: it did if the instance
		// document now carries this lock.
		var cur instanceDoc
		etag, found, rerr := p.readDoc(ctx, instance, instanceDocID, &cur)
		if rerr != nil || !found || cur.LockToken == nil || *cur.LockToken != lockID {
			return nil, false, nil
		}
		doc.ETag = etag
	default:
		if bf, ok := asBatchFailure(err); ok {
			p.traceFetch(orchSkipLockLost)
			if bf.Index == 0 {
				// The instance document changed since it was read:
				// another process locked it (or acked a turn). Its lock
				// holds for a while, or until a candidate query says
				// otherwise.
				p.orchPool.lock(instance, now+lockTimeout.Milliseconds())
			}
			return nil, false, nil
		}
		return nil, false, err
	}
	p.orchPool.lock(instance, lockedUntil)
	p.orchPool.unskip(instance)
	token := orchLockToken(instance, lockID)

	item = &duroxide.OrchestrationItem{
		Instance: instance, Messages: items, LockToken: token,
		AttemptCount: uint32(min(attempt, int64(^uint32(0)))),
		KVSnapshot:   kvSnapshot(st.kvStore),
	}
	if hasContext {
		item.OrchestrationName = doc.OrchestrationName
		item.Version = unknownVersion
		if doc.OrchestrationVersion != nil {
			item.Version = *doc.OrchestrationVersion
		}
		item.ExecutionID = doc.CurrentExecutionID
		p.orchPool.setExec(instance, doc.CurrentExecutionID)
		history, herr := p.turnHistory(ctx, instance, &doc, execHint, st.history)
		switch {
		case herr == nil:
			item.History = history
			if item.OrchestrationName == "" {
				for _, ev := range history {
					if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
						item.OrchestrationName, item.Version = s.Name, s.Version
						break
					}
				}
			}
		case isDecodeError(herr):
			msg := "Failed to deserialize history: " + herr.Error()
			p.log.Warn("history deserialization failed; returning the item with history_error", zap.String("instance", instance), zap.Error(herr))
			item.HistoryError = &msg
			item.KVSnapshot = map[string]duroxide.KvEntry{}
		default:
			// Contract: an error means no lock is held.
			p.releaseAfterFailedFetch(instance, lockID, ids)
			return nil, false, herr
		}
	} else {
		item.OrchestrationName = startName
		item.Version = unknownVersion
		if startVersion != nil {
			item.Version = *startVersion
		}
		item.ExecutionID = duroxide.InitialExecutionID
	}
	p.locks.putOrch(token, &orchLock{
		instance: instance, lockID: lockID, doc: doc, messageIDs: ids,
		kvStore: st.kvStore, kvDelta: st.kvDelta, lockedUntil: lockedUntil,
		oldestEnqueuedAt: visible[0].EnqueuedAt, oldestSeq: visible[0].Seq,
	}, now)
	p.traceFetch(orchFound)
	return item, !rest, nil
}

// turnHistory returns the current execution's history for a turn: from
// the documents read with the instance's state (folded, of execution
// folded) when they are that execution's and complete up to its watermark,
// and otherwise with 1 history query.
func (p *Provider) turnHistory(ctx context.Context, instance string, doc *instanceDoc, folded uint64, docs []historyDoc) ([]duroxide.Event, error) {
	exec, watermark := doc.CurrentExecutionID, doc.HistoryWatermark
	if exec == folded && completeHistory(docs, watermark) {
		events, err := decodeHistory(instance, exec, watermark, docs)
		if err != nil {
			return nil, &decodeError{err}
		}
		return events, nil
	}
	if watermark > 0 {
		p.traceFetch(orchHistoryQuery)
	}
	return p.readHistory(ctx, instance, exec, watermark)
}

// completeHistory reports whether docs (one execution's) hold every event
// id from 1 to watermark: duroxide numbers an execution's events from 1
// without gaps, and each id has one document, so a read that raced a
// commit is caught by the count.
func completeHistory(docs []historyDoc, watermark uint64) bool {
	n := uint64(0)
	for _, d := range docs {
		if d.EventID >= 1 && d.EventID <= watermark {
			n++
		}
	}
	return n == watermark
}

// dropOrphanQueueMessages deletes QueueMessage items of an instance that was
// never started: duroxide's contract drops them, with a warning, instead of
// returning them or leaving them queued. Best effort: a failure leaves them
// for the next fetch.
func (p *Provider) dropOrphanQueueMessages(ctx context.Context, instance string, msgs []*queueDoc) {
	p.log.Warn("dropping queue messages enqueued before the orchestration started", zap.String("instance", instance), zap.Int("count", len(msgs)))
	var ops []batchOp
	for _, m := range msgs {
		ops = append(ops, deleteOp(m.ID, m.ETag))
	}
	if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err != nil {
		p.log.Debug("dropping orphan queue messages failed", zap.String("instance", instance), zap.Error(err))
	}
}

// releaseAfterFailedFetch releases a lock a fetch took but cannot return,
// without counting the attempt. Best effort, with its own deadline: if it
// fails, the lock expires.
func (p *Provider) releaseAfterFailedFetch(instance, lockID string, messageIDs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.releaseOrchLock(ctx, instance, lockID, messageIDs, 0, true); err != nil {
		p.log.Debug("releasing the lock of a failed fetch failed; it will expire", zap.String("instance", instance), zap.Error(err))
	}
	p.orchPool.unlock(instance)
}

// decodeError marks a history that could not be decoded.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

func isDecodeError(err error) bool {
	_, ok := err.(*decodeError)
	return ok
}

// readHistory reads one execution's history up to watermark with one
// single-partition query (none when the watermark is 0). A decoding failure
// is a *decodeError.
func (p *Provider) readHistory(ctx context.Context, instance string, executionID, watermark uint64) ([]duroxide.Event, error) {
	if executionID == 0 || watermark == 0 {
		return []duroxide.Event{}, nil
	}
	docs, err := p.queryHistory(ctx, instance, executionID, watermark)
	if err != nil {
		return nil, err
	}
	events, err := decodeHistory(instance, executionID, watermark, docs)
	if err != nil {
		return nil, &decodeError{err}
	}
	return events, nil
}

// queryHistory returns the history documents of one execution up to
// watermark, unsorted.
func (p *Provider) queryHistory(ctx context.Context, instance string, executionID, watermark uint64) ([]historyDoc, error) {
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type = 'history' AND c.executionId = @e AND c.eventId <= @w",
		[]azcosmos.QueryParameter{param("@e", executionID), param("@w", watermark)}, queryOpts{pageSize: -1})
	if err != nil {
		return nil, err
	}
	docs := make([]historyDoc, 0, len(raws))
	for _, raw := range raws {
		var d historyDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("decode history document: %w", err)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

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
	l := &orchLock{instance: instance, lockID: lockID, doc: *st.inst, kvStore: st.kvStore, kvDelta: st.kvDelta, lockedUntil: st.inst.LockedUntil}
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
	ctx = withCall(ctx, "renew_orchestration_item_lock")
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
	if l, ok := p.locks.getOrch(lockToken); ok {
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
	p.locks.updateOrch(lockToken, func(l *orchLock) {
		l.doc.LockedUntil, l.lockedUntil, l.doc.ETag = until, until, string(results[0].ETag)
	})
	p.orchPool.lock(instance, until)
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
	ctx = withCall(ctx, "abandon_orchestration_item")
	const op = "abandon_orchestration_item"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	var ids []string
	again := poolEntry{key: instance, instance: instance, slot: DispatchSlot(instance), visibleAt: p.nowMs() + max(delay, 0).Milliseconds()}
	if l, ok := p.locks.getOrch(lockToken); ok {
		ids = l.messageIDs
		again.enqueuedAt, again.seq = l.oldestEnqueuedAt, l.oldestSeq
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
	err := p.releaseOrchLock(ctx, instance, lockID, ids, delay, ignoreAttempt)
	if isAmbiguous(err) {
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
	p.locks.dropOrch(lockToken)
	p.orchPool.hint(again)
	p.orchPool.unlock(instance)
	return nil
}

// releaseOrchLock clears lockID from the instance document (conditioned on
// it still being the lock, and recording it as the last lock released) and
// from messageIDs, in one batch. A lost answer is an *ambiguousError.
func (p *Provider) releaseOrchLock(ctx context.Context, instance, lockID string, messageIDs []string, delay time.Duration, ignoreAttempt bool) error {
	now := p.nowMs()
	var po azcosmos.PatchOperations
	po.SetCondition(lockCondition(lockID, 0))
	po.AppendSet("/lockToken", jsonNull)
	po.AppendSet("/lockedUntil", 0)
	po.AppendSet("/lastReleasedLock", lockID)
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
