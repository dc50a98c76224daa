// Transactional batches: the batch operations, running one batch against an
// instance's partition, and planning a turn's writes into batches.

package cdb

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
)

// Transactional batch limits of the service: 100 operations and 2 MB per
// batch, 2 MB per document. The provider keeps a margin below 2 MiB for
// the system properties the service adds and the batch's JSON framing.
const (
	maxBatchOps   = 100
	maxBatchBytes = 2_000_000
	maxItemBytes  = 2_000_000
	// opOverheadBytes is what one operation adds to a batch besides its
	// document (operation type, id, If-Match, JSON punctuation).
	opOverheadBytes = 200
	// maxIntentBytes caps one outbox intent document that bundles the
	// deliveries of a turn too large for one batch.
	maxIntentBytes = 1_000_000
)

// batchOpKind is the kind of one transactional batch operation.
type batchOpKind int

const (
	opCreate batchOpKind = iota
	opUpsert
	opReplace
	opDelete
	opPatch
	opRead
)

// batchOp is one operation of a transactional batch, kept in this form so
// that a turn can be measured and split before anything is sent.
type batchOp struct {
	kind    batchOpKind
	id      string
	body    []byte
	ifMatch string
	patch   azcosmos.PatchOperations
	// patchBytes is the JSON size of patch once size measured it (0: not
	// yet), so that a turn's plan, which sizes its operations several
	// times, encodes each patch once for that.
	patchBytes int
}

// size estimates the operation's share of the batch request, in bytes.
func (o *batchOp) size() int {
	if o.kind == opPatch && o.patchBytes == 0 {
		b, _ := json.Marshal(o.patch)
		o.patchBytes = len(b)
	}
	return opOverheadBytes + len(o.id) + len(o.body) + o.patchBytes
}

func opsSize(ops []batchOp) int {
	n := 0
	for i := range ops {
		n += ops[i].size()
	}
	return n
}

// createOp, upsertOp, deleteOp and patchOp build operations; etag, when
// non-empty, makes the operation conditional (If-Match).
func createOp(id string, body []byte) batchOp { return batchOp{kind: opCreate, id: id, body: body} }
func upsertOp(id string, body []byte) batchOp { return batchOp{kind: opUpsert, id: id, body: body} }
func replaceOp(id string, body []byte, etag string) batchOp {
	return batchOp{kind: opReplace, id: id, body: body, ifMatch: etag}
}
func deleteOp(id, etag string) batchOp { return batchOp{kind: opDelete, id: id, ifMatch: etag} }
func patchOp(id string, p azcosmos.PatchOperations, etag string) batchOp {
	return batchOp{kind: opPatch, id: id, patch: p, ifMatch: etag}
}

// readOp reads document id in the batch; a missing document fails the
// batch (404).
func readOp(id string) batchOp { return batchOp{kind: opRead, id: id} }

// batchFailure is a transactional batch the service refused: Index is the
// operation that failed and Status its status code (the others report 424).
type batchFailure struct {
	Index  int
	Status int
	ID     string
}

func (e *batchFailure) Error() string {
	return fmt.Sprintf("transactional batch failed: operation %d (id %s) returned %d %s", e.Index, e.ID, e.Status, http.StatusText(e.Status))
}

// asBatchFailure returns the batchFailure in err, if any.
func asBatchFailure(err error) (*batchFailure, bool) {
	bf, ok := err.(*batchFailure)
	return bf, ok
}

// runBatch executes ops as one transactional batch in instance's partition
// (one request) and returns the per-operation results. A refused batch is a
// *batchFailure; a transport failure or throttling is retried per kind.
func (p *Provider) runBatch(ctx context.Context, instance string, ops []batchOp, kind requestKind, withContent bool) ([]azcosmos.TransactionalBatchResult, error) {
	return p.runBatchWith(ctx, p.retry, instance, ops, kind, withContent)
}

