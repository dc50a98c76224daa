package duroxide

import "context"

// ProviderAdmin is the optional management contract (duroxide's
// providers::ProviderAdmin trait): discovery, history access, metrics,
// instance trees, deletion and pruning. A runtime or client finds it with
// AsManagementCapability. Every error is a *ProviderError.
type ProviderAdmin interface {
	// ListInstances returns every known instance id.
	ListInstances(ctx context.Context) ([]string, error)
	// ListInstancesByStatus returns the ids of the instances whose
	// current status is status ("Running", "Completed", "Failed", ...;
	// StatusPending for the pending instances of a provider that keeps
	// them, see StatusPending).
	ListInstancesByStatus(ctx context.Context, status string) ([]string, error)
	// ListExecutions returns the instance's execution ids in ascending
	// order (empty for an unknown instance).
	ListExecutions(ctx context.Context, instance string) ([]uint64, error)
	// ReadHistoryWithExecutionID returns one execution's history.
	ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]Event, error)
	// ReadHistory returns the latest execution's history.
	ReadHistory(ctx context.Context, instance string) ([]Event, error)
	// LatestExecutionID returns the instance's current execution id; an
	// unknown instance is an error.
	LatestExecutionID(ctx context.Context, instance string) (uint64, error)
	// GetInstanceInfo returns the instance's metadata; an unknown instance
	// is an error.
	GetInstanceInfo(ctx context.Context, instance string) (InstanceInfo, error)
	// GetExecutionInfo returns one execution's metadata; an unknown
	// execution is an error.
	GetExecutionInfo(ctx context.Context, instance string, executionID uint64) (ExecutionInfo, error)
	// GetSystemMetrics returns counts over all instances.
	GetSystemMetrics(ctx context.Context) (SystemMetrics, error)
	// GetQueueDepths returns the number of unlocked messages per queue.
	GetQueueDepths(ctx context.Context) (QueueDepths, error)
	// ListChildren returns the ids of the instance's direct
	// sub-orchestrations.
	ListChildren(ctx context.Context, instance string) ([]string, error)
	// GetParentID returns the instance's parent id; ok is false for a root.
	GetParentID(ctx context.Context, instance string) (parent string, ok bool, err error)
	// GetInstanceTree returns the instance and all its descendants
	// (duroxide's default implementation is the helper GetInstanceTree).
	GetInstanceTree(ctx context.Context, instance string) (InstanceTree, error)
	// DeleteInstancesAtomic deletes the given instances and all their data
	// (history, executions, queue entries, locks, KV, metadata) in one
	// all-or-nothing operation. Without force, any Running instance fails
	// the whole call; an instance whose child is not in ids fails it too
	// (orphan check). Force-deleting a locked instance keeps an in-flight
	// ack from recreating it.
	DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (DeleteInstanceResult, error)
	// DeleteInstance deletes a root instance and its descendants; a
	// sub-orchestration cannot be deleted directly (duroxide's default
	// implementation is the helper DeleteInstance).
	DeleteInstance(ctx context.Context, instance string, force bool) (DeleteInstanceResult, error)
	// DeleteInstanceBulk deletes the terminal root instances (with their
	// descendants) that match filter; Running instances and
	// sub-orchestrations are skipped, not errors.
	DeleteInstanceBulk(ctx context.Context, filter InstanceFilter) (DeleteInstanceResult, error)
	// PruneExecutions deletes old executions of one instance; the current
	// execution, Running executions and the KV store are never touched.
	PruneExecutions(ctx context.Context, instance string, options PruneOptions) (PruneResult, error)
	// PruneExecutionsBulk applies PruneExecutions to every instance that
	// matches filter.
	PruneExecutionsBulk(ctx context.Context, filter InstanceFilter, options PruneOptions) (PruneResult, error)
}

// InstanceInfo is an instance's metadata (duroxide's InstanceInfo).
type InstanceInfo struct {
	InstanceID           string
	OrchestrationName    string
	OrchestrationVersion string
	CurrentExecutionID   uint64
	// Status is "Running", "Completed", "Failed" or "ContinuedAsNew"; or
	// StatusPending (a Go addition, see StatusPending) for an instance
	// whose start is stored and has not run, with CurrentExecutionID 0.
	Status string
	// Output is the terminal output or error, nil while running.
	Output *string
	// CreatedAt and UpdatedAt are milliseconds since the Unix epoch.
	CreatedAt uint64
	UpdatedAt uint64
	// ParentInstanceID is nil for a root orchestration.
	ParentInstanceID *string
	// PendingReason is, for a Pending instance, why its start has not run
	// as the last runtime that abandoned it reported (for instance
	// `orchestration "Procss" is not registered on runtime 3f2a, attempt
	// 3`, through PendingReasonRecorder); "" when none reported one, and
	// for every other status. A Go addition.
	PendingReason string
}

