// Admin (duroxide.ProviderAdmin): listings, instance and execution info,
// custom status and instance stats, the mirrored status, WatchStatus,
// pending instances, deletion and pruning.

package cdb

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// Admin reads (duroxide.ProviderAdmin): listing instances and executions,
// history for management, instance and execution info, system metrics, queue
// depths, parent/child tree.

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
	return p.listRows(ctx, "c.type = '"+typeInstance+"'", where, params)
}

// listRows is listInstanceRows over the documents that typeClause
// selects (instance documents, or pending ones too).
func (p *Provider) listRows(ctx context.Context, typeClause, where string, params []azcosmos.QueryParameter) ([]instanceRow, error) {
	raws, err := p.query(ctx, nil, "SELECT c.instanceId, c.createdAt, c.status, c.parentInstanceId, c.completedAt FROM c WHERE "+typeClause+where, params, queryOpts{})
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
// oldest first (empty for a leaf or an unknown instance), pending ones (a
// child's start that no turn has run) included, so that a tree's deletion
// takes them too. Requests: 1 cross-partition query.
func (p *Provider) ListChildren(ctx context.Context, instance string) ([]string, error) {
	ctx = cosmos.WithCall(ctx, "list_children")
	rows, err := p.listRows(ctx, "c.type IN ('"+typeInstance+"', '"+typeInstancePending+"')", " AND c.parentInstanceId = @p", []azcosmos.QueryParameter{param("@p", instance)})
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
// for a pending root). A pending sub-orchestration (its start locked by a
// fetch, no turn run) names its parent, so that it is deleted with its
// root's tree, never alone. An unknown instance is a permanent error.
// Requests: 1 point read, and 1 read at the primary (a batch of one read)
// when the point read finds no instance: a replica behind another
// process's start would otherwise have DeleteInstance refuse an instance
// that exists (DESIGN.md §16).
func (p *Provider) GetParentID(ctx context.Context, instance string) (string, bool, error) {
	ctx = cosmos.WithCall(ctx, "get_parent_id")
	const op = "get_parent_id"
	doc, err := p.loadInstance(ctx, op, instance)
	if err == nil && (doc == nil || !(doc.exists() || doc.pending())) {
		var primary instanceDoc
		etag, found, perr := p.readDocPrimary(ctx, instance, instanceDocID, &primary)
		switch {
		case perr != nil:
			err = mapError(op, perr)
		case found:
			primary.ETag = etag
			doc = &primary
		}
	}
	if err == nil && doc.pending() {
		if doc.ParentInstanceID != nil {
			return *doc.ParentInstanceID, true, nil
		}
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

// Status reads: GetCustomStatus and GetInstanceStats.

// GetCustomStatus returns the instance's custom status and its version when
// the version is greater than lastSeenVersion, and nil when it has not
// changed or the instance does not exist (DESIGN.md §6.7). The
// status comes from the last CustomStatusUpdated event an ack committed.
// Requests: 1 point read.
func (p *Provider) GetCustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	ctx = cosmos.WithCall(ctx, "get_custom_status")
	const op = "get_custom_status"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil {
		return nil, err
	}
	if !doc.exists() || doc.CustomStatusVersion <= lastSeenVersion {
		return nil, nil
	}
	return &duroxide.CustomStatus{Status: doc.CustomStatus, Version: doc.CustomStatusVersion}, nil
}

// GetInstanceStats returns the size of the instance's stored state: its
// current execution's history (event count and JSON bytes), the queue
// messages its OrchestrationStarted carried forward from the previous
// execution (duroxide's queue_pending_count) and its KV values (the delta
// over the store, tombstones excluded); nil for an unknown instance.
// Requests: 2 (a point read of the instance document, one single-partition
// query, more pages of results for megabytes of history or KV).
func (p *Provider) GetInstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	ctx = cosmos.WithCall(ctx, "get_instance_stats")
	const op = "get_instance_stats"
	doc, err := p.loadInstance(ctx, op, instance)
	if err != nil || !doc.exists() {
		return nil, err
	}
	raws, err := p.query(ctx, &instance,
		"SELECT * FROM c WHERE c.type = 'kv' OR (c.type = 'history' AND c.executionId = @e AND c.eventId <= @w)",
		[]azcosmos.QueryParameter{param("@e", doc.CurrentExecutionID), param("@w", doc.HistoryWatermark)}, queryOpts{pageSize: -1})
	if err != nil {
		return nil, mapError(op, err)
	}
	st, err := parseState(raws)
	if err != nil {
		return nil, mapError(op, err)
	}
	stats := &duroxide.SystemStats{}
	for _, h := range st.history {
		stats.HistoryEventCount++
		stats.HistorySizeBytes += uint64(len(h.EventData))
		if h.EventID == duroxide.InitialEventID {
			var ev duroxide.Event
			if json.Unmarshal([]byte(h.EventData), &ev) == nil {
				if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
					stats.QueuePendingCount = uint64(len(s.CarryForwardEvents))
				}
			}
		}
	}
	for _, v := range kvView(st.kv) {
		stats.KVUserKeyCount++
		stats.KVTotalValueBytes += uint64(len(v))
	}
	return stats, nil
}

// Status mirror: reading the current execution's status, from the
// instance document when it mirrors it (statuswatch.Mirror decides what an
// ack mirrors) or from the execution document.

// currentStatus returns the status and output of doc's current execution.
// They come from doc itself when it mirrors that execution, or when it
// mirrors none and says Running (an instance document written before
// mirroring existed: its Status was written by the batch that wrote the
// execution's status, and a running execution has no output); otherwise
// from the execution document. Requests: 0, or 1 point read.
func (p *Provider) currentStatus(ctx context.Context, op, instance string, doc *instanceDoc) (string, *string, error) {
	switch {
	case doc.StatusExecutionID != 0 && doc.StatusExecutionID == doc.CurrentExecutionID:
		return doc.Status, doc.Output, nil
	case doc.StatusExecutionID == 0 && doc.Status == duroxide.StatusRunning:
		return duroxide.StatusRunning, nil, nil
	}
	return p.readExecutionStatus(ctx, op, instance, doc)
}

// readExecutionStatus returns the status and output of doc's current
// execution from its execution document, "Unknown" and nil when that
// document does not exist. Requests: 1 point read.
func (p *Provider) readExecutionStatus(ctx context.Context, op, instance string, doc *instanceDoc) (string, *string, error) {
	var ex executionDoc
	_, found, err := p.readDoc(ctx, instance, executionDocID(doc.CurrentExecutionID), &ex)
	if err != nil {
		return "", nil, mapError(op, err)
	}
	if !found {
		return "Unknown", nil, nil
	}
	return ex.Status, ex.Output, nil
}

// Status watches: clients in this process waiting for an instance's status
// wake on this process's acks instead of polling (package
// internal/statuswatch holds the watches).

// WatchStatus implements duroxide.StatusWatcher: the channel closes when
// this Provider acks a turn of instance that completes, fails or continues
// it as new, or updates its custom status, or deletes it; with
// the change-feed reader also when the change feed shows another
// process's such change (see WatchesAllProcesses). Without the change feed,
// changes made by other processes do not close it; the runtime's client
// keeps a capped backoff poll for them. Memory: one small entry per watched
// instance, released by stop or by the change.
func (p *Provider) WatchStatus(instance string) (changed <-chan struct{}, stop func()) {
	return p.statusWatches.Watch(instance)
}

// WatchesAllProcesses implements duroxide.AllProcessesStatusWatcher: true
// while the change-feed reader (Config.DisableChangeFeedWakeups) runs, whose
// copies of instance documents close the watches of other processes'
// status changes too.
func (p *Provider) WatchesAllProcesses() bool { return p.feed != nil }

var _ duroxide.AllProcessesStatusWatcher = (*Provider)(nil)

// Pending instances (duroxide.StatusPending): a start that is stored and
// has not run, visible through its pending instance document, with the
// reason a runtime recorded when it abandoned the start.

// The pending instance document (type instance_pending, id "instance") is
// the one a client's start creates with its message (EnqueueStart, for its
// existence check) and a fetch creates, locked, for an instance that has
// none. While no turn has committed (no execution) the instance is
// pending: GetInstanceInfo reports it as duroxide.StatusPending with the
// document's name, version, times and PendingReason,
// ListInstancesByStatus(ctx, duroxide.StatusPending) lists it, and
// DeleteInstancesAtomic purges it with everything in its partition. A
// runtime that abandons the start records why through
// AbandonOrchestrationItemWithReason, in the abandon's own patch of the
// document; the first ack that creates the instance clears it.

// AbandonOrchestrationItemWithReason implements
// duroxide.PendingReasonRecorder: AbandonOrchestrationItem, with its
// errors and its requests (1 transactional batch), whose patch of the
// instance document also sets the pending reason to reason while the
// instance is pending. For an instance that is not pending the reason is
// ignored (when this process holds the lock it knows; a lock another
// process took is released with the reason written, which the ack that
// creates the instance clears).
func (p *Provider) AbandonOrchestrationItemWithReason(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	return p.abandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt, reason)
}

