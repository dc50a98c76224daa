package providertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instanceLockingCases ports duroxide's src/provider_validation/instance_locking.rs; see README.md for
// the table from each Rust test to its Go function.
var instanceLockingCases = []Case{
	{"test_exclusive_instance_lock", ExclusiveInstanceLock},
	{"test_lock_token_uniqueness", LockTokenUniqueness},
	{"test_invalid_lock_token_rejection", InvalidLockTokenRejection},
	{"test_concurrent_instance_fetching", ConcurrentInstanceFetching},
	{"test_completions_arriving_during_lock_blocked", CompletionsArrivingDuringLockBlocked},
	{"test_cross_instance_lock_isolation", CrossInstanceLockIsolation},
	{"test_message_tagging_during_lock", MessageTaggingDuringLock},
	{"test_ack_only_affects_locked_messages", AckOnlyAffectsLockedMessages},
	{"test_multi_threaded_lock_contention", MultiThreadedLockContention},
	{"test_multi_threaded_no_duplicate_processing", MultiThreadedNoDuplicateProcessing},
	{"test_multi_threaded_lock_expiration_recovery", MultiThreadedLockExpirationRecovery},
}

// ExclusiveInstanceLock checks that a fetched instance cannot be fetched
// again until its lock expires, and that the fetch after expiry gets a new
// lock token (duroxide's test_exclusive_instance_lock).
func ExclusiveInstanceLock(t *testing.T, f Factory) {
	lockingExpireAndRefetch(t, f, f.NewProvider(t), "instance-A")
}

// LockTokenUniqueness checks that every fetch returns a distinct lock token
// (duroxide's test_lock_token_uniqueness).
func LockTokenUniqueness(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockingEnqueueStarts(t, p, "inst-", 5)
	tokens := map[string]bool{}
	for range 5 {
		tokens[fetchOrch(t, p, longLock).LockToken] = true
	}
	require.Len(t, tokens, 5, "all lock tokens should be unique")
}

// InvalidLockTokenRejection checks that ack and abandon reject a lock token
// the provider never issued, and that the real lock stays held
// (duroxide's test_invalid_lock_token_rejection).
func InvalidLockTokenRejection(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	enqueueOrch(t, p, startItem("instance-A"))
	fetchOrch(t, p, longLock)

	err := p.AckOrchestrationItem(ctx, "invalid-token", 1, nil, nil, nil, duroxide.ExecutionMetadata{}, nil)
	requirePermanent(t, err, "ack must reject an invalid lock token")

	err = p.AbandonOrchestrationItem(ctx, "invalid-token", 0, false)
	requirePermanent(t, err, "abandon must reject an invalid lock token")

	requireNoOrch(t, p, longLock, "the original item must still be locked")
}

// ConcurrentInstanceFetching checks that ten concurrent fetchers over ten
// instances each lock a different instance (duroxide's
// test_concurrent_instance_fetching).
func ConcurrentInstanceFetching(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const n = 10
	lockingEnqueueStarts(t, p, "inst-", n)

	// Staggered starts, as in duroxide, to reduce contention.
	items := lockingConcurrentFetches(t, p, n, 30*time.Millisecond, longLock)
	instances := map[string]bool{}
	for _, item := range items {
		if item != nil {
			instances[item.Instance] = true
		}
	}
	require.Len(t, instances, n, "each instance should be fetched exactly once")
}

// CompletionsArrivingDuringLockBlocked checks that messages enqueued for a
// locked instance are not fetchable until the lock expires, and that the
// next fetch then returns them with the unfinished start message
// (duroxide's test_completions_arriving_during_lock_blocked).
func CompletionsArrivingDuringLockBlocked(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("instance-A"))

	item1 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, "instance-A", item1.Instance)

	for id := uint64(1); id <= 3; id++ {
		enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, id, fmt.Sprintf("result-%d", id)))
	}
	requireNoOrch(t, p, lockTimeout, "instance still locked, no fetch possible")

	sleepPastLockTimeout(f)

	item3 := fetchOrch(t, p, lockTimeout)
	require.Equal(t, "instance-A", item3.Instance)
	require.Len(t, item3.Messages, 4, "should have StartOrchestration + 3 completions")
	require.Equal(t, []uint64{1, 2, 3}, lockingCompletedIDs(item3.Messages),
		"the completions that arrived during the lock, in order")
}

