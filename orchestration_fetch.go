// Fetch of an orchestration: FetchOrchestrationItem, locking an instance
// with its queue messages, capability filters and failed-fetch release.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
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
// orchestrator-queue messages and returns its turn (DESIGN.md §3.1), or nil when there is none.
//
// Requests: 1 when this process holds the instance's state (it started
// the instance, or acked its last turn, and wrote the messages to take
// since; Config.HeldInstanceStates): the lock batch alone, conditioned on
// the instance document's ETag, which also reads the KV documents and
// returns the locked messages; a write by another process fails it (1
// request lost) and the fetch goes on as below.
//
// Otherwise 2 when the candidate is known and locked at the first try:
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
// Candidates come from this process's candidate pool: the last
// candidate query of the fetch's lease slots, and the messages this
// process wrote since. 1 more request, a cross-partition query of the
// lease's slots for visible, unlocked messages and for locked instances
// (whose messages are then not tried), is made when the pool's view of the
// slots is older than LongPollInterval (10 s while the change-feed reader
// is healthy and hints other processes' messages), or when it offers
// nothing to a fetch that must answer now (a zero poll timeout, or
// the end of the poll timeout without a healthy change feed); a fetch that
// is still waiting trusts an empty, recent view, so messages written by
// other processes are seen within LongPollInterval (ChangeFeedInterval). 1
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
// returned. A fetch never returns a lock that has expired: a lock timeout
// under 1 ms finds nothing, and a turn whose lock expired while it was
// read (a lock timeout shorter than the fetch's requests) is released,
// without counting the attempt, and not returned. A lock batch whose
// answer was lost (a dropped connection, a 408, a 500) costs 1 point read
// of the instance document: the fetch goes on with the lock that landed
// (a held-state batch's lock is released, 1 batch, and the partition
// read), or tries the still free instance again.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	ctx = cosmos.WithCall(ctx, "fetch_orchestration_item")
	const op = "fetch_orchestration_item"
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil, nil // supports nothing
	}
	if lockTimeout.Milliseconds() <= 0 {
		return nil, nil // a lock that would have expired on return
	}
	done, err := p.fetchStarted(ctx, 0)
	if err != nil {
		return nil, mapError(op, err)
	}
	defer done()
	var item *duroxide.OrchestrationItem
	err = p.longPoll(ctx, pollTimeout, p.orchPool, func(ctx context.Context, final bool) (bool, error) {
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
	err := p.acrossLeases(ctx, p.orchLeases, p.orchPool, "", scope, nil, func(lease *SlotLease, v *candidates.View) (bool, error) {
		p.traceFetch(orchAttempt)
		found, err := p.tryCandidates(p.orchPool, v, scope, nil, nil, final, func(all bool) error {
			return p.refreshOrchCandidates(ctx, v, lease, all)
		}, func(c candidates.Entry) (bool, bool, error) {
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
func (p *Provider) readOrchState(ctx context.Context, instance string, executionID, after uint64) (partitionState, error) {
	q := "SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending', 'orch_queue', 'kv')"
	var params []azcosmos.QueryParameter
	switch {
	case executionID > 0 && after > 0:
		q += " OR (c.type = 'history' AND c.executionId = @e AND c.eventId > @a)"
		params = append(params, param("@e", executionID), param("@a", after))
	case executionID > 0:
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
	pv := v.ToVersion()
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
// is left to lock). When this process holds the instance's state, the lock
// batch built from it is the whole fetch (lockHeldTurn); otherwise, or
// when that batch is refused, the instance's partition is read first.
func (p *Provider) tryLockInstance(ctx context.Context, c candidates.Entry, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (item *duroxide.OrchestrationItem, drop bool, err error) {
	item, drop, tried, err := p.lockHeldTurn(ctx, c, lockTimeout, filter)
	if tried {
		return item, drop, err
	}
	instance := c.Instance
	execHint := max(p.orchPool.Exec(instance), duroxide.InitialExecutionID)
	held, heldRID, heldExec, haveHeld := p.held.Peek(instance)
	if !haveHeld || heldExec != execHint {
		held, haveHeld = nil, false
	}
	p.traceFetch(orchStateQuery)
	st, err := p.readOrchState(ctx, instance, execHint, uint64(len(held)))
	if err != nil {
		return nil, false, err
	}
	now := p.nowMs()
	if st.inst != nil && st.inst.locked(now) {
		p.traceFetch(orchSkipLocked)
		p.orchPool.Lock(instance, st.inst.LockedUntil)
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
	items := p.decodeTurnMessages(instance, visible)
	hasContext := st.inst.hasContext()
	startName, startVersion, hasStart := startOf(items)
	if !hasContext && !hasStart {
		if allQueueMessages(items) {
			p.dropOrphanQueueMessages(ctx, instance, visible)
			return nil, !rest, nil
		}
		p.traceFetch(orchSkipNotReady)
		p.orchPool.Skip(instance, now+notReadySkipMs, "")
		return nil, false, nil
	}
	if filter != nil && hasContext && st.inst.PinnedDuroxideVersion != nil && !compatibleFirstRange(filter, st.inst.PinnedDuroxideVersion) {
		p.traceFetch(orchSkipFiltered)
		p.orchPool.Skip(instance, now+notReadySkipMs, capabilityScope(filter))
		return nil, false, nil
	}

	lockID := newLockID()
	lockedUntil := now + lockTimeout.Milliseconds()
	var doc instanceDoc
	var ops []batchOp
	if st.inst == nil {
		var op batchOp
		if doc, op, err = pendingLockedDoc(instance, startName, startVersion, lockID, lockedUntil, now); err != nil {
			return nil, false, err
		}
		ops = append(ops, op)
	} else {
		doc = *st.inst
		doc.LockToken, doc.LockedUntil = strp(lockID), lockedUntil
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		ops = append(ops, patchOp(instanceDocID, po, st.inst.ETag))
	}
	attempt := int64(0)
	for _, m := range visible {
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		po.AppendIncrement("/attemptCount", 1)
		ops = append(ops, patchOp(m.ID, po, ""))
		attempt = max(attempt, m.AttemptCount+1)
	}
	p.traceFetch(orchLockBatch)
	// A created instance document comes back with its _rid, which the
	// history held after the turn is tied to.
	results, err := p.runBatch(ctx, instance, ops, write, st.inst == nil)
	switch {
	case err == nil:
		doc.ETag = string(results[0].ETag)
		if created, derr := decodeInstanceDoc(results[0].ResourceBody); st.inst == nil && derr == nil {
			doc.RID = created.RID
		}
	case cosmos.IsAmbiguous(err):
		// The lock batch may have committed: it did if the instance
		// document now carries this lock. If it did not, the candidate
		// stays in the pool, to be tried again at once.
		etag, o, rerr := p.readBackOrchLock(ctx, instance, lockID)
		p.logLockReadBack("orchestration lock", instance, instanceDocID, o, lockedUntil, err, rerr)
		if o != lockApplied {
			p.traceFetch(orchSkipLockLost)
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
				p.orchPool.Lock(instance, now+lockTimeout.Milliseconds())
			}
			return nil, false, nil
		}
		return nil, false, err
	}
	item, err = p.finishTurn(ctx, lockedTurn{
		instance: instance, lockID: lockID, lockedUntil: lockedUntil, doc: doc, msgs: visible, items: items, attempt: attempt,
		kv: st.kv, hasContext: hasContext, startName: startName, startVersion: startVersion,
		execHint: execHint, held: held, heldRID: heldRID, history: st.history,
	}, now)
	return item, !rest && item != nil, err
}

// readBackOrchLock reads instance's document after a lock batch (lock
// lockID) whose answer was lost (1 point read), and tells whether the
// batch landed (the batch is transactional: the document carrying the
// lock means its messages carry it too), with the document's ETag when it
// did.
func (p *Provider) readBackOrchLock(ctx context.Context, instance, lockID string) (string, lockOutcome, error) {
	var cur instanceDoc
	etag, found, err := p.readDoc(ctx, instance, instanceDocID, &cur)
	switch {
	case err != nil:
		return "", lockUnknown, err
	case found && cur.LockToken != nil && *cur.LockToken == lockID:
		return etag, lockApplied, nil
	case found && cur.locked(p.nowMs()):
		return "", lockTaken, nil
	}
	return "", lockNotApplied, nil
}

// pendingLockedDoc is the pending instance document a fetch creates, locked,
// for an instance that has none, and its create operation.
func pendingLockedDoc(instance, startName string, startVersion *string, lockID string, lockedUntil, now int64) (instanceDoc, batchOp, error) {
	doc := instanceDoc{
		ID: instanceDocID, InstanceID: instance, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(instance)),
		OrchestrationName: startName, OrchestrationVersion: startVersion,
		LockToken: strp(lockID), LockedUntil: lockedUntil, CreatedAt: now, UpdatedAt: now,
	}
	body, err := json.Marshal(doc)
	return doc, createOp(instanceDocID, body), err
}

// decodeTurnMessages decodes the work items of a turn's messages; an
// undecodable one is logged and left out (it is consumed with the turn).
func (p *Provider) decodeTurnMessages(instance string, msgs []*queueDoc) []duroxide.WorkItem {
	items := make([]duroxide.WorkItem, 0, len(msgs))
	for _, m := range msgs {
		w, err := decodeWorkItem(m.WorkItem)
		if err != nil {
			p.log.Warn("undecodable orchestrator-queue message; it is consumed with the turn", zap.String("instance", instance), zap.String("id", m.ID), zap.Error(err))
			continue
		}
		items = append(items, w)
	}
	return items
}

// lockedTurn is an instance this fetch locked, with what its turn is
// built from.
type lockedTurn struct {
	instance    string
	lockID      string
	lockedUntil int64
	// doc is the instance document as locked, with the lock batch's ETag.
	doc   instanceDoc
	msgs  []*queueDoc // the locked messages, oldest first
	items []duroxide.WorkItem
	// attempt is the turn's attempt count (the highest of the messages').
	attempt      int64
	kv           kvState
	hasContext   bool
	startName    string
	startVersion *string
	// execHint is the execution whose history was read with the state
	// (history), held the events held for it (nil: none), heldRID the
	// document they belong to.
	execHint uint64
	held     []duroxide.Event
	heldRID  string
	history  []historyDoc
}

// finishTurn builds the turn of an instance this fetch locked and records
// the lock. It returns nil, and no error, when the lock batch's answer was
// lost and it did not land; a failure after the lock was taken releases it
// before the error is returned (the contract: an error means no lock is
// held).
func (p *Provider) finishTurn(ctx context.Context, t lockedTurn, now int64) (*duroxide.OrchestrationItem, error) {
	instance, doc := t.instance, t.doc
	ids := make([]string, len(t.msgs))
	for i, m := range t.msgs {
		ids[i] = m.ID
	}
	p.orchPool.Lock(instance, t.lockedUntil)
	p.orchPool.Unskip(instance)
	for _, id := range ids {
		p.orchPool.LockedMessage(instance, id, t.lockedUntil)
	}
	p.heldStates.Locked(instance, ids)
	token := orchLockToken(instance, t.lockID)

	item := &duroxide.OrchestrationItem{
		Instance: instance, Messages: t.items, LockToken: token,
		AttemptCount: uint32(min(t.attempt, int64(^uint32(0)))),
		KVSnapshot:   kvSnapshot(t.kv.store),
	}
	if t.hasContext {
		item.OrchestrationName = doc.OrchestrationName
		item.Version = unknownVersion
		if doc.OrchestrationVersion != nil {
			item.Version = *doc.OrchestrationVersion
		}
		item.ExecutionID = doc.CurrentExecutionID
		p.orchPool.SetExec(instance, doc.CurrentExecutionID)
		held := t.held
		if held != nil && doc.RID != t.heldRID {
			held = nil // another document: the instance was deleted and started again
		}
		history, herr := p.turnHistory(ctx, instance, &doc, t.execHint, held, t.history)
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
			p.releaseAfterFailedFetch(instance, t.lockID, ids)
			return nil, herr
		}
	} else {
		item.OrchestrationName = t.startName
		item.Version = unknownVersion
		if t.startVersion != nil {
			item.Version = *t.startVersion
		}
		item.ExecutionID = duroxide.InitialExecutionID
	}
	if p.nowMs() >= t.lockedUntil {
		// The lock expired while the turn was read: never hand it out.
		p.traceFetch(orchSkipLockLost)
		p.releaseAfterFailedFetch(instance, t.lockID, ids)
		return nil, nil
	}
	p.locks.PutOrch(token, &orchLock{
		instance: instance, lockID: t.lockID, doc: doc, messageIDs: ids,
		kv: t.kv, lockedUntil: t.lockedUntil,
		oldestEnqueuedAt: t.msgs[0].EnqueuedAt, oldestSeq: t.msgs[0].Seq,
	}, now)
	p.traceFetch(orchFound)
	return item, nil
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
	p.orchPool.Unlock(instance)
}
