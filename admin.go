// Admin reads (duroxide.ProviderAdmin): listing instances and executions,
// history for management, instance and execution info, system metrics, queue
// depths, parent/child tree.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// ProviderAdmin (DESIGN.md §6, duroxide's ProviderAdmin). Listings
// are cross-partition queries with plain filters and projections, sorted
// and counted on the client (the gateway serves no ORDER BY or aggregates
// across partitions: DESIGN.md §10).

// instanceRow is the projection admin listings read.
type instanceRow struct {
	InstanceID       string  `json:"instanceId"`
	CreatedAt        int64   `json:"createdAt"`
	Status           string  `json:"status"`
	ParentInstanceID *string `json:"parentInstanceId"`
	CompletedAt      *int64  `json:"completedAt"`
}

// listInstanceRows runs a cross-partition query over instance documents;
// where is appended to "c.type = 'instance'". Rows come oldest first.
func (p *Provider) listInstanceRows(ctx context.Context, where string, params []azcosmos.QueryParameter) ([]instanceRow, error) {
	raws, err := p.query(ctx, nil, "SELECT c.instanceId, c.createdAt, c.status, c.parentInstanceId, c.completedAt FROM c WHERE c.type = 'instance'"+where, params, queryOpts{})
	if err != nil {
		return nil, err
	}
	rows := make([]instanceRow, 0, len(raws))
	for _, raw := range raws {
		var r instanceRow
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode instance row: %w", err)
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].CreatedAt != rows[j].CreatedAt {
			return rows[i].CreatedAt < rows[j].CreatedAt
		}
		return rows[i].InstanceID < rows[j].InstanceID
	})
	return rows, nil
}

func newestFirst(rows []instanceRow) []string {
	ids := make([]string, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		ids = append(ids, rows[i].InstanceID)
	}
	return ids
}

// ListInstances returns every instance id, newest first (as SQLite orders
// by created_at DESC). Requests: 1 cross-partition query (per page).
func (p *Provider) ListInstances(ctx context.Context) ([]string, error) {
	ctx = cosmos.WithCall(ctx, "list_instances")
	rows, err := p.listInstanceRows(ctx, "", nil)
	if err != nil {
		return nil, mapError("list_instances", err)
	}
	return newestFirst(rows), nil
}

// ListInstancesByStatus returns the ids of the instances whose current
// execution has status, newest first; duroxide.StatusPending lists the
// pending instances (their start stored, not run yet), newest first.
// Requests: 1 cross-partition query.
func (p *Provider) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	ctx = cosmos.WithCall(ctx, "list_instances_by_status")
	if status == duroxide.StatusPending {
		ids, err := p.listPending(ctx)
		if err != nil {
			return nil, mapError("list_instances_by_status", err)
		}
		return ids, nil
	}
	rows, err := p.listInstanceRows(ctx, " AND c.status = @s", []azcosmos.QueryParameter{param("@s", status)})
	if err != nil {
		return nil, mapError("list_instances_by_status", err)
	}
	return newestFirst(rows), nil
}

// ListExecutions returns the instance's execution ids in ascending order
// (empty for an unknown instance). Requests: 1 single-partition query.
func (p *Provider) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	ctx = cosmos.WithCall(ctx, "list_executions")
	const op = "list_executions"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	raws, err := p.query(ctx, &instance, "SELECT c.executionId FROM c WHERE c.type = 'execution'", nil, queryOpts{})
	if err != nil {
		return nil, mapError(op, err)
	}
	ids := make([]uint64, 0, len(raws))
	for _, raw := range raws {
		var e struct {
			ExecutionID uint64 `json:"executionId"`
		}
		if json.Unmarshal(raw, &e) == nil {
			ids = append(ids, e.ExecutionID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// ReadHistoryWithExecutionID is ReadWithExecution under the name
// duroxide.ProviderAdmin gives it: it calls ReadWithExecution, and its
// errors and request metrics carry that name (read_with_execution).
func (p *Provider) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return p.ReadWithExecution(ctx, instance, executionID)
}

// ReadHistory is Read under the name duroxide.ProviderAdmin gives it: it
// calls Read, and its errors and request metrics carry that name (read).
func (p *Provider) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return p.Read(ctx, instance)
}

// LatestExecutionID returns the instance's current execution id; an
// instance with no execution is a permanent error. Requests: 1 point read.
func (p *Provider) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	ctx = cosmos.WithCall(ctx, "latest_execution_id")
	const op = "latest_execution_id"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil {
		return 0, err
	}
	if doc == nil || doc.CurrentExecutionID == 0 {
		return 0, permanent(op, fmt.Sprintf("Instance %s not found", instance))
	}
	return doc.CurrentExecutionID, nil
}

