// Outbox: delivering intents written in a turn to other instances, and the
// reconciler (ReconcileOutbox, its loop).

package cdb

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"go.uber.org/zap"
)

// Transactional outbox (DESIGN.md §4).
// A turn's writes to other instances' partitions (sub-orchestration starts
// and completions, detached starts, cancel cascades), and the queue
// documents of a turn too large for one batch, are written as intent
// documents in the turn's own transactional batch. After the batch commits
// the ack delivers them at once; what it fails to deliver, the reconciler
// delivers later. Every delivered document has a deterministic id, so a
// second delivery is a 409, which counts as success; the intent is deleted
// once all its documents exist. The intents of a turn too large for its
// final batch even so are staged: written in batches before it, and
// delivered only once it committed; the reconciler removes those of a turn
// that can no longer commit.

// quickRetrier is the retry policy of the delivery an ack makes right after
// its batch committed: a target that keeps failing must not hold the ack
// up, since the reconciler will deliver later.
var quickRetrier = retrier{attempts: 2, base: 20 * time.Millisecond, maxDelay: 20 * time.Millisecond}

// deliverIntent creates every document of an intent in its target
// partition (409 = already delivered) and then deletes the intent (404 =
// already deleted), retrying per r. Several documents for one partition
// (the overflow of a large fan-out) go in transactional batches of creates;
// a batch refused because one of its documents exists already is sent
// again without the documents that exist (deliverBatch). Requests: 1 per
// target partition and 100 documents (plus 1 query and 1 batch per such
// refusal), plus 1.
func (p *Provider) deliverIntent(ctx context.Context, intent intentDoc, r retrier) error {
	var order []string
	byTarget := map[string][]batchOp{}
	for _, d := range intent.Deliveries {
		if _, ok := byTarget[d.TargetInstanceID]; !ok {
			order = append(order, d.TargetInstanceID)
		}
		byTarget[d.TargetInstanceID] = append(byTarget[d.TargetInstanceID], createOp("", d.Document))
	}
	for _, target := range order {
		for _, ops := range packBatches(byTarget[target]) {
			if len(ops) > 1 {
				var err error
				if ops, err = p.deliverBatch(ctx, r, target, ops); err != nil {
					return err
				}
			}
			for _, o := range ops {
				err := r.do(ctx, idempotentWrite, func(ctx context.Context) error {
					_, err := p.container.CreateItem(ctx, pk(target), o.body, nil)
					return err
				})
				if err != nil && !cosmos.IsStatus(err, http.StatusConflict) {
					return err
				}
				if err == nil {
					p.hintDocument(o.body)
				}
			}
		}
	}
	err := r.do(ctx, idempotentWrite, func(ctx context.Context) error {
		_, err := p.container.DeleteItem(ctx, pk(intent.InstanceID), intent.ID, nil)
		return err
	})
	if err != nil && !cosmos.IsStatus(err, http.StatusNotFound) {
		return err
	}
	return nil
}

// deliverBatchRounds bounds how often deliverBatch sends a batch of an
// intent's documents again after leaving out those found to exist.
const deliverBatchRounds = 3

// deliverBatch creates ops (documents of an intent, in target's partition)
// in one transactional batch and returns the ops still to create one at a
// time: none once the batch committed. A batch refused because one of its
// documents exists (409: another delivery of the same intent, the ack's and
// the reconciler's at once when the ack's delivery outlasts
// ReconcilerAgeThreshold, issue 26) is sent again without the documents a
// query finds in the partition, at most deliverBatchRounds times; what is
// left after that, or when the query fails, is returned. Creates, never
// upserts: a consumed message's tombstone must stay (DESIGN.md §2.2.3).
// Requests: 1 batch, plus per refusal 1 query and 1 batch. Errors: the
// batch's, when it is refused for another reason than 409.
func (p *Provider) deliverBatch(ctx context.Context, r retrier, target string, ops []batchOp) ([]batchOp, error) {
	for round := 0; ; round++ {
		_, err := p.runBatchWith(ctx, r, target, ops, idempotentWrite, false)
		if err == nil {
			for _, o := range ops {
				p.hintDocument(o.body)
			}
			return nil, nil
		}
		if bf, ok := asBatchFailure(err); !ok || bf.Status != http.StatusConflict {
			return nil, err
		}
		if round+1 >= deliverBatchRounds {
			return ops, nil
		}
		missing, err := p.missingDocuments(ctx, target, ops)
		if err != nil {
			p.log.Debug("outbox: cannot tell which documents exist; creating them one at a time", zap.String("target", target), zap.Error(err))
			return ops, nil
		}
		if len(missing) <= 1 {
			return missing, nil
		}
		ops = missing
	}
}

