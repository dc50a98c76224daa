package providertest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// sessionsCases ports duroxide's src/provider_validation/sessions.rs; see README.md for
// the table from each Rust test to its Go function.
var sessionsCases = []Case{
	{"test_non_session_items_fetchable_by_any_worker", NonSessionItemsFetchableByAnyWorker},
	{"test_session_item_claimable_when_no_session", SessionItemClaimableWhenNoSession},
	{"test_session_affinity_same_worker", SessionAffinitySameWorker},
	{"test_session_affinity_blocks_other_worker", SessionAffinityBlocksOtherWorker},
	{"test_different_sessions_different_workers", DifferentSessionsDifferentWorkers},
	{"test_mixed_session_and_non_session_items", MixedSessionAndNonSessionItems},
	{"test_session_claimable_after_lock_expiry", SessionClaimableAfterLockExpiry},
	{"test_none_session_skips_session_items", NoneSessionSkipsSessionItems},
	{"test_some_session_returns_all_items", SomeSessionReturnsAllItems},
	{"test_renew_session_lock_active", RenewSessionLockActive},
	{"test_renew_session_lock_skips_idle", RenewSessionLockSkipsIdle},
	{"test_renew_session_lock_no_sessions", RenewSessionLockNoSessions},
	{"test_cleanup_removes_expired_no_items", CleanupRemovesExpiredNoItems},
	{"test_cleanup_keeps_sessions_with_pending_items", CleanupKeepsSessionsWithPendingItems},
	{"test_cleanup_keeps_active_sessions", CleanupKeepsActiveSessions},
	{"test_ack_updates_session_last_activity", AckUpdatesSessionLastActivity},
	{"test_renew_work_item_updates_session_last_activity", RenewWorkItemUpdatesSessionLastActivity},
	{"test_session_items_processed_in_order", SessionItemsProcessedInOrder},
	{"test_non_session_items_returned_with_session_config", NonSessionItemsReturnedWithSessionConfig},
	{"test_shared_worker_id_any_caller_can_fetch_owned_session", SharedWorkerIDAnyCallerCanFetchOwnedSession},
	{"test_concurrent_session_claim_only_one_wins", ConcurrentSessionClaimOnlyOneWins},
	{"test_session_takeover_after_lock_expiry", SessionTakeoverAfterLockExpiry},
	{"test_cleanup_then_new_item_recreates_session", CleanupThenNewItemRecreatesSession},
	{"test_abandoned_session_item_retryable", AbandonedSessionItemRetryable},
	{"test_abandoned_session_item_ignore_attempt", AbandonedSessionItemIgnoreAttempt},
	{"test_renew_session_lock_after_expiry_returns_zero", RenewSessionLockAfterExpiryReturnsZero},
	{"test_original_worker_reclaims_expired_session", OriginalWorkerReclaimsExpiredSession},
	{"test_activity_lock_expires_session_lock_valid_same_worker_refetches", ActivityLockExpiresSessionLockValidSameWorkerRefetches},
	{"test_session_lock_expires_new_owner_gets_redelivery", SessionLockExpiresNewOwnerGetsRedelivery},
	{"test_session_lock_expires_same_worker_reacquires", SessionLockExpiresSameWorkerReacquires},
	{"test_both_locks_expire_different_worker_claims", BothLocksExpireDifferentWorkerClaims},
	{"test_session_lock_expires_activity_lock_valid_ack_succeeds", SessionLockExpiresActivityLockValidAckSucceeds},
	{"test_session_lock_renewal_extends_past_original_timeout", SessionLockRenewalExtendsPastOriginalTimeout},
}

// ===== basic session routing =====

// NonSessionItemsFetchableByAnyWorker checks that an item without a session
// is fetched by a worker with session routing on (duroxide's
// test_non_session_items_fetchable_by_any_worker).
func NonSessionItemsFetchableByAnyWorker(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessPlain("inst-1", 1)))
	assert.NotNil(t, sessFetch(t, p, sessConfig("worker-A")), "a non-session item is fetchable by any worker")
}

// SessionItemClaimableWhenNoSession checks that an item of an unclaimed
// session is fetched, with its session id (duroxide's
// test_session_item_claimable_when_no_session).
func SessionItemClaimableWhenNoSession(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 1, "session-1")))
	w := sessFetch(t, p, sessConfig("worker-A"))
	sessRequire(t, w, 0, "session-1")
}