// GetInstanceInfo returns the instance's metadata and its current
// execution's status and output; an unknown instance is a permanent error.
// A pending instance (its start stored or locked, no turn committed) is
// duroxide.StatusPending with execution 0, the start's name and version
// and the reason a runtime recorded (PendingReason), from the pending
// document.
// Requests: 1 point read of the instance document, which carries the
// current execution's status and output; 2 (the
// execution document too) when it does not: a terminal output larger than
// 16 KB, an instance last acked before the instance document carried them.
func (p *Provider) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	ctx = cosmos.WithCall(ctx, "get_instance_info")
	info, _, err := p.instanceInfo(ctx, instance, p.currentStatus)
	return info, err
}

// GetInstanceStatus implements duroxide.InstanceStatusReader: GetInstanceInfo's
// answer and the custom status (nil when never set), both from the
// instance document. Requests: 1 point read (2 when the current execution's
// status is not mirrored on the instance document, as GetInstanceInfo).
func (p *Provider) GetInstanceStatus(ctx context.Context, instance string) (duroxide.InstanceInfo, *duroxide.CustomStatus, error) {
	ctx = cosmos.WithCall(ctx, "get_instance_info")
	info, doc, err := p.instanceInfo(ctx, instance, p.currentStatus)
	if err != nil || doc.CustomStatusVersion == 0 {
		return info, nil, err
	}
	return info, &duroxide.CustomStatus{Status: doc.CustomStatus, Version: doc.CustomStatusVersion}, nil
}

var _ duroxide.InstanceStatusReader = (*Provider)(nil)

// instanceInfo builds GetInstanceInfo's answer from the instance document
// (returned too) and the current execution's status and output that status
// returns.
func (p *Provider) instanceInfo(ctx context.Context, instance string, status func(ctx context.Context, op, instance string, doc *instanceDoc) (string, *string, error)) (duroxide.InstanceInfo, *instanceDoc, error) {
	const op = "get_instance_info"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil {
		return duroxide.InstanceInfo{}, nil, err
	}
	if doc.pending() {
		return pendingInfo(doc), doc, nil
	}
	if !doc.exists() {
		return duroxide.InstanceInfo{}, nil, permanent(op, fmt.Sprintf("Instance %s not found", instance))
	}
	info := duroxide.InstanceInfo{
		InstanceID: instance, OrchestrationName: doc.OrchestrationName, OrchestrationVersion: unknownVersion,
		CurrentExecutionID: doc.CurrentExecutionID,
		CreatedAt:          uint64(max(doc.CreatedAt, 0)), UpdatedAt: uint64(max(doc.UpdatedAt, 0)), ParentInstanceID: doc.ParentInstanceID,
	}
	if doc.OrchestrationVersion != nil {
		info.OrchestrationVersion = *doc.OrchestrationVersion
	}
	if info.Status, info.Output, err = status(ctx, op, instance, doc); err != nil {
		return duroxide.InstanceInfo{}, nil, err
	}
	return info, doc, nil
}

// GetExecutionInfo returns one execution's status, output, start and
// completion times and event count; an unknown execution is a permanent
// error. Requests: 1 single-partition query.
func (p *Provider) GetExecutionInfo(ctx context.Context, instance string, executionID uint64) (duroxide.ExecutionInfo, error) {
	ctx = cosmos.WithCall(ctx, "get_execution_info")
	const op = "get_execution_info"
	if err := validateInstanceID(op, instance); err != nil {
		return duroxide.ExecutionInfo{}, err
	}
	raws, err := p.query(ctx, &instance,
		"SELECT c.id, c.type, c.executionId, c.eventId, c.status, c.output, c.startedAt, c.completedAt, c.watermark FROM c WHERE c.executionId = @e AND c.type IN ('history', 'execution')",
		[]azcosmos.QueryParameter{param("@e", executionID)}, queryOpts{})
	if err != nil {
		return duroxide.ExecutionInfo{}, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return duroxide.ExecutionInfo{}, mapError(op, err)
	}
	ex := st.execution(executionID)
	if ex == nil {
		return duroxide.ExecutionInfo{}, permanent(op, fmt.Sprintf("Execution %d not found for instance %s", executionID, instance))
	}
	info := duroxide.ExecutionInfo{
		ExecutionID: executionID, Status: ex.Status, Output: ex.Output, StartedAt: uint64(max(ex.StartedAt, 0)),
		EventCount: uint64(len(visibleHistory(st.history, ex.Watermark))),
	}
	if ex.CompletedAt != nil {
		c := uint64(max(*ex.CompletedAt, 0))
		info.CompletedAt = &c
	}
	return info, nil
}