// runBatchWith is runBatch with the retry policy r.
func (p *Provider) runBatchWith(ctx context.Context, r retrier, instance string, ops []batchOp, kind requestKind, withContent bool) ([]azcosmos.TransactionalBatchResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	b := p.container.NewTransactionalBatch(pk(instance))
	for _, o := range ops {
		var opt *azcosmos.TransactionalBatchItemOptions
		if o.ifMatch != "" {
			e := azcore.ETag(o.ifMatch)
			opt = &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &e}
		}
		switch o.kind {
		case opCreate:
			b.CreateItem(o.body, nil)
		case opUpsert:
			b.UpsertItem(o.body, opt)
		case opReplace:
			b.ReplaceItem(o.id, o.body, opt)
		case opDelete:
			b.DeleteItem(o.id, opt)
		case opPatch:
			b.PatchItem(o.id, o.patch, opt)
		case opRead:
			b.ReadItem(o.id, opt)
		}
	}
	var resp azcosmos.TransactionalBatchResponse
	err := r.do(ctx, kind, func(ctx context.Context) error {
		var err error
		resp, err = p.container.ExecuteTransactionalBatch(ctx, b, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: withContent})
		return err
	})
	if err != nil {
		return nil, err
	}
	if !resp.Success {
		for i, r := range resp.OperationResults {
			if r.StatusCode != http.StatusFailedDependency && (r.StatusCode < 200 || r.StatusCode > 299) {
				id := ""
				if i < len(ops) {
					id = ops[i].id
				}
				return resp.OperationResults, &batchFailure{Index: i, Status: int(r.StatusCode), ID: id}
			}
		}
		return resp.OperationResults, &batchFailure{Index: -1, Status: http.StatusFailedDependency}
	}
	return resp.OperationResults, nil
}

// turnPlan is how one ack is written: staged batches first (history
// documents above the watermark, invisible until the final batch
// publishes it), then the final batch, which commits the turn.
type turnPlan struct {
	staged [][]batchOp
	final  []batchOp
	// intents are the outbox intents in the final batch, to deliver once
	// it committed.
	intents []intentDoc
	// queued are the candidate-pool entries of the queue documents the
	// final batch creates, to add to the pool once it committed.
	queued []candidates.Entry
	// held is the instance's state once the final batch committed, its
	// ETag (the answer to the final batch's first operation) excepted.
	held held.State
	// kvRetired are the KV pages no root names once the final batch
	// committed, to delete then.
	kvRetired []string
}

// queueWrite is a queue document a turn produces: in its own partition it
// goes into the final batch, elsewhere into an outbox intent.
type queueWrite struct {
	target string
	id     string
	doc    []byte
	// entry is the document as a candidate-pool entry.
	entry candidates.Entry
}

