// Fetch of an orchestration this process holds the state of: the lock
// batch alone, built from what this process last wrote to the instance.

package cdb

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
)

// orchMessageLockCondition is the filter predicate a held message's lock
// patch carries: the document is still an orchestrator-queue message (not
// the tombstone an ack left), visible and unlocked at nowMs.
func orchMessageLockCondition(nowMs int64) string {
	n := strconv.FormatInt(nowMs, 10)
	return "FROM c WHERE c.type = '" + typeOrchQueue + "' AND c.visibleAt <= " + n + " AND c.lockedUntil <= " + n
}

// lockHeldTurn locks instance's turn with one request when this process
// holds the instance's state (held.States: it started the instance, or
// acked its last turn, and wrote the messages to take since) and, for an
// instance with an execution, its whole history (held.Histories). The
// request is a transactional batch, with content responses, that
//
//   - patches the lock onto the instance document, If-Match on the held
//     ETag (any write by another process since fails it),
//   - reads the KV tables' roots that exist (an instance whose tables
//     continue in pages is not fetched this way), and
//   - locks each held visible message with a filter predicate that it is
//     still a visible, unlocked orchestrator-queue message,
//
// and its responses are the documents the turn is built from. For an
// instance this process wrote a start to and knows no document of, the
// batch creates the pending instance document instead (refused when one
// exists). tried is
// false, with nothing written, when this process does not hold what the
// batch needs, and when the service refused the batch (the held state is
// then forgotten): the caller reads the partition instead. A batch whose
// answer was lost is read back (1 point read of the instance document):
// a lock that landed is released (1 batch), and tried is false then too;
// only when the read-back fails as well does the fetch give the candidate
// up for this attempt (tried, with nothing returned). The messages
// are those this process wrote and those its candidate queries and the
// change feed showed; one it has not seen yet waits for a later turn.
func (p *Provider) lockHeldTurn(ctx context.Context, c candidates.Entry, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (item *duroxide.OrchestrationItem, drop, tried bool, err error) {
	instance := c.Instance
	now := p.nowMs()
	st, msgs, ok := p.heldStates.Turn(c, now)
	if !ok || st.KVPaged {
		return nil, false, false, nil
	}
	var held []duroxide.Event
	if st.Context {
		if filter != nil && st.Pinned != nil && !compatibleFirstRange(filter, st.Pinned) {
			return nil, false, false, nil // the partition read records the skip
		}
		h, rid, exec, ok := p.held.Peek(instance)
		if !ok || rid == "" || rid != st.RID || exec != st.Exec || uint64(len(h)) != st.Watermark {
			return nil, false, false, nil
		}
		held = h
	}
	start, hasStart := heldStart(msgs)
	if !st.Context && !hasStart {
		return nil, false, false, nil
	}
	msgs = msgs[:min(len(msgs), maxMessagesPerTurn)]

	lockID := newLockID()
	lockedUntil := now + lockTimeout.Milliseconds()
	var ops []batchOp
	if st.Absent {
		_, op, err := pendingLockedDoc(instance, start.StartName, start.StartVersion, lockID, lockedUntil, now)
		if err != nil {
			return nil, false, true, err
		}
		ops = append(ops, op)
	} else {
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		ops = append(ops, patchOp(instanceDocID, po, st.ETag))
	}
	if st.KVStore {
		ops = append(ops, readOp(kvStoreDocID))
	}
	if st.KVDelta {
		ops = append(ops, readOp(kvDeltaDocID))
	}
	first := len(ops)
	cond := orchMessageLockCondition(now)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		var mo azcosmos.PatchOperations
		mo.SetCondition(cond)
		mo.AppendSet("/lockToken", lockID)
		mo.AppendSet("/lockedUntil", lockedUntil)
		mo.AppendIncrement("/attemptCount", 1)
		ops = append(ops, patchOp(m.ID, mo, ""))
		ids[i] = m.ID
	}
	p.traceFetch(orchHeldLockBatch)
	results, err := p.runBatch(ctx, instance, ops, write, true)
	if err != nil {
		p.heldStates.Drop(instance)
		if _, ok := asBatchFailure(err); ok {
			p.traceFetch(orchHeldRefused)
			return nil, false, false, nil
		}
		if cosmos.IsAmbiguous(err) {
			// The lock may have landed: read it back. The turn cannot be
			// built without the batch's answer, so a lock that landed is
			// released (conditioned on this lock, so nothing else is
			// touched); then, or when it did not land, the fetch goes on
			// by reading the partition, at once.
			_, o, rerr := p.readBackOrchLock(ctx, instance, lockID)
			p.logLockReadBack("orchestration lock (held state)", instance, instanceDocID, o, lockedUntil, err, rerr)
			switch o {
			case lockApplied:
				p.releaseAfterFailedFetch(instance, lockID, ids)
				return nil, false, false, nil
			case lockNotApplied, lockTaken:
				return nil, false, false, nil
			}
			p.releaseAfterFailedFetch(instance, lockID, ids)
			return nil, false, true, nil
		}
		return nil, false, true, err
	}

	t := lockedTurn{instance: instance, lockID: lockID, lockedUntil: lockedUntil, hasContext: st.Context,
		execHint: st.Exec, held: held, heldRID: st.RID}
	parsed := func() error {
		doc, err := decodeInstanceDoc(results[0].ResourceBody)
		if err != nil {
			return err
		}
		t.doc = *doc
		t.doc.ETag = string(results[0].ETag)
		for _, r := range results[1:first] {
			d := &kvDoc{}
			if d.ETag, err = decodeDoc(r.ResourceBody, d); err != nil {
				return err
			}
			if len(d.Pages) > 0 {
				return errKVPageMissing // not as held: the partition is read again
			}
			if d.ID == kvStoreDocID {
				t.kv.store.root = d
			} else {
				t.kv.delta.root = d
			}
		}
		for _, r := range results[first:] {
			m := &queueDoc{}
			if m.ETag, err = decodeDoc(r.ResourceBody, m); err != nil {
				return err
			}
			t.msgs = append(t.msgs, m)
			t.attempt = max(t.attempt, m.AttemptCount) // already counted by the batch
		}
		return nil
	}()
	if parsed != nil {
		// The service's answer is not what was written: give the lock up.
		p.heldStates.Drop(instance)
		p.releaseAfterFailedFetch(instance, lockID, ids)
		return nil, false, true, parsed
	}
	sort.Slice(t.msgs, func(i, j int) bool { return t.msgs[i].before(t.msgs[j]) })
	t.items = p.decodeTurnMessages(instance, t.msgs)
	if !t.hasContext {
		t.startName, t.startVersion, _ = startOf(t.items)
	}
	item, err = p.finishTurn(ctx, t, now)
	return item, item != nil, true, err
}

// heldStart returns the first start message of msgs.
func heldStart(msgs []held.Message) (held.Message, bool) {
	for _, m := range msgs {
		if m.Start {
			return m, true
		}
	}
	return held.Message{}, false
}

// DefaultHeldHistoryEvents is the default of Config.HeldHistoryEvents.
const DefaultHeldHistoryEvents = 200_000

// DefaultHeldInstanceStates is the default of Config.HeldInstanceStates.
const DefaultHeldInstanceStates = 10_000

// heldStateOf is the held state of instance document d as written with
// etag, with its KV tables' roots as written (nil: absent).
func heldStateOf(d *instanceDoc, etag string, kvStore, kvDelta *kvDoc) held.State {
	return held.State{ETag: etag, RID: d.RID, Context: d.hasContext(), Exec: d.CurrentExecutionID,
		Watermark: d.HistoryWatermark, Pinned: d.PinnedDuroxideVersion, KVStore: kvStore != nil, KVDelta: kvDelta != nil,
		KVPaged: (kvStore != nil && len(kvStore.Pages) > 0) || (kvDelta != nil && len(kvDelta.Pages) > 0)}
}