// GetSystemMetrics counts instances by the status of their current
// execution, executions, and committed history events. Requests: 1
// cross-partition query (per page) projecting a few fields of every
// instance, execution and history document.
func (p *Provider) GetSystemMetrics(ctx context.Context) (duroxide.SystemMetrics, error) {
	ctx = cosmos.WithCall(ctx, "get_system_metrics")
	const op = "get_system_metrics"
	raws, err := p.query(ctx, nil,
		"SELECT c.type, c.instanceId, c.executionId, c.eventId, c.status, c.watermark FROM c WHERE c.type IN ('instance', 'execution', 'history')", nil, queryOpts{})
	if err != nil {
		return duroxide.SystemMetrics{}, mapError(op, err)
	}
	type key struct {
		instance string
		exec     uint64
	}
	watermarks := map[key]uint64{}
	var events []key
	var eventIDs []uint64
	var m duroxide.SystemMetrics
	for _, raw := range raws {
		var r struct {
			Type        string `json:"type"`
			InstanceID  string `json:"instanceId"`
			ExecutionID uint64 `json:"executionId"`
			EventID     uint64 `json:"eventId"`
			Status      string `json:"status"`
			Watermark   uint64 `json:"watermark"`
		}
		if json.Unmarshal(raw, &r) != nil {
			continue
		}
		switch r.Type {
		case typeInstance:
			m.CountInstance(r.Status)
		case typeExecution:
			m.TotalExecutions++
			watermarks[key{r.InstanceID, r.ExecutionID}] = r.Watermark
		case typeHistory:
			events = append(events, key{r.InstanceID, r.ExecutionID})
			eventIDs = append(eventIDs, r.EventID)
		}
	}
	for i, k := range events {
		if eventIDs[i] <= watermarks[k] {
			m.TotalEvents++
		}
	}
	return m, nil
}

// GetQueueDepths counts the messages no live lock holds, per queue:
// orchestrator messages not tagged by an unexpired lock (an instance's new
// messages count while it is locked), and worker messages without an
// unexpired lock. TimerQueue is 0: timers wait in the orchestrator queue.
// Requests: 1 cross-partition query.
func (p *Provider) GetQueueDepths(ctx context.Context) (duroxide.QueueDepths, error) {
	ctx = cosmos.WithCall(ctx, "get_queue_depths")
	const op = "get_queue_depths"
	raws, err := p.query(ctx, nil, "SELECT c.type FROM c WHERE c.type IN ('orch_queue', 'worker_queue') AND c.lockedUntil <= @now",
		[]azcosmos.QueryParameter{param("@now", p.nowMs())}, queryOpts{})
	if err != nil {
		return duroxide.QueueDepths{}, mapError(op, err)
	}
	var d duroxide.QueueDepths
	for _, raw := range raws {
		var h docHeader
		if json.Unmarshal(raw, &h) != nil {
			continue
		}
		if h.Type == typeOrchQueue {
			d.OrchestratorQueue++
		} else {
			d.WorkerQueue++
		}
	}
	return d, nil
}

// ListChildren returns the ids of the instance's direct sub-orchestrations,
// oldest first (empty for a leaf or an unknown instance). Requests: 1
// cross-partition query.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	ctx = cosmos.WithCall(ctx, "list_children")
	rows, err := p.listInstanceRows(ctx, " AND c.parentInstanceId = @p", []azcosmos.QueryParameter{param("@p", instance)})
	if err != nil {
		return nil, mapError("list_children", err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.InstanceID
	}
	return ids, nil
}

// GetParentID returns the instance's parent; ok is false for a root (and
// for a pending instance, which is deleted as one). An unknown instance is
// a permanent error. Requests: 1 point read.
func (p *Provider) GetParentID(ctx context.Context, instance string) (string, bool, error) {
	ctx = cosmos.WithCall(ctx, "get_parent_id")
	const op = "get_parent_id"
	doc, err := p.loadInstance(ctx, op, instance)
	if err == nil && doc.pending() {
		return "", false, nil
	}
	if err == nil && !doc.exists() {
		err = permanent(op, fmt.Sprintf("Instance %s not found", instance))
	}
	if err != nil {
		return "", false, err
	}
	if doc.ParentInstanceID == nil {
		return "", false, nil
	}
	return *doc.ParentInstanceID, true, nil
}

// GetInstanceTree returns the instance and all its descendants (duroxide's
// default implementation, through ListChildren: 1 query per instance).
func (p *Provider) GetInstanceTree(ctx context.Context, instance string) (duroxide.InstanceTree, error) {
	ctx = cosmos.WithCall(ctx, "get_instance_tree")
	return duroxide.GetInstanceTree(ctx, p, instance)
}
