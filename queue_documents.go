// Queue documents: building orchestrator and worker queue messages,
// consuming them in a batch, cancelling activities, and the work-item lock
// condition.

package cdb

import (
	"encoding/json"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Consumed messages leave tombstones.
//
// Every queue document has an id fixed before its first write: a client's
// enqueue reuses its id when it retries, an outbox delivery uses the
// deterministic id of its target document, an activity is
// "wq-<execution>-<activity>", a work item's completion "oq-w-<lock>". A
// repeated create of a document that exists is a 409, which the writers
// count as success, so retries and repeated deliveries are harmless while
// the document exists. Once an ack has consumed it, they would not be: a
// retry whose first answer was lost after it landed, or a second outbox
// reconciler that read an intent before the first one delivered and deleted
// it, would create the message again, and it would be processed a second
// time (an external event raised twice, an activity run again after its
// successful ack, a sub-orchestration's completion delivered twice).
//
// So acks do not delete the messages they consume: they turn each into a
// tombstone with the same id (type "consumed", the work item dropped, the
// consuming lock recorded), which keeps later creates of that id failing
// with 409 and never matches a queue query. A tombstone expires after
// tombstoneTTLSeconds through Cosmos DB's per-item time to live, which New
// turns on for the containers it creates; in a container created without
// it, tombstones stay until their instance is deleted.

// typeConsumed is the type of a consumed message's tombstone.
const typeConsumed = "consumed"

// tombstoneTTLSeconds is how long a tombstone outlives its message: longer
// than any retry of a create or outbox delivery pass takes.
const tombstoneTTLSeconds = 3600

// consumeOp is the batch operation that consumes message id under lockID:
// a patch turning it into a tombstone, with If-Match when etag is set.
func consumeOp(id, lockID, etag string) batchOp {
	var po azcosmos.PatchOperations
	po.AppendSet("/type", typeConsumed)
	po.AppendSet("/consumedBy", lockID)
	po.AppendSet("/workItem", jsonNull)
	po.AppendSet("/ttl", tombstoneTTLSeconds)
	return patchOp(id, po, etag)
}

// cancelPatch turns a worker-queue message into the tombstone of its
// cancellation by the turn acked under lockID; its filter predicate leaves
// a tombstone alone (412), so a message consumed earlier keeps its own.
func cancelPatch(lockID string) azcosmos.PatchOperations {
	op := consumeOp("", lockID, "")
	op.patch.SetCondition("FROM c WHERE c.type = '" + typeWorkerQueue + "'")
	return op.patch
}

// workerLockCondition is lockCondition for a worker-queue message: it also
// requires the document to still be a message, not the tombstone its ack
// left (which keeps the lock token).
func workerLockCondition(lockID string, nowMs int64) string {
	c := "FROM c WHERE c.type = '" + typeWorkerQueue + "' AND c.lockToken = '" + lockID + "'"
	if nowMs > 0 {
		c += " AND c.lockedUntil > " + strconv.FormatInt(nowMs, 10)
	}
	return c
}

// newWorkerDoc builds the worker-queue document of an activity.
func newWorkerDoc(act duroxide.ActivityExecuteItem, nowMs int64) (queueWrite, error) {
	wi, err := encodeWorkItem(duroxide.WorkItem{Kind: act})
	if err != nil {
		return queueWrite{}, err
	}
	exec, id := act.ExecutionID, act.ID
	d := queueDoc{
		ID: workerDocID(exec, id), InstanceID: act.Instance, Type: typeWorkerQueue, WorkItem: wi,
		DispatchSlot: int(DispatchSlot(act.Instance)), VisibleAt: nowMs, EnqueuedAt: nowMs, Seq: newSeq(),
		ExecutionID: &exec, ActivityID: &id, SessionID: act.SessionID, Tag: act.Tag,
	}
	b, err := json.Marshal(d)
	return queueWrite{target: act.Instance, id: d.ID, doc: b, entry: queueEntry(&d)}, err
}

// newOrchDoc builds an orchestrator-queue document.
func newOrchDoc(item duroxide.WorkItem, id string, nowMs, visibleAt int64) (queueWrite, error) {
	wi, err := encodeWorkItem(item)
	if err != nil {
		return queueWrite{}, err
	}
	target := item.Instance()
	d := queueDoc{
		ID: id, InstanceID: target, Type: typeOrchQueue, WorkItem: wi, DispatchSlot: int(DispatchSlot(target)),
		VisibleAt: visibleAt, EnqueuedAt: nowMs, Seq: newSeq(),
	}
	b, err := json.Marshal(d)
	return queueWrite{target: target, id: id, doc: b, entry: queueEntry(&d)}, err
}
