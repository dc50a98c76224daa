package cdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// newEagerProvider starts a provider with eager dispatch on, whatever
// DUROXIDE_EAGER says (these tests are about it), on container of an
// emulator of its own (nil: a new one), after adjust.
func newEagerProvider(t *testing.T, a *cdbtest.Account, container string, adjust func(*cdb.Config)) (*cdb.Provider, *emulator.Server) {
	t.Helper()
	if a == nil {
		a = cdbtest.NewEmulatorAccount(t, emulator.Options{})
	}
	cfg := a.Config()
	cfg.Container, cfg.DisableReconciler = container, true
	if adjust != nil {
		adjust(&cfg)
	}
	p, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p, a.Emulator()
}

// waitForEagerWaiters blocks until p has orch and work free eager waiters
// (fetches waiting for work), failing the test after pollTimeout.
func waitForEagerWaiters(t *testing.T, p *cdb.Provider, orch, work int) {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for {
		o, w := cdb.FreeEagerWaiters(p)
		if o >= orch && w >= work {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiters: %d orchestration, %d work; want %d, %d", o, w, orch, work)
		}
		time.Sleep(time.Millisecond)
	}
}

// fetchWorkAsync starts a long-polling work-item fetch and returns the
// channel its result arrives on.
func fetchWorkAsync(ctx context.Context, t *testing.T, p *cdb.Provider, lock time.Duration, filter duroxide.TagFilter) <-chan *duroxide.LockedWorkItem {
	got := make(chan *duroxide.LockedWorkItem, 1)
	go func() {
		w, err := p.FetchWorkItem(ctx, lock, pollTimeout, nil, filter)
		assert.NoError(t, err)
		got <- w
	}()
	return got
}

func receive[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(pollTimeout):
		t.Fatal("nothing received")
	}
	var zero T
	return zero
}

// firstTurn starts instance and fetches its first turn.
func firstTurn(t *testing.T, p *cdb.Provider, instance string) *duroxide.OrchestrationItem {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	return item
}

// ackScheduling acks item's first turn scheduling activities acts.
func ackScheduling(t *testing.T, p *cdb.Provider, item *duroxide.OrchestrationItem, acts ...duroxide.ActivityExecuteItem) {
	t.Helper()
	events := []duroxide.Event{started(item.Instance)}
	var work []duroxide.WorkItem
	for _, a := range acts {
		events = append(events, duroxide.NewEvent(a.ID, item.Instance, 1, nil, duroxide.ActivityScheduled{Name: a.Name, Input: a.Input}))
		work = append(work, duroxide.WorkItem{Kind: a})
	}
	require.NoError(t, p.AckOrchestrationItem(context.Background(), item.LockToken, 1, events, work, nil, runningMetadata(), nil))
}

func greet(instance string, id uint64, tag *string) duroxide.ActivityExecuteItem {
	return duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: id, Name: "Greet", Input: `"world"`, Tag: tag}
}

// TestTurnAckHandsItsActivityToAWaitingWorkFetch checks eager dispatch
// from a turn's ack to this process's waiting work-item fetch: the fetch
// returns the activity with no request of its own (the ack creates it
// locked, in its batch, with no extra request), with attempt count 1, and
// its lock behaves as a fetched one: renewed, acked once, and the
// completion reaches the orchestrator queue.
func TestTurnAckHandsItsActivityToAWaitingWorkFetch(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-work"
	item := firstTurn(t, p, instance)

	got := fetchWorkAsync(ctx, t, p, longLock, duroxide.TagFilterDefaultOnly())
	waitForEagerWaiters(t, p, 0, 1)
	s.ResetCounters()
	ackScheduling(t, p, item, greet(instance, 2, nil))
	assert.Equal(t, int64(1), dataRequests(s), "the turn's ack is one batch, the activity's lock included")
	w := receive(t, got)
	require.NotNil(t, w)
	assert.Equal(t, int64(1), dataRequests(s), "the waiting fetch made no request")
	assert.Equal(t, uint32(1), w.AttemptCount)
	act, ok := w.Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok)
	assert.Equal(t, uint64(2), act.ID)
	assert.Equal(t, duroxide.EagerDispatchCounts{Hits: 1}, p.EagerDispatch().Worker)

	// Another fetch does not see it: it is locked.
	other, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, other)

	st, err := p.RenewWorkItemLock(ctx, w.LockToken, longLock)
	require.NoError(t, err)
	assert.Equal(t, duroxide.ExecutionRunning, st.Kind)
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: `"hi"`}}
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))
	require.Error(t, p.AckWorkItem(ctx, w.LockToken, &done), "a lock is acked once")
	turn, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
}

