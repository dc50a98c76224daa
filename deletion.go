// Deletion (duroxide.ProviderAdmin): DeleteInstance, DeleteInstancesAtomic,
// DeleteInstanceBulk, PruneExecutions, PruneExecutionsBulk, and the deletion
// fence.

package cdb

import (
	"context"
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
		var doc instanceDoc
		etag, found, err := p.readDoc(ctx, id, instanceDocID, &doc)
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
		e, found, err := p.readDoc(ctx, instance, instanceDocID, &doc)
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
// permanent error. Requests: 1 point read, 1 query, then the deletes.
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