// SessionAffinitySameWorker checks that the worker that claimed a session
// fetches its later items (duroxide's test_session_affinity_same_worker).
func SessionAffinitySameWorker(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	sessClaim(t, p, "session-1", sessConfig("worker-A"))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "session-1")))
	assert.NotNil(t, sessFetch(t, p, sessConfig("worker-A")), "the owner fetches its session's items")
}

// SessionAffinityBlocksOtherWorker checks that another worker does not get
// the items of a session someone owns (duroxide's
// test_session_affinity_blocks_other_worker).
func SessionAffinityBlocksOtherWorker(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	sessClaim(t, p, "session-1", sessConfig("worker-A"))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "session-1")))
	assert.Nil(t, sessFetch(t, p, sessConfig("worker-B")), "a non-owner must not fetch an owned session's items")
}

// DifferentSessionsDifferentWorkers checks that two workers each keep their
// own session (duroxide's test_different_sessions_different_workers).
func DifferentSessionsDifferentWorkers(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	sessClaimItem(t, p, sessItem("inst-1", 1, "session-1"), sessConfig("worker-A"))
	sessClaimItem(t, p, sessItem("inst-2", 1, "session-2"), sessConfig("worker-B"))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "session-1")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-2", 2, "session-2")))

	sessRequire(t, sessFetch(t, p, sessConfig("worker-A")), 0, "session-1")
	sessRequire(t, sessFetch(t, p, sessConfig("worker-B")), 0, "session-2")
}

// MixedSessionAndNonSessionItems checks that a worker blocked from an owned
// session still gets the items without a session (duroxide's
// test_mixed_session_and_non_session_items).
func MixedSessionAndNonSessionItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	sessClaim(t, p, "session-1", sessConfig("worker-A"))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "session-1")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessPlain("inst-2", 1)))

	sessRequire(t, sessFetch(t, p, sessConfig("worker-B")), 0, "")
}

// ===== session lock expiry =====

// SessionClaimableAfterLockExpiry checks that another worker claims a
// session whose lock lapsed (duroxide's
// test_session_claimable_after_lock_expiry).
func SessionClaimableAfterLockExpiry(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaim(t, p, "session-1", sessConfigLock("worker-A", short))
	sessSleepPast(short)
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "session-1")))
	assert.NotNil(t, sessFetch(t, p, sessConfig("worker-B")), "worker-B should claim the expired session")
}

// NoneSessionSkipsSessionItems checks that a fetch without session routing
// returns only items without a session, and that session routing then
// returns the session item (duroxide's test_none_session_skips_session_items).
func NoneSessionSkipsSessionItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "session-1")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessPlain("inst-2", 2)))

	w := sessFetch(t, p, nil)
	sessRequire(t, w, 2, "")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))

	assert.Nil(t, sessFetch(t, p, nil), "a session item is invisible to a fetch without session routing")
	sessRequire(t, sessFetch(t, p, sessConfig("worker-A")), 0, "session-1")
}

// SomeSessionReturnsAllItems checks that with session routing on, items of
// several sessions and without a session all come back, in FIFO order
// (duroxide's test_some_session_returns_all_items).
func SomeSessionReturnsAllItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "sess-A")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-2", 2, "sess-B")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-3", 3, "sess-C")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessPlain("inst-4", 4)))

	var ids []uint64
	for range 4 {
		w := sessFetch(t, p, sessConfig("shared-proc"))
		ids = append(ids, sessActivity(t, w).ID)
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	}
	assert.Equal(t, []uint64{1, 2, 3, 4}, ids, "all items in FIFO order")
	assert.Nil(t, sessFetch(t, p, sessConfig("shared-proc")), "the queue should be empty")
}

// ===== session lock renewal =====

