package runtime

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Ack retries of duroxide's ack_orchestration_with_changes: up to 5 retries
// of a retryable failure, 10ms doubling.
const (
	ackMaxRetries   = 5
	ackRetryBase    = 10 * time.Millisecond
	abandonOnFailed = 50 * time.Millisecond
)

// orchestrationLoop is one orchestration dispatcher goroutine: fetch a
// turn, decide it, hand its commit to an ack pipeline (at most one commit
// behind), until the runtime stops.
func (r *Runtime) orchestrationLoop(workerID string, proc *turnProcessor) {
	filter := r.opts.capabilityFilter()
	acks := newAckPipeline()
	defer acks.close()
	pollLoop(r, workerID, "orchestration item", func() (*duroxide.OrchestrationItem, error) {
		return r.provider.FetchOrchestrationItem(r.fetchCtx, r.opts.OrchestratorLockTimeout, r.opts.LongPollTimeout, &filter)
	}, func(item *duroxide.OrchestrationItem) { r.processOrchestrationItem(workerID, item, proc, acks) })
}

// processOrchestrationItem runs one turn under a renewed lock, then commits
// or abandons it through acks: the dispatcher fetches its next turn while
// the commit is on its way. The instance stays locked (and the lock
// renewed) until the commit finishes, so no other turn of it can start
// before; a crash before the commit redelivers the turn (peek-lock).
func (r *Runtime) processOrchestrationItem(workerID string, item *duroxide.OrchestrationItem, proc *turnProcessor, acks *ackPipeline) {
	processed := r.metrics.orchestrationFetched()
	renewCtx, stopRenewal := context.WithCancel(r.runCtx)
	renewalDone := make(chan struct{})
	go func() {
		defer close(renewalDone)
		r.renewOrchestrationLock(renewCtx, item.LockToken)
	}()

	tc := orchestrationTraceContext(item)
	turnCtx, span := r.tracing.startTurn(r.runCtx, item, tc, workerID)
	d := proc.decide(item)
	propagate(span, tc, &d)
	acks.run(r, func() {
		defer processed()
		defer span.End()
		defer func() {
			stopRenewal()
			<-renewalDone
		}()
		r.commitTurn(turnCtx, item, d)
	})
}

// commitTurn commits (or abandons) the decided turn d of item.
func (r *Runtime) commitTurn(turnCtx context.Context, item *duroxide.OrchestrationItem, d turnDecision) {
	if d.abandon {
		if err := r.abandonTurn(item.LockToken, d); err != nil && r.runCtx.Err() == nil {
			r.logger.Warn("abandon orchestration item failed", "instance", item.Instance, "error", err)
		}
		return
	}
	err := r.ackCounted(turnCtx, item, d)
	if d.poison {
		r.reportPoisonDisposition(item, err)
	}
	if err != nil {
		// The execution the turn cached did not commit: the next turn
		// would not match it anyway, drop it now.
		r.sticky.discard(item.Instance, stickyEvictFailed)
	}
	if err != nil && r.isForced() && r.runCtx.Err() != nil {
		// A forced shutdown cut the commit short: release the turn so that
		// another runtime takes it at once, without counting an attempt
		// (shutdown.go). An ack that landed before the cut leaves nothing
		// to abandon, and the abandon fails harmlessly.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.runCtx), abandonTimeout)
		defer cancel()
		if aerr := r.provider.AbandonOrchestrationItem(ctx, item.LockToken, 0, true); aerr != nil {
			r.logger.Debug("abandon of a turn cut short by shutdown failed", "instance", item.Instance, "error", aerr)
		}
		return
	}
	if err == nil || r.runCtx.Err() != nil {
		return
	}
	// The turn cannot be committed: fail the orchestration with the
	// provider's error as an infrastructure failure (duroxide's path), and
	// release the lock when even that cannot be written. The failure
	// commit carries the turn's collision notices: the colliding parents'
	// starts are consumed by it and would otherwise never be answered.
	r.logger.Warn("failed to ack orchestration item, failing orchestration", "instance", item.Instance, "error", err)
	pe, _ := asProviderError(err)
	h := newHistoryManager(item.History)
	h.appendNew(item.Instance, d.ack.executionID, nil, duroxide.OrchestrationFailed{Details: pe.ToInfrastructureError()})
	failure := ackRequest{executionID: d.ack.executionID, historyDelta: h.delta, orchestratorItems: d.collisions, metadata: computeMetadata(h.delta)}
	err2 := r.ackCounted(turnCtx, item, turnDecision{ack: failure})
	if err2 != nil && r.runCtx.Err() == nil {
		r.logger.Warn("failed to commit orchestration failure, abandoning lock", "instance", item.Instance, "error", err2)
		_ = r.provider.AbandonOrchestrationItem(r.runCtx, item.LockToken, abandonOnFailed, false)
	}
}

