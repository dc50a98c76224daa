package memory

import (
	"fmt"

	"context"
	"maps"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// EnqueueForOrchestrator appends item to its instance's orchestrator queue,
// visible after delay. It never creates the instance record; a
// QueueMessageItem for a never-started instance is dropped by the fetch
// that finds it (as SQLite does). An ActivityExecuteItem or an item without
// a kind is a permanent error.
func (p *MemoryProvider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	const op = "enqueue_for_orchestrator"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	data, item, err := memEncodeOrchestratorItem(op, item)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushOrchestrator(item, data, memAfter(p.nowMs(), delay))
	p.signal()
	return nil
}

// EnqueueStart enqueues start as EnqueueForOrchestrator does, unless its
// instance exists (duroxide.InstanceStarter): it has a row (it has run and
// was not deleted), or a start of it is queued. Then it returns a permanent
// error wrapping duroxide.ErrInstanceExists and writes nothing; when the
// instance is pending, the error wraps duroxide.ErrInstancePending (which
// matches ErrInstanceExists too) and its message says so
// (duroxide.PendingStartMessage). A stored start makes the instance
// pending (duroxide.StatusPending) until its first turn commits.
func (p *MemoryProvider) EnqueueStart(ctx context.Context, start duroxide.StartOrchestrationItem) error {
	const op = "enqueue_start"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	data, item, err := memEncodeOrchestratorItem(op, duroxide.WorkItem{Kind: start})
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pend := p.pendingOf(start.Instance); pend != nil {
		pe := duroxide.WrapError(op, false, duroxide.ErrInstancePending)
		pe.Message = duroxide.PendingStartMessage(start.Instance, pend.reason)
		return pe
	}
	if p.instanceExists(start.Instance) {
		return memPermanentCause(op, fmt.Sprintf("instance %q: ", start.Instance), duroxide.ErrInstanceExists)
	}
	p.pushOrchestrator(item, data, p.nowMs())
	p.markPending(start.Instance, start.Orchestration, start.Version, start.ParentInstance)
	p.signal()
	return nil
}

// instanceExists reports whether a start of instance must be refused: the
// instance has a row, or a start of it is queued; the caller holds p.mu.
func (p *MemoryProvider) instanceExists(instance string) bool {
	if _, ok := p.instances[instance]; ok {
		return true
	}
	for _, r := range p.orchQueue {
		if _, ok := r.item.Kind.(duroxide.StartOrchestrationItem); ok && r.instance == instance {
			return true
		}
	}
	return false
}

// memEncodeOrchestratorItem rejects, with a permanent error for op, what
// cannot go on an orchestrator queue and encodes the rest (see
// memEncodeWorkItem).
func memEncodeOrchestratorItem(op string, item duroxide.WorkItem) ([]byte, duroxide.WorkItem, error) {
	if item.Kind == nil {
		return nil, duroxide.WorkItem{}, memPermanent(op, "work item has no kind")
	}
	if item.IsForWorker() {
		return nil, duroxide.WorkItem{}, memPermanent(op, "Invalid work item type: ActivityExecute belongs on the worker queue")
	}
	return memEncodeWorkItem(op, item)
}

// pushOrchestrator appends one message encoded by memEncodeWorkItem; the
// caller holds p.mu.
func (p *MemoryProvider) pushOrchestrator(item duroxide.WorkItem, data []byte, visibleAt int64) {
	p.orchQueue = append(p.orchQueue, &memOrchRow{
		id: p.nextID(), instance: item.Instance(), item: item, data: data, visibleAt: visibleAt,
	})
}

// FetchOrchestrationItem locks the first instance (in message order) that
// has a visible message, is not locked, and whose current execution's
// pinned version falls in the filter's first range (duroxide's phase-1
// capability filtering; an unpinned execution is always compatible, and an
// empty range list matches nothing). The filter is applied before locking
// and before history is read. Every visible message of the instance is
// tagged with the new lock token and its attempt count incremented.
//
// An undecodable history is returned in HistoryError with the lock held.
// An instance with no record is served from its StartOrchestration or
// ContinueAsNew message; when it has only QueueMessage items they are
// dropped, and when it has other items (racing a start) they stay queued.
// With a positive pollTimeout the call waits up to that long for work. A
// lock timeout under 1 ms finds nothing: a fetch never returns a lock that
// has expired.
func (p *MemoryProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	const op = "fetch_orchestration_item"
	if err := memCtxErr(op, ctx); err != nil {
		return nil, err
	}
	if lockTimeout.Milliseconds() <= 0 {
		return nil, nil // a lock that would have expired on return
	}
	var item *duroxide.OrchestrationItem
	err := p.longPoll(ctx, op, pollTimeout, func(now int64) bool {
		item = p.tryFetchOrchestration(now, lockTimeout, filter)
		return item != nil
	})
	if err != nil {
		return nil, err
	}
	return item, nil
}

// tryFetchOrchestration is one fetch attempt; the caller holds p.mu.
func (p *MemoryProvider) tryFetchOrchestration(now int64, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) *duroxide.OrchestrationItem {
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil // supports nothing
	}
	skip := map[string]bool{}
	for {
		instance := p.nextCandidate(now, filter, skip)
		if instance == "" {
			return nil
		}
		var visible []*memOrchRow
		var messages []duroxide.WorkItem
		for _, r := range p.orchQueue {
			if r.instance == instance && r.visibleAt <= now {
				visible = append(visible, r)
				if m, err := memDecodeWorkItem(r.data); err == nil { // SQLite skips undecodable items too
					messages = append(messages, m)
				}
			}
		}
		item := &duroxide.OrchestrationItem{Instance: instance, Messages: messages}
		if inst := p.instances[instance]; inst != nil {
			item.OrchestrationName = inst.name
			item.Version = "unknown"
			if inst.version != nil {
				item.Version = *inst.version
			}
			item.ExecutionID = inst.currentExecution
			history, err := p.turnHistory(instance, inst.currentExecution)
			if err != nil {
				msg := "Failed to deserialize history: " + err.Error()
				item.HistoryError = &msg
				item.KVSnapshot = map[string]duroxide.KvEntry{}
			} else {
				item.History = history
				item.KVSnapshot = maps.Clone(p.kvStore[instance])
				if item.KVSnapshot == nil {
					item.KVSnapshot = map[string]duroxide.KvEntry{}
				}
			}
		} else if !p.describeNewInstance(item) {
			if memAllQueueMessages(messages) {
				p.deleteOrchRows(func(r *memOrchRow) bool { return r.instance == instance && r.visibleAt <= now })
			}
			skip[instance] = true
			continue
		} else {
			// A start locked before its first turn: the instance is
			// pending until a turn commits (as cdb's pending document).
			version := &item.Version
			if item.Version == "unknown" {
				version = nil
			}
			p.markPending(instance, item.OrchestrationName, version, duroxide.StartParent(messages))
		}
		token := p.newToken()
		p.locks[instance] = &memInstanceLock{token: token, lockedUntil: memAfter(now, lockTimeout)}
		for _, r := range visible {
			r.lockToken = token
			r.attempts++
			item.AttemptCount = max(item.AttemptCount, r.attempts)
		}
		item.LockToken = token
		return item
	}
}