// RenewSessionLockActive checks that RenewSessionLock counts every active
// session of the owner (duroxide's test_renew_session_lock_active).
func RenewSessionLockActive(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	sessClaimItem(t, p, sessItem("inst-1", 1, "session-1"), sessConfig("worker-A"))

	n, err := p.RenewSessionLock(ctx, []string{"worker-A"}, longLock, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one active session renewed")

	sessClaimItem(t, p, sessItem("inst-2", 1, "session-2"), sessConfig("worker-A"))
	n, err = p.RenewSessionLock(ctx, []string{"worker-A"}, longLock, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "two active sessions renewed")
}

// RenewSessionLockSkipsIdle checks that a zero idle timeout renews nothing
// (duroxide's test_renew_session_lock_skips_idle).
func RenewSessionLockSkipsIdle(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	sessClaim(t, p, "session-1", sessConfig("worker-A"))
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, longLock, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an idle session is not renewed")
}

// RenewSessionLockNoSessions checks that an owner without sessions renews
// nothing (duroxide's test_renew_session_lock_no_sessions).
func RenewSessionLockNoSessions(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, longLock, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

// ===== orphaned session cleanup =====

// CleanupRemovesExpiredNoItems checks that CleanupOrphanedSessions removes
// a session whose lock lapsed and that has no pending items (duroxide's
// test_cleanup_removes_expired_no_items).
func CleanupRemovesExpiredNoItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaim(t, p, "session-1", sessConfigLock("worker-A", short))
	sessSleepPast(short)
	n, err := p.CleanupOrphanedSessions(t.Context(), sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the expired session is removed")
}

// CleanupKeepsSessionsWithPendingItems checks that an expired session with
// a pending item is kept (duroxide's
// test_cleanup_keeps_sessions_with_pending_items).
func CleanupKeepsSessionsWithPendingItems(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaim(t, p, "session-1", sessConfigLock("worker-A", short))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "session-1")))
	sessSleepPast(short)
	n, err := p.CleanupOrphanedSessions(t.Context(), sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a session with pending items is kept")
}

// CleanupKeepsActiveSessions checks that a session whose lock holds is kept
// (duroxide's test_cleanup_keeps_active_sessions).
func CleanupKeepsActiveSessions(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	sessClaim(t, p, "session-1", sessConfigLock("worker-A", sessIdleForever))
	n, err := p.CleanupOrphanedSessions(t.Context(), sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an active session is kept")
}

// ===== session activity piggybacked on work item operations =====

// AckUpdatesSessionLastActivity checks that acking a session item marks
// the session active: after a wait longer than the idle window, a renewal
// with that window still finds it (duroxide's
// test_ack_updates_session_last_activity).
func AckUpdatesSessionLastActivity(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	idle := sessShortLock(f)
	w := sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "session-1"), longLock, sessConfig("worker-A"))

	sessSleepPast(idle) // the fetch's activity is now outside the idle window
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "ok",
	}}))

	n, err := p.RenewSessionLock(ctx, []string{"worker-A"}, longLock, idle)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the ack must have updated the session's last activity")
}

// RenewWorkItemUpdatesSessionLastActivity checks that renewing a session
// item's lock marks the session active (duroxide's
// test_renew_work_item_updates_session_last_activity).
func RenewWorkItemUpdatesSessionLastActivity(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	idle := sessShortLock(f)
	w := sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "session-1"), longLock, sessConfig("worker-A"))

	sessSleepPast(idle)
	_, err := p.RenewWorkItemLock(ctx, w.LockToken, longLock)
	require.NoError(t, err)

	n, err := p.RenewSessionLock(ctx, []string{"worker-A"}, longLock, idle)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the work item renewal must have updated the session's last activity")
}

// ===== edge cases =====

// SessionItemsProcessedInOrder checks that one session's items come back
// in FIFO order (duroxide's test_session_items_processed_in_order).
func SessionItemsProcessedInOrder(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	for id := uint64(1); id <= 3; id++ {
		require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", id, "session-1")))
	}
	for id := uint64(1); id <= 3; id++ {
		w := sessFetch(t, p, sessConfig("worker-A"))
		sessRequire(t, w, id, "session-1")
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	}
}

// NonSessionItemsReturnedWithSessionConfig checks that a session owner
// still gets items without a session (duroxide's
// test_non_session_items_returned_with_session_config).
func NonSessionItemsReturnedWithSessionConfig(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	sessClaim(t, p, "session-1", sessConfig("worker-A"))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessPlain("inst-2", 1)))
	sessRequire(t, sessFetch(t, p, sessConfig("worker-A")), 0, "")
}