// missingDocuments returns the ops whose documents (creates, ids in their
// bodies) do not exist in target's partition. Requests: 1 query.
func (p *Provider) missingDocuments(ctx context.Context, target string, ops []batchOp) ([]batchOp, error) {
	ids := make([]string, len(ops))
	for i, o := range ops {
		var d struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(o.body, &d); err != nil {
			return nil, err
		}
		ids[i] = d.ID
	}
	raws, err := p.query(ctx, &target, "SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(@ids, c.id)",
		[]azcosmos.QueryParameter{param("@ids", ids)}, queryOpts{})
	if err != nil {
		return nil, err
	}
	exists := make(map[string]bool, len(raws))
	for _, raw := range raws {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil {
			return nil, err
		}
		exists[id] = true
	}
	var missing []batchOp
	for i, o := range ops {
		if !exists[ids[i]] {
			missing = append(missing, o)
		}
	}
	return missing, nil
}

// reconcileLoop runs the reconciler every ReconcilerInterval until Close
// (DESIGN.md §4.4).
func (p *Provider) reconcileLoop() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.ReconcilerInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			select {
			case <-p.stop:
				cancel()
			case <-done:
			}
		}()
		n, err := p.ReconcileOutbox(ctx)
		close(done)
		cancel()
		if err != nil {
			p.log.Info("outbox reconciliation failed; retrying next interval", zap.Error(err))
		} else if n > 0 {
			p.log.Debug("outbox reconciliation delivered intents", zap.Int("count", n))
		}
	}
}

// ReconcileOutbox delivers the outbox intents older than
// ReconcilerAgeThreshold (younger ones are being delivered by the ack that
// wrote them) and returns how many it delivered. The reconciler goroutine
// calls it every ReconcilerInterval; tools may call it directly. Requests:
// 1 cross-partition query, then per intent its deliveries; an intent that
// fails has its attempt count and last attempt time recorded (1 patch) and
// is retried next time.
func (p *Provider) ReconcileOutbox(ctx context.Context) (int, error) {
	ctx = cosmos.WithCall(ctx, "reconcile_outbox")
	cutoff := p.nowMs() - p.cfg.ReconcilerAgeThreshold.Milliseconds()
	raws, err := p.query(ctx, nil, "SELECT * FROM c WHERE c.type = 'outbox_intent' AND c.createdAt <= @cutoff",
		[]azcosmos.QueryParameter{param("@cutoff", cutoff)}, queryOpts{})
	if err != nil {
		return 0, mapError("reconcile_outbox", err)
	}
	n := 0
	for _, raw := range raws {
		var intent intentDoc
		if err := json.Unmarshal(raw, &intent); err != nil {
			p.log.Warn("undecodable outbox intent", zap.Error(err))
			continue
		}
		if intent.Staged {
			landed, held, err := p.turnState(ctx, intent.InstanceID, intent.TurnLock, intent.FirstMessageID)
			switch {
			case err != nil:
				p.log.Info("outbox: cannot tell whether a staged intent's turn committed; retrying next interval", zap.String("intent", intent.ID), zap.Error(err))
				continue
			case held:
				continue // its turn may still commit
			case !landed:
				// Its turn can no longer commit: the intent was never published.
				if err := p.deleteDoc(ctx, intent.InstanceID, intent.ID, ""); err != nil && !cosmos.IsStatus(err, http.StatusNotFound) {
					p.log.Info("outbox: removing an unpublished staged intent failed; retrying next interval", zap.String("intent", intent.ID), zap.Error(err))
				}
				continue
			}
		}
		if err := p.deliverIntent(ctx, intent, p.retry); err != nil {
			if ctx.Err() != nil {
				p.metrics.delivered(n)
				return n, mapError("reconcile_outbox", ctx.Err())
			}
			p.log.Info("outbox delivery failed; retrying next interval", zap.String("intent", intent.ID), zap.String("instance", intent.InstanceID), zap.Error(err))
			var po azcosmos.PatchOperations
			po.AppendIncrement("/attemptCount", 1)
			po.AppendSet("/lastAttemptAt", p.nowMs())
			_, _ = p.patchDoc(ctx, intent.InstanceID, intent.ID, po, idempotentWrite)
			continue
		}
		n++
	}
	p.metrics.delivered(n)
	return n, nil
}