// ExecutionInfo is one execution's metadata (duroxide's ExecutionInfo).
type ExecutionInfo struct {
	// ExecutionID is the execution (1, then +1 per continue-as-new).
	ExecutionID uint64
	// Status is "Running", "Completed", "Failed" or "ContinuedAsNew".
	Status string
	// Output is the terminal output, error, or continue-as-new input.
	Output *string
	// StartedAt is milliseconds since the Unix epoch; CompletedAt is nil
	// while the execution runs.
	StartedAt   uint64
	CompletedAt *uint64
	// EventCount is the number of events in the execution's history.
	EventCount uint64
}

// SystemMetrics counts instances, executions and events over the whole
// store (duroxide's SystemMetrics). The Running, Completed and Failed counts
// are by the status of each instance's current execution.
type SystemMetrics struct {
	TotalInstances     uint64 // every instance
	TotalExecutions    uint64 // every execution of every instance
	RunningInstances   uint64 // instances whose status is "Running"
	CompletedInstances uint64 // instances whose status is "Completed"
	FailedInstances    uint64 // instances whose status is "Failed"
	TotalEvents        uint64 // history events of every execution
}

// CountInstance counts one instance whose current execution has status
// (StatusRunning, StatusCompleted, StatusFailed, or another status, which
// counts only in TotalInstances), as GetSystemMetrics does.
func (m *SystemMetrics) CountInstance(status string) {
	m.TotalInstances++
	switch status {
	case StatusRunning:
		m.RunningInstances++
	case StatusCompleted:
		m.CompletedInstances++
	case StatusFailed:
		m.FailedInstances++
	}
}

// QueueDepths counts unlocked messages per queue (duroxide's QueueDepths).
// TimerQueue is 0 for providers that keep timers in the orchestrator queue.
type QueueDepths struct {
	OrchestratorQueue uint64 // unlocked orchestrator-queue messages
	WorkerQueue       uint64 // unlocked worker-queue messages
	TimerQueue        uint64 // unlocked timer messages (0, see above)
}

// InstanceFilter selects instances for bulk deletion and pruning
// (duroxide's InstanceFilter); the criteria are ANDed, and nil means "no
// constraint".
type InstanceFilter struct {
	// InstanceIDs restricts the selection to these ids.
	InstanceIDs []string
	// CompletedBefore keeps instances completed before this time, in
	// milliseconds since the Unix epoch.
	CompletedBefore *uint64
	// Limit caps how many instances are processed (applied last).
	Limit *uint32
}

// PruneOptions selects executions to prune (duroxide's PruneOptions); the
// criteria are ANDed.
type PruneOptions struct {
	// KeepLast keeps the N most recent executions (the current one
	// included); nil, 0 and 1 all keep only the current execution.
	KeepLast *uint32
	// CompletedBefore prunes only executions completed before this time,
	// in milliseconds since the Unix epoch.
	CompletedBefore *uint64
}

// DeleteInstanceResult counts what a deletion removed (duroxide's
// DeleteInstanceResult).
type DeleteInstanceResult struct {
	InstancesDeleted     uint64 // instances (1 for one root, N for a tree or bulk)
	ExecutionsDeleted    uint64 // executions
	EventsDeleted        uint64 // history events
	QueueMessagesDeleted uint64 // orchestrator-, worker- and timer-queue messages
}

// Add accumulates o into r (for bulk operations).
func (r *DeleteInstanceResult) Add(o DeleteInstanceResult) {
	r.InstancesDeleted += o.InstancesDeleted
	r.ExecutionsDeleted += o.ExecutionsDeleted
	r.EventsDeleted += o.EventsDeleted
	r.QueueMessagesDeleted += o.QueueMessagesDeleted
}

// PruneResult counts what a prune removed (duroxide's PruneResult).
type PruneResult struct {
	InstancesProcessed uint64 // instances examined (1 for PruneExecutions, N for bulk)
	ExecutionsDeleted  uint64 // executions removed
	EventsDeleted      uint64 // history events removed
}

// Add accumulates o into r (for bulk operations).
func (r *PruneResult) Add(o PruneResult) {
	r.InstancesProcessed += o.InstancesProcessed
	r.ExecutionsDeleted += o.ExecutionsDeleted
	r.EventsDeleted += o.EventsDeleted
}