// TestEagerWorkRespectsTheWaitersAndTheirFilters checks that a turn's ack
// locks no more activities than fetches wait, only for a fetch whose tag
// filter accepts them, and that what it does not hand over is fetched
// the normal way; an abandoned eager item comes back with its attempt
// count as a fetched one's.
func TestEagerWorkRespectsTheWaitersAndTheirFilters(t *testing.T) {
	t.Parallel()
	p, _ := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-filters"
	item := firstTurn(t, p, instance)

	gpu := duroxide.StringPtr("gpu")
	gpuOnly, err := duroxide.TagFilterTags("gpu")
	require.NoError(t, err)
	got := fetchWorkAsync(ctx, t, p, longLock, gpuOnly)
	waitForEagerWaiters(t, p, 0, 1)
	ackScheduling(t, p, item, greet(instance, 2, nil), greet(instance, 3, gpu), greet(instance, 4, gpu))
	w := receive(t, got)
	require.NotNil(t, w)
	act := w.Item.Kind.(duroxide.ActivityExecuteItem)
	assert.Equal(t, uint64(3), act.ID, "the first activity the fetch's filter accepts")
	assert.Equal(t, duroxide.EagerDispatchCounts{Hits: 1}, p.EagerDispatch().Worker, "one waiter, one hand-over")

	// The others are fetched as usual.
	rest := map[uint64]bool{}
	for _, f := range []duroxide.TagFilter{duroxide.TagFilterDefaultOnly(), gpuOnly} {
		x, err := p.FetchWorkItem(ctx, longLock, 0, nil, f)
		require.NoError(t, err)
		require.NotNil(t, x)
		rest[x.Item.Kind.(duroxide.ActivityExecuteItem).ID] = true
	}
	assert.Equal(t, map[uint64]bool{2: true, 4: true}, rest)

	// Abandoned, the eager item is fetched again, its second attempt.
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))
	again, err := p.FetchWorkItem(ctx, longLock, 0, nil, gpuOnly)
	require.NoError(t, err)
	require.NotNil(t, again)
	assert.Equal(t, uint64(3), again.Item.Kind.(duroxide.ActivityExecuteItem).ID)
	assert.Equal(t, uint32(2), again.AttemptCount)
}

// TestEagerDispatchOff checks that with DisableEagerDispatch no fetch is
// registered as a waiter and a turn's ack creates its activities unlocked.
func TestEagerDispatchOff(t *testing.T) {
	t.Parallel()
	p, _ := newPrivateProvider(t, func(c *cdbConfig) { c.DisableReconciler, c.DisableEagerDispatch = true, true })
	ctx := context.Background()
	const instance = "eager-off"
	item := firstTurn(t, p, instance)
	got := fetchWorkAsync(ctx, t, p, longLock, duroxide.TagFilterDefaultOnly())
	time.Sleep(20 * time.Millisecond)
	o, w := cdb.FreeEagerWaiters(p)
	assert.Zero(t, o+w)
	ackScheduling(t, p, item, greet(instance, 2, nil))
	require.NotNil(t, receive(t, got), "the fetch, woken by the ack, locks the activity itself")
	assert.Equal(t, duroxide.EagerDispatchStats{}, p.EagerDispatch())
}

// TestCloseReleasesEagerWaiters checks that Close ends waiting fetches
// and that no waiter is reservable afterwards.
func TestCloseReleasesEagerWaiters(t *testing.T) {
	t.Parallel()
	p, _ := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	got := fetchWorkAsync(ctx, t, p, longLock, duroxide.TagFilterDefaultOnly())
	waitForEagerWaiters(t, p, 0, 1)
	require.NoError(t, p.Close())
	assert.Nil(t, receive(t, got))
	o, w := cdb.FreeEagerWaiters(p)
	assert.Zero(t, o+w)
}