// ===== process-level session identity =====

// SharedWorkerIDAnyCallerCanFetchOwnedSession checks that every fetch with
// the owner id of a session (any slot of the owning process) gets its
// items, in order, and that another owner id does not (duroxide's
// test_shared_worker_id_any_caller_can_fetch_owned_session).
func SharedWorkerIDAnyCallerCanFetchOwnedSession(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "shared-sess")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "shared-sess")))

	for id := uint64(1); id <= 2; id++ {
		w := sessFetch(t, p, sessConfig("process-1"))
		sessRequire(t, w, id, "shared-sess")
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	}

	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 3, "shared-sess")))
	assert.Nil(t, sessFetch(t, p, sessConfig("process-2")), "another process must not get an owned session's items")
}

// ===== races =====

// ConcurrentSessionClaimOnlyOneWins checks that when two workers race to
// claim the same unclaimed session, exactly one gets an item (the oldest)
// and the other gets nothing (or a retryable error) and still nothing on a
// later fetch while the winner holds the session
// (duroxide's test_concurrent_session_claim_only_one_wins).
func ConcurrentSessionClaimOnlyOneWins(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "contested-sess")))
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "contested-sess")))

	owners := []string{"worker-A", "worker-B"}
	got := make([]*duroxide.LockedWorkItem, len(owners))
	errs := make([]error, len(owners))
	var wg sync.WaitGroup
	for i, owner := range owners {
		wg.Go(func() {
			got[i], errs[i] = p.FetchWorkItem(ctx, longLock, 0, sessConfig(owner), duroxide.TagFilterDefaultOnly())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			// Losing a race may surface as a retryable error, which the runtime retries.
			var pe *duroxide.ProviderError
			require.ErrorAs(t, err, &pe, "provider errors are *duroxide.ProviderError")
			require.True(t, pe.Retryable, "a fetch that loses the claim race may fail only with a retryable error: %v", err)
			got[i] = nil
		}
	}
	require.True(t, (got[0] == nil) != (got[1] == nil), "exactly one worker should claim the session, got %v and %v", got[0], got[1])

	winner, loser := 0, 1
	if got[0] == nil {
		winner, loser = 1, 0
	}
	sessRequire(t, got[winner], 1, "contested-sess")
	assert.Nil(t, sessFetch(t, p, sessConfig(owners[loser])), "the loser must not get session items while the winner holds the session")
	require.NoError(t, p.AckWorkItem(ctx, got[winner].LockToken, nil))
}

// SessionTakeoverAfterLockExpiry checks that another worker takes over a
// session with a pending item once its owner's lock lapsed (duroxide's
// test_session_takeover_after_lock_expiry).
func SessionTakeoverAfterLockExpiry(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaimItem(t, p, sessItem("inst-1", 1, "takeover-sess"), sessConfigLock("worker-A", short))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "takeover-sess")))
	sessSleepPast(short)
	sessRequire(t, sessFetch(t, p, sessConfig("worker-B")), 0, "takeover-sess")
}

// CleanupThenNewItemRecreatesSession checks that a session removed by
// cleanup is claimed afresh by the next fetch of a new item (duroxide's
// test_cleanup_then_new_item_recreates_session).
func CleanupThenNewItemRecreatesSession(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	short := sessShortLock(f)
	sessClaimItem(t, p, sessItem("inst-1", 1, "ephemeral-sess"), sessConfigLock("worker-A", short))
	sessSleepPast(short)

	n, err := p.CleanupOrphanedSessions(ctx, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the expired session is removed")

	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "ephemeral-sess")))
	sessRequire(t, sessFetch(t, p, sessConfig("worker-B")), 2, "ephemeral-sess")
}

// AbandonedSessionItemRetryable checks that an abandoned session item is
// fetched again by its owner with attempt count 2 and is gone once acked
// (duroxide's test_abandoned_session_item_retryable).
func AbandonedSessionItemRetryable(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "retry-sess")))

	w := sessFetch(t, p, sessConfig("worker-A"))
	sessRequire(t, w, 1, "retry-sess")
	assert.Equal(t, uint32(1), w.AttemptCount)
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))

	w = sessFetch(t, p, sessConfig("worker-A"))
	sessRequire(t, w, 1, "retry-sess")
	assert.Equal(t, uint32(2), w.AttemptCount, "a retry increments the attempt count")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))

	assert.Nil(t, sessFetch(t, p, sessConfig("worker-A")), "nothing remains after the ack")
}

