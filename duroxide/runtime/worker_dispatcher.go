package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Cancellation causes of an activity's context.
var (
	errLockLost             = errors.New("runtime: activity lock lost (cancelled or expired)")
	errOrchestrationStopped = errors.New("runtime: the activity's orchestration is no longer running")
	errLockExpired          = errors.New("runtime: activity lock expired while its renewal kept failing")
)

// sessionCapacityBackoff delays an item fetched past the session cap.
const sessionCapacityBackoff = 100 * time.Millisecond

// abandonTimeout bounds the abandon of a work item during a forced shutdown,
// which runs after the runtime's context is gone.
const abandonTimeout = 5 * time.Second

// inflightActivity is a running activity Shutdown can cancel.
type inflightActivity struct {
	cancel context.CancelCauseFunc
}

// workerLoop is one worker goroutine: fetch an activity, run it (fetching
// the next one meanwhile: workPrefetch), ack its result, until the runtime
// stops.
func (r *Runtime) workerLoop(workerID, sessionOwner string, sessions *sessionTracker) {
	acks := newAckPipeline()
	defer acks.close()
	prefetch := newWorkPrefetch(r, func() (*duroxide.LockedWorkItem, error) {
		var session *duroxide.SessionFetchConfig
		if sessions.distinct() < r.opts.MaxSessionsPerRuntime {
			session = &duroxide.SessionFetchConfig{OwnerID: sessionOwner, LockTimeout: r.opts.SessionLockTimeout}
		}
		return r.provider.FetchWorkItem(r.fetchCtx, r.opts.WorkerLockTimeout, r.opts.LongPollTimeout, session, r.opts.TagFilter)
	})
	defer prefetch.close()
	pollLoop(r, workerID, "work item", prefetch.next, func(locked *duroxide.LockedWorkItem) {
		prefetch.process(func() { r.processWorkItem(workerID, locked, sessions, acks) })
	})
}

func (r *Runtime) processWorkItem(workerID string, locked *duroxide.LockedWorkItem, sessions *sessionTracker, acks *ackPipeline) {
	r.metrics.workItemFetched()
	item, ok := locked.Item.Kind.(duroxide.ActivityExecuteItem)
	if !ok {
		r.logger.Error("unexpected work item on the worker queue; dropping it", "type", locked.Item.Type())
		_ = r.provider.AckWorkItem(r.runCtx, locked.LockToken, nil)
		return
	}
	if item.SessionID != nil {
		sessions.acquire(*item.SessionID)
		defer sessions.release(*item.SessionID)
		if sessions.distinct() > r.opts.MaxSessionsPerRuntime {
			_ = r.provider.AbandonWorkItem(r.runCtx, locked.LockToken, sessionCapacityBackoff, true)
			return
		}
	}
	if locked.AttemptCount > r.opts.MaxAttempts {
		r.poisonActivity(locked, item)
		return
	}
	fn, ok := r.resolveActivity(item.Name)
	if !ok {
		delay := r.opts.UnregisteredBackoff.Delay(locked.AttemptCount)
		r.logger.Warn("activity not registered, abandoning with backoff", "activity_name", item.Name,
			"instance", item.Instance, "attempt_count", locked.AttemptCount, "backoff", delay)
		if r.opts.OnUnregistered != nil {
			r.opts.OnUnregistered("activity", item.Name, item.Instance)
		}
		_ = r.provider.AbandonWorkItem(r.runCtx, locked.LockToken, delay, false)
		return
	}
	r.executeActivity(workerID, locked, item, fn, acks)
}

// poisonActivity fails an activity fetched more than MaxAttempts times.
func (r *Runtime) poisonActivity(locked *duroxide.LockedWorkItem, item duroxide.ActivityExecuteItem) {
	serialized, err := json.Marshal(locked.Item)
	if err != nil {
		serialized = []byte(fmt.Sprintf("%s#%d", item.Name, item.ID))
	}
	r.logger.Warn("activity message exceeded max attempts, marking as poison", "instance", item.Instance,
		"activity_name", item.Name, "activity_id", item.ID, "attempt_count", locked.AttemptCount)
	d := duroxide.ErrorDetails{Poison: &duroxide.PoisonDetails{
		AttemptCount: locked.AttemptCount, MaxAttempts: r.opts.MaxAttempts,
		MessageType: duroxide.PoisonMessageType{Activity: &duroxide.PoisonActivity{
			Instance: item.Instance, ExecutionID: item.ExecutionID, ActivityName: item.Name, ActivityID: item.ID,
		}},
		Message: string(serialized),
	}}
	if _, ok := r.resolveActivity(item.Name); !ok {
		d.Poison.Message = withNote(notRegisteredNote("activity", item.Name), d.Poison.Message)
	}
	completion := duroxide.WorkItem{Kind: duroxide.ActivityFailedItem{Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID, Details: d}}
	err = r.provider.AckWorkItem(r.runCtx, locked.LockToken, &completion)
	if err == nil {
		r.metrics.activity(item, "poison", 0)
	} else if r.runCtx.Err() == nil {
		r.metrics.poisonFailed(true)
		r.logger.Error("poison disposition failed to commit; the activity was not poisoned and stays in circulation",
			"instance", item.Instance, "activity_name", item.Name, "activity_id", item.ID, "error", err)
	}
}