var _ duroxide.PendingReasonRecorder = (*Provider)(nil)

// pendingInfo is GetInstanceInfo's answer for a pending document.
func pendingInfo(doc *instanceDoc) duroxide.InstanceInfo {
	info := duroxide.InstanceInfo{
		InstanceID: doc.InstanceID, OrchestrationName: doc.OrchestrationName, OrchestrationVersion: unknownVersion,
		Status: duroxide.StatusPending, CreatedAt: uint64(max(doc.CreatedAt, 0)), UpdatedAt: uint64(max(doc.UpdatedAt, 0)),
		ParentInstanceID: doc.ParentInstanceID, PendingReason: doc.PendingReason,
	}
	if doc.OrchestrationVersion != nil {
		info.OrchestrationVersion = *doc.OrchestrationVersion
	}
	return info
}

// listPending returns the ids of the pending instances, newest first.
// Requests: 1 cross-partition query (per page).
func (p *Provider) listPending(ctx context.Context) ([]string, error) {
	// The filter on the execution is applied here: /currentExecutionId
	// is not indexed (the indexing policy, provider.go).
	raws, err := p.query(ctx, nil, "SELECT c.instanceId, c.createdAt, c.currentExecutionId FROM c WHERE c.type = 'instance_pending'", nil, queryOpts{})
	if err != nil {
		return nil, err
	}
	rows := make([]instanceRow, 0, len(raws))
	for _, raw := range raws {
		var r struct {
			instanceRow
			CurrentExecutionID uint64 `json:"currentExecutionId"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode pending instance row: %w", err)
		}
		if r.CurrentExecutionID == 0 {
			rows = append(rows, r.instanceRow)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].CreatedAt != rows[j].CreatedAt {
			return rows[i].CreatedAt < rows[j].CreatedAt
		}
		return rows[i].InstanceID < rows[j].InstanceID
	})
	return newestFirst(rows), nil
}

// Deletion (duroxide.ProviderAdmin): DeleteInstance, DeleteInstancesAtomic,
// DeleteInstanceBulk, PruneExecutions, PruneExecutionsBulk, and the deletion
// fence.

// defaultBulkLimit is how many instances a bulk operation processes when
// its filter sets no limit.
const defaultBulkLimit = 1000

// partitionRow is the projection deletion and pruning read of every
// document of an instance.
type partitionRow struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	ExecutionID uint64 `json:"executionId"`
	EventID     uint64 `json:"eventId"`
	Status      string `json:"status"`
	CompletedAt *int64 `json:"completedAt"`
	Watermark   uint64 `json:"watermark"`
}

// listPartition returns a projection of every document of an instance.
func (p *Provider) listPartition(ctx context.Context, instance, where string, params []azcosmos.QueryParameter) ([]partitionRow, error) {
	raws, err := p.query(ctx, &instance, "SELECT c.id, c.type, c.executionId, c.eventId, c.status, c.completedAt, c.watermark FROM c"+where, params, queryOpts{})
	if err != nil {
		return nil, err
	}
	rows := make([]partitionRow, 0, len(raws))
	for _, raw := range raws {
		var r partitionRow
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode document: %w", err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// deleteIDs deletes documents of one partition in transactional batches of
// up to 100; a batch that fails because a document is already gone is
// redone one document at a time, ignoring 404s.
func (p *Provider) deleteIDs(ctx context.Context, instance string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), maxBatchOps)
		ops := make([]batchOp, n)
		for i, id := range ids[:n] {
			ops[i] = deleteOp(id, "")
		}
		_, err := p.runBatch(ctx, instance, ops, idempotentWrite, false)
		if bf, ok := asBatchFailure(err); ok && bf.Status == http.StatusNotFound {
			for _, id := range ids[:n] {
				if err := p.deleteDoc(ctx, instance, id, ""); err != nil && !cosmos.IsStatus(err, http.StatusNotFound) {
					return err
				}
			}
		} else if err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// DeleteInstancesAtomic deletes the given instances with all their
// documents (history, executions, queue messages, sessions, KV, intents);
// a pending instance (duroxide.StatusPending) is purged the same way, its
// queued start and every other message for it included, and counted in
// InstancesDeleted.
// Without force a Running instance fails the call, and an instance whose
// child is not in ids fails it too (orphan check); both are checked before
// anything is written, so a refused call deletes nothing. Cosmos DB has no
// transaction across partitions, so the deletion runs in three steps:
//
//  1. every instance document is fenced: locked for the deletion, with
//     If-Match on the ETag the checks read (an instance changed since is
//     read and checked again). From then on no fetch takes the instance and
//     no ack or renewal of an earlier lock commits, so nothing new appears
//     in its partition;
//  2. each partition is listed and its other documents deleted in batches;
//  3. the instance documents are deleted (If-Match on the fence), and the
//     instances disappear together.
//
// A failure midway (the call returns an error) leaves every instance whose
// document was not deleted listed and fenced, never invisible leftovers
// that a new instance with the same id would inherit: deleting it again
// completes the job. Requests: 1 point read, 1 patch, 1 query and 1 delete
// per instance, 1 cross-partition query for children, then the batches of
// deletes.
func (p *Provider) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (duroxide.DeleteInstanceResult, error) {
	ctx = cosmos.WithCall(ctx, "delete_instances_atomic")
	const op = "delete_instances_atomic"
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	var res duroxide.DeleteInstanceResult
	if len(ids) == 0 {
		return res, nil
	}
	in := map[string]bool{}
	for _, id := range ids {
		if err := validateInstanceID(op, id); err != nil {
			return res, err
		}
		in[id] = true
	}
	exists := map[string]bool{}
	etags := map[string]string{}
	for _, id := range ids {
		// At the primary: a replica behind another process's writes would
		// have this deletion find nothing to fence and sweep too little
		// (and the primary's answer brings this process's session up to
		// it, so the sweep's query that follows sees as much).
		var doc instanceDoc
		etag, found, err := p.readDocPrimary(ctx, id, instanceDocID, &doc)
		if err != nil {
			return res, mapError(op, err)
		}
		exists[id] = found && (doc.exists() || doc.pending())
		if exists[id] && !force && doc.Status == duroxide.StatusRunning && !doc.fencedForDeletion() {
			return res, permanent(op, fmt.Sprintf("Instance %s is still running. Use force=true to delete anyway, or cancel first.", id))
		}
		etags[id] = etag
	}
	for start := 0; start < len(ids); start += 50 {
		chunk := ids[start:min(start+50, len(ids))]
		names := make([]string, len(chunk))
		params := make([]azcosmos.QueryParameter, len(chunk))
		for i, id := range chunk {
			names[i] = "@p" + strconv.Itoa(i)
			params[i] = param(names[i], id)
		}
		rows, err := p.listInstanceRows(ctx, " AND c.parentInstanceId IN ("+strings.Join(names, ",")+")", params)
		if err != nil {
			return res, mapError(op, err)
		}
		for _, r := range rows {
			if !in[r.InstanceID] {
				return res, permanent(op, fmt.Sprintf("Cannot delete: instance %s has child %s that was created after tree traversal. Re-fetch the tree and retry.", *r.ParentInstanceID, r.InstanceID))
			}
		}
	}
	fences := map[string]string{}
	for _, id := range ids {
		fence, err := p.fenceForDeletion(ctx, op, id, etags[id], force)
		if err != nil {
			for fenced, e := range fences {
				if e != "" {
					p.releaseDeletionFence(fenced)
				}
			}
			return res, err
		}
		fences[id] = fence
	}
	for _, id := range ids {
		if err := p.sweepPartition(ctx, id, fences[id] != "", &res); err != nil {
			return res, mapError(op, err)
		}
	}
	for _, id := range ids {
		for attempt := 0; fences[id] != ""; attempt++ {
			err := p.deleteDoc(ctx, id, instanceDocID, fences[id])
			if err == nil || cosmos.IsStatus(err, http.StatusNotFound) {
				break
			}
			if !cosmos.IsStatus(err, http.StatusPreconditionFailed) || attempt == 9 {
				return res, mapError(op, err)
			}
			// Written since the fence (an AppendWithExecution): fence
			// and sweep again.
			if fences[id], err = p.fenceForDeletion(ctx, op, id, "?", true); err != nil {
				return res, err
			}
			if err := p.sweepPartition(ctx, id, fences[id] != "", &res); err != nil {
				return res, mapError(op, err)
			}
		}
		if exists[id] {
			res.InstancesDeleted++
		}
		p.locks.DropInstance(id)
		p.statusWatches.Changed(id)
		p.orchPool.ForgetInstance(id)
		p.workPool.ForgetInstance(id)
	}
	return res, nil
}

// deletionLock is the lock token of an instance document fenced for its
// deletion; it never matches a lock id (32 hex digits), so no ack, renewal
// or abandon of an earlier lock commits, and its expiry (the largest
// integer a JSON number holds exactly) keeps every fetch away.
const (
	deletionLock        = "deleting"
	deletionLockedUntil = 1<<53 - 1
)

// fencedForDeletion reports whether a deletion fenced the document.
func (d *instanceDoc) fencedForDeletion() bool {
	return d.LockToken != nil && *d.LockToken == deletionLock
}

// fenceForDeletion locks instance's document for its deletion, with If-Match
// on etag ("" when the checks found no document: nothing to fence; "?" to
// read it first), and returns the fenced document's ETag, or "" when there
// is no document. A document changed since etag is read and checked again:
// without force, a Running instance is refused.
func (p *Provider) fenceForDeletion(ctx context.Context, op, instance, etag string, force bool) (string, error) {
	var po azcosmos.PatchOperations
	po.AppendSet("/lockToken", deletionLock)
	po.AppendSet("/lockedUntil", deletionLockedUntil)
	for attempt := 0; ; attempt++ {
		if etag == "" {
			return "", nil
		}
		if etag != "?" {
			results, err := p.runBatch(ctx, instance, []batchOp{patchOp(instanceDocID, po, etag)}, write, false)
			if err == nil {
				return string(results[0].ETag), nil
			}
			_, refused := asBatchFailure(err)
			if (!refused && !cosmos.IsAmbiguous(err)) || attempt == 9 {
				return "", mapError(op, err)
			}
		}
		// Changed since it was read, gone, or the answer was lost: read
		// it again.
		var doc instanceDoc
		e, found, err := p.readDocPrimary(ctx, instance, instanceDocID, &doc)
		switch {
		case err != nil:
			return "", mapError(op, err)
		case !found:
			return "", nil
		case doc.fencedForDeletion():
			return e, nil
		case doc.exists() && !force && doc.Status == duroxide.StatusRunning:
			return "", permanent(op, fmt.Sprintf("Instance %s is still running. Use force=true to delete anyway, or cancel first.", instance))
		}
		etag = e
	}
}

// releaseDeletionFence lifts the fence of a deletion that was refused after
// it fenced instance, so that the instance works again. Best effort, with
// its own deadline: a fence left behind is completed by deleting the
// instance again.
func (p *Provider) releaseDeletionFence(instance string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var po azcosmos.PatchOperations
	po.SetCondition("FROM c WHERE c.lockToken = '" + deletionLock + "'")
	po.AppendSet("/lockToken", jsonNull)
	po.AppendSet("/lockedUntil", 0)
	_, _ = p.patchDoc(ctx, instance, instanceDocID, po, idempotentWrite)
}

// sweepPartition deletes the documents of instance's partition, counting
// them into res, but its instance document when keepInstance (a fenced one,
// which the deletion removes last).
func (p *Provider) sweepPartition(ctx context.Context, instance string, keepInstance bool, res *duroxide.DeleteInstanceResult) error {
	rows, err := p.listPartition(ctx, instance, "", nil)
	if err != nil {
		return err
	}
	watermarks := map[uint64]uint64{}
	for _, r := range rows {
		if r.Type == typeExecution {
			watermarks[r.ExecutionID] = r.Watermark
		}
	}
	var rest []string
	for _, r := range rows {
		switch r.Type {
		case typeInstance, typeInstancePending:
			if keepInstance && r.ID == instanceDocID {
				continue
			}
		case typeExecution:
			res.ExecutionsDeleted++
		case typeHistory:
			if r.EventID <= watermarks[r.ExecutionID] {
				res.EventsDeleted++
			}
		case typeOrchQueue, typeWorkerQueue:
			res.QueueMessagesDeleted++
		}
		rest = append(rest, r.ID)
	}
	return p.deleteIDs(ctx, instance, rest)
}

// DeleteInstance deletes a root instance and its descendants; a
// sub-orchestration cannot be deleted on its own (duroxide's default
// implementation).
func (p *Provider) DeleteInstance(ctx context.Context, instance string, force bool) (duroxide.DeleteInstanceResult, error) {
	ctx = cosmos.WithCall(ctx, "delete_instance")
	return duroxide.DeleteInstance(ctx, p, instance, force)
}

// selectInstances applies an InstanceFilter to the instance documents,
// oldest first: InstanceIDs (an empty, non-nil list selects nothing),
// CompletedBefore (the current execution completed before that time) and
// Limit (default 1000), after keep.
func (p *Provider) selectInstances(ctx context.Context, filter duroxide.InstanceFilter, keep func(instanceRow) bool) ([]string, error) {
	if filter.InstanceIDs != nil && len(filter.InstanceIDs) == 0 {
		return nil, nil
	}
	rows, err := p.listInstanceRows(ctx, "", nil)
	if err != nil {
		return nil, err
	}
	limit := uint32(defaultBulkLimit)
	if filter.Limit != nil {
		limit = *filter.Limit
	}
	var out []string
	for _, r := range rows {
		if uint32(len(out)) >= limit {
			break
		}
		if filter.InstanceIDs != nil && !slices.Contains(filter.InstanceIDs, r.InstanceID) {
			continue
		}
		if filter.CompletedBefore != nil && (r.CompletedAt == nil || uint64(max(*r.CompletedAt, 0)) >= *filter.CompletedBefore) {
			continue
		}
		if keep(r) {
			out = append(out, r.InstanceID)
		}
	}
	return out, nil
}

// DeleteInstanceBulk deletes the terminal root instances matching filter,
// each with its descendants (force, as the roots are terminal); Running
// instances and sub-orchestrations are skipped.
func (p *Provider) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (duroxide.DeleteInstanceResult, error) {
	ctx = cosmos.WithCall(ctx, "delete_instance_bulk")
	const op = "delete_instance_bulk"
	roots, err := p.selectInstances(ctx, filter, func(r instanceRow) bool {
		return r.ParentInstanceID == nil && isTerminalStatus(&r.Status)
	})
	if err != nil {
		return duroxide.DeleteInstanceResult{}, mapError(op, err)
	}
	return duroxide.DeleteTrees(ctx, p, roots)
}

// PruneExecutions deletes old executions of one instance with their
// history: never the current execution, never a Running one, never the KV
// store; KeepLast keeps the newest N executions and CompletedBefore only
// prunes executions completed before that time. An unknown instance is a
// permanent error. Requests: 1 read at the primary (a batch of one read),
// 1 query, then the deletes.
func (p *Provider) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	ctx = cosmos.WithCall(ctx, "prune_executions")
	const op = "prune_executions"
	doc, err := p.requireInstance(ctx, op, instance)
	if err != nil {
		return duroxide.PruneResult{}, err
	}
	rows, err := p.listPartition(ctx, instance, " WHERE c.type IN ('execution', 'history')", nil)
	if err != nil {
		return duroxide.PruneResult{}, mapError(op, err)
	}
	var execs []partitionRow
	byExec := map[uint64][]partitionRow{}
	for _, r := range rows {
		if r.Type == typeExecution {
			execs = append(execs, r)
		} else {
			byExec[r.ExecutionID] = append(byExec[r.ExecutionID], r)
		}
	}
	sort.Slice(execs, func(i, j int) bool { return execs[i].ExecutionID > execs[j].ExecutionID })
	res := duroxide.PruneResult{InstancesProcessed: 1}
	for rank, ex := range execs {
		switch {
		case ex.ExecutionID == doc.CurrentExecutionID, ex.Status == duroxide.StatusRunning:
			continue
		case options.KeepLast != nil && uint32(rank) < *options.KeepLast:
			continue
		case options.CompletedBefore != nil && (ex.CompletedAt == nil || uint64(max(*ex.CompletedAt, 0)) >= *options.CompletedBefore):
			continue
		}
		ids := []string{ex.ID}
		for _, h := range byExec[ex.ExecutionID] {
			if h.EventID <= ex.Watermark {
				res.EventsDeleted++
			}
			ids = append(ids, h.ID)
		}
		if err := p.deleteIDs(ctx, instance, ids); err != nil {
			return res, mapError(op, err)
		}
		res.ExecutionsDeleted++
	}
	return res, nil
}

// PruneExecutionsBulk applies PruneExecutions to every instance matching
// filter (oldest first, at most Limit, default 1000).
func (p *Provider) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (duroxide.PruneResult, error) {
	ctx = cosmos.WithCall(ctx, "prune_executions_bulk")
	ids, err := p.selectInstances(ctx, filter, func(instanceRow) bool { return true })
	if err != nil {
		return duroxide.PruneResult{}, mapError("prune_executions_bulk", err)
	}
	return duroxide.PruneEach(ctx, p, ids, options)
}

// The paged instance listing (duroxide.InstancePager): one cross-partition
// query over the instance documents, resumed from the service's
// continuation, so that a page costs about one request however many
// instances there are.

var _ duroxide.InstancePager = (*Provider)(nil)

// instancePageTokenPrefix starts every continuation ListInstancesPage
// returns.
const instancePageTokenPrefix = "cdb1."

// instancePageToken is a ListInstancesPage continuation before its
// encoding: the query's filters, which the next page must repeat, and the
// service's continuation.
type instancePageToken struct {
	Status  string `json:"s,omitempty"`
	Name    string `json:"n,omitempty"`
	Prefix  string `json:"p,omitempty"`
	After   uint64 `json:"a,omitempty"`
	Before  uint64 `json:"b,omitempty"`
	Service string `json:"t,omitempty"`
	// An ordered walk's (instanceOrder): the order, the last instance of
	// the page before (its creation time and id) and the width of the
	// time window that found it, in ms.
	Order  duroxide.InstanceOrder `json:"o,omitempty"`
	LastAt uint64                 `json:"la,omitempty"`
	LastID string                 `json:"li,omitempty"`
	Width  int64                  `json:"w,omitempty"`
	// Probed: the page before was sorted from a probe that held every
	// instance after its position, so this one probes again.
	Probed bool `json:"pr,omitempty"`
}

// ListInstancesPage implements duroxide.InstancePager: one cross-partition
// query over the instance documents (type instance, and instance_pending
// for the Pending instances) with every filter in its WHERE clause: the
// status, the name (CONTAINS ignoring case; /orchestrationName is not
// indexed, so the service tests it on the documents the indexed filters
// select, which costs request units, not requests), the id prefix
// (STARTSWITH) and the creation bounds. It asks the service for the rest
// of the page until the page is full or the query is done.
//
// Order: for duroxide.OrderStore (the zero value) the service's order for
// a cross-partition query without ORDER BY (DESIGN.md §10: none is sent
// across partitions): partition key range after partition key range, and
// within one in the order the service keeps documents; neither newest
// first nor by id. A Pending instance keeps its place when its first turn
// creates it (the same document, replaced). OrderNewestFirst and
// OrderOldestFirst are sorted on the client: 1 request while the matching
// instances after the walk's position fit in one response (about 1,000,
// and the first page's StatusCounts come with it), else a few windows of
// creation time, each read in one response but the last (up to 12
// requests for a burst of instances followed by a quiet period; 2 a page
// once a walk has found its width).
//
// The continuation is "cdb1." and, in unpadded URL-safe base64, the
// query's filters with the service's continuation: one that does not
// decode, or that was returned for other filters, is a permanent
// *duroxide.ProviderError without a request; one the service refuses is
// its permanent 400. A page size outside 0..1000 is a permanent error.
//
// Requests: 1 cross-partition query request per page, more when the
// service returns a short page (each physical partition the query moves to
// may take one); 1 point read more per listed instance whose document does
// not carry its current execution's status (an instance last acked before
// the instance document carried it), as GetInstanceInfo.
func (p *Provider) ListInstancesPage(ctx context.Context, q duroxide.InstancePageQuery) (duroxide.InstancePage, error) {
	const op = "list_instances_page"
	ctx = cosmos.WithCall(ctx, op)
	size, err := q.PageSizeOf(op)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	filters := instancePageToken{Status: q.Status, Name: q.NameContains, Prefix: q.IDPrefix, After: q.CreatedAfter, Before: q.CreatedBefore, Order: q.Order}
	tok, err := decodeInstancePageToken(op, q.Continuation, filters)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	if q.Order != duroxide.OrderStore {
		return p.orderedInstancePage(ctx, op, q, size, tok)
	}
	cont := tok.Service
	text, params := instancePageQuery(q, "")
	var page duroxide.InstancePage
	for first := true; first || (cont != "" && len(page.Instances) < size); first = false {
		raws, next, err := p.queryPage(ctx, text, params, cont, int32(size-len(page.Instances)))
		if err != nil {
			return duroxide.InstancePage{}, mapError(op, err)
		}
		for _, raw := range raws {
			var doc instanceDoc
			if err := json.Unmarshal(raw, &doc); err != nil {
				return duroxide.InstancePage{}, mapError(op, fmt.Errorf("decode instance row: %w", err))
			}
			s, ok, err := p.instanceSummary(ctx, op, &doc)
			if err != nil {
				return duroxide.InstancePage{}, err
			}
			if ok {
				page.Instances = append(page.Instances, s)
			}
		}
		cont = next
	}
	if cont != "" {
		filters.Service = cont
		page.Continuation = encodeInstancePageToken(filters)
	}
	return page, nil
}

// Ordered walks (InstancePageQuery.Order newest or oldest first). The
// gateway serves no ORDER BY across partitions (DESIGN.md §10), so the
// provider orders on the client and bounds what it reads by creation time:
//
//  1. The probe: the query with every filter but the status, and the walk's
//     position (after the last instance of the page before), in one
//     response of up to orderedProbeSize documents. When that is all of
//     them, the page is sorted from it (and on the first page the
//     per-status counts come with it): 1 request.
//  2. Otherwise windows of creation time from the walk's position on (the
//     newest first: from now back; the oldest first: from the position,
//     or on the first page from below the oldest instance the probe saw),
//     each read with every filter. A window that leaves the page short is
//     followed by the next one, as much wider (two to eight times) as its
//     density says the rest of the page needs; a window that holds more
//     than one response (orderedWindowPageSize) is dropped for the part
//     nearest the position that should hold a page at that density, so
//     that no window is read past its first response but the last one. The probe's instances bound the
//     search: the page's last instance is no further than the
//     page-size-th of them. The next page's continuation carries the
//     width that filled this page, and skips the probe.
//
// Requests: 1 while the instances after the walk's position fit in a
// response; else 1 (the probe, first page only) + 1 per window read: 4 for
// the first page and 2 for the next ones among 3,003 instances created at
// an even rate (TestOrderedInstancePageOfManyCostsAFewRequests); up to
// orderedMaxWindows when they came in a burst followed by a quiet period
// (10 to 16 for 10,000 instances created within 13 s, 10 s before the
// view: BenchmarkInstanceListPageOf10000 in package dashboard), each
// window reading at most a response of orderedWindowPageSize documents
// but the last.

// Bounds of an ordered walk's reads.
const (
	orderedProbeSize      = 1000
	orderedWindowPageSize = 1000
	orderedFirstWindow    = int64(time.Minute / time.Millisecond)
	orderedWidening       = 8
	orderedMaxWindows     = 12
)

// orderedInstancePage is ListInstancesPage for q.Order newest or oldest
// first, from tok (the zero token on the first page).
func (p *Provider) orderedInstancePage(ctx context.Context, op string, q duroxide.InstancePageQuery, size int, tok instancePageToken) (duroxide.InstancePage, error) {
	newest := q.Order == duroxide.OrderNewestFirst
	hasPos := tok.Width != 0 // not the first page: the walk has a position
	var params []azcosmos.QueryParameter
	position := ""
	if hasPos {
		cmp := "<"
		if !newest {
			cmp = ">"
		}
		position = "(c.createdAt " + cmp + " @lastAt OR (c.createdAt = @lastAt AND c.instanceId " + cmp + " @lastId))"
		params = append(params, param("@lastAt", tok.LastAt), param("@lastId", tok.LastID))
	}
	read := func(q duroxide.InstancePageQuery, extra string, extraParams []azcosmos.QueryParameter, o queryOpts) ([]duroxide.InstanceSummary, string, error) {
		text, qp := instancePageQuery(q, extra)
		qp = append(qp, extraParams...)
		var raws [][]byte
		var next string
		var err error
		if o.maxPages == 1 {
			raws, next, err = p.queryPage(ctx, text, qp, "", o.pageSize)
		} else {
			raws, err = p.query(ctx, nil, text, qp, o)
		}
		if err != nil {
			return nil, "", mapError(op, err)
		}
		out := make([]duroxide.InstanceSummary, 0, len(raws))
		for _, raw := range raws {
			var doc instanceDoc
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, "", mapError(op, fmt.Errorf("decode instance row: %w", err))
			}
			s, ok, err := p.instanceSummary(ctx, op, &doc)
			if err != nil {
				return nil, "", err
			}
			if ok {
				out = append(out, s)
			}
		}
		return out, next, nil
	}
	var page duroxide.InstancePage
	var rows []duroxide.InstanceSummary // every instance after the position, when known
	var bound *uint64                   // the page's last instance's creation time is no further
	start := int64(q.CreatedAfter)      // where a first page's windows start, the oldest first
	width := tok.Width
	probed := false
	if !hasPos || tok.Probed {
		noStatus := q
		noStatus.Status = ""
		probe, next, err := read(noStatus, position, params, queryOpts{maxPages: 1, pageSize: orderedProbeSize})
		if err != nil {
			return duroxide.InstancePage{}, err
		}
		var matching []duroxide.InstanceSummary
		for _, s := range probe {
			if q.Matches(s) {
				matching = append(matching, s)
			}
		}
		slices.SortFunc(matching, q.Order.Compare)
		switch {
		case next == "":
			rows, probed = matching, true
			if !hasPos {
				page.StatusCounts = map[string]int{}
				for _, s := range probe {
					page.StatusCounts[s.Status]++
				}
			}
		case len(matching) >= size:
			bound = &matching[size-1].CreatedAt
		}
		if !newest && len(probe) > 0 {
			// Below the oldest instance the probe saw: the first window
			// is open downwards, so it holds any older one too.
			oldest := probe[0].CreatedAt
			for _, s := range probe {
				oldest = min(oldest, s.CreatedAt)
			}
			start = max(start, int64(oldest)-orderedFirstWindow)
		}
		width = max(width, orderedFirstWindow)
	}
	more := false // the page may be followed by more though it holds no extra row
	if !probed {
		var err error
		if rows, width, more, err = p.orderedWindows(q, size, hasPos, tok.LastAt, newest, position, params, width, bound, start, read); err != nil {
			return duroxide.InstancePage{}, err
		}
	}
	if len(rows) > size || more {
		rows = rows[:min(len(rows), size)]
		last := rows[len(rows)-1]
		tok.Status, tok.Name, tok.Prefix, tok.After, tok.Before, tok.Order = q.Status, q.NameContains, q.IDPrefix, q.CreatedAfter, q.CreatedBefore, q.Order
		tok.LastAt, tok.LastID, tok.Width, tok.Probed = last.CreatedAt, last.InstanceID, max(width, 1), probed
		page.Continuation = encodeInstancePageToken(tok)
	}
	page.Instances = rows
	return page, nil
}

// orderedWindows reads windows of creation time from the walk's position
// until more than size instances are found or the windows reach the end or
// bound, and returns them sorted, the window width for the next page, and
// whether more may follow though no extra instance was read (the last
// window stopped at bound). start is where the first window of a first
// page begins when the oldest come first (below the probe's oldest).
func (p *Provider) orderedWindows(q duroxide.InstancePageQuery, size int, hasPos bool, lastAt uint64, newest bool, position string,
	params []azcosmos.QueryParameter, width int64, bound *uint64, start int64,
	read func(duroxide.InstancePageQuery, string, []azcosmos.QueryParameter, queryOpts) ([]duroxide.InstanceSummary, string, error),
) (rows []duroxide.InstanceSummary, nextWidth int64, more bool, err error) {
	now := p.nowMs()
	// edge is where the next window starts: windows go down from it (the
	// newest first) or up from it (the oldest first). open says the first
	// window has no bound on the edge's side (the walk's position, or the
	// newest or oldest end, bounds it).
	edge, open := int64(lastAt), true
	if !hasPos {
		edge = now + 1
		if !newest {
			edge = start
		}
	}
	width = max(width, 1)
	for i := 0; ; i++ {
		var cond []string
		var wp []azcosmos.QueryParameter
		if position != "" {
			cond = append(cond, position)
		}
		final := i == orderedMaxWindows-1 // read it whole, unbounded beyond
		cut := false                      // the window stops at the bound
		atEnd := false                    // the window reaches the end of the range
		var far int64
		if newest {
			far = edge - width
			if bound != nil && far <= int64(*bound) {
				far, cut = int64(*bound), true
			}
			if !cut && far <= int64(q.CreatedAfter) {
				atEnd = true
			}
			if !open {
				cond = append(cond, "c.createdAt < @hi")
				wp = append(wp, param("@hi", edge))
			}
			if !atEnd && !(final && !cut) {
				cond = append(cond, "c.createdAt >= @lo")
				wp = append(wp, param("@lo", far))
			}
		} else {
			far = edge + width
			if bound != nil && far > int64(*bound) {
				far, cut = int64(*bound)+1, true
			}
			if !cut && far > now+1 {
				atEnd = true
			}
			if !open {
				cond = append(cond, "c.createdAt >= @lo")
				wp = append(wp, param("@lo", edge))
			}
			if !atEnd && !(final && !cut) {
				cond = append(cond, "c.createdAt < @hi")
				wp = append(wp, param("@hi", far))
			}
		}
		last := final || cut || atEnd
		o := queryOpts{maxPages: 1, pageSize: orderedWindowPageSize}
		if final || width <= 1 {
			o = queryOpts{pageSize: orderedWindowPageSize} // read whole: the last try, or a window that cannot narrow
		}
		got, next, err := read(q, strings.Join(cond, " AND "), append(slices.Clone(params), wp...), o)
		if err != nil {
			return nil, 0, false, err
		}
		if next != "" && o.maxPages == 1 {
			// More than a response in this window: at least
			// orderedWindowPageSize instances in width, so a page's worth
			// (with a margin) is in the nearest part of it. The response's
			// instances bound the search as the probe's do: the rest of
			// the page is no further than the one of them it would end on.
			width = max(int64(float64(width)*1.5*float64(size)/orderedWindowPageSize), 1)
			if need := size - len(rows); need > 0 && len(got) >= need {
				slices.SortFunc(got, q.Order.Compare)
				if at := got[need-1].CreatedAt; bound == nil || (newest && at > *bound) || (!newest && at < *bound) {
					bound = &at
				}
			}
			continue
		}
		rows = append(rows, got...)
		if len(rows) > size || last {
			more = cut && len(rows) >= size
			break
		}
		// The next window: as wide as this one's density says the rest of
		// the page needs (with a margin), two to eight times this one.
		factor := float64(orderedWidening)
		if len(got) > 0 {
			factor = min(max(1.3*float64(size+1-len(rows))/float64(len(got)), 2), orderedWidening)
		}
		edge, open = far, false
		width = int64(float64(width) * factor)
	}
	slices.SortFunc(rows, q.Order.Compare)
	if len(rows) >= size {
		// The next page's window: about twice the span of this page.
		span := int64(rows[0].CreatedAt) - int64(rows[size-1].CreatedAt)
		width = max(2*max(span, -span), 1000)
	}
	return rows, width, more, nil
}

// encodeInstancePageToken returns t as a continuation.
func encodeInstancePageToken(t instancePageToken) string {
	b, _ := json.Marshal(t) // strings and numbers only: cannot fail
	return instancePageTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// instancePageQuery returns ListInstancesPage's query text and parameters;
// extra, when not "", is ANDed to the filters (its parameters are the
// caller's).
func instancePageQuery(q duroxide.InstancePageQuery, extra string) (string, []azcosmos.QueryParameter) {
	var b strings.Builder
	var params []azcosmos.QueryParameter
	b.WriteString("SELECT c.instanceId, c.type, c.orchestrationName, c.orchestrationVersion, c.currentExecutionId, c.status, " +
		"c.statusExecutionId, c.createdAt, c.updatedAt, c.parentInstanceId, c.pendingReason, c.completedAt, " +
		"LEFT(c.output, " + strconv.Itoa(summaryTextRead) + ") AS output, LEFT(c.customStatus, " + strconv.Itoa(summaryTextRead) + ") AS customStatus FROM c WHERE ")
	switch q.Status {
	case "":
		b.WriteString("c.type IN ('instance', 'instance_pending')")
	case duroxide.StatusPending:
		b.WriteString("c.type = 'instance_pending'")
	default:
		b.WriteString("c.type = 'instance' AND c.status = @status")
		params = append(params, param("@status", q.Status))
	}
	if q.IDPrefix != "" {
		b.WriteString(" AND STARTSWITH(c.instanceId, @prefix)")
		params = append(params, param("@prefix", q.IDPrefix))
	}
	if q.CreatedAfter != 0 {
		b.WriteString(" AND c.createdAt >= @after")
		params = append(params, param("@after", q.CreatedAfter))
	}
	if q.CreatedBefore != 0 {
		b.WriteString(" AND c.createdAt < @before")
		params = append(params, param("@before", q.CreatedBefore))
	}
	if q.NameContains != "" {
		b.WriteString(" AND CONTAINS(c.orchestrationName, @name, true)")
		params = append(params, param("@name", q.NameContains))
	}
	if extra != "" {
		b.WriteString(" AND " + extra)
	}
	return b.String(), params
}

// summaryTextRead is how many characters of an instance's output and
// custom status a listing reads (the summary keeps the first line, at most
// duroxide.MaxSummaryText bytes of it).
const summaryTextRead = duroxide.MaxSummaryText

// decodeInstancePageToken returns token decoded (the zero token for "",
// the first page), or a permanent error when token is malformed or was
// returned for filters (or an order) other than filters.
func decodeInstancePageToken(op, token string, filters instancePageToken) (instancePageToken, error) {
	if token == "" {
		return instancePageToken{}, nil
	}
	bad := func(why string) error {
		return permanent(op, fmt.Sprintf("continuation %q %s: pass the Continuation of the page before, with the same filters", token, why))
	}
	rest, ok := strings.CutPrefix(token, instancePageTokenPrefix)
	if !ok {
		return instancePageToken{}, bad("is not one this provider returns")
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	var t instancePageToken
	if err != nil || json.Unmarshal(b, &t) != nil || (t.Order == "" && t.Service == "") || (t.Order != "" && t.Width <= 0) {
		return instancePageToken{}, bad("is malformed")
	}
	got := t
	got.Service, got.LastAt, got.LastID, got.Width, got.Probed = "", 0, "", 0, false
	if got != filters {
		return instancePageToken{}, bad("was returned for other filters")
	}
	return t, nil
}

// instanceSummary returns the summary of an instance document a listing
// read; ok is false for a document that is neither an instance nor a
// pending instance's (history appended to a pending document outside a
// turn). The status is the one the document carries, or (1 point read)
// its execution document's when it does not carry the current one, as
// GetInstanceInfo reads it.
func (p *Provider) instanceSummary(ctx context.Context, op string, doc *instanceDoc) (s duroxide.InstanceSummary, ok bool, err error) {
	switch {
	case doc.pending():
		return pendingInfo(doc).Summary(), true, nil
	case !doc.exists():
		return s, false, nil
	}
	s = duroxide.InstanceSummary{
		InstanceID: doc.InstanceID, OrchestrationName: doc.OrchestrationName, OrchestrationVersion: unknownVersion,
		CurrentExecutionID: doc.CurrentExecutionID, CreatedAt: uint64(max(doc.CreatedAt, 0)), UpdatedAt: uint64(max(doc.UpdatedAt, 0)),
		ParentInstanceID: doc.ParentInstanceID,
	}
	if doc.OrchestrationVersion != nil {
		s.OrchestrationVersion = *doc.OrchestrationVersion
	}
	var output *string
	if s.Status, output, err = p.currentStatus(ctx, op, doc.InstanceID, doc); err != nil {
		return duroxide.InstanceSummary{}, false, err
	}
	if s.Status == duroxide.StatusFailed && output != nil {
		s.ErrorLine = duroxide.SummaryText(*output)
	}
	if doc.CustomStatus != nil {
		cs := duroxide.SummaryText(*doc.CustomStatus)
		s.CustomStatus = &cs
	}
	if doc.CompletedAt != nil && s.Status != duroxide.StatusRunning {
		s.CompletedAt = duroxide.Uint64Ptr(uint64(max(*doc.CompletedAt, 0)))
	}
	return s, true, nil
}

// GetQueueStats implements duroxide.QueueStatsReporter: both queues'
// messages ready, locked and delayed, and the oldest ready message's wait,
// at this provider's clock. Requests: 1 cross-partition query (per page of
// rows), as GetQueueDepths, projecting only each message's type, lock
// expiry and visibility.
func (p *Provider) GetQueueStats(ctx context.Context) (duroxide.QueueStats, error) {
	ctx = cosmos.WithCall(ctx, "get_queue_stats")
	const op = "get_queue_stats"
	raws, err := p.query(ctx, nil, "SELECT c.type, c.lockedUntil, c.visibleAt FROM c WHERE c.type IN ('"+typeOrchQueue+"', '"+typeWorkerQueue+"')", nil, queryOpts{})
	if err != nil {
		return duroxide.QueueStats{}, mapError(op, err)
	}
	now := p.nowMs()
	var s duroxide.QueueStats
	for _, raw := range raws {
		var row struct {
			Type        string `json:"type"`
			LockedUntil int64  `json:"lockedUntil"`
			VisibleAt   int64  `json:"visibleAt"`
		}
		if json.Unmarshal(raw, &row) != nil {
			continue
		}
		q := &s.Worker
		if row.Type == typeOrchQueue {
			q = &s.Orchestrator
		}
		q.Count(now, row.VisibleAt, row.LockedUntil)
	}
	return s, nil
}

var _ duroxide.InstanceMessagesReader = (*Provider)(nil)

// ListInstanceMessages implements duroxide.InstanceMessagesReader: the
// instance's orchestrator-queue and worker-queue documents, consumed
// tombstones left out. Requests: 1 single-partition query (per page of
// results).
func (p *Provider) ListInstanceMessages(ctx context.Context, instance string) ([]duroxide.InstanceMessage, error) {
	const op = "list_instance_messages"
	ctx = cosmos.WithCall(ctx, op)
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	raws, err := p.query(ctx, &instance, "SELECT * FROM c WHERE c.type IN ('"+typeOrchQueue+"', '"+typeWorkerQueue+"')", nil, queryOpts{})
	if err != nil {
		return nil, mapError(op, err)
	}
	docs := make([]*queueDoc, 0, len(raws))
	for _, raw := range raws {
		var d queueDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, mapError(op, fmt.Errorf("decode queue message: %w", err))
		}
		docs = append(docs, &d)
	}
	slices.SortStableFunc(docs, func(a, b *queueDoc) int {
		switch {
		case a.Type != b.Type:
			return strings.Compare(a.Type, b.Type) // orch_queue before worker_queue
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
	now := p.nowMs()
	out := make([]duroxide.InstanceMessage, 0, len(docs))
	for _, d := range docs {
		item, err := decodeWorkItem(d.WorkItem)
		if err != nil {
			return nil, mapError(op, fmt.Errorf("decode the work item of %s: %w", d.ID, err))
		}
		m := duroxide.InstanceMessage{Queue: duroxide.QueueWorker, Item: item, VisibleAt: uint64(max(d.VisibleAt, 0)),
			AttemptCount: uint32(max(d.AttemptCount, 0))}
		if d.Type == typeOrchQueue {
			m.Queue = duroxide.QueueOrchestrator
		}
		if d.LockToken != nil && d.LockedUntil > now {
			m.LockedUntil, m.LockToken = uint64(d.LockedUntil), *d.LockToken
		}
		out = append(out, m)
	}
	return out, nil
}
