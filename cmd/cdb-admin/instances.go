package main

import (
	"context"
	"fmt"
	"strings"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instanceJSON is an instance under -json: duroxide's InstanceInfo with its
// snake_case field names; times in milliseconds since the Unix epoch.
type instanceJSON struct {
	InstanceID           string  `json:"instance_id"`
	OrchestrationName    string  `json:"orchestration_name"`
	OrchestrationVersion string  `json:"orchestration_version"`
	CurrentExecutionID   uint64  `json:"current_execution_id"`
	Status               string  `json:"status"`
	Output               *string `json:"output"`
	CreatedAt            uint64  `json:"created_at"`
	UpdatedAt            uint64  `json:"updated_at"`
	ParentInstanceID     *string `json:"parent_instance_id"`
	// PendingReason is, for a Pending instance, why its start has not run
	// as a runtime reported it (omitted when none did, and for the other
	// statuses): duroxide.InstanceInfo's PendingReason, a Go addition.
	PendingReason string `json:"pending_reason,omitempty"`
}

func toInstanceJSON(i duroxide.InstanceInfo) instanceJSON {
	return instanceJSON{
		InstanceID: i.InstanceID, OrchestrationName: i.OrchestrationName, OrchestrationVersion: i.OrchestrationVersion,
		CurrentExecutionID: i.CurrentExecutionID, Status: i.Status, Output: i.Output,
		CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt, ParentInstanceID: i.ParentInstanceID, PendingReason: i.PendingReason,
	}
}

// executionJSON is one execution under -json (duroxide's ExecutionInfo).
type executionJSON struct {
	ExecutionID uint64  `json:"execution_id"`
	Status      string  `json:"status"`
	Output      *string `json:"output"`
	StartedAt   uint64  `json:"started_at"`
	CompletedAt *uint64 `json:"completed_at"`
	EventCount  uint64  `json:"event_count"`
}

// statuses are the instance statuses duroxide's providers store.
var statuses = []string{"Running", "Completed", "Failed", "ContinuedAsNew"}

// listStatuses are the statuses list filters on: duroxide's, and Pending
// (duroxide.StatusPending: a start stored that has not run).
var listStatuses = append(statuses[:len(statuses):len(statuses)], duroxide.StatusPending)

// parseStatus returns the canonical spelling of a status of known given in
// any case ("" for "": any status).
func parseStatus(s string, known []string) (string, error) {
	if s == "" {
		return "", nil
	}
	for _, st := range known {
		if strings.EqualFold(s, st) {
			return st, nil
		}
	}
	return "", usagef("unknown status %q (one of %s)", s, strings.Join(known, ", "))
}

// listInstances returns the ids of the instances with status (every
// instance when ""): ListInstances or ListInstancesByStatus. With
// withPending and no status, the pending instances
// (ListInstancesByStatus(Pending), which ListInstances leaves out) come
// first.
func listInstances(ctx context.Context, admin duroxide.ProviderAdmin, status string, withPending bool) ([]string, error) {
	var ids []string
	var err error
	if status == "" {
		if withPending {
			if ids, err = admin.ListInstancesByStatus(ctx, duroxide.StatusPending); err != nil {
				return nil, fmt.Errorf("list the pending instances: %w", err)
			}
		}
		var created []string
		created, err = admin.ListInstances(ctx)
		ids = append(ids, created...)
	} else {
		ids, err = admin.ListInstancesByStatus(ctx, status)
	}
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return ids, nil
}

// instanceInfo returns the instance's metadata (Status Pending for an
// instance whose start has not run); an instance that does not exist is an
// exitNotFound error. GetInstanceInfo's error does not say
// which of "absent" and "unreadable" it is, so an error is confirmed by
// listing the instance's executions: none means absent.
func instanceInfo(ctx context.Context, admin duroxide.ProviderAdmin, id string) (duroxide.InstanceInfo, error) {
	info, err := admin.GetInstanceInfo(ctx, id)
	if err == nil {
		return info, nil
	}
	if execs, lerr := admin.ListExecutions(ctx, id); lerr == nil && len(execs) == 0 {
		return info, notFoundf("instance %s not found (cdb-admin list shows the instances)", quoteIfNeeded(id))
	}
	return info, fmt.Errorf("read instance %s: %w", quoteIfNeeded(id), err)
}

// oneInstance is the start of the commands on one instance: it checks that
// args is exactly one instance id, connects, and reads the instance
// (unknown: exitNotFound).
func (s *session) oneInstance(ctx context.Context, cmd, synopsis string, args []string) (*cdb.Provider, duroxide.InstanceInfo, error) {
	if err := requireArgs(cmd, args, 1, 1, synopsis); err != nil {
		return nil, duroxide.InstanceInfo{}, err
	}
	p, err := s.provider(ctx)
	if err != nil {
		return nil, duroxide.InstanceInfo{}, err
	}
	info, err := instanceInfo(ctx, p, args[0])
	return p, info, err
}
