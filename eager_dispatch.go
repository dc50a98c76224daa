// Eager dispatch (DESIGN.md §17): an ack hands the next piece of work,
// locked in the ack's own transactional batch, to a fetch of this process
// that waits for work (internal/handoff), instead of leaving it for a
// fetch to find and lock with requests of its own.

package cdb

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/handoff"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
	"go.uber.org/zap"
)

var _ duroxide.EagerDispatcher = (*Provider)(nil)

// workWait is what a waiting work-item fetch accepts.
type workWait struct {
	lockTimeout time.Duration
	tagFilter   duroxide.TagFilter
}

// orchWait is what a waiting orchestration fetch accepts.
type orchWait struct {
	lockTimeout time.Duration
	filter      *duroxide.DispatcherCapabilityFilter
}

type (
	workWaiters = handoff.Waiters[workWait, *duroxide.LockedWorkItem]
	orchWaiters = handoff.Waiters[orchWait, *duroxide.OrchestrationItem]
	workWaiter  = handoff.Waiter[workWait, *duroxide.LockedWorkItem]
	orchWaiter  = handoff.Waiter[orchWait, *duroxide.OrchestrationItem]
)

// eagerCounters are the hits and fallbacks of the two queues.
type eagerCounters struct {
	orchHits, orchFallbacks, workHits, workFallbacks atomic.Uint64
}

// EagerDispatch reports whether eager dispatch is on
// (Config.DisableEagerDispatch) and how many turns and work items this
// provider handed to its waiting fetches (hits), and how many eager
// attempts handed nothing and left the work to the normal path
// (fallbacks), since New.
func (p *Provider) EagerDispatch() duroxide.EagerDispatchStats {
	return duroxide.EagerDispatchStats{
		Enabled:      !p.cfg.DisableEagerDispatch,
		Orchestrator: duroxide.EagerDispatchCounts{Hits: p.eager.orchHits.Load(), Fallbacks: p.eager.orchFallbacks.Load()},
		Worker:       duroxide.EagerDispatchCounts{Hits: p.eager.workHits.Load(), Fallbacks: p.eager.workFallbacks.Load()},
	}
}

// waitOrTake is a fetch's wait for work (poll.wait) as an eager waiter:
// registered in waiters with params, it can be handed an item while it
// waits. It returns the item handed to it, if any, and otherwise what
// poll.wait returns. A fetch whose context ended, or whose provider
// closed, while an item was being handed to it gives the item up:
// abandon, its attempt not counted, as a fetch that cannot return what it
// locked does (best effort: the lock expires otherwise).
func waitOrTake[P, T any](ctx context.Context, l *poll, waiters *handoff.Waiters[P, T], params P, abandon func(T)) (item T, taken, end bool, err error) {
	w := waiters.Register(params)
	end, err = l.wait(ctx, w.Ready())
	item, taken = w.Leave()
	if taken && !end {
		// Woken otherwise (its poll timer, another write) while reserved,
		// the fetch waited in Leave for the batch's outcome: its context
		// or its provider may have ended meanwhile.
		select {
		case <-ctx.Done():
			end, err = true, ctx.Err()
		case <-l.p.stop:
			end = true
		default:
		}
	}
	if taken && end {
		abandon(item)
		var zero T
		return zero, false, end, err
	}
	return item, taken, end, err
}

// abandonEagerWork gives up a work item handed to a fetch that cannot
// return it.
func (p *Provider) abandonEagerWork(item *duroxide.LockedWorkItem) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.AbandonWorkItem(ctx, item.LockToken, 0, true); err != nil {
		p.log.Debug("giving up an eagerly dispatched work item failed; its lock expires", zap.Error(err))
	}
}

// abandonEagerTurn gives up a turn handed to a fetch that cannot return
// it.
func (p *Provider) abandonEagerTurn(item *duroxide.OrchestrationItem) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true); err != nil {
		p.log.Debug("giving up an eagerly dispatched turn failed; its lock expires", zap.Error(err))
	}
}

// Turn ack → worker: the activities a turn schedules, created locked for
// this process's waiting work-item fetches.