// planTurn splits a turn into batches that respect the service's limits,
// so that a turn of any size commits atomically:
//
//   - fixed operations (the instance document, which validates the lock,
//     the execution document, message deletes, KV documents) always go
//     into the final batch, in order, first;
//   - queue documents for other instances become outbox deliveries, and so
//     do documents for this instance that do not fit (a fan-out of hundreds
//     of activities); deliveries are bundled into as few intent documents
//     as fit in maxIntentBytes, written in the final batch;
//   - history upserts fill what room is left, and the rest are staged
//     beforehand in batches of their own.
//
// It returns an error, and nothing is written, when the fixed operations or
// a single document cannot fit.
func planTurn(source, lockID, firstMessage string, nowMs int64, fixed []batchOp, queue []queueWrite, history []batchOp) (turnPlan, error) {
	var plan turnPlan
	for _, o := range append(append([]batchOp(nil), fixed...), history...) {
		if len(o.body) > maxItemBytes {
			return plan, fmt.Errorf("document %s is %d bytes; Cosmos DB items are limited to %d", o.id, len(o.body), maxItemBytes)
		}
	}
	for _, q := range queue {
		if len(q.doc) > maxItemBytes {
			return plan, fmt.Errorf("queue document %s is %d bytes; Cosmos DB items are limited to %d", q.id, len(q.doc), maxItemBytes)
		}
	}
	if len(fixed) > maxBatchOps || opsSize(fixed) > maxBatchBytes {
		return plan, fmt.Errorf("the turn's fixed operations (%d, %d bytes) exceed one transactional batch", len(fixed), opsSize(fixed))
	}
	var direct, deferred []queueWrite
	for _, q := range queue {
		if q.target == source {
			direct = append(direct, q)
		} else {
			deferred = append(deferred, q)
		}
	}
	var intentOps []batchOp
	build := func() error {
		plan.intents = nil
		intentOps = nil
		var cur []delivery
		curSize := 0
		flush := func() error {
			if len(cur) == 0 {
				return nil
			}
			doc := intentDoc{ID: intentDocID(lockID, len(plan.intents)), InstanceID: source, Type: typeOutboxIntent, Deliveries: cur, CreatedAt: nowMs}
			body, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			plan.intents = append(plan.intents, doc)
			intentOps = append(intentOps, createOp(doc.ID, body))
			cur, curSize = nil, 0
			return nil
		}
		for _, q := range deferred {
			if curSize+len(q.doc) > maxIntentBytes {
				if err := flush(); err != nil {
					return err
				}
			}
			cur = append(cur, delivery{TargetInstanceID: q.target, Document: q.doc})
			curSize += len(q.doc) + len(q.target) + 64
		}
		return flush()
	}
	staging := false
	for {
		if err := build(); err != nil {
			return plan, err
		}
		ops := len(fixed) + len(intentOps) + len(direct)
		size := opsSize(fixed) + opsSize(intentOps)
		for _, q := range direct {
			size += opOverheadBytes + len(q.id) + len(q.doc)
		}
		if ops <= maxBatchOps && size <= maxBatchBytes {
			break
		}
		if len(direct) == 0 {
			if firstMessage == "" {
				return plan, fmt.Errorf("the turn's queue documents (%d bytes) do not fit in one transactional batch, and a turn that consumes no message cannot stage them", size)
			}
			staging = true
			break
		}
		// Move enough documents from the end of direct to cover the
		// excess (at least one), then measure again: moved documents
		// cost less in an intent than as operations of their own.
		n, freed := 0, 0
		excessOps, excessBytes := ops-maxBatchOps, size-maxBatchBytes
		for n < len(direct) && (n < excessOps || freed < excessBytes || n == 0) {
			q := direct[len(direct)-1-n]
			freed += opOverheadBytes + len(q.id) + len(q.doc)
			n++
		}
		moved := append([]queueWrite(nil), direct[len(direct)-n:]...)
		deferred = append(moved, deferred...)
		direct = direct[:len(direct)-n]
	}
	plan.final = append(plan.final, fixed...)
	if staging {
		// The intents are staged: written before the final batch, marked
		// with the turn, and delivered only once the final batch committed
		// (by the ack, or by the reconciler, which deletes those of a turn
		// that can no longer commit; see stagedTurn).
		var ops []batchOp
		for i := range plan.intents {
			plan.intents[i].Staged, plan.intents[i].TurnLock, plan.intents[i].FirstMessageID = true, lockID, firstMessage
			body, err := json.Marshal(plan.intents[i])
			if err != nil {
				return plan, err
			}
			ops = append(ops, upsertOp(plan.intents[i].ID, body))
		}
		plan.staged = append(plan.staged, packBatches(ops)...)
	} else {
		plan.final = append(plan.final, intentOps...)
	}
	for _, q := range direct {
		plan.final = append(plan.final, createOp(q.id, q.doc))
		plan.queued = append(plan.queued, q.entry)
	}
	// History: fill the final batch, stage the rest.
	room, bytes := maxBatchOps-len(plan.final), maxBatchBytes-opsSize(plan.final)
	var rest []batchOp
	for _, h := range history {
		if room > 0 && h.size() <= bytes {
			plan.final = append(plan.final, h)
			room--
			bytes -= h.size()
			continue
		}
		rest = append(rest, h)
	}
	plan.staged = append(plan.staged, packBatches(rest)...)
	return plan, nil
}

// stagedBatches is the set of staged batches (by stagedKey) one ack has
// written. A retry of the ack's final batch under the same lock skips
// them: they are unconditional upserts of the same bytes, above the
// watermark, and the lock, held throughout (a lock id never comes back
// once replaced), kept every other turn and the reconciler from
// overwriting or removing them (DESIGN.md §15). Without it a 10,000
// activity fan-out under load restaged its ~100 batches on every retry,
// each retry taking longer than the renewal interval that caused it.
type stagedBatches map[[sha256.Size]byte]bool

// stagedKey returns a digest of ops (kinds, ids, conditions, bodies) and
// whether the batch may be skipped once written: only when every
// operation is an unconditional upsert, which writing again would leave
// unchanged.
func stagedKey(ops []batchOp) (key [sha256.Size]byte, skippable bool) {
	h := sha256.New()
	var n [8]byte
	for _, o := range ops {
		if o.kind != opUpsert || o.ifMatch != "" {
			return key, false
		}
		for _, part := range [][]byte{[]byte(o.id), o.body} {
			binary.BigEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
	}
	copy(key[:], h.Sum(nil))
	return key, true
}

// packBatches packs ops, in order, into as few batches within the
// service's limits as they fill.
func packBatches(ops []batchOp) [][]batchOp {
	var out [][]batchOp
	var cur []batchOp
	curSize := 0
	for _, o := range ops {
		if len(cur) == maxBatchOps || (len(cur) > 0 && curSize+o.size() > maxBatchBytes) {
			out = append(out, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, o)
		curSize += o.size()
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
