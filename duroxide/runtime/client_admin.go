package runtime

import (
	"context"
	"errors"

	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// ErrManagementNotAvailable is returned by the management calls when the
// provider does not implement duroxide.ProviderAdmin.
var ErrManagementNotAvailable = errors.New("runtime: management features not available - provider doesn't implement ProviderAdmin")

// Errors DeleteInstance reports in duroxide's terms (duroxide translates the
// provider's message the same way); they wrap the provider error.
var (
	ErrInstanceNotFound = errors.New("instance not found")
	// ErrInstanceExists is duroxide.ErrInstanceExists, what
	// StartOrchestration returns (wrapped) for an instance that exists.
	ErrInstanceExists = duroxide.ErrInstanceExists
	// ErrInstancePending is duroxide.ErrInstancePending, what
	// StartOrchestration returns (wrapped) for an instance whose start is
	// stored and has not run; such an error matches ErrInstanceExists too.
	ErrInstancePending              = duroxide.ErrInstancePending
	ErrInstanceStillRunning         = errors.New("instance is still running; use force or cancel it first")
	ErrCannotDeleteSubOrchestration = errors.New("cannot delete a sub-orchestration directly; delete the root orchestration instead")
)

// HasManagementCapability reports whether the provider implements
// duroxide.ProviderAdmin.
func (c *Client) HasManagementCapability() bool {
	_, err := c.admin()
	return err == nil
}

// admin returns the provider's admin interface: ErrNilProvider without a
// provider, ErrManagementNotAvailable when it has none.
func (c *Client) admin() (duroxide.ProviderAdmin, error) {
	p, err := c.prov()
	if err != nil {
		return nil, err
	}
	a, ok := duroxide.AsManagementCapability(p)
	if !ok {
		return nil, ErrManagementNotAvailable
	}
	return a, nil
}

// adminCall runs f on the provider's admin interface and wraps its error
// (see clientError); instance, when not "", is checked and named.
func adminCall[T any](c *Client, op, instance string, f func(duroxide.ProviderAdmin) (T, error)) (T, error) {
	var zero T
	a, err := c.admin()
	if err != nil {
		return zero, err
	}
	v, err := f(a)
	if err != nil {
		return v, clientErr(op, instance, err)
	}
	return v, nil
}

// adminInstanceCall is adminCall for an operation on one instance, which
// refuses an empty id before the provider is called.
func adminInstanceCall[T any](c *Client, op, instance string, f func(duroxide.ProviderAdmin) (T, error)) (T, error) {
	if err := checkInstance(op, instance); err != nil {
		var zero T
		return zero, err
	}
	return adminCall(c, op, instance, f)
}

// ListAllInstances returns every instance id, in the provider's order
// (cdb: newest first). A management call (see Client).
func (c *Client) ListAllInstances(ctx context.Context) ([]string, error) {
	return adminCall(c, "list instances", "", func(a duroxide.ProviderAdmin) ([]string, error) { return a.ListInstances(ctx) })
}

// ListInstancesByStatus returns the ids of instances with status
// ("Running", "Completed", "Failed", "ContinuedAsNew"; duroxide.StatusPending
// for the instances whose start has not run, with a provider that keeps
// them).
func (c *Client) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return adminCall(c, "list instances by status", "", func(a duroxide.ProviderAdmin) ([]string, error) {
		return a.ListInstancesByStatus(ctx, status)
	})
}

// GetInstanceInfo returns instance's metadata (duroxide.InstanceInfo):
// orchestration name and version, current execution id, its status and
// output, parent, creation and update times in Unix milliseconds. A
// management call (see Client); an unknown instance is the provider's
// error, wrapped.
func (c *Client) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	return adminInstanceCall(c, "instance info", instance, func(a duroxide.ProviderAdmin) (duroxide.InstanceInfo, error) {
		return a.GetInstanceInfo(ctx, instance)
	})
}

// GetExecutionInfo returns one execution's metadata (duroxide.ExecutionInfo):
// status, output, start and completion times in Unix milliseconds, event
// count. A management call (see Client); an unknown execution is the
// provider's error, wrapped.
func (c *Client) GetExecutionInfo(ctx context.Context, instance string, executionID uint64) (duroxide.ExecutionInfo, error) {
	return adminInstanceCall(c, "execution info", instance, func(a duroxide.ProviderAdmin) (duroxide.ExecutionInfo, error) {
		return a.GetExecutionInfo(ctx, instance, executionID)
	})
}

// ListExecutions returns instance's execution ids in ascending order (the
// first is duroxide.InitialExecutionID, 1; continue-as-new adds one each).
// A management call (see Client).
func (c *Client) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	return adminInstanceCall(c, "list executions", instance, func(a duroxide.ProviderAdmin) ([]uint64, error) { return a.ListExecutions(ctx, instance) })
}