// CrossInstanceLockIsolation checks that a lock on one instance does not
// block fetching another (duroxide's test_cross_instance_lock_isolation).
func CrossInstanceLockIsolation(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "instance-A")
	createInstance(t, p, "instance-B")
	enqueueOrch(t, p, startItem("instance-A"))
	enqueueOrch(t, p, startItem("instance-B"))

	itemA := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", itemA.Instance)

	itemB := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-B", itemB.Instance, "instance-B must be fetchable while instance-A is locked")

	ackTurn(t, p, itemB.LockToken, 1, nil, orchMetadata(testOrch, testOrchVersion))

	// While A is still locked, a completion arrives for B.
	enqueueOrch(t, p, lockingActivityCompleted("instance-B", 1, 1, "done"))
	itemB2 := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-B", itemB2.Instance)

	require.NotEqual(t, itemA.Instance, itemB.Instance, "instance locks must not block other instances")
}

// MessageTaggingDuringLock checks that an ack deletes only the messages its
// fetch locked, so a message that arrived during the lock is fetched next
// (duroxide's test_message_tagging_during_lock).
func MessageTaggingDuringLock(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "instance-A")
	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 1, "msg1"))
	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 2, "msg2"))

	item := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", item.Instance)
	require.Len(t, item.Messages, 2)

	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 3, "msg3"))
	ackTurn(t, p, item.LockToken, 1, nil, duroxide.ExecutionMetadata{})

	item2 := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", item2.Instance)
	require.Len(t, item2.Messages, 1)
	require.Equal(t, []uint64{3}, lockingCompletedIDs(item2.Messages), "only msg3 should remain")
}

// AckOnlyAffectsLockedMessages checks that an ack removes only the messages
// locked by its token and that messages enqueued during the lock are
// fetched afterwards, in order (duroxide's
// test_ack_only_affects_locked_messages).
func AckOnlyAffectsLockedMessages(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	createInstance(t, p, "instance-A")
	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 1, "msg1"))

	item1 := fetchOrch(t, p, longLock)
	require.Len(t, item1.Messages, 1)

	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 2, "msg2"))
	enqueueOrch(t, p, lockingActivityCompleted("instance-A", 1, 3, "msg3"))
	requireNoOrch(t, p, longLock, "the instance is locked")

	ackTurn(t, p, item1.LockToken, 1, nil, duroxide.ExecutionMetadata{})

	item2 := fetchOrch(t, p, longLock)
	require.Equal(t, "instance-A", item2.Instance)
	require.Len(t, item2.Messages, 2, "should have messages 2 and 3")
	require.Equal(t, []uint64{2, 3}, lockingCompletedIDs(item2.Messages), "should only have messages 2 and 3")
}

// MultiThreadedLockContention checks that of ten goroutines fetching the
// same instance exactly one gets it, and that the instance stays locked
// (duroxide's test_multi_threaded_lock_contention).
func MultiThreadedLockContention(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	enqueueOrch(t, p, startItem("contention-instance"))

	items := lockingConcurrentFetches(t, p, 10, 5*time.Millisecond, longLock)
	var winners []*duroxide.OrchestrationItem
	for _, item := range items {
		if item != nil {
			winners = append(winners, item)
		}
	}
	require.Len(t, winners, 1, "only one goroutine should acquire the lock of the instance")
	require.Equal(t, "contention-instance", winners[0].Instance)

	requireNoOrch(t, p, longLock, "the instance must still be locked")
}

