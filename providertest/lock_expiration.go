package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// lockExpirationCases ports duroxide's src/provider_validation/lock_expiration.rs; see README.md for
// the table from each Rust test to its Go function.
var lockExpirationCases = []Case{
	{"test_lock_expires_after_timeout", LockExpiresAfterTimeout},
	{"test_abandon_releases_lock_immediately", AbandonReleasesLockImmediately},
	{"test_lock_renewal_on_ack", LockRenewalOnAck},
	{"test_concurrent_lock_attempts_respect_expiration", ConcurrentLockAttemptsRespectExpiration},
	{"test_worker_lock_renewal_success", WorkerLockRenewalSuccess},
	{"test_worker_lock_renewal_invalid_token", WorkerLockRenewalInvalidToken},
	{"test_worker_lock_renewal_after_expiration", WorkerLockRenewalAfterExpiration},
	{"test_worker_lock_renewal_extends_timeout", WorkerLockRenewalExtendsTimeout},
	{"test_worker_lock_renewal_after_ack", WorkerLockRenewalAfterAck},
	{"test_abandon_work_item_releases_lock", AbandonWorkItemReleasesLock},
	{"test_abandon_work_item_with_delay", AbandonWorkItemWithDelay},
	{"test_worker_ack_fails_after_lock_expiry", WorkerAckFailsAfterLockExpiry},
	{"test_orchestration_lock_renewal_after_expiration", OrchestrationLockRenewalAfterExpiration},
	{"test_fetch_never_returns_expired_lock", FetchNeverReturnsExpiredLock},
	{"test_failed_abandon_redelivers_at_lock_expiry", FailedAbandonRedeliversAtLockExpiry},
}

// LockExpiresAfterTimeout checks that an instance lock expires after the
// lock timeout, that the next fetch gets a new token, and that an ack with
// the expired token fails (duroxide's test_lock_expires_after_timeout).
func LockExpiresAfterTimeout(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	item, _ := lockingExpireAndRefetch(t, f, p, "instance-A")

	err := p.AckOrchestrationItem(t.Context(), item.LockToken, 1, nil, nil, nil, duroxide.ExecutionMetadata{}, nil)
	requirePermanent(t, err, "the expired lock token must no longer work")
}

// AbandonReleasesLockImmediately checks that abandoning an orchestration
// item releases its lock without waiting for expiry (duroxide's
// test_abandon_releases_lock_immediately).
func AbandonReleasesLockImmediately(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	item := fetchOrch(t, p, lockTimeout)
	requireNoOrch(t, p, lockTimeout, "the lock should be held")

	require.NoError(t, p.AbandonOrchestrationItem(t.Context(), item.LockToken, 0, false))

	item2 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, "instance-A", item2.Instance)
}

// LockRenewalOnAck checks that a message enqueued while an instance is
// locked stays invisible until the ack, and is fetchable right after it
// (duroxide's test_lock_renewal_on_ack).
func LockRenewalOnAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	item := fetchOrch(t, p, lockTimeout)
	requireNoOrch(t, p, lockTimeout, "the lock should be held")

	enqueueOrch(t, p, startItem("instance-A"))
	requireNoOrch(t, p, lockTimeout, "the new message must wait for the lock")

	ackTurn(t, p, item.LockToken, 1,
		[]duroxide.Event{startedEvent("instance-A", duroxide.InitialEventID, 1, testOrch, testOrchVersion)}, duroxide.ExecutionMetadata{})

	item2 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, "instance-A", item2.Instance, "the new message should be fetchable right after the ack")
}

// ConcurrentLockAttemptsRespectExpiration checks that concurrent fetchers
// all see a held lock, and that the instance is fetchable once the lock
// expired (duroxide's test_concurrent_lock_attempts_respect_expiration).
func ConcurrentLockAttemptsRespectExpiration(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))
	fetchOrch(t, p, lockTimeout)
	lockedAt := time.Now()

	// Five fetchers, staggered over the first fifth of the lock timeout.
	for i, item := range lockingConcurrentFetches(t, p, 5, lockTimeout/20, lockTimeout) {
		require.Nil(t, item, "fetcher %d must not get the locked instance", i)
	}

	time.Sleep(time.Until(lockedAt.Add(lockTimeout + lockingExpiryMargin)))

	item2 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, "instance-A", item2.Instance)
}

