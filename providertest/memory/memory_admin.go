package memory

import (
	"cmp"
	"context"
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instanceIDsByAge returns every instance id, oldest first; the caller
// holds p.mu.
func (p *MemoryProvider) instanceIDsByAge() []string {
	ids := make([]string, 0, len(p.instances))
	for id := range p.instances {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(p.instances[a].seq, p.instances[b].seq) })
	return ids
}

// currentStatus returns the status of the instance's current execution, or
// "" when it has no execution record; the caller holds p.mu.
func (p *MemoryProvider) currentStatus(id string) (string, *memExecution) {
	inst := p.instances[id]
	if inst == nil {
		return "", nil
	}
	exec := p.executions[id][inst.currentExecution]
	if exec == nil {
		return "", nil
	}
	return exec.status, exec
}

// ListInstances returns every instance id, newest first (as SQLite orders
// by created_at DESC).
func (p *MemoryProvider) ListInstances(ctx context.Context) ([]string, error) {
	if err := memCtxErr("list_instances", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.instanceIDsByAge()
	slices.Reverse(ids)
	return ids, nil
}

// ListInstancesByStatus returns the ids of the instances whose current
// execution has status, newest first; duroxide.StatusPending lists the
// pending instances (their start stored, not run yet), newest first.
func (p *MemoryProvider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	if err := memCtxErr("list_instances_by_status", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if status == duroxide.StatusPending {
		return p.pendingIDs(), nil
	}
	ids := p.instanceIDsByAge()
	slices.Reverse(ids)
	return slices.DeleteFunc(ids, func(id string) bool {
		s, _ := p.currentStatus(id)
		return s != status
	}), nil
}

// ListExecutions returns the instance's execution ids in ascending order.
func (p *MemoryProvider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	if err := memCtxErr("list_executions", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]uint64, 0, len(p.executions[instance]))
	for id := range p.executions[instance] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// ReadHistoryWithExecutionID returns one execution's history.
func (p *MemoryProvider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return p.readOp(ctx, "read_history_with_execution_id", instance, &executionID)
}

// ReadHistory returns the latest execution's history.
func (p *MemoryProvider) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return p.readOp(ctx, "read_history", instance, nil)
}

// LatestExecutionID returns the highest execution id of the instance; an
// instance with neither a record nor an execution is a permanent error.
func (p *MemoryProvider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	const op = "latest_execution_id"
	if err := memCtxErr(op, ctx); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.instances[instance] == nil && len(p.executions[instance]) == 0 {
		return 0, memPermanent(op, "Instance %s not found", instance)
	}
	return p.latestExecution(instance), nil
}

// GetInstanceInfo returns the instance's metadata and its current
// execution's status and output; an unknown instance is a permanent error.
// A pending instance (its start stored by EnqueueStart or locked by a
// fetch, no turn committed) is duroxide.StatusPending with execution 0,
// the start's name and version, and the reason a runtime reported.
func (p *MemoryProvider) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	const op = "get_instance_info"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.InstanceInfo{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if pend := p.pendingOf(instance); pend != nil {
		return pendingInfo(instance, pend), nil
	}
	if inst == nil {
		return duroxide.InstanceInfo{}, memPermanent(op, "Instance %s not found", instance)
	}
	info := duroxide.InstanceInfo{
		InstanceID:           instance,
		OrchestrationName:    inst.name,
		OrchestrationVersion: "unknown",
		CurrentExecutionID:   inst.currentExecution,
		Status:               "Unknown",
		CreatedAt:            inst.createdAt,
		UpdatedAt:            inst.updatedAt,
		ParentInstanceID:     memClone(inst.parent),
	}
	if inst.version != nil {
		info.OrchestrationVersion = *inst.version
	}
	if status, exec := p.currentStatus(instance); exec != nil {
		info.Status = status
		info.Output = memClone(exec.output)
	}
	return info, nil
}

// GetExecutionInfo returns one execution's metadata; an unknown execution is
// a permanent error.
func (p *MemoryProvider) GetExecutionInfo(ctx context.Context, instance string, executionID uint64) (duroxide.ExecutionInfo, error) {
	const op = "get_execution_info"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.ExecutionInfo{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	exec := p.executions[instance][executionID]
	if exec == nil {
		return duroxide.ExecutionInfo{}, memPermanent(op, "Execution %d not found for instance %s", executionID, instance)
	}
	return duroxide.ExecutionInfo{
		ExecutionID: executionID,
		Status:      exec.status,
		Output:      memClone(exec.output),
		StartedAt:   exec.startedAt,
		CompletedAt: memClone(exec.completedAt),
		EventCount:  uint64(p.history[instance][executionID].len()),
	}, nil
}

// GetSystemMetrics counts instances by the status of their current
// execution, all executions, and all history events.
func (p *MemoryProvider) GetSystemMetrics(ctx context.Context) (duroxide.SystemMetrics, error) {
	if err := memCtxErr("get_system_metrics", ctx); err != nil {
		return duroxide.SystemMetrics{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var m duroxide.SystemMetrics
	for id := range p.instances {
		s, _ := p.currentStatus(id)
		m.CountInstance(s)
	}
	for _, execs := range p.executions {
		m.TotalExecutions += uint64(len(execs))
	}
	for _, byExec := range p.history {
		for _, h := range byExec {
			m.TotalEvents += uint64(h.len())
		}
	}
	return m, nil
}

// GetQueueDepths counts the messages no live lock holds: orchestrator
// messages not tagged by their instance's unexpired lock, and worker
// messages without an unexpired lock. TimerQueue is always 0: timers wait
// in the orchestrator queue.
func (p *MemoryProvider) GetQueueDepths(ctx context.Context) (duroxide.QueueDepths, error) {
	if err := memCtxErr("get_queue_depths", ctx); err != nil {
		return duroxide.QueueDepths{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	var d duroxide.QueueDepths
	for _, r := range p.orchQueue {
		if l := p.locks[r.instance]; l == nil || l.lockedUntil <= now || r.lockToken != l.token {
			d.OrchestratorQueue++
		}
	}
	for _, r := range p.workQueue {
		if r.lockToken == "" || r.lockedUntil <= now {
			d.WorkerQueue++
		}
	}
	return d, nil
}

// ListChildren returns the ids of the instance's direct sub-orchestrations,
// oldest first, then its pending ones (a child's start that no turn has
// run), so that a tree's deletion takes them too.
func (p *MemoryProvider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	if err := memCtxErr("list_children", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	children := slices.DeleteFunc(p.instanceIDsByAge(), func(id string) bool {
		parent := p.instances[id].parent
		return parent == nil || *parent != instance
	})
	pending := slices.DeleteFunc(p.pendingIDs(), func(id string) bool {
		parent := p.pendingOf(id).parent
		return parent == nil || *parent != instance
	})
	slices.Reverse(pending) // pendingIDs is newest first
	return append(children, pending...), nil
}

// GetParentID returns the instance's parent; ok is false for a root (and
// for a pending root). A pending sub-orchestration names its parent, so
// that it is deleted with its root's tree, never alone. An unknown
// instance is a permanent error.
func (p *MemoryProvider) GetParentID(ctx context.Context, instance string) (string, bool, error) {
	const op = "get_parent_id"
	if err := memCtxErr(op, ctx); err != nil {
		return "", false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if pend := p.pendingOf(instance); inst == nil && pend != nil {
		if pend.parent != nil {
			return *pend.parent, true, nil
		}
		return "", false, nil
	}
	if inst == nil {
		return "", false, memPermanent(op, "Instance %s not found", instance)
	}
	if inst.parent == nil {
		return "", false, nil
	}
	return *inst.parent, true, nil
}

// GetInstanceTree returns the instance and all its descendants (duroxide's
// default implementation).
func (p *MemoryProvider) GetInstanceTree(ctx context.Context, instance string) (duroxide.InstanceTree, error) {
	return duroxide.GetInstanceTree(ctx, p, instance)
}

// GetQueueStats implements duroxide.QueueStatsReporter: both queues'
// messages ready, locked and delayed, and the oldest ready message's wait,
// by the rule of duroxide.QueueCounts.Count (as the cdb provider).
func (p *MemoryProvider) GetQueueStats(ctx context.Context) (duroxide.QueueStats, error) {
	if err := memCtxErr("get_queue_stats", ctx); err != nil {
		return duroxide.QueueStats{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	var s duroxide.QueueStats
	for _, r := range p.orchQueue {
		var lockedUntil int64
		if l := p.locks[r.instance]; l != nil && r.lockToken != "" && r.lockToken == l.token {
			lockedUntil = l.lockedUntil
		}
		s.Orchestrator.Count(now, r.visibleAt, lockedUntil)
	}
	for _, r := range p.workQueue {
		var lockedUntil int64
		if r.lockToken != "" {
			lockedUntil = r.lockedUntil
		}
		s.Worker.Count(now, r.visibleAt, lockedUntil)
	}
	return s, nil
}

var _ duroxide.InstanceMessagesReader = (*MemoryProvider)(nil)

// ListInstanceMessages implements duroxide.InstanceMessagesReader: the
// instance's orchestrator-queue messages (locked while its instance lock
// that tagged them lives), then its worker-queue messages, each in
// enqueue order.
func (p *MemoryProvider) ListInstanceMessages(ctx context.Context, instance string) ([]duroxide.InstanceMessage, error) {
	if err := memCtxErr("list_instance_messages", ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	var out []duroxide.InstanceMessage
	for _, r := range p.orchQueue {
		if r.instance != instance {
			continue
		}
		m := duroxide.InstanceMessage{Queue: duroxide.QueueOrchestrator, Item: r.item, VisibleAt: uint64(max(r.visibleAt, 0)), AttemptCount: r.attempts}
		if l := p.locks[instance]; l != nil && r.lockToken != "" && r.lockToken == l.token && l.lockedUntil > now {
			m.LockedUntil, m.LockToken = uint64(l.lockedUntil), l.token
		}
		out = append(out, m)
	}
	for _, r := range p.workQueue {
		if r.item.Instance != instance {
			continue
		}
		m := duroxide.InstanceMessage{Queue: duroxide.QueueWorker, Item: duroxide.WorkItem{Kind: r.item}, VisibleAt: uint64(max(r.visibleAt, 0)), AttemptCount: r.attempts}
		if r.lockToken != "" && r.lockedUntil > now {
			m.LockedUntil, m.LockToken = uint64(r.lockedUntil), r.lockToken
		}
		out = append(out, m)
	}
	return out, nil
}

var _ duroxide.HistoryPageReader = (*MemoryProvider)(nil)

// ReadHistoryPage implements duroxide.HistoryPageReader over the stored
// history.
func (p *MemoryProvider) ReadHistoryPage(ctx context.Context, instance string, execution, first uint64, count int) (duroxide.HistoryPage, error) {
	const op = "read_history_page"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.HistoryPage{}, err
	}
	if count <= 0 {
		return duroxide.HistoryPage{}, memPermanent(op, "count must be positive, not %d", count)
	}
	info, err := p.GetExecutionInfo(ctx, instance, execution)
	if err != nil {
		return duroxide.HistoryPage{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	page := duroxide.HistoryPage{Execution: info, Events: []duroxide.Event{}}
	page.Execution.EventCount = 0
	for _, row := range p.history[instance][execution].all() {
		page.Execution.EventCount = max(page.Execution.EventCount, row.id)
		if row.id >= first && row.id < first+uint64(count) {
			ev, err := row.decode()
			if err != nil {
				return duroxide.HistoryPage{}, memPermanent(op, "%v", err)
			}
			page.Events = append(page.Events, ev)
		}
	}
	return page, nil
}

// ReadHistoryEvents implements duroxide.HistoryPageReader.
func (p *MemoryProvider) ReadHistoryEvents(ctx context.Context, instance string, execution uint64, ids []uint64) ([]duroxide.Event, error) {
	const op = "read_history_events"
	if err := memCtxErr(op, ctx); err != nil {
		return nil, err
	}
	if len(ids) > duroxide.MaxHistoryEventsRead {
		return nil, memPermanent(op, "%d ids: at most %d a call", len(ids), duroxide.MaxHistoryEventsRead)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []duroxide.Event{}
	for _, row := range p.history[instance][execution].all() {
		if slices.Contains(ids, row.id) {
			ev, err := row.decode()
			if err != nil {
				return nil, memPermanent(op, "%v", err)
			}
			out = append(out, ev)
		}
	}
	return out, nil
}