// describeNewInstance fills name, version, execution and history of an
// instance that has no record yet, from history appended without metadata
// or from its start message (SQLite's fallback); it reports false when
// neither exists. The caller holds p.mu.
func (p *MemoryProvider) describeNewInstance(item *duroxide.OrchestrationItem) bool {
	item.ExecutionID = duroxide.InitialExecutionID
	item.KVSnapshot = map[string]duroxide.KvEntry{}
	history, _ := p.turnHistory(item.Instance, p.latestExecution(item.Instance))
	for _, ev := range history {
		if started, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			item.OrchestrationName, item.Version, item.History = started.Name, started.Version, history
			return true
		}
	}
	for _, m := range item.Messages {
		var name string
		var version *string
		switch k := m.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			name, version = k.Orchestration, k.Version
		case duroxide.ContinueAsNewItem:
			name, version = k.Orchestration, k.Version
		default:
			continue
		}
		item.OrchestrationName, item.Version = name, "unknown"
		if version != nil {
			item.Version = *version
		}
		return true
	}
	return false
}

func memAllQueueMessages(items []duroxide.WorkItem) bool {
	for _, it := range items {
		if _, ok := it.Kind.(duroxide.QueueMessageItem); !ok {
			return false
		}
	}
	return true
}

// nextCandidate returns the instance of the oldest visible message whose
// instance is unlocked, not in skip and compatible with filter, or "".
// The caller holds p.mu.
func (p *MemoryProvider) nextCandidate(now int64, filter *duroxide.DispatcherCapabilityFilter, skip map[string]bool) string {
	for _, r := range p.orchQueue {
		if r.visibleAt > now || skip[r.instance] {
			continue
		}
		if l := p.locks[r.instance]; l != nil && l.lockedUntil > now {
			continue
		}
		if !p.compatible(r.instance, filter) {
			continue
		}
		return r.instance
	}
	return ""
}

