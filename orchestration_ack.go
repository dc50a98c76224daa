// Ack of an orchestration turn: AckOrchestrationItem validates the turn,
// plans its writes and commits them in one transactional batch.

package cdb

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/docs"
	"github.com/duroxide-go/duroxide-cdb/internal/statuswatch"
)

// ackInput is an AckOrchestrationItem call, validated.
type ackInput struct {
	instance     string
	lockID       string
	executionID  uint64
	events       []duroxide.Event
	eventData    []string
	workerItems  []duroxide.ActivityExecuteItem
	orchItems    []duroxide.WorkItem
	metadata     duroxide.ExecutionMetadata
	cancelled    []duroxide.ScheduledActivityIdentifier
	cancelledSet map[[2]uint64]bool
}

// validateAck checks an ack's arguments before anything is read or written.
func validateAck(op, instance string, executionID uint64, delta []duroxide.Event, workerItems, orchItems []duroxide.WorkItem, md duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) (*ackInput, error) {
	in := &ackInput{instance: instance, executionID: executionID, events: delta, metadata: md, orchItems: orchItems, cancelled: cancelled, cancelledSet: map[[2]uint64]bool{}}
	if executionID == 0 {
		return nil, permanent(op, "execution id must be set by the runtime (got 0)")
	}
	seen := map[uint64]bool{}
	for _, ev := range delta {
		if ev.EventID == 0 {
			return nil, permanent(op, "Failed to append history: event_id must be set by runtime")
		}
		if seen[ev.EventID] {
			return nil, permanent(op, fmt.Sprintf("Failed to append history: duplicate event_id %d in the history delta", ev.EventID))
		}
		seen[ev.EventID] = true
		data, err := encodeEvent(ev)
		if err != nil {
			return nil, permanent(op, err.Error())
		}
		in.eventData = append(in.eventData, data)
	}
	for _, w := range workerItems {
		act, ok := w.Kind.(duroxide.ActivityExecuteItem)
		if !ok {
			return nil, permanent(op, fmt.Sprintf("worker item of type %q is not an ActivityExecute", w.Type()))
		}
		if err := validateInstanceID(op, act.Instance); err != nil {
			return nil, err
		}
		in.workerItems = append(in.workerItems, act)
	}
	for _, o := range orchItems {
		if err := checkOrchestratorItem(o); err != nil {
			return nil, permanent(op, err.Error())
		}
		if err := validateInstanceID(op, o.Instance()); err != nil {
			return nil, err
		}
	}
	for _, c := range cancelled {
		if c.Instance == instance {
			in.cancelledSet[[2]uint64{c.ExecutionID, c.ActivityID}] = true
		}
	}
	return in, nil
}

// checkOrchestratorItem rejects what cannot go on an orchestrator queue.
func checkOrchestratorItem(item duroxide.WorkItem) error {
	if item.Kind == nil {
		return fmt.Errorf("work item has no kind")
	}
	if item.IsForWorker() {
		return errors.New("invalid work item type: ActivityExecute belongs on the worker queue")
	}
	return nil
}