// ReadExecutionHistory returns one execution's history, its events in
// event-id order (cdb: empty for an execution that does not exist). A
// management call (see Client).
func (c *Client) ReadExecutionHistory(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return adminInstanceCall(c, "read history", instance, func(a duroxide.ProviderAdmin) ([]duroxide.Event, error) {
		return a.ReadHistoryWithExecutionID(ctx, instance, executionID)
	})
}

// GetOrchestrationStats returns the size of instance's stored state
// (duroxide's Client::get_orchestration_stats, since 0.1.27): its current
// execution's history (events and JSON bytes), the queue messages carried
// into it, and its KV store (keys and value bytes), as the provider's
// GetInstanceStats reports them; nil, with no error, when the instance does
// not exist. It needs no ProviderAdmin. An empty instance id is refused
// before the provider is called; a provider error is wrapped.
func (c *Client) GetOrchestrationStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	if err := checkInstance("orchestration stats", instance); err != nil {
		return nil, err
	}
	p, err := c.prov()
	if err != nil {
		return nil, err
	}
	stats, err := p.GetInstanceStats(ctx, instance)
	if err != nil {
		return nil, clientErr("orchestration stats", instance, err)
	}
	return stats, nil
}

// GetSystemMetrics returns counts over all instances (duroxide.SystemMetrics):
// instances in all and by status, executions, history events. A management
// call (see Client).
func (c *Client) GetSystemMetrics(ctx context.Context) (duroxide.SystemMetrics, error) {
	return adminCall(c, "system metrics", "", func(a duroxide.ProviderAdmin) (duroxide.SystemMetrics, error) { return a.GetSystemMetrics(ctx) })
}

// GetQueueDepths returns the counts of messages no live lock holds, per
// queue (duroxide.QueueDepths). A management call (see Client).
func (c *Client) GetQueueDepths(ctx context.Context) (duroxide.QueueDepths, error) {
	return adminCall(c, "queue depths", "", func(a duroxide.ProviderAdmin) (duroxide.QueueDepths, error) { return a.GetQueueDepths(ctx) })
}

// GetInstanceTree returns instance and all its descendants
// (sub-orchestrations, recursively) as a duroxide.InstanceTree (RootID,
// AllIDs). A management call (see Client).
func (c *Client) GetInstanceTree(ctx context.Context, instance string) (duroxide.InstanceTree, error) {
	return adminInstanceCall(c, "instance tree", instance, func(a duroxide.ProviderAdmin) (duroxide.InstanceTree, error) {
		return a.GetInstanceTree(ctx, instance)
	})
}

// DeleteInstance deletes a root instance and its descendants. Without force
// a running instance is refused. A pending instance (its start stored and
// not run) is purged with every message queued for it, with a provider
// that keeps pending instances. Refusals wrap ErrInstanceNotFound,
// ErrInstanceStillRunning or ErrCannotDeleteSubOrchestration (matched from
// the provider's message as duroxide does) together with the provider error.
func (c *Client) DeleteInstance(ctx context.Context, instance string, force bool) (duroxide.DeleteInstanceResult, error) {
	if err := checkInstance("delete", instance); err != nil {
		return duroxide.DeleteInstanceResult{}, err
	}
	a, err := c.admin()
	if err != nil {
		return duroxide.DeleteInstanceResult{}, err
	}
	res, err := a.DeleteInstance(ctx, instance, force)
	if err == nil {
		return res, nil
	}
	e := &clientError{op: "delete", instance: instance, cause: err}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "not found"):
		e.kind = ErrInstanceNotFound
	case strings.Contains(msg, "still running"):
		e.kind = ErrInstanceStillRunning
	case strings.Contains(msg, "sub-orchestration") || strings.Contains(msg, "delete the root"):
		e.kind = ErrCannotDeleteSubOrchestration
	}
	return res, e
}

// DeleteInstanceBulk deletes the terminal root instances matching filter,
// each with its descendants, and returns what was deleted in all (running
// instances and sub-orchestrations are skipped, not refused). A management
// call (see Client).
func (c *Client) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (duroxide.DeleteInstanceResult, error) {
	return adminCall(c, "bulk delete", "", func(a duroxide.ProviderAdmin) (duroxide.DeleteInstanceResult, error) {
		return a.DeleteInstanceBulk(ctx, filter)
	})
}

// PruneExecutions deletes old executions of instance (never the current
// one), as options select them, and returns how many executions and events
// it removed. A management call (see Client).
func (c *Client) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	return adminInstanceCall(c, "prune", instance, func(a duroxide.ProviderAdmin) (duroxide.PruneResult, error) {
		return a.PruneExecutions(ctx, instance, options)
	})
}

// PruneExecutionsBulk applies PruneExecutions with options to every
// instance matching filter and returns the totals. A management call (see
// Client).
func (c *Client) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	return adminCall(c, "bulk prune", "", func(a duroxide.ProviderAdmin) (duroxide.PruneResult, error) {
		return a.PruneExecutionsBulk(ctx, filter, options)
	})
}