// reportPoisonDisposition says what became of a poison disposition: a
// committed one took the message out of circulation (counted in
// duroxide_orchestration_poison_total by the ack); one whose ack failed
// (typically its lease had expired) did not, so it is counted in
// duroxide_orchestration_poison_failed_total instead and logged as an
// error saying the message stays in circulation (duroxide main,
// tests/poison_disposition_tests.rs).
func (r *Runtime) reportPoisonDisposition(item *duroxide.OrchestrationItem, err error) {
	if err == nil {
		r.logger.Warn("orchestration failed as poison message", "instance", item.Instance, "attempt_count", item.AttemptCount)
		return
	}
	if r.runCtx.Err() != nil {
		return // shutting down: the ack was cut short, not refused
	}
	r.metrics.poisonFailed(false)
	r.logger.Error("poison disposition failed to commit; the message was not poisoned and stays in circulation",
		"instance", item.Instance, "attempt_count", item.AttemptCount, "max_attempts", r.opts.MaxAttempts, "error", err)
}

// abandonTurn abandons the turn d decided not to run. A start abandoned
// with a pending reason goes through the provider's
// duroxide.PendingReasonRecorder when it has one (the same one request as
// an abandon), so that the instance's status says why it has not run.
func (r *Runtime) abandonTurn(token string, d turnDecision) error {
	if d.pendingReason == "" || r.reasons == nil {
		return r.provider.AbandonOrchestrationItem(r.runCtx, token, d.delay, false)
	}
	return r.reasons.AbandonOrchestrationItemWithReason(r.runCtx, token, d.delay, false, d.pendingReason)
}

// ackCounted commits turn d of item (ackWithRetry) and records it in the
// metrics. The turn is counted before the ack: the ack releases the
// instance, and its next turn (on another dispatcher) may commit and
// complete the execution before this one is recorded; a failed ack takes
// the count back.
func (r *Runtime) ackCounted(ctx context.Context, item *duroxide.OrchestrationItem, d turnDecision) error {
	key := executionKey{item.Instance, d.ack.executionID}
	turns := r.metrics.countTurn(key)
	err := r.ackWithRetry(ctx, item.LockToken, d.ack)
	if err != nil {
		r.metrics.uncountTurn(key)
		return err
	}
	r.metrics.turnCommitted(item, d, turns)
	r.metrics.eventsDropped(item, d.droppedEvents)
	if r.opts.OnTurnCommitted != nil && len(d.ack.historyDelta) > 0 {
		r.opts.OnTurnCommitted(item.Instance, d.ack.executionID, slices.Clone(d.ack.historyDelta))
	}
	return nil
}

// ackWithRetry commits a turn, retrying retryable failures; after the last
// retry it abandons the item and returns the error. ctx is the turn's
// (r.runCtx carrying the turn's span).
func (r *Runtime) ackWithRetry(ctx context.Context, token string, a ackRequest) error {
	for attempt := 0; ; attempt++ {
		err := r.provider.AckOrchestrationItem(ctx, token, a.executionID, a.historyDelta, a.workerItems,
			a.orchestratorItems, a.metadata, a.cancelledActivities)
		if err == nil || r.runCtx.Err() != nil || !duroxide.IsRetryable(err) {
			return err
		}
		if attempt >= ackMaxRetries {
			r.logger.Warn("ack failed after max retries, abandoning", "error", err)
			_ = r.provider.AbandonOrchestrationItem(r.runCtx, token, abandonOnFailed, false)
			return err
		}
		r.logger.Warn("ack_orchestration_item failed; retrying", "attempt", attempt, "error", err)
		r.idle(ackRetryBase << attempt)
	}
}

// renewOrchestrationLock extends a turn's lock until ctx ends or a renewal
// fails (the lock is gone).
func (r *Runtime) renewOrchestrationLock(ctx context.Context, token string) {
	every(ctx, renewalInterval(r.opts.OrchestratorLockTimeout, r.opts.OrchestratorLockRenewalBuffer), func() bool {
		if err := r.provider.RenewOrchestrationItemLock(ctx, token, r.opts.OrchestratorLockTimeout); err != nil {
			r.logger.Debug("failed to renew orchestration lock (acked, abandoned or expired)", "error", err)
			return false
		}
		return true
	})
}

// asProviderError returns err as a *duroxide.ProviderError, wrapping errors
// of other types as retryable ack failures.
func asProviderError(err error) (*duroxide.ProviderError, bool) {
	var pe *duroxide.ProviderError
	if errors.As(err, &pe) {
		return pe, true
	}
	return duroxide.WrapError("ack_orchestration_item", true, err), false
}