// eagerWork is the eager part of a turn's ack: the final batch with some
// of its worker-queue creates locked, and the waiters they are for.
type eagerWork struct {
	p     *Provider
	final []batchOp
	items []eagerWorkItem
	// settled is set once committed or failed ran; delivered, whether
	// committed did (the messages were created locked).
	settled, delivered bool
}

// eagerWorkItem is one activity created locked for waiter.
type eagerWorkItem struct {
	waiter *workWaiter
	index  int // of its create in final
	doc    queueDoc
	lockID string
}

// reserveEagerWork reserves a waiting work-item fetch for each worker-queue
// message the final batch of plan creates (no session item: its session
// claim is a document of its own) whose tag a free waiter accepts, and
// returns the final batch with those messages created locked for them
// (lock token, lock expiry at now + the waiter's lock timeout, attempt
// count 1: what a fetch's lock patch sets); nil when no waiter is free.
// The caller must settle it (delivered, or failed).
func (p *Provider) reserveEagerWork(plan *turnPlan, now int64) *eagerWork {
	if p.workWaiters.Free() == 0 {
		return nil
	}
	var e *eagerWork
	for i, op := range plan.final {
		if op.kind != opCreate || !strings.HasPrefix(op.id, "wq-") {
			continue
		}
		var d queueDoc
		if json.Unmarshal(op.body, &d) != nil || d.Type != typeWorkerQueue || d.SessionID != nil {
			continue
		}
		w := p.workWaiters.Reserve(func(ww workWait) bool {
			return ww.lockTimeout.Milliseconds() > 0 && ww.tagFilter.Matches(d.Tag)
		})
		if w == nil {
			if p.workWaiters.Free() == 0 {
				break
			}
			continue
		}
		lockID := newLockID()
		d.LockToken, d.LockedUntil, d.AttemptCount = &lockID, now+w.Params.lockTimeout.Milliseconds(), 1
		body, err := json.Marshal(d)
		if err != nil {
			w.Fail()
			continue
		}
		if e == nil {
			e = &eagerWork{p: p, final: slices.Clone(plan.final)}
		}
		e.final[i] = createOp(op.id, body)
		e.items = append(e.items, eagerWorkItem{waiter: w, index: i, doc: d, lockID: lockID})
	}
	return e
}

// isEager reports whether the committed final batch created message id
// locked (it is then not a candidate for other fetches).
func (e *eagerWork) isEager(id string) bool {
	if e == nil || !e.delivered {
		return false
	}
	for _, it := range e.items {
		if it.doc.ID == id {
			return true
		}
	}
	return false
}

// committed hands each item to its waiter once the final batch committed;
// results are the batch's answers (nil when its answer was lost and a
// read-back showed it committed: the locks are then not cached, and their
// ack reads the message first).
func (e *eagerWork) committed(results []azcosmos.TransactionalBatchResult) {
	if e == nil || e.settled {
		return
	}
	e.settled, e.delivered = true, true
	p := e.p
	for _, it := range e.items {
		d := it.doc
		token := workerLockToken(d.InstanceID, d.ID, it.lockID)
		p.workPool.LockedMessage(d.InstanceID, d.ID, d.LockedUntil)
		item, err := decodeWorkItem(d.WorkItem)
		now := p.nowMs()
		if err != nil || now >= d.LockedUntil {
			// Cannot happen for a message this ack just encoded; a lock
			// that expired on the way is never handed out.
			p.eager.workFallbacks.Add(1)
			it.waiter.Fail()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := p.AbandonWorkItem(ctx, token, 0, true); err != nil {
				p.log.Debug("releasing an eager work item failed; its lock expires", zap.String("instance", d.InstanceID), zap.Error(err))
			}
			cancel()
			continue
		}
		if results != nil && it.index < len(results) {
			p.locks.PutWorker(token, &workerLock{instance: d.InstanceID, docID: d.ID, lockID: it.lockID, etag: string(results[it.index].ETag),
				lockedUntil: d.LockedUntil, enqueuedAt: d.EnqueuedAt, seq: d.Seq, tag: d.Tag}, now)
		}
		p.eager.workHits.Add(1)
		it.waiter.Deliver(&duroxide.LockedWorkItem{Item: item, LockToken: token, AttemptCount: 1})
	}
}