// AbandonedSessionItemIgnoreAttempt checks that abandoning a session item
// with ignoreAttempt does not raise its attempt count (duroxide's
// test_abandoned_session_item_ignore_attempt).
func AbandonedSessionItemIgnoreAttempt(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 1, "ignore-sess")))

	w := sessFetch(t, p, sessConfig("worker-A"))
	require.NotNil(t, w)
	assert.Equal(t, uint32(1), w.AttemptCount)
	const delay = time.Millisecond
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, delay, true))
	time.Sleep(10 * delay) // let the abandon delay pass

	w = sessFetch(t, p, sessConfig("worker-A"))
	require.NotNil(t, w)
	assert.Equal(t, uint32(1), w.AttemptCount, "ignoreAttempt must not inflate the attempt count")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
}

// RenewSessionLockAfterExpiryReturnsZero checks that a lapsed session lock
// is not renewed (duroxide's test_renew_session_lock_after_expiry_returns_zero).
func RenewSessionLockAfterExpiryReturnsZero(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaim(t, p, "expired-sess", sessConfigLock("worker-A", short))
	sessSleepPast(short)
	n, err := p.RenewSessionLock(t.Context(), []string{"worker-A"}, longLock, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "an expired session is not renewed")
}

// OriginalWorkerReclaimsExpiredSession checks that the former owner
// reclaims its own expired session on its next fetch (duroxide's
// test_original_worker_reclaims_expired_session).
func OriginalWorkerReclaimsExpiredSession(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessClaimItem(t, p, sessItem("inst-1", 1, "reclaim-sess"), sessConfigLock("worker-A", short))
	require.NoError(t, p.EnqueueForWorker(t.Context(), sessItem("inst-1", 2, "reclaim-sess")))
	sessSleepPast(short)
	sessRequire(t, sessFetch(t, p, sessConfig("worker-A")), 2, "reclaim-sess")
}

// ActivityLockExpiresSessionLockValidSameWorkerRefetches checks that when
// an item's lock lapses while its session's lock holds, the item is
// redelivered only to the session owner, with attempt count 2 (duroxide's
// test_activity_lock_expires_session_lock_valid_same_worker_refetches).
func ActivityLockExpiresSessionLockValidSameWorkerRefetches(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	shortWork := sessShortLock(f)
	sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "sticky-sess"), shortWork, sessConfig("worker-A"))

	sessSleepPast(shortWork) // the item's lock lapses, the 30 s session lock holds
	assert.Nil(t, sessFetch(t, p, sessConfig("worker-B")), "worker-B must not get the item: worker-A still owns the session")

	sessRequireRedelivery(t, p, sessFetch(t, p, sessConfig("worker-A")), 1, "sticky-sess")
}

// SessionLockExpiresNewOwnerGetsRedelivery checks that after a session's
// lock lapses (its item's lock still held), a new owner claims the session
// with a new item and, once the old item is abandoned, gets it too, with
// attempt count 2 (duroxide's test_session_lock_expires_new_owner_gets_redelivery).
func SessionLockExpiresNewOwnerGetsRedelivery(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	shortSession := sessShortLock(f)
	wa := sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "takeover2-sess"), longLock, sessConfigLock("worker-A", shortSession))

	sessSleepPast(shortSession)
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "takeover2-sess")))

	wb := sessFetch(t, p, sessConfig("worker-B"))
	sessRequire(t, wb, 2, "takeover2-sess")
	require.NoError(t, p.AckWorkItem(ctx, wb.LockToken, nil))

	// The runtime would let worker-A's item lock lapse; abandoning has the same effect sooner.
	require.NoError(t, p.AbandonWorkItem(ctx, wa.LockToken, 0, false))

	sessRequireRedelivery(t, p, sessFetch(t, p, sessConfig("worker-B")), 1, "takeover2-sess")
}

