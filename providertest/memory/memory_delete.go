package memory

import (
	"context"
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// memDefaultBulkLimit is how many instances a bulk operation processes when
// the filter sets no limit (SQLite's DEFAULT_BULK_OPERATION_LIMIT).
const memDefaultBulkLimit = 1000

// DeleteInstancesAtomic deletes the instances ids and all their data
// (history, executions, queue messages, locks, KV) in one step. Without
// force, an instance whose current execution is Running fails the call; an
// instance with a child outside ids fails it too (the orphan check). Either
// failure is a permanent error with nothing deleted. Deleting the lock of
// an instance in flight makes its ack fail instead of recreating it.
// InstancesDeleted counts the ids that had a record or were pending (a
// pending instance is purged: its record and every message queued for
// it).
func (p *MemoryProvider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (duroxide.DeleteInstanceResult, error) {
	const op = "delete_instances_atomic"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.DeleteInstanceResult{}, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return duroxide.DeleteInstanceResult{}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in := map[string]bool{}
	for _, id := range ids {
		in[id] = true
	}
	if !force {
		for _, id := range ids {
			if s, _ := p.currentStatus(id); s == duroxide.StatusRunning {
				return duroxide.DeleteInstanceResult{}, memPermanent(op,
					"Instance %s is still running. Use force=true to delete anyway, or cancel first.", id)
			}
		}
	}
	for _, child := range p.instanceIDsByAge() {
		if parent := p.instances[child].parent; parent != nil && in[*parent] && !in[child] {
			return duroxide.DeleteInstanceResult{}, memPermanent(op,
				"Cannot delete: instance %s has child %s that was created memAfter tree traversal. Re-fetch the tree and retry.", *parent, child)
		}
	}
	var res duroxide.DeleteInstanceResult
	for _, id := range ids {
		if p.instances[id] != nil || p.pendingOf(id) != nil {
			res.InstancesDeleted++
		}
		delete(p.pending, id)
		res.ExecutionsDeleted += uint64(len(p.executions[id]))
		for _, h := range p.history[id] {
			res.EventsDeleted += uint64(h.len())
		}
		delete(p.instances, id)
		delete(p.executions, id)
		delete(p.history, id)
		delete(p.locks, id)
		delete(p.kvStore, id)
		delete(p.kvDelta, id)
	}
	res.QueueMessagesDeleted += uint64(p.deleteOrchRows(func(r *memOrchRow) bool { return in[r.instance] }))
	res.QueueMessagesDeleted += uint64(p.deleteWorkRows(func(r *memWorkRow) bool { return in[r.item.Instance] }))
	p.signal()
	return res, nil
}

// DeleteInstance deletes a root instance and its descendants; a
// sub-orchestration cannot be deleted directly (duroxide's default
// implementation).
func (p *MemoryProvider) DeleteInstance(ctx context.Context, instance string, force bool) (duroxide.DeleteInstanceResult, error) {
	return duroxide.DeleteInstance(ctx, p, instance, force)
}

// memTerminal reports whether status ends an execution.
func memTerminal(status string) bool {
	return status == duroxide.StatusCompleted || status == duroxide.StatusFailed || status == duroxide.StatusContinuedAsNew
}

// selectInstances returns, oldest first, the instances matching filter
// whose current execution passes keep, at most filter.Limit of them
// (default 1000); the caller holds p.mu.
func (p *MemoryProvider) selectInstances(filter duroxide.InstanceFilter, keep func(id string, exec *memExecution) bool) []string {
	if filter.InstanceIDs != nil && len(filter.InstanceIDs) == 0 {
		return nil
	}
	limit := uint32(memDefaultBulkLimit)
	if filter.Limit != nil {
		limit = *filter.Limit
	}
	var out []string
	for _, id := range p.instanceIDsByAge() {
		if uint32(len(out)) >= limit {
			break
		}
		if filter.InstanceIDs != nil && !slices.Contains(filter.InstanceIDs, id) {
			continue
		}
		_, exec := p.currentStatus(id)
		if filter.CompletedBefore != nil && (exec == nil || exec.completedAt == nil || *exec.completedAt >= *filter.CompletedBefore) {
			continue
		}
		if keep(id, exec) {
			out = append(out, id)
		}
	}
	return out
}

// DeleteInstanceBulk deletes the root instances matching filter whose
// current execution is terminal (Completed, Failed or ContinuedAsNew),
// each with its descendants; Running instances and sub-orchestrations are
// skipped. CompletedBefore compares the current execution's completion
// time.
func (p *MemoryProvider) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (duroxide.DeleteInstanceResult, error) {
	const op = "delete_instance_bulk"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.DeleteInstanceResult{}, err
	}
	p.mu.Lock()
	roots := p.selectInstances(filter, func(id string, exec *memExecution) bool {
		return p.instances[id].parent == nil && exec != nil && memTerminal(exec.status)
	})
	p.mu.Unlock()
	return duroxide.DeleteTrees(ctx, p, roots)
}

// PruneExecutions deletes old executions of one instance and their
// history: never the current execution, never a Running one, never the KV
// store. KeepLast keeps the N highest execution ids (0 and 1 keep only the
// current one); CompletedBefore prunes only executions completed earlier.
// An unknown instance is a permanent error.
func (p *MemoryProvider) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	const op = "prune_executions"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.PruneResult{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	inst := p.instances[instance]
	if inst == nil {
		return duroxide.PruneResult{}, memPermanent(op, "Instance %s not found", instance)
	}
	execIDs := make([]uint64, 0, len(p.executions[instance]))
	for id := range p.executions[instance] {
		execIDs = append(execIDs, id)
	}
	slices.Sort(execIDs)
	slices.Reverse(execIDs) // newest first
	res := duroxide.PruneResult{InstancesProcessed: 1}
	for rank, id := range execIDs {
		exec := p.executions[instance][id]
		switch {
		case id == inst.currentExecution, exec.status == duroxide.StatusRunning:
			continue
		case options.KeepLast != nil && uint32(rank) < *options.KeepLast:
			continue
		case options.CompletedBefore != nil && (exec.completedAt == nil || *exec.completedAt >= *options.CompletedBefore):
			continue
		}
		res.ExecutionsDeleted++
		res.EventsDeleted += uint64(p.history[instance][id].len())
		delete(p.history[instance], id)
		delete(p.executions[instance], id)
	}
	return res, nil
}

// PruneExecutionsBulk applies PruneExecutions to every instance matching
// filter, whatever its status (the current execution is protected anyway).
func (p *MemoryProvider) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	if err := memCtxErr("prune_executions_bulk", ctx); err != nil {
		return duroxide.PruneResult{}, err
	}
	p.mu.Lock()
	ids := p.selectInstances(filter, func(string, *memExecution) bool { return true })
	p.mu.Unlock()
	return duroxide.PruneEach(ctx, p, ids, options)
}