// MultiThreadedNoDuplicateProcessing checks that forty goroutines fetching
// twenty instances never get the same instance twice (duroxide's
// test_multi_threaded_no_duplicate_processing). Like duroxide, a fetch that
// keeps failing with a retryable error after three attempts is counted as
// no fetch; a permanent error fails the test.
func MultiThreadedNoDuplicateProcessing(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const instances = 20
	lockingEnqueueStarts(t, p, "dup-test-", instances)

	const goroutines = instances * 2
	fetched := make([]string, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			time.Sleep(time.Duration((i*3)%50) * time.Millisecond)
			for attempt := range 3 {
				item, err := p.FetchOrchestrationItem(t.Context(), longLock, 0, nil)
				if err != nil {
					if duroxide.IsRetryable(err) {
						if attempt < 2 {
							time.Sleep(time.Duration(10*(attempt+1)) * time.Millisecond)
							continue
						}
						t.Logf("goroutine %d: fetch still failing after 3 attempts: %v", i, err)
						return
					}
					errs[i] = err
					return
				}
				if item != nil {
					fetched[i] = item.Instance
				}
				return
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	var results []string
	unique := map[string]bool{}
	for _, inst := range fetched {
		if inst != "" {
			results = append(results, inst)
			unique[inst] = true
		}
	}
	require.Len(t, unique, len(results), "no instance may be fetched twice: %v", results)
	require.LessOrEqual(t, len(results), instances, "cannot fetch more instances than exist")
}

// MultiThreadedLockExpirationRecovery checks, with three goroutines started
// together, that a lock held by a crashed worker blocks a second fetcher
// and is recovered by a third once it expires (duroxide's
// test_multi_threaded_lock_expiration_recovery).
func MultiThreadedLockExpirationRecovery(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	ctx := t.Context()
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem("expiration-instance"))

	start := make(chan struct{})
	var (
		wg                    sync.WaitGroup
		held, blocked, stolen *duroxide.OrchestrationItem
		err1, err2, err3      error
	)
	// Goroutine 1 fetches and holds the lock without acking: a crashed worker.
	wg.Go(func() {
		<-start
		held, err1 = p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
		time.Sleep(lockTimeout + 2*lockingExpiryMargin)
	})
	// Goroutine 2 fetches while the lock is held, after giving goroutine 1
	// a fifth of the lock timeout to take it.
	wg.Go(func() {
		<-start
		time.Sleep(lockTimeout / 5)
		blocked, err2 = p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
	})
	// Goroutine 3 fetches after the lock expired.
	wg.Go(func() {
		<-start
		time.Sleep(lockTimeout + lockingExpiryMargin)
		stolen, err3 = p.FetchOrchestrationItem(ctx, lockTimeout, 0, nil)
	})
	close(start)
	wg.Wait()

	require.NoError(t, err1)
	require.NotNil(t, held, "goroutine 1 should acquire the lock")
	require.Equal(t, "expiration-instance", held.Instance)
	require.NoError(t, err2)
	require.Nil(t, blocked, "the instance should be locked")
	require.NoError(t, err3)
	require.NotNil(t, stolen, "the lock should be recoverable after it expired")
	require.Equal(t, "expiration-instance", stolen.Instance)
	require.NotEqual(t, held.LockToken, stolen.LockToken, "the recovered lock has a new token")
}

// ---- helpers shared by the instance_locking, lock_expiration,
// multi_execution, queue_semantics, poison_message and custom_status ports.

// lockingExpiryMargin is how long past a lock timeout the suite waits before
// relying on the lock having expired.
const lockingExpiryMargin = 100 * time.Millisecond

// lockingExpireAndRefetch starts instance, fetches it with the factory's
// lock timeout, checks that the lock is held, waits for it to expire and
// fetches the instance again, checking that the new fetch has a new lock
// token; it returns both fetches.
func lockingExpireAndRefetch(t *testing.T, f Factory, p duroxide.Provider, instance string) (first, second *duroxide.OrchestrationItem) {
	t.Helper()
	lockTimeout := f.LockTimeout()
	enqueueOrch(t, p, startItem(instance))
	first = fetchOrch(t, p, lockTimeout)
	requireNoOrch(t, p, lockTimeout, "a locked instance must not be fetched again")

	sleepPastLockTimeout(f)

	second = fetchOrch(t, p, lockTimeout)
	require.Equal(t, instance, second.Instance)
	require.NotEqual(t, first.LockToken, second.LockToken, "a new fetch after expiry gets a new lock token")
	return first, second
}

// lockingConcurrentFetches runs n orchestration fetches with lockTimeout
// in parallel goroutines, the i-th starting i*stagger late, and returns
// their items (nil where a fetch found nothing), failing t if any fetch
// failed.
func lockingConcurrentFetches(t *testing.T, p duroxide.Provider, n int, stagger, lockTimeout time.Duration) []*duroxide.OrchestrationItem {
	t.Helper()
	items := make([]*duroxide.OrchestrationItem, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * stagger)
			items[i], errs[i] = p.FetchOrchestrationItem(t.Context(), lockTimeout, 0, nil)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...), "concurrent fetch_orchestration_item")
	return items
}