// AckOrchestrationItem commits a turn atomically (DESIGN.md §3.3, duroxide's contract). Requests: 1, a
// transactional batch in the instance's partition that
//
//   - replaces the instance document with If-Match on the ETag of the lock
//     (which validates the lock and releases it: if anything else wrote the
//     document since, the batch fails and nothing is written), with the
//     execution's status and output mirrored on it,
//   - creates or updates the execution document (status, output, pinned
//     version, history watermark),
//   - consumes the messages the fetch tagged (each becomes a tombstone, so
//     that a late repeated create of it cannot bring it back),
//   - upserts the history delta's documents (append-only: existing history
//     is never read),
//   - upserts the KV documents when KV events or the end of the execution
//     changed them (a table's root, and its pages when it outgrew the
//     root),
//   - creates the worker and orchestrator queue documents of this instance
//     (timers invisible until they fire), and
//   - creates outbox intents for the documents of other instances.
//
// The intents are then delivered at once (1 request per document, plus 1
// to delete the intent); a failed delivery is left to the reconciler.
// Cancelled activities are removed afterwards, best effort, a 404 ignored
// (DESIGN.md §3.12); an activity both scheduled and
// cancelled in the turn is never enqueued.
//
// A turn larger than one batch (100 operations, 2 MB) still commits
// atomically: its overflow history is staged first with idempotent
// upserts, invisible above the execution's history watermark, and the
// final batch publishes the watermark; overflow queue documents travel in
// outbox intents of the final batch; KV pages that do not fit are staged
// under new ids, published by the KV roots of the final batch, and the
// pages those no longer name are deleted after the commit (1 request per
// 100, none for KV tables that fit their roots). An event id at or below the watermark
// is a duplicate, a permanent error with nothing written, as is an invalid
// or expired lock token or a document too large for an item. When the
// batch's answer is lost, the instance document (or, when another turn was
// acked since, the tombstone of a consumed message) tells whether it
// committed. Of two acks with one token, only the first succeeds.
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelledActivities []duroxide.ScheduledActivityIdentifier) error {
	ctx = cosmos.WithCall(ctx, "ack_orchestration_item")
	const op = "ack_orchestration_item"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	in, err := validateAck(op, instance, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelledActivities)
	if err != nil {
		return err
	}
	in.lockID = lockID

	now := p.nowMs()
	l, cached := p.locks.Orch(lockToken)
	lock := &l
	if !cached || !l.doc.lockedBy(lockID, now) {
		if lock, err = p.loadOrchLock(ctx, instance, lockID); err != nil {
			return mapError(op, err)
		}
		if lock == nil {
			return permanent(op, "Invalid lock token")
		}
	}
	var plan turnPlan
	execMissing := false
	for attempt := 0; ; attempt++ {
		now = p.nowMs()
		if !lock.doc.lockedBy(lockID, now) {
			return permanent(op, "Instance lock expired")
		}
		var execIndex int
		plan, execIndex, err = p.planAck(in, lock, now, execMissing)
		if err != nil {
			return err
		}
		var final []azcosmos.TransactionalBatchResult
		final, err = p.commitTurn(ctx, instance, plan)
		if err == nil {
			// The instance's next fetch can be its lock batch alone.
			plan.held.ETag = string(final[0].ETag)
			p.heldStates.Hold(instance, plan.held, false, nil)
			break
		}
		if attempt >= 3 {
			return mapError(op, err)
		}
		if bf, ok := asBatchFailure(err); ok {
			switch {
			case bf.Index == 0 && (bf.Status == http.StatusPreconditionFailed || bf.Status == http.StatusNotFound):
				// The instance document changed since the lock was
				// taken (a renewal by another process, an append) or
				// is gone: read it again and retry if the lock holds.
			case bf.Index == execIndex && bf.Status == http.StatusNotFound:
				execMissing = true
				continue
			case bf.Status == http.StatusConflict:
				return permanent(op, fmt.Sprintf("a document of the turn already exists (%s): %v", bf.ID, bf))
			case bf.Status == http.StatusRequestEntityTooLarge || bf.Status == http.StatusBadRequest:
				return permanent(op, bf.Error())
			default:
				return mapError(op, err)
			}
		} else if cosmos.IsAmbiguous(err) {
			landed, rerr := p.turnLanded(ctx, instance, lockID, lock.messageIDs)
			if rerr != nil {
				return mapError(op, err)
			}
			if landed {
				break // the lost answer was a success
			}
		} else {
			return mapError(op, err)
		}
		if lock, err = p.loadOrchLock(ctx, instance, lockID); err != nil {
			return mapError(op, err)
		}
		if lock == nil {
			return permanent(op, "Instance lock expired or was taken by another dispatcher")
		}
	}
	p.locks.DropOrch(lockToken)
	p.held.Extend(instance, lock.doc.RID, executionID, executionID > lock.doc.CurrentExecutionID, lock.doc.HistoryWatermark, sortedByID(historyDelta))
	p.orchPool.SetExec(instance, executionID)
	for _, e := range plan.queued {
		p.hint(e)
	}
	p.orchPool.Unlock(instance)
	if statuswatch.Changing(metadata, historyDelta) {
		p.statusWatches.Changed(instance)
	}
	for _, intent := range plan.intents {
		if err := p.deliverIntent(ctx, intent, quickRetrier.withClosed(p.stop)); err != nil {
			p.log.Info("outbox delivery deferred to the reconciler", zap.String("intent", intent.ID), zap.String("instance", instance), zap.Error(err))
		}
	}
	p.removeCancelledActivities(ctx, in)
	p.deleteKVPages(ctx, instance, plan.kvRetired)
	return nil
}

