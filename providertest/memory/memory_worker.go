package memory

import (
	"context"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// EnqueueForWorker appends an ActivityExecuteItem to the worker queue,
// visible at once; any other kind is a permanent error.
func (p *MemoryProvider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	const op = "enqueue_for_worker"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	if !item.IsForWorker() {
		return memPermanent(op, "Invalid work item type %q: only ActivityExecute goes to the worker queue", item.Type())
	}
	data, copied, err := memEncodeWorkItem(op, item)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushWorker(copied.Kind.(duroxide.ActivityExecuteItem), data, p.nowMs())
	p.signal()
	return nil
}

// pushWorker appends one worker message encoded by memEncodeWorkItem; the
// caller holds p.mu.
func (p *MemoryProvider) pushWorker(item duroxide.ActivityExecuteItem, data []byte, visibleAt int64) {
	p.workQueue = append(p.workQueue, &memWorkRow{id: p.nextID(), item: item, data: data, visibleAt: visibleAt})
}

// deleteWorkRows removes the worker messages match selects and returns how
// many; the caller holds p.mu.
func (p *MemoryProvider) deleteWorkRows(match func(*memWorkRow) bool) int {
	var n int
	p.workQueue, n = memDeleteRows(p.workQueue, match)
	return n
}

// workRowByToken returns the message locked with token whose lock has not
// expired, or nil; the caller holds p.mu.
func (p *MemoryProvider) workRowByToken(token string, now int64) *memWorkRow {
	if token == "" {
		return nil
	}
	for _, r := range p.workQueue {
		if r.lockToken == token && r.lockedUntil > now {
			return r
		}
	}
	return nil
}

// FetchWorkItem locks the oldest visible, unlocked worker message that
// tagFilter accepts (none, for TagFilterNone). Without a session
// config only session-less items are eligible; with one, items of sessions
// that are unowned, expired or owned by session.OwnerID are eligible too,
// and fetching one claims (or refreshes) its session for
// session.LockTimeout and stamps its last activity. The item's lock lasts
// lockTimeout and its attempt count is incremented. With a positive
// pollTimeout the call waits up to that long for work. A fetch never returns
// a lock or session lease that has expired: a lock timeout under 1 ms finds
// nothing, and a session lease under 1 ms leaves session items out.
func (p *MemoryProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	const op = "fetch_work_item"
	if err := memCtxErr(op, ctx); err != nil {
		return nil, err
	}
	if lockTimeout.Milliseconds() <= 0 {
		return nil, nil // a lock that would have expired on return
	}
	var locked *duroxide.LockedWorkItem
	err := p.longPoll(ctx, op, pollTimeout, func(now int64) bool {
		locked = p.tryFetchWork(now, lockTimeout, session, tagFilter)
		return locked != nil
	})
	if err != nil {
		return nil, err
	}
	return locked, nil
}

// tryFetchWork is one fetch attempt; the caller holds p.mu.
func (p *MemoryProvider) tryFetchWork(now int64, lockTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) *duroxide.LockedWorkItem {
	for _, r := range p.workQueue {
		if r.visibleAt > now || (r.lockToken != "" && r.lockedUntil > now) {
			continue
		}
		if !tagFilter.Matches(r.item.Tag) {
			continue
		}
		item, err := memDecodeWorkItem(r.data)
		if err != nil {
			continue // undecodable: never handed out
		}
		if sid := r.item.SessionID; sid != nil {
			if session == nil || session.LockTimeout.Milliseconds() <= 0 || !p.sessionAvailable(*sid, session.OwnerID, now) {
				continue
			}
			p.claimSession(*sid, session, now)
		}
		r.lockToken = p.newToken()
		r.lockedUntil = memAfter(now, lockTimeout)
		r.attempts++
		return &duroxide.LockedWorkItem{
			Item:         item,
			LockToken:    r.lockToken,
			AttemptCount: r.attempts,
		}
	}
	return nil
}

// AckWorkItem deletes the item locked with lockToken and, when completion
// is an ActivityCompletedItem or ActivityFailedItem, enqueues it on its
// instance's orchestrator queue, atomically. A missing item (cancelled by
// lock stealing, or already acked) or an expired lock is a permanent error;
// so is a completion of another kind, with nothing deleted.
func (p *MemoryProvider) AckWorkItem(ctx context.Context, lockToken string, completion *duroxide.WorkItem) error {
	const op = "ack_work_item"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	var completionData []byte
	var completionCopy duroxide.WorkItem
	if completion != nil {
		switch completion.Kind.(type) {
		case duroxide.ActivityCompletedItem, duroxide.ActivityFailedItem:
		default:
			return memPermanent(op, "Invalid completion type for worker ack: %q", completion.Type())
		}
		var err error
		if completionData, completionCopy, err = memEncodeWorkItem(op, *completion); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	row := p.workRowByToken(lockToken, now)
	if row == nil {
		return memPermanent(op, "Activity was cancelled or lock expired (worker queue row not found or lock invalid)")
	}
	p.deleteWorkRows(func(r *memWorkRow) bool { return r == row })
	p.touchSession(row.item.SessionID, now)
	if completion != nil {
		p.pushOrchestrator(completionCopy, completionData, now)
		p.signal()
	}
	return nil
}

// RenewWorkItemLock extends the item's lock to now + extendFor, stamps its
// session's last activity, and reports the state of the activity's
// execution: Missing when its execution record does not exist,
// Terminal when the execution's status is not Running, Running otherwise.
// A removed item or an expired lock is a permanent error.
func (p *MemoryProvider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) (duroxide.ExecutionState, error) {
	const op = "renew_work_item_lock"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.ExecutionState{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	row := p.workRowByToken(lockToken, now)
	if row == nil {
		return duroxide.ExecutionState{}, memPermanent(op, "Lock renewal failed - activity was cancelled or lock expired")
	}
	row.lockedUntil = memAfter(now, extendFor)
	p.touchSession(row.item.SessionID, now)
	return p.executionState(row.item.Instance, row.item.ExecutionID), nil
}

// executionState reports the state of one execution from its record (as
// SQLite keeps it, an execution record exists even when the ack's metadata
// created no instance record); the caller holds p.mu.
func (p *MemoryProvider) executionState(instance string, executionID uint64) duroxide.ExecutionState {
	exec := p.executions[instance][executionID]
	switch {
	case exec == nil:
		return duroxide.ExecutionState{Kind: duroxide.ExecutionMissing}
	case exec.status != duroxide.StatusRunning:
		return duroxide.ExecutionState{Kind: duroxide.ExecutionTerminal, Status: exec.status}
	}
	return duroxide.ExecutionState{Kind: duroxide.ExecutionRunning}
}

// AbandonWorkItem releases the item locked with lockToken (SQLite matches
// the token whether or not the lock expired); it becomes visible after
// delay, and with ignoreAttempt its attempt count is decremented, never
// below zero. An unknown token is a permanent error.
func (p *MemoryProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	const op = "abandon_work_item"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.workQueue {
		if lockToken == "" || r.lockToken != lockToken {
			continue
		}
		r.lockToken, r.lockedUntil = "", 0
		r.visibleAt = memAfter(p.nowMs(), delay)
		if ignoreAttempt && r.attempts > 0 {
			r.attempts--
		}
		p.signal()
		return nil
	}
	return memPermanent(op, "Invalid lock token or already acked")
}