type activityOutcome struct {
	result string
	err    error
}

// executeActivity runs the activity under a renewed lock with cooperative
// cancellation and acks its outcome through acks.
func (r *Runtime) executeActivity(workerID string, locked *duroxide.LockedWorkItem, item duroxide.ActivityExecuteItem, fn ActivityFunc, acks *ackPipeline) {
	spanCtx, span := r.tracing.startActivity(r.runCtx, item, workerID)
	var traced *duroxide.WorkItem // the completion, for the span's status
	handedOff := false            // the ack's goroutine ends the span
	defer func() {
		if !handedOff {
			endActivity(span, traced)
		}
	}()
	actCtx, cancel := context.WithCancelCause(spanCtx)
	defer cancel(nil)
	handle := &inflightActivity{cancel: cancel}
	r.mu.Lock()
	r.inflight[handle] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.inflight, handle)
		r.mu.Unlock()
	}()

	renewCtx, stopRenewal := context.WithCancel(r.runCtx)
	var renewal sync.WaitGroup
	renewal.Add(1)
	go func() {
		defer renewal.Done()
		r.renewWorkItemLock(renewCtx, locked.LockToken, cancel)
	}()
	defer func() {
		stopRenewal()
		renewal.Wait()
	}()

	ac := &ActivityContext{
		Context: actCtx, instanceID: item.Instance, executionID: item.ExecutionID,
		activityName: item.Name, activityID: item.ID, workerID: workerID, attemptCount: locked.AttemptCount,
		client: r.client, logger: r.logger,
	}
	if item.SessionID != nil {
		ac.sessionID = *item.SessionID
	}
	if item.Tag != nil {
		ac.tag = *item.Tag
	}
	ac.describe = func() (string, string) { return r.orchestrationDescriptor(actCtx, item.Instance) }

	done := make(chan activityOutcome, 1)
	started := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- activityOutcome{err: fmt.Errorf("activity panicked: %v", p)}
			}
		}()
		res, err := fn(ac, item.Input)
		done <- activityOutcome{result: res, err: err}
	}()

	var out activityOutcome
	returned := false
	select {
	case out = <-done:
		returned = true
	case <-actCtx.Done():
	}
	if actCtx.Err() != nil {
		// Nobody wants the result any more (or the runtime is stopping):
		// an error the cancellation provoked must not be recorded.
		r.cancelledActivity(locked, item, actCtx, done, returned)
		r.metrics.activity(item, "cancelled", time.Since(started))
		return
	}
	elapsed := time.Since(started)
	stopRenewal()
	var completion duroxide.WorkItem
	if out.err != nil {
		r.logger.Warn("activity failed (application error)", "instance", item.Instance, "activity_name", item.Name,
			"activity_id", item.ID, "error", out.err)
		completion = duroxide.WorkItem{Kind: duroxide.ActivityFailedItem{Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID,
			Details: duroxide.ApplicationError(duroxide.AppErrorActivityFailed, activityFailureMessage(out.err))}}
	} else {
		completion = duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: item.Instance, ExecutionID: item.ExecutionID, ID: item.ID, Result: out.result}}
	}
	traced = &completion
	handedOff = true
	acks.run(r, func() {
		defer endActivity(span, traced)
		err := r.provider.AckWorkItem(spanCtx, locked.LockToken, &completion)
		if err == nil {
			r.metrics.activityDone(item, completion, elapsed)
		}
		if err != nil && r.runCtx.Err() == nil {
			r.logger.Warn("worker: atomic ack failed, abandoning work item", "instance", item.Instance, "activity_id", item.ID, "error", err)
			_ = r.provider.AbandonWorkItem(r.runCtx, locked.LockToken, 100*time.Millisecond, false)
		}
	})
}