// sortedByID returns events in event id order (a copy when they are not).
func sortedByID(events []duroxide.Event) []duroxide.Event {
	if slices.IsSortedFunc(events, func(a, b duroxide.Event) int { return cmp.Compare(a.EventID, b.EventID) }) {
		return events
	}
	out := slices.Clone(events)
	slices.SortFunc(out, func(a, b duroxide.Event) int { return cmp.Compare(a.EventID, b.EventID) })
	return out
}

// turnLanded tells whether the final batch of the turn acked under lockID,
// whose answer was lost, committed (see turnState). Requests: 1 point
// read, 2 when another turn was acked since.
func (p *Provider) turnLanded(ctx context.Context, instance, lockID string, messageIDs []string) (bool, error) {
	first := ""
	if len(messageIDs) > 0 {
		first = messageIDs[0]
	}
	landed, _, err := p.turnState(ctx, instance, lockID, first)
	return landed, err
}

// turnState tells what became of the turn acked under lockID that consumed
// firstMessage first: landed when its final batch committed (the instance
// document names lockID as the last lock acked or, when another turn has
// been acked since, firstMessage is the tombstone lockID left); held when
// it did not, and lockID still holds the instance's lock, so that it may
// still commit. Neither means it never will: its lock was taken or
// released, which changed the ETag its final batch is conditioned on.
// Requests: 1 point read, 2 when the instance does not name lockID.
func (p *Provider) turnState(ctx context.Context, instance, lockID, firstMessage string) (landed, held bool, err error) {
	var cur instanceDoc
	_, found, err := p.readDoc(ctx, instance, instanceDocID, &cur)
	switch {
	case err != nil:
		return false, false, err
	case found && cur.LastAckedLock == lockID:
		return true, false, nil
	}
	held = found && cur.LockToken != nil && *cur.LockToken == lockID
	if firstMessage == "" {
		return false, held, nil
	}
	var m queueDoc
	_, mfound, err := p.readDoc(ctx, instance, firstMessage, &m)
	if err != nil {
		return false, held, err
	}
	return mfound && m.Type == typeConsumed && m.ConsumedBy == lockID, held, nil
}