// failed tells the waiters that no item comes (the batch was refused, or
// its outcome is not known): the final batch is sent again without the
// eager locks, or the ack fails. Nothing was created, or, when the
// outcome is not known (a lost answer not resolved, or the ack's context
// ended while its batch was on its way: outcomeUnknown), what may have
// been created is released, without counting the attempt, and hinted to
// the candidate pool (best effort, conditioned on each lock, so a message
// that was not created is not touched; otherwise its lock expires and it
// is fetched then). The waiters are told first, so that none waits for
// the releases, which share one deadline.
func (e *eagerWork) failed(unresolved bool) {
	if e == nil || e.settled {
		return
	}
	e.settled = true
	p := e.p
	for _, it := range e.items {
		p.eager.workFallbacks.Add(1)
		it.waiter.Fail()
	}
	if !unresolved {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, it := range e.items {
		if p.AbandonWorkItem(ctx, workerLockToken(it.doc.InstanceID, it.doc.ID, it.lockID), 0, true) == nil {
			d := it.doc
			d.LockToken, d.LockedUntil = nil, 0
			p.hint(queueEntry(&d))
		}
	}
}

// outcomeUnknown reports whether a write that failed with err may have
// been applied: its answer was lost (cosmos.IsAmbiguous), or the caller's
// context ended while it was on its way (the retrier then returns the
// context's error, not an ambiguous one, and the service applies what it
// received). A batch the service answered, refused, was not applied.
func outcomeUnknown(ctx context.Context, err error) bool {
	if cosmos.IsAmbiguous(err) {
		return true
	}
	if _, ok := asBatchFailure(err); ok {
		return false
	}
	return ctx.Err() != nil
}

// Activity ack → next turn: the completion an activity's ack creates,
// locked with its instance's next turn for this process's waiting
// orchestration fetch, when this process holds the instance's state.

// eagerTurn is the eager part of an activity's ack: the held-state lock
// batch's operations (heldLockOps) plus the completion's create, locked,
// and the waiter the turn is for.
type eagerTurn struct {
	p           *Provider
	waiter      *orchWaiter
	instance    string
	lockID      string
	lockedUntil int64
	now         int64
	st          held.State
	held        []duroxide.Event
	// ops are the lock batch's operations (the instance document's lock
	// first, the KV roots from 1, the messages from first), the
	// completion's create last; ids the messages' ids, the completion's
	// last.
	ops        []batchOp
	first      int
	ids        []string
	completion candidates.Entry
	settled    bool
}

// reserveEagerTurn prepares the eager turn of an activity's ack whose
// completion c goes to instance: when this process holds the instance's
// state and whole history (as lockHeldTurn needs them) and a waiting
// orchestration fetch accepts the instance (its pinned version), it
// reserves the fetch and claims the held state (no other lock is built
// from it meanwhile), and returns the operations to add to the ack's batch:
// the instance document's lock (If-Match on the held ETag), the reads of
// its KV roots, the locks of the held visible messages, and c created
// already locked (attempt count 1). nil: the ack is the plain one. The
// caller must settle it.
func (p *Provider) reserveEagerTurn(instance string, c queueWrite, now int64) *eagerTurn {
	if p.orchWaiters.Free() == 0 {
		return nil
	}
	st, msgs, ok := p.heldStates.Peek(instance, now)
	if !ok || !st.Context || st.Absent || st.KVPaged || len(msgs) >= maxMessagesPerTurn {
		return nil
	}
	h, rid, exec, ok := p.held.Peek(instance)
	if !ok || rid == "" || rid != st.RID || exec != st.Exec || uint64(len(h)) != st.Watermark {
		return nil
	}
	var d queueDoc
	if json.Unmarshal(c.doc, &d) != nil {
		return nil
	}
	w := p.orchWaiters.Reserve(func(ow orchWait) bool {
		return ow.lockTimeout.Milliseconds() > 0 && (ow.filter == nil || st.Pinned == nil || compatibleFirstRange(ow.filter, st.Pinned))
	})
	if w == nil {
		return nil
	}
	if !p.heldStates.Claim(instance, st.ETag) {
		w.Fail() // another lock is being built from it: no attempt, no fallback
		return nil
	}
	lockID := newLockID()
	until := now + w.Params.lockTimeout.Milliseconds()
	d.LockToken, d.LockedUntil, d.AttemptCount = &lockID, until, 1
	body, err := json.Marshal(d)
	if err != nil {
		w.Fail()
		p.heldStates.Drop(instance)
		return nil
	}
	ops, first, ids := heldLockOps(st, nil, msgs, lockID, until, now)
	return &eagerTurn{p: p, waiter: w, instance: instance, lockID: lockID, lockedUntil: until, now: now, st: st, held: h,
		ops: append(ops, createOp(c.id, body)), first: first, ids: append(ids, c.id), completion: c.entry}
}

// pending reports whether t still waits for its outcome.
func (t *eagerTurn) pending() bool { return t != nil && !t.settled }

// committed builds the turn from the answers of the ack's batch, whose
// operations after the first (the work item's consumption) are t.ops,
// and hands it to the waiter (finishTurn records the lock as a fetch's).
// A turn that cannot be built (an answer not as written, a history read
// that failed, a lock that expired on the way) is released by finishTurn
// or here, and the waiter told that nothing comes. It reports whether the
// turn was handed over.
func (t *eagerTurn) committed(ctx context.Context, results []azcosmos.TransactionalBatchResult) bool {
	if !t.pending() {
		return false
	}
	t.settled = true
	p := t.p
	lt := lockedTurn{instance: t.instance, lockID: t.lockID, lockedUntil: t.lockedUntil, hasContext: true,
		execHint: t.st.Exec, held: t.held, heldRID: t.st.RID}
	if len(results) != len(t.ops)+1 {
		p.heldStates.Drop(t.instance)
		p.releaseAfterFailedFetch(t.instance, t.lockID, t.ids)
		return t.fallback()
	}
	if err := p.parseHeldLock(&lt, results[1:], t.first); err != nil {
		p.log.Debug("eager turn: the batch's answer is not as written; releasing it", zap.String("instance", t.instance), zap.Error(err))
		p.heldStates.Drop(t.instance)
		p.releaseAfterFailedFetch(t.instance, t.lockID, t.ids)
		return t.fallback()
	}
	item, err := p.finishTurn(ctx, lt, t.now)
	if err != nil || item == nil {
		if err != nil {
			p.log.Debug("eager turn: building the turn failed; its lock was released", zap.String("instance", t.instance), zap.Error(err))
		}
		return t.fallback()
	}
	p.eager.orchHits.Add(1)
	t.waiter.Deliver(item)
	return true
}

// refused settles t when the service refused the ack's batch: nothing was
// written. The held state is forgotten (the refusal may be its ETag's),
// and the ack goes on plainly.
func (t *eagerTurn) refused() {
	if !t.pending() {
		return
	}
	t.settled = true
	t.p.heldStates.Drop(t.instance)
	t.fallback()
}

// landedUnseen settles t when the ack's batch landed but its answer was
// lost (or the ack failed with its outcome unknown: outcomeUnknown): the
// turn cannot be built without the answer, so the waiter is told that
// nothing comes, and the lock is released, conditioned on it (nothing
// else is touched when it did not land), without counting the attempt,
// and the completion hinted to the candidate pool. Nothing is lost: the
// completion is then an unlocked message.
func (t *eagerTurn) landedUnseen() {
	if !t.pending() {
		return
	}
	t.settled = true
	p := t.p
	p.heldStates.Drop(t.instance)
	t.fallback()
	p.releaseAfterFailedFetch(t.instance, t.lockID, t.ids)
	p.hint(t.completion)
}

// fallback counts a fallback and tells the waiter that nothing comes.
func (t *eagerTurn) fallback() bool {
	t.p.eager.orchFallbacks.Add(1)
	t.waiter.Fail()
	return false
}