// SessionLockExpiresSameWorkerReacquires checks that the owner of a lapsed
// session reacquires it on its next fetch (duroxide's
// test_session_lock_expires_same_worker_reacquires).
func SessionLockExpiresSameWorkerReacquires(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	short := sessShortLock(f)
	cfg := sessConfigLock("worker-A", short)
	sessClaimItem(t, p, sessItem("inst-1", 1, "reacq-sess"), cfg)
	sessSleepPast(short)
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "reacq-sess")))

	w := sessFetch(t, p, cfg)
	sessRequire(t, w, 2, "reacq-sess")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
}

// BothLocksExpireDifferentWorkerClaims checks that when an item's lock and
// its session's lock both lapse, another worker gets the item, with
// attempt count 2 (duroxide's test_both_locks_expire_different_worker_claims).
func BothLocksExpireDifferentWorkerClaims(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	short := sessShortLock(f)
	sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "both-expire-sess"), short, sessConfigLock("worker-A", short))
	sessSleepPast(short)
	sessRequireRedelivery(t, p, sessFetch(t, p, sessConfig("worker-B")), 1, "both-expire-sess")
}

// SessionLockExpiresActivityLockValidAckSucceeds checks that an item whose
// lock holds can be acked after its session's lock lapsed: session
// ownership routes fetches and does not govern item locks (duroxide's
// test_session_lock_expires_activity_lock_valid_ack_succeeds).
func SessionLockExpiresActivityLockValidAckSucceeds(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	shortSession := sessShortLock(f)
	w := sessEnqueueAndFetch(t, p, sessItem("inst-1", 1, "sess-expires"), longLock, sessConfigLock("worker-A", shortSession))
	sessSleepPast(shortSession)
	err := p.AckWorkItem(ctx, w.LockToken, &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: "inst-1", ExecutionID: 1, ID: 1, Result: "done",
	}})
	assert.NoError(t, err, "the ack must succeed: the item's lock holds although the session's lapsed")
}

// SessionLockRenewalExtendsPastOriginalTimeout checks that renewing a
// session lock at 60% of its timeout keeps the session owned past the
// original expiry (duroxide's
// test_session_lock_renewal_extends_past_original_timeout).
func SessionLockRenewalExtendsPastOriginalTimeout(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	lock := f.LockTimeout()
	sessClaim(t, p, "renew-ext-sess", sessConfigLock("worker-A", lock))

	time.Sleep(lock * 6 / 10)
	n, err := p.RenewSessionLock(ctx, []string{"worker-A"}, lock, sessIdleForever)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the active session is renewed")

	time.Sleep(lock * 4 / 10) // now past the original expiry
	require.NoError(t, p.EnqueueForWorker(ctx, sessItem("inst-1", 2, "renew-ext-sess")))
	assert.Nil(t, sessFetch(t, p, sessConfig("worker-B")), "the renewed session is still worker-A's")
	assert.NotNil(t, sessFetch(t, p, sessConfig("worker-A")), "worker-A still owns the session")
}

// ===== helpers =====

// sessIdleForever is an idle timeout (and session lock) long enough that
// nothing goes idle or lapses during a test (duroxide's 300 s).
const sessIdleForever = 300 * time.Second

// sessShortLock is the session or item lock the expiry tests let lapse:
// half the factory's lock timeout, so that it outlasts a few provider
// calls and a wait of sessSleepPast stays short.
func sessShortLock(f Factory) time.Duration { return f.LockTimeout() / 2 }

// sessSleepPast sleeps one and a half times d, so that a lock or idle
// window of d has surely lapsed.
func sessSleepPast(d time.Duration) { time.Sleep(d + d/2) }

// sessItem is an ActivityExecute item of instance bound to session.
func sessItem(instance string, id uint64, session string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: 1, ID: id, Name: "SessionActivity", Input: "{}",
		SessionID: duroxide.StringPtr(session),
	}}
}

// sessPlain is an ActivityExecute item of instance without a session.
func sessPlain(instance string, id uint64) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: 1, ID: id, Name: "PlainActivity", Input: "{}",
	}}
}

// sessConfig is session routing for owner with a session lock that does
// not lapse during a test (duroxide's 30 s).
func sessConfig(owner string) *duroxide.SessionFetchConfig {
	return sessConfigLock(owner, longLock)
}