// fetchTurnAsync starts a long-polling orchestration fetch and returns
// the channel its result arrives on.
func fetchTurnAsync(ctx context.Context, t *testing.T, p *cdb.Provider) <-chan *duroxide.OrchestrationItem {
	got := make(chan *duroxide.OrchestrationItem, 1)
	go func() {
		item, err := p.FetchOrchestrationItem(ctx, longLock, pollTimeout, nil)
		assert.NoError(t, err)
		got <- item
	}()
	return got
}

// runningActivity starts instance on p, commits its first turn scheduling
// activity 2 (no work fetch waits, so it is created unlocked) and fetches
// the activity.
func runningActivity(t *testing.T, p *cdb.Provider, instance string) *duroxide.LockedWorkItem {
	t.Helper()
	ctx := context.Background()
	ackScheduling(t, p, firstTurn(t, p, instance), greet(instance, 2, nil))
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	return w
}

// ackGreetedTurn acks, under lockToken, the turn of instance that takes
// activity 2's completion (greeted): the orchestration completes with it.
func ackGreetedTurn(ctx context.Context, p *cdb.Provider, instance, lockToken string) error {
	completed := duroxide.NewEvent(3, instance, 1, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: `"hi"`})
	finished := duroxide.NewEvent(4, instance, 1, nil, duroxide.OrchestrationCompleted{Output: `"hi"`})
	md := duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr(`"hi"`)}
	return p.AckOrchestrationItem(ctx, lockToken, 1, []duroxide.Event{completed, finished}, nil, nil, md, nil)
}

func greeted(instance string) *duroxide.WorkItem {
	return &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: `"hi"`}}
}

// TestActivityAckHandsTheNextTurnToAWaitingOrchestrationFetch checks eager
// dispatch from an activity's ack to this process's waiting orchestration
// fetch: the ack is one batch, the fetch returns the instance's next turn
// (its history from what this process holds, the completion as its
// message, attempt 1) with no request of its own, and the turn's lock is
// an ordinary one: its ack commits it.
func TestActivityAckHandsTheNextTurnToAWaitingOrchestrationFetch(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-turn"
	w := runningActivity(t, p, instance)

	got := fetchTurnAsync(ctx, t, p)
	waitForEagerWaiters(t, p, 1, 0)
	s.ResetCounters()
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, greeted(instance)))
	turn := receive(t, got)
	require.NotNil(t, turn)
	assert.Equal(t, int64(1), dataRequests(s), "the activity's ack is one batch, the next turn's lock included; the fetch made no request")
	assert.Equal(t, instance, turn.Instance)
	assert.Equal(t, uint32(1), turn.AttemptCount)
	assert.Len(t, turn.History, 2)
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, duroxide.EagerDispatchCounts{Hits: 1}, p.EagerDispatch().Orchestrator)

	// Locked: no other fetch gets it.
	other, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, other)

	require.NoError(t, ackGreetedTurn(ctx, p, instance, turn.LockToken))
	info, err := p.GetInstanceInfo(ctx, instance)
	require.NoError(t, err)
	assert.Equal(t, duroxide.StatusCompleted, info.Status)
}

// TestEagerTurnFallsBackWhenAnotherProcessChangedTheInstance checks that
// an activity's ack whose eager turn the service refuses (another process
// acked a turn of the instance since this one held it) still succeeds, as
// the plain ack, counts a fallback, and that the waiting fetch then takes
// the turn the normal way, with every message.
func TestEagerTurnFallsBackWhenAnotherProcessChangedTheInstance(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	quiet := func(cfg *cdb.Config) {
		cfg.DisableChangeFeedWakeups, cfg.LongPollInterval, cfg.Leases = true, time.Hour, cdb.LeasesInProcess
	}
	a, _ := newEagerProvider(t, c.account, c.container, quiet)
	b, _ := newEagerProvider(t, c.account, c.container, quiet)
	ctx := context.Background()
	const instance = "eager-fallback"
	w := runningActivity(t, a, instance)

	// b takes and acks a turn of the instance: a's held state is stale.
	require.NoError(t, b.EnqueueForOrchestrator(ctx, raised(instance, "go", `"x"`), 0))
	bt, err := fetchInstance(ctx, b, instance)
	require.NoError(t, err)
	require.NoError(t, b.AckOrchestrationItem(ctx, bt.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(3, instance, 1, nil, duroxide.ExternalEvent{Name: "go", Data: `"x"`}),
	}, nil, nil, runningMetadata(), nil))

	got := fetchTurnAsync(ctx, t, a)
	waitForEagerWaiters(t, a, 1, 0)
	require.NoError(t, a.AckWorkItem(ctx, w.LockToken, greeted(instance)), "the activity's ack never fails because of its eager turn")
	assert.Equal(t, duroxide.EagerDispatchCounts{Fallbacks: 1}, a.EagerDispatch().Orchestrator)
	turn := receive(t, got)
	require.NotNil(t, turn, "the waiting fetch takes the turn the normal way")
	assert.Len(t, turn.History, 3, "b's event included")
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, uint32(1), turn.AttemptCount)
}