// InstanceTree is a root instance and all its descendants (duroxide's
// InstanceTree); AllIDs includes RootID.
type InstanceTree struct {
	RootID string
	AllIDs []string
}

// IsRootOnly reports whether the tree has no descendants.
func (t InstanceTree) IsRootOnly() bool { return len(t.AllIDs) == 1 }

// Size returns the number of instances in the tree.
func (t InstanceTree) Size() int { return len(t.AllIDs) }

// GetInstanceTree collects instance and its descendants through
// admin.ListChildren, depth first; it is duroxide's default
// ProviderAdmin::get_instance_tree, for providers without a faster way.
// ListChildren's error is returned as it is; a nil admin is a permanent
// *ProviderError.
func GetInstanceTree(ctx context.Context, admin ProviderAdmin, instance string) (InstanceTree, error) {
	if admin == nil {
		return InstanceTree{}, errNilAdmin("get_instance_tree")
	}
	tree := InstanceTree{RootID: instance}
	pending := []string{instance}
	seen := map[string]bool{}
	for len(pending) > 0 {
		id := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		tree.AllIDs = append(tree.AllIDs, id)
		children, err := admin.ListChildren(ctx, id)
		if err != nil {
			return InstanceTree{}, err
		}
		pending = append(pending, children...)
	}
	return tree, nil
}

// DeleteInstance is duroxide's default ProviderAdmin::delete_instance: it
// refuses a sub-orchestration (permanent error "Cannot delete
// sub-orchestration ... directly"), collects the tree with
// admin.GetInstanceTree and deletes it with admin.DeleteInstancesAtomic,
// returning their errors as they are. A nil admin is a permanent
// *ProviderError.
func DeleteInstance(ctx context.Context, admin ProviderAdmin, instance string, force bool) (DeleteInstanceResult, error) {
	if admin == nil {
		return DeleteInstanceResult{}, errNilAdmin("delete_instance")
	}
	if _, isChild, err := admin.GetParentID(ctx, instance); err != nil {
		return DeleteInstanceResult{}, err
	} else if isChild {
		return DeleteInstanceResult{}, NewPermanentError("delete_instance",
			"Cannot delete sub-orchestration "+instance+" directly. Delete root instance instead.")
	}
	tree, err := admin.GetInstanceTree(ctx, instance)
	if err != nil {
		return DeleteInstanceResult{}, err
	}
	return admin.DeleteInstancesAtomic(ctx, tree.AllIDs, force)
}

// DeleteTrees deletes each of roots with its descendants, as a provider's
// DeleteInstanceBulk does for the terminal roots its filter selected
// (duroxide's bulk deletion): the tree from admin.GetInstanceTree, deleted
// with admin.DeleteInstancesAtomic with force (the roots are terminal). It
// returns the counts summed over the trees deleted so far and the first
// error as it is. A nil admin is a permanent *ProviderError.
func DeleteTrees(ctx context.Context, admin ProviderAdmin, roots []string) (DeleteInstanceResult, error) {
	var total DeleteInstanceResult
	if admin == nil {
		return total, errNilAdmin("delete_instance_bulk")
	}
	for _, root := range roots {
		tree, err := admin.GetInstanceTree(ctx, root)
		if err != nil {
			return total, err
		}
		res, err := admin.DeleteInstancesAtomic(ctx, tree.AllIDs, true)
		if err != nil {
			return total, err
		}
		total.Add(res)
	}
	return total, nil
}

// PruneEach prunes the executions of each of instances with options, as a
// provider's PruneExecutionsBulk does for the instances its filter
// selected (duroxide's bulk prune): admin.PruneExecutions per instance, in
// order. It returns the counts summed over the instances pruned so far and
// the first error as it is. A nil admin is a permanent *ProviderError.
func PruneEach(ctx context.Context, admin ProviderAdmin, instances []string, options PruneOptions) (PruneResult, error) {
	var total PruneResult
	if admin == nil {
		return total, errNilAdmin("prune_executions_bulk")
	}
	for _, id := range instances {
		res, err := admin.PruneExecutions(ctx, id, options)
		if err != nil {
			return total, err
		}
		total.Add(res)
	}
	return total, nil
}

// errNilAdmin is the permanent error of a helper given a nil ProviderAdmin.
func errNilAdmin(operation string) *ProviderError {
	return NewPermanentError(operation, "nil ProviderAdmin")
}