// WorkerLockRenewalSuccess checks that a worker lock can be renewed with its
// token and that the item stays locked (duroxide's
// test_worker_lock_renewal_success).
func WorkerLockRenewalSuccess(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-instance", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)
	lockingRequireNoWork(t, p, lockTimeout, "the item should be locked")

	time.Sleep(lockTimeout / 10) // activity in progress

	_, err := p.RenewWorkItemLock(t.Context(), item.LockToken, lockTimeout)
	require.NoError(t, err, "renewing a held worker lock")
	lockingRequireNoWork(t, p, lockTimeout, "the item should still be locked")
}

// WorkerLockRenewalInvalidToken checks that renewing an unknown worker lock
// token fails (duroxide's test_worker_lock_renewal_invalid_token).
func WorkerLockRenewalInvalidToken(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	_, err := p.RenewWorkItemLock(t.Context(), "invalid-token-123", longLock)
	requirePermanent(t, err, "renewal should fail with an invalid token")
}

// WorkerLockRenewalAfterExpiration checks that an expired worker lock cannot
// be renewed (duroxide's test_worker_lock_renewal_after_expiration; duroxide
// fetches with a fixed 1 s lock and sleeps for the factory's lock timeout,
// here both are the factory's).
func WorkerLockRenewalAfterExpiration(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-instance", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)

	sleepPastLockTimeout(f)

	_, err := p.RenewWorkItemLock(t.Context(), item.LockToken, lockTimeout)
	requirePermanent(t, err, "renewing an expired lock should fail")
}

// WorkerLockRenewalExtendsTimeout checks that a renewal at 60% of the lock
// timeout keeps the item locked past the original expiry (duroxide's
// test_worker_lock_renewal_extends_timeout).
func WorkerLockRenewalExtendsTimeout(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	const instance = "test-lock-renewal-extends"

	enqueueOrch(t, p, startItem(instance))
	orch := fetchOrch(t, p, longLock)
	err := p.AckOrchestrationItem(t.Context(), orch.LockToken, duroxide.InitialExecutionID,
		[]duroxide.Event{startedEvent(instance, duroxide.InitialEventID, duroxide.InitialExecutionID, testOrch, testOrchVersion)},
		[]duroxide.WorkItem{lockingActivityExecute(instance, duroxide.InitialExecutionID, 1, "TestActivity", "test")},
		nil,
		duroxide.ExecutionMetadata{
			OrchestrationName: duroxide.StringPtr("TestOrch"),
			Status:            duroxide.StringPtr(duroxide.StatusRunning),
		}, nil)
	require.NoError(t, err, "ack_orchestration_item")

	item := lockingFetchWork(t, p, lockTimeout)
	fetchedAt := time.Now()

	time.Sleep(time.Until(fetchedAt.Add(lockTimeout * 6 / 10)))
	_, err = p.RenewWorkItemLock(t.Context(), item.LockToken, lockTimeout)
	require.NoError(t, err, "renewing at 0.6x the lock timeout")

	// Past the original expiry; the renewal extended the lock to ~1.6x.
	time.Sleep(time.Until(fetchedAt.Add(lockTimeout + lockingExpiryMargin)))
	lockingRequireNoWork(t, p, lockTimeout, "the item should still be locked after the renewal")
}

// WorkerLockRenewalAfterAck checks that a worker lock cannot be renewed once
// the item was acked (duroxide's test_worker_lock_renewal_after_ack).
func WorkerLockRenewalAfterAck(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-instance", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)
	lockingAckWork(t, p, item.LockToken, lockingActivityCompleted("test-instance", 1, 1, "done"))

	_, err := p.RenewWorkItemLock(t.Context(), item.LockToken, lockTimeout)
	requirePermanent(t, err, "renewal should fail after the ack")
}

// AbandonWorkItemReleasesLock checks that abandoning a worker item makes it
// fetchable at once, under a new token (duroxide's
// test_abandon_work_item_releases_lock).
func AbandonWorkItemReleasesLock(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-abandon-work", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, duroxide.WorkItemActivityExecute, item.Item.Type())
	lockingRequireNoWork(t, p, lockTimeout, "the item should be locked")

	require.NoError(t, p.AbandonWorkItem(t.Context(), item.LockToken, 0, false))

	item2 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, duroxide.WorkItemActivityExecute, item2.Item.Type())
	require.NotEqual(t, item.LockToken, item2.LockToken, "should have a new lock token")

	lockingAckWork(t, p, item2.LockToken, lockingActivityCompleted("test-abandon-work", 1, 1, "done"))
}

