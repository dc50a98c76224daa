// Pending instances (duroxide.StatusPending): a start that is stored and
// has not run, visible through its pending instance document, with the
// reason a runtime recorded when it abandoned the start.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

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
	// is not indexed (infrastructure.go).
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