// compatible applies the capability filter to the instance's current
// execution: only the first range is used (duroxide's phase 1, as in
// SQLite), versions compare by major.minor.patch, and an instance or
// execution without a pinned version is always compatible. The caller
// holds p.mu.
func (p *MemoryProvider) compatible(instance string, filter *duroxide.DispatcherCapabilityFilter) bool {
	if filter == nil {
		return true
	}
	inst := p.instances[instance]
	if inst == nil {
		return true
	}
	exec := p.executions[instance][inst.currentExecution]
	if exec == nil || exec.pinned == nil {
		return true
	}
	r := filter.SupportedDuroxideVersions[0]
	v := *exec.pinned
	return memCompareCore(v, r.Min) >= 0 && memCompareCore(v, r.Max) <= 0
}

// memCompareCore compares major.minor.patch only, as SQLite's packed
// integer comparison does.
func memCompareCore(a, b duroxide.Version) int {
	return duroxide.Version{Major: a.Major, Minor: a.Minor, Patch: a.Patch}.Compare(
		duroxide.Version{Major: b.Major, Minor: b.Minor, Patch: b.Patch})
}

// deleteOrchRows removes the orchestrator messages match selects and
// returns how many; the caller holds p.mu.
func (p *MemoryProvider) deleteOrchRows(match func(*memOrchRow) bool) int {
	var n int
	p.orchQueue, n = memDeleteRows(p.orchQueue, match)
	return n
}