// AbandonWorkItemWithDelay checks that a worker item abandoned with a delay
// stays invisible until the delay passed (duroxide's
// test_abandon_work_item_with_delay; the delay is half the lock timeout
// instead of a fixed 500 ms).
func AbandonWorkItemWithDelay(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("test-abandon-delay", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)

	delay := lockTimeout / 2
	require.NoError(t, p.AbandonWorkItem(t.Context(), item.LockToken, delay, false))
	lockingRequireNoWork(t, p, lockTimeout, "the item should be delayed, not immediately available")

	time.Sleep(delay + lockingExpiryMargin)

	item2 := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, duroxide.WorkItemActivityExecute, item2.Item.Type())
	lockingAckWork(t, p, item2.LockToken, lockingActivityCompleted("test-abandon-delay", 1, 1, "done"))
}

// WorkerAckFailsAfterLockExpiry checks that acking a worker item whose lock
// expired fails even when no one took it over, and that the item stays
// queued (duroxide's test_worker_ack_fails_after_lock_expiry; the lock is
// the factory's lock timeout instead of a fixed 1 s).
func WorkerAckFailsAfterLockExpiry(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	lockingEnqueueWorker(t, p, lockingActivityExecute("ack-expiry-test", 1, 1, "TestActivity", "test"))
	item := lockingFetchWork(t, p, lockTimeout)

	time.Sleep(lockTimeout + 2*lockingExpiryMargin)

	completion := lockingActivityCompleted("ack-expiry-test", 1, 1, "done")
	err := p.AckWorkItem(t.Context(), item.LockToken, &completion)
	requirePermanent(t, err, "the ack must fail when the worker lock has expired")

	refetched := lockingFetchWork(t, p, lockTimeout)
	require.Equal(t, duroxide.WorkItemActivityExecute, refetched.Item.Type(),
		"the item should still be refetchable after the expired ack was rejected")
}

// OrchestrationLockRenewalAfterExpiration checks that an expired instance
// lock cannot be renewed (duroxide's
// test_orchestration_lock_renewal_after_expiration).
func OrchestrationLockRenewalAfterExpiration(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("orch-renewal-expiry"))
	item := fetchOrch(t, p, lockTimeout)

	sleepPastLockTimeout(f)

	err := p.RenewOrchestrationItemLock(t.Context(), item.LockToken, lockTimeout)
	requirePermanent(t, err, "renewing an expired orchestration lock should fail")
}

