// Enqueue: EnqueueForOrchestrator and EnqueueForWorker, writing one queue
// message.

package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
)

// EnqueueForOrchestrator adds item to its instance's orchestrator queue,
// visible after delay (duroxide's enqueue_for_orchestrator). It never
// creates the instance: that happens in the first ack, from its metadata; a
// QueueMessageItem for an instance that was never started is dropped, with
// a warning, by the fetch that finds it. An ActivityExecuteItem, an item
// without a kind or an invalid instance id is a permanent error with
// nothing written. Requests: 1 (a create; a retry after a lost answer
// reuses the document id, so its 409 means the first try landed).
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	ctx = cosmos.WithCall(ctx, "enqueue_for_orchestrator")
	const op = "enqueue_for_orchestrator"
	if err := checkOrchestratorItem(item); err != nil {
		return permanent(op, err.Error())
	}
	if err := validateInstanceID(op, item.Instance()); err != nil {
		return err
	}
	now := p.nowMs()
	d, err := newOrchDoc(item, newOrchQueueDocID(), now, now+max(delay, 0).Milliseconds())
	if err != nil {
		return permanent(op, err.Error())
	}
	if err := p.createQueueDoc(ctx, op, d); err != nil {
		return err
	}
	if s, ok := item.Kind.(duroxide.StartOrchestrationItem); ok {
		// The instance's first fetch can be its lock batch alone.
		p.heldStates.StartWritten(d.target, held.StartOf(d.entry, s))
	}
	return nil
}

// EnqueueStart stores a client's start of an orchestration, refusing it
// when the instance exists (duroxide.InstanceStarter): it has run (until it
// is deleted), its start is already stored, or a parent's start of it has
// been fetched. A refusal is a permanent *duroxide.ProviderError wrapping
// duroxide.ErrInstanceExists, with nothing written; when the instance is
// pending (duroxide.StatusPending: its start stored, not run yet) it wraps
// duroxide.ErrInstancePending, which matches ErrInstanceExists too, and
// its message says so, with the reason a runtime recorded
// (duroxide.PendingStartMessage). Requests: 1, as any
// enqueue (2 when refused or after a lost answer).
func (p *Provider) EnqueueStart(ctx context.Context, start duroxide.StartOrchestrationItem) error {
	ctx = cosmos.WithCall(ctx, "enqueue_start")
	const op = "enqueue_start"
	item := duroxide.WorkItem{Kind: start}
	if err := validateInstanceID(op, start.Instance); err != nil {
		return err
	}
	now := p.nowMs()
	d, err := newOrchDoc(item, newOrchQueueDocID(), now, now)
	if err != nil {
		return permanent(op, err.Error())
	}
	return p.startInstance(ctx, op, start, d, now)
}

// startInstance stores a start in one transactional batch: the instance
// document, pending (no instance query sees it until the first ack creates
// the instance) and created only if absent, and the start message. The
// pending document names the message, so that a retry whose first try
// landed recognises its own start in the 409 and succeeds.
func (p *Provider) startInstance(ctx context.Context, op string, start duroxide.StartOrchestrationItem, d queueWrite, nowMs int64) error {
	if len(d.doc) > maxItemBytes {
		return permanent(op, fmt.Sprintf("work item is %d bytes; Cosmos DB items are limited to %d", len(d.doc), maxItemBytes))
	}
	pending := instanceDoc{
		ID: instanceDocID, InstanceID: d.target, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(d.target)),
		OrchestrationName: start.Orchestration, OrchestrationVersion: start.Version, StartMessageID: d.id,
		CreatedAt: nowMs, UpdatedAt: nowMs,
	}
	body, err := json.Marshal(pending)
	if err != nil {
		return permanent(op, err.Error())
	}
	results, err := p.runBatch(ctx, d.target, []batchOp{createOp(instanceDocID, body), createOp(d.id, d.doc)}, idempotentWrite, false)
	if err == nil {
		// The first fetch of the instance needs only its lock batch.
		m := held.StartOf(d.entry, start)
		p.heldStates.Hold(d.target, heldStateOf(&pending, string(results[0].ETag), nil, nil), true, &m)
	}
	if bf, ok := asBatchFailure(err); ok && bf.Status == http.StatusConflict {
		var cur instanceDoc
		_, found, rerr := p.readDoc(ctx, d.target, instanceDocID, &cur)
		switch {
		case rerr != nil:
			return mapError(op, rerr)
		case found && cur.StartMessageID == d.id:
			err = nil // this start, stored by a try whose answer was lost
		case found && cur.pending():
			return &duroxide.ProviderError{Operation: op, Message: duroxide.PendingStartMessage(d.target, cur.PendingReason), Cause: duroxide.ErrInstancePending}
		case found:
			return &duroxide.ProviderError{Operation: op, Message: fmt.Sprintf("instance %s already exists", duroxide.QuoteInstanceID(d.target)), Cause: duroxide.ErrInstanceExists}
		default:
			// Deleted since the batch was refused: the start may be tried again.
			return retryable(op, fmt.Sprintf("instance %s was being deleted; try the start again", duroxide.QuoteInstanceID(d.target)))
		}
	}
	if err != nil {
		return mapError(op, err)
	}
	p.hint(d.entry)
	return nil
}

// EnqueueForWorker adds an ActivityExecuteItem to the worker queue
// (DESIGN.md §3.10), with its session and tag. The document id is
// derived from the activity's execution and id, so enqueuing the same
// activity twice leaves one message. Requests: 1.
func (p *Provider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	ctx = cosmos.WithCall(ctx, "enqueue_for_worker")
	const op = "enqueue_for_worker"
	act, ok := item.Kind.(duroxide.ActivityExecuteItem)
	if !ok {
		return permanent(op, fmt.Sprintf("Invalid work item type %q: only ActivityExecute goes to the worker queue", item.Type()))
	}
	if err := validateInstanceID(op, act.Instance); err != nil {
		return err
	}
	d, err := newWorkerDoc(act, p.nowMs())
	if err != nil {
		return permanent(op, err.Error())
	}
	return p.createQueueDoc(ctx, op, d)
}

// createQueueDoc creates a queue document and adds it to this process's
// candidate pool (which wakes waiting fetches); 409 means it exists (a retried create that had landed, or the
// same activity enqueued again).
func (p *Provider) createQueueDoc(ctx context.Context, op string, d queueWrite) error {
	if len(d.doc) > maxItemBytes {
		return permanent(op, fmt.Sprintf("work item is %d bytes; Cosmos DB items are limited to %d", len(d.doc), maxItemBytes))
	}
	err := p.createDoc(ctx, d.target, d.doc, idempotentWrite)
	if err != nil && !cosmos.IsStatus(err, http.StatusConflict) {
		return mapError(op, err)
	}
	p.hint(d.entry)
	return nil
}