// planAck builds the batches of a turn from the lock's view of the instance.
// It returns the plan and the index of the execution document's operation.
func (p *Provider) planAck(in *ackInput, lock *orchLock, nowMs int64, execMissing bool) (turnPlan, int, error) {
	const op = "ack_orchestration_item"
	doc := lock.doc
	md := in.metadata
	current := doc.CurrentExecutionID
	if in.executionID < current {
		return turnPlan{}, 0, permanent(op, fmt.Sprintf("execution %d is older than the instance's current execution %d", in.executionID, current))
	}
	newExec := in.executionID > current
	watermark := doc.HistoryWatermark
	if newExec {
		watermark = 0
	}
	maxEvent := watermark
	for _, ev := range in.events {
		if ev.EventID <= watermark {
			return turnPlan{}, 0, permanent(op, fmt.Sprintf("Failed to append history: duplicate event_id %d for instance '%s' execution %d (history holds events up to %d)", ev.EventID, in.instance, in.executionID, watermark))
		}
		maxEvent = max(maxEvent, ev.EventID)
	}

	// The instance document: metadata, current execution, custom status,
	// lock released.
	doc.LockToken, doc.LockedUntil = nil, 0
	doc.LastAckedLock = in.lockID
	doc.UpdatedAt = nowMs
	if md.OrchestrationName != nil && md.OrchestrationVersion != nil {
		if doc.Type != typeInstance {
			doc.Type = typeInstance
			doc.ParentInstanceID = md.ParentInstanceID
			doc.PendingReason = ""
		}
		doc.OrchestrationName = *md.OrchestrationName
		doc.OrchestrationVersion = md.OrchestrationVersion
	}
	if newExec {
		doc.CurrentExecutionID = in.executionID
		doc.PinnedDuroxideVersion = docs.PinnedFrom(md.PinnedDuroxideVersion)
		doc.Status, doc.CompletedAt = duroxide.StatusRunning, nil
	} else if md.PinnedDuroxideVersion != nil {
		doc.PinnedDuroxideVersion = docs.PinnedFrom(md.PinnedDuroxideVersion)
	}
	doc.HistoryWatermark = maxEvent
	if md.Status != nil {
		doc.Status, doc.CompletedAt = *md.Status, nil
		if *md.Status != duroxide.StatusRunning {
			doc.CompletedAt = &nowMs
		}
	}
	if doc.Type == typeInstance {
		for i := len(in.events) - 1; i >= 0; i-- {
			if cs, ok := in.events[i].Kind.(duroxide.CustomStatusUpdated); ok {
				doc.CustomStatus = cs.Status
				doc.CustomStatusVersion++
				break
			}
		}
	}
	// The execution's status and output after the batch, mirrored on the
	// instance document for GetInstanceInfo.
	execStatus, execOutput, execKnown := duroxide.StatusRunning, (*string)(nil), true
	switch {
	case md.Status != nil:
		execStatus, execOutput = *md.Status, md.Output
	case newExec || execMissing:
	case lock.doc.StatusExecutionID == in.executionID:
		execStatus, execOutput = lock.doc.Status, lock.doc.Output
	default:
		execKnown = false
	}
	doc.StatusExecutionID, doc.Output = statuswatch.Mirror(doc.Status, in.executionID, execStatus, execOutput, execKnown)
	body, err := json.Marshal(doc)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	fixed := []batchOp{replaceOp(instanceDocID, body, lock.doc.ETag)}

	// The execution document.
	execIndex := len(fixed)
	if newExec || execMissing {
		ed := executionDoc{
			ID: executionDocID(in.executionID), InstanceID: in.instance, Type: typeExecution, ExecutionID: in.executionID,
			Status: duroxide.StatusRunning, StartedAt: nowMs, Watermark: maxEvent, Pinned: docs.PinnedFrom(md.PinnedDuroxideVersion),
		}
		if !newExec {
			ed.Pinned = doc.PinnedDuroxideVersion
		}
		if md.Status != nil {
			ed.Status, ed.Output = *md.Status, md.Output
			if *md.Status != duroxide.StatusRunning {
				ed.CompletedAt = &nowMs
			}
		}
		b, err := json.Marshal(ed)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		if newExec {
			fixed = append(fixed, createOp(ed.ID, b))
		} else {
			fixed = append(fixed, upsertOp(ed.ID, b))
		}
	} else {
		var po azcosmos.PatchOperations
		po.AppendSet("/watermark", maxEvent)
		if md.Status != nil {
			po.AppendSet("/status", *md.Status)
			if md.Output != nil {
				po.AppendSet("/output", *md.Output)
			} else {
				po.AppendSet("/output", jsonNull)
			}
			if *md.Status != duroxide.StatusRunning {
				po.AppendSet("/completedAt", nowMs)
			} else {
				po.AppendSet("/completedAt", jsonNull)
			}
		}
		if md.PinnedDuroxideVersion != nil {
			po.AppendSet("/pinnedDuroxideVersion", docs.PinnedFrom(md.PinnedDuroxideVersion))
		}
		fixed = append(fixed, patchOp(executionDocID(in.executionID), po, ""))
	}

	for _, id := range lock.messageIDs {
		fixed = append(fixed, consumeOp(id, in.lockID, ""))
	}
	kv := applyKVEvents(lock.kv.store.entries(), lock.kv.delta.entries(), in.events, in.executionID, uint64(nowMs), isTerminalStatus(md.Status))
	kvw, err := planKVWrites(in.instance, in.lockID, lock.kv, kv, fixed)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	fixed = append(fixed, kvw.final...)

	// Queue documents.
	var queue []queueWrite
	for _, act := range in.workerItems {
		if act.Instance == in.instance && in.cancelledSet[[2]uint64{act.ExecutionID, act.ID}] {
			continue // scheduled and cancelled in the same turn
		}
		d, err := newWorkerDoc(act, nowMs)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		queue = append(queue, d)
	}
	for i, item := range in.orchItems {
		visibleAt := nowMs
		if t, ok := item.Kind.(duroxide.TimerFiredItem); ok {
			visibleAt = int64(min(t.FireAtMs, uint64(1<<62)))
		}
		d, err := newOrchDoc(item, ackQueueDocID(in.lockID, i), nowMs, visibleAt)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		queue = append(queue, d)
	}

	// History documents.
	history := make([]batchOp, 0, len(in.events))
	for i, ev := range in.events {
		hb, err := json.Marshal(historyDoc{
			ID: historyDocID(in.executionID, ev.EventID), InstanceID: in.instance, Type: typeHistory,
			ExecutionID: in.executionID, EventID: ev.EventID, EventData: in.eventData[i],
		})
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		history = append(history, upsertOp(historyDocID(in.executionID, ev.EventID), hb))
	}
	first := ""
	if len(lock.messageIDs) > 0 {
		first = lock.messageIDs[0]
	}
	plan, err := planTurn(in.instance, in.lockID, first, nowMs, fixed, queue, history)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	plan.staged = append(packBatches(kvw.staged), plan.staged...)
	plan.kvRetired = kvw.retired
	plan.held = heldStateOf(&doc, "", kvw.store, kvw.delta)
	return plan, execIndex, nil
}