// FetchNeverReturnsExpiredLock checks duroxide main's rule that a fetch
// never returns a lock or session lease that has already expired (no
// Rust validation test of this name). A lock timeout or session lease
// under 1 ms would expire before any fetch returns: such a fetch returns
// no item (or an error), the attempt is not counted, and the work is
// fetched whole by the next fetch. A long-polling fetch that waited longer
// than its lock timeout before the work arrived returns a lock that still
// holds: the lock runs from when it was taken, not from when the fetch
// began (long-polling providers only).
func FetchNeverReturnsExpiredLock(t *testing.T, f Factory) {
	t.Run("orchestration", func(t *testing.T) {
		t.Parallel()
		p := f.NewProvider(t)
		enqueueOrch(t, p, startItem("expired-lock-orch"))
		item, err := p.FetchOrchestrationItem(t.Context(), 500*time.Microsecond, 0, nil)
		if err == nil {
			require.Nil(t, item, "a 0.5 ms lock would have expired before the fetch returned")
		}
		item = fetchOrch(t, p, longLock)
		require.Equal(t, "expired-lock-orch", item.Instance)
		require.Len(t, item.Messages, 1)
		require.Equal(t, uint32(1), item.AttemptCount, "the fetch that returned nothing did not count an attempt")
	})
	t.Run("work item and session", func(t *testing.T) {
		t.Parallel()
		p := f.NewProvider(t)
		lockingEnqueueWorker(t, p, lockingActivityExecute("expired-lock-work", 1, 1, "TestActivity", "plain"))
		w, err := p.FetchWorkItem(t.Context(), 500*time.Microsecond, 0, nil, duroxide.TagFilterDefaultOnly())
		if err == nil {
			require.Nil(t, w, "a 0.5 ms lock would have expired before the fetch returned")
		}
		w = lockingFetchWork(t, p, longLock)
		require.Equal(t, uint32(1), w.AttemptCount, "the fetch that returned nothing did not count an attempt")

		require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("expired-lease", 2, "s1")))
		short := &duroxide.SessionFetchConfig{OwnerID: "worker-a", LockTimeout: 500 * time.Microsecond}
		w, err = p.FetchWorkItem(t.Context(), longLock, 0, short, duroxide.TagFilterDefaultOnly())
		if err == nil {
			require.Nil(t, w, "a 0.5 ms session lease would have expired before the fetch returned")
		}
		w = sessFetch(t, p, &duroxide.SessionFetchConfig{OwnerID: "worker-b", LockTimeout: longLock})
		require.NotNil(t, w, "no session was claimed: another worker takes the item")
		require.Equal(t, uint32(1), w.AttemptCount)
	})
	t.Run("long poll", func(t *testing.T) {
		t.Parallel()
		if !supportsLongPolling(f) {
			t.Skip("skipped: a short-polling provider returns before its lock could lapse")
		}
		p := f.NewProvider(t)
		lock := f.LockTimeout()
		go func() {
			time.Sleep(lock + lock/2)
			_ = p.EnqueueForOrchestrator(context.Background(), startItem("expired-lock-poll"), 0)
			_ = p.EnqueueForWorker(context.Background(), sessItem("expired-lock-poll", 1, "s-poll"))
		}()
		item, err := p.FetchOrchestrationItem(t.Context(), lock, 4*lock, nil)
		require.NoError(t, err)
		require.NotNil(t, item, "the work arrived within the poll timeout")
		require.NoError(t, p.RenewOrchestrationItemLock(t.Context(), item.LockToken, lock),
			"the lock runs from when it was taken, not from when the fetch began")
		cfg := &duroxide.SessionFetchConfig{OwnerID: "poller", LockTimeout: lock}
		w, err := p.FetchWorkItem(t.Context(), lock, 4*lock, cfg, duroxide.TagFilterDefaultOnly())
		require.NoError(t, err)
		require.NotNil(t, w)
		_, err = p.RenewWorkItemLock(t.Context(), w.LockToken, lock)
		require.NoError(t, err, "the work item's lock still holds")
		n, err := p.RenewSessionLock(t.Context(), []string{"poller"}, lock, longLock)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the session lease still holds")
	})
}

// FailedAbandonRedeliversAtLockExpiry checks duroxide main's rule that an
// abandon that fails changes nothing (no Rust validation test of this
// name): the item stays locked until its lock expires, then is fetched
// under a new token with its attempt count kept (2 on the second fetch),
// for an orchestration turn and a work item. The abandon here fails for
// its token (a provider's own tests fail it in transit too).
func FailedAbandonRedeliversAtLockExpiry(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	lock := f.LockTimeout()
	enqueueOrch(t, p, startItem("failed-abandon"))
	lockingEnqueueWorker(t, p, lockingActivityExecute("failed-abandon", 1, 1, "TestActivity", "x"))
	item := fetchOrch(t, p, lock)
	w := lockingFetchWork(t, p, lock)

	require.Error(t, p.AbandonOrchestrationItem(ctx, item.LockToken+"-not-the-lock", 0, false))
	require.Error(t, p.AbandonWorkItem(ctx, w.LockToken+"-not-the-lock", 0, false))
	requireNoOrch(t, p, lock, "a failed abandon leaves the turn locked")
	lockingRequireNoWork(t, p, lock, "a failed abandon leaves the work item locked")

	sleepPastLockTimeout(f)
	again := fetchOrch(t, p, longLock)
	require.Equal(t, item.Instance, again.Instance)
	require.NotEqual(t, item.LockToken, again.LockToken, "redelivered under a new token")
	require.Equal(t, uint32(2), again.AttemptCount, "the attempt count is kept and counts the redelivery")
	w2 := lockingFetchWork(t, p, longLock)
	require.NotEqual(t, w.LockToken, w2.LockToken, "redelivered under a new token")
	require.Equal(t, uint32(2), w2.AttemptCount, "the attempt count is kept and counts the redelivery")
}