// AckOrchestrationItem commits a turn atomically (SQLite's
// ack_orchestration_item): everything is validated first (lock token
// known and unexpired, event ids non-zero and unique in the execution,
// queue items of the right kinds) and nothing is written when anything is
// wrong. It then deletes the messages tagged with the token, creates or
// updates the instance from metadata (only when both name and version are
// given), creates the execution, stores the pinned version, advances the
// current execution, appends the history delta, stores status and output,
// derives the custom status from the last CustomStatusUpdated event,
// materializes KV events, enqueues worker and orchestrator items (timers
// invisible until FireAtMs), removes cancelled activities from the worker
// queue and releases the lock. History is only appended, never re-read.
func (p *MemoryProvider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelledActivities []duroxide.ScheduledActivityIdentifier) error {
	const op = "ack_orchestration_item"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	workerRows := make([]memEncodedItem, len(workerItems))
	for i, w := range workerItems {
		if !w.IsForWorker() {
			return memPermanent(op, "worker item of type %q is not an ActivityExecute", w.Type())
		}
		data, copied, err := memEncodeWorkItem(op, w)
		if err != nil {
			return err
		}
		workerRows[i] = memEncodedItem{copied, data}
	}
	orchRows := make([]memEncodedItem, len(orchestratorItems))
	for i, o := range orchestratorItems {
		data, copied, err := memEncodeOrchestratorItem(op, o)
		if err != nil {
			return err
		}
		orchRows[i] = memEncodedItem{copied, data}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	instance, lock := p.lockFor(lockToken)
	if lock == nil {
		return memPermanent(op, "Invalid lock token")
	}
	if lock.lockedUntil <= now {
		return memPermanent(op, "Instance lock expired")
	}
	rows, copies, err := p.encodeAppend(instance, executionID, historyDelta)
	if err != nil {
		return memPermanentCause(op, "Failed to append history: ", err)
	}

	p.deleteOrchRows(func(r *memOrchRow) bool { return r.lockToken == lockToken })
	p.applyMetadata(instance, executionID, metadata, uint64(now))
	p.appendHistory(instance, executionID, rows, copies)
	p.applyCustomStatus(instance, historyDelta)
	p.applyKV(instance, historyDelta, metadata.Status, uint64(now))
	for _, w := range workerRows {
		p.pushWorker(w.item.Kind.(duroxide.ActivityExecuteItem), w.data, now)
	}
	for _, c := range cancelledActivities {
		p.deleteWorkRows(func(r *memWorkRow) bool {
			return r.item.Instance == c.Instance && r.item.ExecutionID == c.ExecutionID && r.item.ID == c.ActivityID
		})
	}
	for _, o := range orchRows {
		visibleAt := now
		if t, ok := o.item.Kind.(duroxide.TimerFiredItem); ok {
			visibleAt = int64(min(t.FireAtMs, 1<<63-1))
		}
		p.pushOrchestrator(o.item, o.data, visibleAt)
	}
	delete(p.locks, instance)
	p.signal()
	return nil
}

// applyMetadata stores what the runtime computed about the turn; the
// caller holds p.mu.
func (p *MemoryProvider) applyMetadata(instance string, executionID uint64, md duroxide.ExecutionMetadata, now uint64) {
	inst := p.instances[instance]
	if md.OrchestrationName != nil && md.OrchestrationVersion != nil {
		if inst == nil {
			inst = &memInstance{
				currentExecution: executionID,
				createdAt:        now,
				parent:           memClone(md.ParentInstanceID),
				seq:              p.nextID(),
			}
			p.instances[instance] = inst
			delete(p.pending, instance) // its first turn committed
		}
		inst.name = *md.OrchestrationName
		inst.version = memClone(md.OrchestrationVersion)
	}
	execs := p.executions[instance]
	if execs == nil {
		execs = map[uint64]*memExecution{}
		p.executions[instance] = execs
	}
	exec := execs[executionID]
	if exec == nil {
		exec = &memExecution{status: duroxide.StatusRunning, startedAt: now}
		execs[executionID] = exec
	}
	if md.PinnedDuroxideVersion != nil {
		exec.pinned = memClone(md.PinnedDuroxideVersion)
	}
	if inst != nil {
		inst.currentExecution = max(inst.currentExecution, executionID)
		inst.updatedAt = now
	}
	if md.Status != nil {
		exec.status = *md.Status
		exec.output = memClone(md.Output)
		exec.completedAt = nil
		if exec.status != duroxide.StatusRunning {
			exec.completedAt = &now
		}
	}
}

// applyCustomStatus stores the last CustomStatusUpdated of the delta and
// bumps the version (SQLite derives it the same way); the caller holds
// p.mu.
func (p *MemoryProvider) applyCustomStatus(instance string, delta []duroxide.Event) {
	inst := p.instances[instance]
	if inst == nil {
		return
	}
	for i := len(delta) - 1; i >= 0; i-- {
		if cs, ok := delta[i].Kind.(duroxide.CustomStatusUpdated); ok {
			inst.customStatus = memClone(cs.Status)
			inst.customStatusVersion++
			return
		}
	}
}

// AbandonOrchestrationItem releases the instance lock named by lockToken
// (expired or not, as long as no other fetch took it). It touches only the
// messages that fetch locked (duroxide main's rule): with ignoreAttempt
// their attempt counts are decremented, never below zero, and with a delay
// they are hidden until now + delay. Messages that arrived after the fetch,
// and messages it did not see (a start still hidden by an earlier delay),
// keep their visibility and attempt counts.
func (p *MemoryProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.abandonOrchestration(ctx, lockToken, delay, ignoreAttempt, "")
}

// abandonOrchestration is AbandonOrchestrationItem, recording reason (when
// not "") as the pending reason of a pending instance.
func (p *MemoryProvider) abandonOrchestration(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	const op = "abandon_orchestration_item"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	instance, lock := p.lockFor(lockToken)
	if lock == nil {
		return memPermanent(op, "Invalid lock token")
	}
	delete(p.locks, instance)
	if pend := p.pendingOf(instance); pend != nil && reason != "" {
		pend.reason = reason
	}
	now := p.nowMs()
	for _, r := range p.orchQueue {
		if r.instance != instance || r.lockToken != lock.token {
			continue
		}
		if ignoreAttempt && r.attempts > 0 {
			r.attempts--
		}
		if delay > 0 {
			r.visibleAt = memAfter(now, delay)
		}
	}
	p.signal()
	return nil
}

// RenewOrchestrationItemLock extends the instance lock to now + extendFor;
// an unknown, expired or released lock is a permanent error.
func (p *MemoryProvider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	const op = "renew_orchestration_item_lock"
	if err := memCtxErr(op, ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	_, lock := p.lockFor(lockToken)
	if lock == nil || lock.lockedUntil <= now {
		return memPermanent(op, "Lock token invalid, expired, or already acked")
	}
	lock.lockedUntil = memAfter(now, extendFor)
	return nil
}