// commitTurn writes the staged batches, then the final one, whose
// results it returns.
func (p *Provider) commitTurn(ctx context.Context, instance string, plan turnPlan) ([]azcosmos.TransactionalBatchResult, error) {
	for _, ops := range plan.staged {
		if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err != nil {
			return nil, err
		}
	}
	return p.runBatch(ctx, instance, plan.final, write, false)
}

// removeCancelledActivities removes the worker-queue messages of the turn's
// cancelled activities, after the turn committed: a write to a message the
// worker already consumed would fail a batch (404 → 424), so they are not
// part of it (DESIGN.md §3.12). Each becomes a tombstone
// (queue_documents.go), so that a late repeated create cannot bring the
// cancelled activity back; a message already gone (404) or already a
// tombstone (412) is left alone. Best effort. A worker holding the item
// learns of the cancellation when its lock renewal or ack fails.
func (p *Provider) removeCancelledActivities(ctx context.Context, in *ackInput) {
	for _, c := range in.cancelled {
		if c.Instance == in.instance && in.cancelledSet[[2]uint64{c.ExecutionID, c.ActivityID}] && scheduledInTurn(in, c) {
			continue // never enqueued
		}
		_, err := p.patchDoc(ctx, c.Instance, workerDocID(c.ExecutionID, c.ActivityID), cancelPatch(in.lockID), idempotentWrite)
		if err != nil && !cosmos.IsStatus(err, http.StatusNotFound) && !cosmos.IsStatus(err, http.StatusPreconditionFailed) {
			p.log.Debug("removing a cancelled activity failed", zap.String("instance", c.Instance), zap.Uint64("activity", c.ActivityID), zap.Error(err))
		}
	}
}

func scheduledInTurn(in *ackInput, c duroxide.ScheduledActivityIdentifier) bool {
	for _, a := range in.workerItems {
		if a.Instance == c.Instance && a.ExecutionID == c.ExecutionID && a.ID == c.ActivityID {
			return true
		}
	}
	return false
}

// deleteKVPages deletes KV pages no root names any more, after the turn
// that retired them committed: 1 transactional batch per 100 pages, and
// one delete per page when a batch fails (a page already gone). Best
// effort: a page left behind is retired again by the next turn that reads
// the partition.
func (p *Provider) deleteKVPages(ctx context.Context, instance string, ids []string) {
	for chunk := range slices.Chunk(ids, maxBatchOps) {
		ops := make([]batchOp, len(chunk))
		for i, id := range chunk {
			ops[i] = deleteOp(id, "")
		}
		if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err == nil {
			continue
		}
		for _, id := range chunk {
			if err := p.deleteDoc(ctx, instance, id, ""); err != nil && !cosmos.IsStatus(err, http.StatusNotFound) {
				p.log.Debug("deleting a retired KV page failed; the next turn retires it again", zap.String("instance", instance), zap.String("id", id), zap.Error(err))
			}
		}
	}
}