// TestEagerTurnWhoseAnswerIsLost checks an activity's ack with an eager
// turn whose batch lands but whose answer is lost: the ack succeeds (the
// read-back finds its tombstone), the eager lock is released without
// counting the attempt, a fallback is counted, and the waiting fetch takes
// the turn the normal way: nothing lost, nothing locked without an owner.
func TestEagerTurnWhoseAnswerIsLost(t *testing.T) {
	t.Parallel()
	p, s := newEagerProvider(t, nil, "private", nil)
	ctx := context.Background()
	const instance = "eager-lost"
	w := runningActivity(t, p, instance)

	got := fetchTurnAsync(ctx, t, p)
	waitForEagerWaiters(t, p, 1, 0)
	key := instance
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, greeted(instance)))
	assert.Equal(t, duroxide.EagerDispatchCounts{Fallbacks: 1}, p.EagerDispatch().Orchestrator)
	turn := receive(t, got)
	require.NotNil(t, turn)
	require.Len(t, turn.Messages, 1)
	assert.IsType(t, duroxide.ActivityCompletedItem{}, turn.Messages[0].Kind)
	assert.Equal(t, uint32(1), turn.AttemptCount, "the released eager lock did not count")
	assert.Len(t, turn.History, 2)
}

// TestEagerWorkWhenTheTurnsBatchIsRefusedOrItsAnswerLost checks the turn
// ack's eager part when its first batch does not simply commit: refused
// (another process renewed the lock, which changed the instance
// document), the reservation fails, a fallback is counted, the ack
// commits plainly, and the waiting fetch locks the activity itself; landed
// with its answer lost, the read-back finds the turn committed and the
// waiting fetch gets the activity locked for it, whose ack (its lock not
// cached) still works.
func TestEagerWorkWhenTheTurnsBatchIsRefusedOrItsAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		c := newCluster(t)
		inProcess := func(cfg *cdb.Config) { cfg.Leases = cdb.LeasesInProcess }
		a, _ := newEagerProvider(t, c.account, c.container, inProcess)
		b, _ := newEagerProvider(t, c.account, c.container, inProcess)
		const instance = "eager-work-refused"
		item := firstTurn(t, a, instance)
		require.NoError(t, b.RenewOrchestrationItemLock(ctx, item.LockToken, longLock))
		got := fetchWorkAsync(ctx, t, a, longLock, duroxide.TagFilterDefaultOnly())
		waitForEagerWaiters(t, a, 0, 1)
		ackScheduling(t, a, item, greet(instance, 2, nil))
		assert.Equal(t, duroxide.EagerDispatchCounts{Fallbacks: 1}, a.EagerDispatch().Worker)
		w := receive(t, got)
		require.NotNil(t, w, "the waiting fetch locks the activity itself")
		assert.Equal(t, uint32(1), w.AttemptCount)
		require.NoError(t, a.AckWorkItem(ctx, w.LockToken, greeted(instance)))
	})
	t.Run("answer lost", func(t *testing.T) {
		t.Parallel()
		p, s := newEagerProvider(t, nil, "private", nil)
		const instance = "eager-work-lost"
		item := firstTurn(t, p, instance)
		got := fetchWorkAsync(ctx, t, p, longLock, duroxide.TagFilterDefaultOnly())
		waitForEagerWaiters(t, p, 0, 1)
		key := instance
		s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})
		ackScheduling(t, p, item, greet(instance, 2, nil))
		assert.Equal(t, duroxide.EagerDispatchCounts{Hits: 1}, p.EagerDispatch().Worker)
		w := receive(t, got)
		require.NotNil(t, w)
		assert.Equal(t, uint32(1), w.AttemptCount)
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, greeted(instance)))
		turn, err := fetchInstance(ctx, p, instance)
		require.NoError(t, err)
		require.Len(t, turn.Messages, 1)
	})
}