// sessConfigLock is session routing for owner with session lock lock.
func sessConfigLock(owner string, lock time.Duration) *duroxide.SessionFetchConfig {
	return &duroxide.SessionFetchConfig{OwnerID: owner, LockTimeout: lock}
}

// sessFetch fetches a worker item untagged-only with session routing cfg
// (nil: none) and an item lock of longLock; it returns nil when there is
// none.
func sessFetch(t *testing.T, p duroxide.Provider, cfg *duroxide.SessionFetchConfig) *duroxide.LockedWorkItem {
	t.Helper()
	return sessFetchWork(t, p, longLock, cfg, duroxide.TagFilterDefaultOnly())
}

// sessFetchWork fetches a worker item through filter with item lock lock
// and session routing cfg (nil: none), without waiting; it returns nil
// when there is none.
func sessFetchWork(t *testing.T, p duroxide.Provider, lock time.Duration, cfg *duroxide.SessionFetchConfig, filter duroxide.TagFilter) *duroxide.LockedWorkItem {
	t.Helper()
	w, err := p.FetchWorkItem(t.Context(), lock, 0, cfg, filter)
	require.NoError(t, err, "fetch_work_item")
	return w
}

// sessEnqueueAndFetch enqueues item and fetches it with item lock lock and
// session routing cfg, requiring it to come back.
func sessEnqueueAndFetch(t *testing.T, p duroxide.Provider, item duroxide.WorkItem, lock time.Duration, cfg *duroxide.SessionFetchConfig) *duroxide.LockedWorkItem {
	t.Helper()
	require.NoError(t, p.EnqueueForWorker(t.Context(), item))
	w := sessFetchWork(t, p, lock, cfg, duroxide.TagFilterDefaultOnly())
	require.NotNil(t, w, "expected to fetch the item just enqueued")
	return w
}

// sessRequireRedelivery requires w to be the second delivery of item id of
// session and acks it.
func sessRequireRedelivery(t *testing.T, p duroxide.Provider, w *duroxide.LockedWorkItem, id uint64, session string) {
	t.Helper()
	sessRequire(t, w, id, session)
	assert.Equal(t, uint32(2), w.AttemptCount, "the redelivery increments the attempt count")
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, nil))
}

// sessRequireOptional asserts that got is nil when want is empty and
// points to want otherwise; what names the field.
func sessRequireOptional(t *testing.T, got *string, want, what string) {
	t.Helper()
	if want == "" {
		assert.Nil(t, got, "expected no %s", what)
	} else if assert.NotNil(t, got, "expected %s %s", what, want) {
		assert.Equal(t, want, *got, what)
	}
}

// sessActivity requires w to be a locked ActivityExecute item and returns
// it.
func sessActivity(t *testing.T, w *duroxide.LockedWorkItem) duroxide.ActivityExecuteItem {
	t.Helper()
	require.NotNil(t, w, "expected a work item")
	act, ok := w.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected an ActivityExecute item, got %T", w.Item.Kind)
	return act
}

// sessRequire requires w to be an ActivityExecute item with id (any id when
// 0) bound to session (no session when session is empty) and returns it.
func sessRequire(t *testing.T, w *duroxide.LockedWorkItem, id uint64, session string) duroxide.ActivityExecuteItem {
	t.Helper()
	act := sessActivity(t, w)
	if id != 0 {
		assert.Equal(t, id, act.ID, "activity id")
	}
	sessRequireOptional(t, act.SessionID, session, "session")
	return act
}

// sessClaimItem enqueues item, fetches it with cfg (claiming its session)
// and acks it.
func sessClaimItem(t *testing.T, p duroxide.Provider, item duroxide.WorkItem, cfg *duroxide.SessionFetchConfig) {
	t.Helper()
	w := sessEnqueueAndFetch(t, p, item, longLock, cfg)
	require.NoError(t, p.AckWorkItem(t.Context(), w.LockToken, nil))
}

// sessClaim claims session for cfg's owner through item 1 of instance
// "inst-1", acked at once.
func sessClaim(t *testing.T, p duroxide.Provider, session string, cfg *duroxide.SessionFetchConfig) {
	t.Helper()
	sessClaimItem(t, p, sessItem("inst-1", 1, session), cfg)
}