// cancelledActivity handles an activity whose context was cancelled before
// it returned: it waits up to the grace period, then drops the result
// (duroxide acks the item without a completion); on a forced shutdown the
// item is abandoned for another runtime instead, and when the runtime was
// killed or the lock expired nothing more is written (the item is fetched
// again once its lock has expired).
func (r *Runtime) cancelledActivity(locked *duroxide.LockedWorkItem, item duroxide.ActivityExecuteItem, actCtx context.Context, done <-chan activityOutcome, returned bool) {
	cause := context.Cause(actCtx)
	r.logger.Info("activity cancelled", "instance", item.Instance,
		"activity_name", item.Name, "activity_id", item.ID, "cause", cause, "grace", r.opts.ActivityCancellationGracePeriod)
	if !returned {
		grace := time.NewTimer(r.opts.ActivityCancellationGracePeriod)
		defer grace.Stop()
		select {
		case <-done:
		case <-grace.C:
			r.logger.Warn("activity did not return within its grace period; its goroutine is abandoned", "instance", item.Instance, "activity_id", item.ID)
		case <-r.runCtx.Done():
		}
	}
	switch {
	case errors.Is(cause, errShutdown):
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.runCtx), abandonTimeout)
		defer cancel()
		_ = r.provider.AbandonWorkItem(ctx, locked.LockToken, 0, true)
	case r.runCtx.Err() != nil:
		// killed: leave the lock to expire
	case errors.Is(cause, errLockExpired):
		// the lock is gone: the item is fetched again, nothing to write
	default:
		_ = r.provider.AckWorkItem(r.runCtx, locked.LockToken, nil)
	}
}

// renewWorkItemLock extends an activity's lock until ctx ends. A renewal
// that reports the orchestration terminal or gone cancels the activity
// (its item is then acked without a completion); a permanent renewal error
// (the item was removed: cancelled, or the lock was lost) cancels it too.
// A retryable error never ends the activity by itself: renewal is retried
// sooner, and only when the lock has expired by this process's clock is the
// activity stopped, with errLockExpired, leaving the item for another fetch.
func (r *Runtime) renewWorkItemLock(ctx context.Context, token string, cancel context.CancelCauseFunc) {
	timeout := r.opts.WorkerLockTimeout
	interval := renewalInterval(timeout, r.opts.WorkerLockRenewalBuffer)
	retry := renewalRetryInterval(interval)
	lockedUntil := time.Now().Add(timeout)
	next := time.NewTimer(interval)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-next.C:
		}
		attempted := time.Now()
		state, err := r.provider.RenewWorkItemLock(ctx, token, timeout)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && duroxide.IsRetryable(err):
			if !time.Now().Before(lockedUntil) {
				r.logger.Warn("activity lock expired while its renewal kept failing; stopping the activity, its work item will be fetched again",
					"error", err)
				cancel(errLockExpired)
				return
			}
			r.logger.Warn("activity lock renewal failed with a retryable error; retrying", "error", err,
				"retry_in", retry, "lock_valid_for", time.Until(lockedUntil).Round(time.Millisecond))
			next.Reset(retry)
			continue
		case err != nil:
			r.logger.Info("lock renewal failed, signalling activity cancellation", "error", err)
			cancel(errLockLost)
			return
		case state.Kind != duroxide.ExecutionRunning:
			r.logger.Info("orchestration no longer running, signalling activity cancellation", "state", state.String())
			cancel(errOrchestrationStopped)
			return
		}
		lockedUntil = attempted.Add(timeout)
		next.Reset(interval)
	}
}

// renewalRetryInterval is the delay before another renewal after a
// retryable failure: a quarter of the renewal interval, at most 1 s and at
// least 1 ms, so several attempts fit in the lock's remaining time.
func renewalRetryInterval(interval time.Duration) time.Duration {
	return max(min(interval/4, time.Second), time.Millisecond)
}

// orchestrationDescriptor returns the name and version of instance's
// latest OrchestrationStarted, or "unknown" for both (duroxide reads them
// for every activity; here only when the activity asks).
func (r *Runtime) orchestrationDescriptor(ctx context.Context, instance string) (name, version string) {
	hist, err := r.provider.Read(ctx, instance)
	if err == nil {
		for i := len(hist) - 1; i >= 0; i-- {
			if s, ok := hist[i].Kind.(duroxide.OrchestrationStarted); ok {
				return s.Name, s.Version
			}
		}
	}
	return "unknown", "unknown"
}
