// Enqueue: EnqueueForOrchestrator and EnqueueForWorker, writing one queue
// message.

package cdb

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// EnqueueForOrchestrator adds item to its instance's orchestrator queue,
// visible after delay (seeds/cdb-spec.md §3.9). It never creates the
// instance: that happens in the first ack, from its metadata; a
// QueueMessageItem for an instance that was never started is dropped, with
// a warning, by the fetch that finds it. An ActivityExecuteItem, an item
// without a kind or an invalid instance id is a permanent error with
// nothing written. Requests: 1 (a create; a retry after a lost answer
// reuses the document id, so its 409 means the first try landed).
func (p *Provider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	ctx = withCall(ctx, "enqueue_for_orchestrator")
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
	return p.createQueueDoc(ctx, op, d)
}

// EnqueueForWorker adds an ActivityExecuteItem to the worker queue
// (seeds/cdb-spec.md §3.10), with its session and tag. The document id is
// derived from the activity's execution and id, so enqueuing the same
// activity twice leaves one message. Requests: 1.
func (p *Provider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	ctx = withCall(ctx, "enqueue_for_worker")
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
	if err != nil && !isStatus(err, http.StatusConflict) {
		return mapError(op, err)
	}
	p.hint(d.entry)
	return nil
}