// lockingEnqueueStarts enqueues starts of n instances named prefix0,
// prefix1, ...
func lockingEnqueueStarts(t *testing.T, p duroxide.Provider, prefix string, n int) {
	t.Helper()
	for i := range n {
		enqueueOrch(t, p, startItem(fmt.Sprintf("%s%d", prefix, i)))
	}
}

// lockingEnqueueWorker enqueues item on the worker queue, failing t on error.
func lockingEnqueueWorker(t *testing.T, p duroxide.Provider, item duroxide.WorkItem) {
	t.Helper()
	require.NoError(t, p.EnqueueForWorker(t.Context(), item), "enqueue_for_worker")
}

// lockingFetchWork fetches the next untagged, session-less worker item with
// lockTimeout and no long poll, failing t on error or when there is none.
func lockingFetchWork(t *testing.T, p duroxide.Provider, lockTimeout time.Duration) *duroxide.LockedWorkItem {
	t.Helper()
	item, err := p.FetchWorkItem(t.Context(), lockTimeout, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err, "fetch_work_item")
	require.NotNil(t, item, "fetch_work_item returned no item")
	return item
}

// lockingRequireNoWork fails t unless a worker fetch returns no item.
func lockingRequireNoWork(t *testing.T, p duroxide.Provider, lockTimeout time.Duration, msgAndArgs ...any) {
	t.Helper()
	item, err := p.FetchWorkItem(t.Context(), lockTimeout, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err, "fetch_work_item")
	require.Nil(t, item, msgAndArgs...)
}

// lockingAckWork acks the worker item locked by token with completion, failing t
// on error.
func lockingAckWork(t *testing.T, p duroxide.Provider, token string, completion duroxide.WorkItem) {
	t.Helper()
	require.NoError(t, p.AckWorkItem(t.Context(), token, &completion), "ack_work_item")
}

// lockingActivityExecute returns an untagged, session-less ActivityExecute.
func lockingActivityExecute(instance string, executionID, id uint64, name, input string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
		Instance: instance, ExecutionID: executionID, ID: id, Name: name, Input: input,
	}}
}

// lockingActivityCompleted returns an ActivityCompleted.
func lockingActivityCompleted(instance string, executionID, id uint64, result string) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{
		Instance: instance, ExecutionID: executionID, ID: id, Result: result,
	}}
}

// lockingCompletedIDs returns the ids of the ActivityCompleted messages
// in msgs, in order.
func lockingCompletedIDs(msgs []duroxide.WorkItem) []uint64 {
	var ids []uint64
	for _, m := range msgs {
		if c, ok := m.Kind.(duroxide.ActivityCompletedItem); ok {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// lockingExecuteID returns the id of w, failing t unless w is an
// ActivityExecute.
func lockingExecuteID(t *testing.T, w duroxide.WorkItem) uint64 {
	t.Helper()
	a, ok := w.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok, "expected ActivityExecute, got %s", w.Type())
	return a.ID
}
