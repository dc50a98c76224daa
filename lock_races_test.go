package cdb_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestExpiredOrchestrationLockIsFenced lets an orchestration lock
// expire and another process take the instance, then checks that the first
// process's ack, renewal and abandon all fail (whether its clock agrees
// that the lock expired or lags behind) without touching the new lock, and
// that only the new holder's turn is committed.
func TestExpiredOrchestrationLockIsFenced(t *testing.T) {
	t.Parallel()
	for _, skewed := range []bool{false, true} {
		t.Run(fmt.Sprintf("skewed=%v", skewed), func(t *testing.T) {
			c := newCluster(t)
			clock1, clock2 := newTestClock(), newTestClock()
			p1, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock1.Now })
			p2, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock2.Now })
			p3, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock2.Now })
			ctx := context.Background()
			const inst = "fenced"
			startAndAckFirst(t, p1, inst)
			require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "1"), 0))

			stale, err := p1.FetchOrchestrationItem(ctx, 5*time.Second, 0, nil)
			require.NoError(t, err)
			require.NotNil(t, stale)
			clock2.Advance(6 * time.Second)
			if !skewed {
				clock1.Advance(6 * time.Second)
			}
			fresh, err := p2.FetchOrchestrationItem(ctx, longLock, fetchWait, nil) // p2 sees p1's writes a replica lag later
			require.NoError(t, err)
			require.NotNil(t, fresh, "the expired lock can be taken")
			require.Len(t, fresh.Messages, 1)
			require.Len(t, fresh.History, 1)

			ev := func(data string) []duroxide.Event {
				return []duroxide.Event{duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: data})}
			}
			requirePermanent(t, p1.AckOrchestrationItem(ctx, stale.LockToken, 1, ev("stale"), nil, nil, duroxide.ExecutionMetadata{}, nil), "stale ack")
			requirePermanent(t, p1.RenewOrchestrationItemLock(ctx, stale.LockToken, longLock), "stale renewal")
			requirePermanent(t, p1.AbandonOrchestrationItem(ctx, stale.LockToken, 0, false), "stale abandon")

			none, err := p3.FetchOrchestrationItem(ctx, longLock, 0, nil)
			require.NoError(t, err)
			require.Nil(t, none, "the new lock still holds")
			require.NoError(t, p2.AckOrchestrationItem(ctx, fresh.LockToken, 1, ev("fresh"), nil, nil, duroxide.ExecutionMetadata{}, nil))
			history, err := p2.Read(ctx, inst) // the acking process reads its own write
			require.NoError(t, err)
			require.Len(t, history, 2)
			assert.Equal(t, "fresh", history[1].Kind.(duroxide.ExternalEvent).Data)
		})
	}
}

// TestExpiredWorkItemLockIsFenced does the same for a work item: the
// first holder's ack, renewal and abandon fail once another process took
// the expired lock, and the activity's completion is enqueued once.
func TestExpiredWorkItemLockIsFenced(t *testing.T) {
	t.Parallel()
	for _, skewed := range []bool{false, true} {
		t.Run(fmt.Sprintf("skewed=%v", skewed), func(t *testing.T) {
			c := newCluster(t)
			clock1, clock2 := newTestClock(), newTestClock()
			p1, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock1.Now })
			p2, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock2.Now })
			ctx := context.Background()
			const inst = "fenced-work"
			startAndAckFirst(t, p1, inst)
			act := activity(inst, 2)
			require.NoError(t, p1.EnqueueForWorker(ctx, act))

			stale, err := p1.FetchWorkItem(ctx, 5*time.Second, 0, nil, duroxide.TagFilterDefaultOnly())
			require.NoError(t, err)
			require.NotNil(t, stale)
			clock2.Advance(6 * time.Second)
			if !skewed {
				clock1.Advance(6 * time.Second)
			}
			fresh, err := p2.FetchWorkItem(ctx, longLock, fetchWait, nil, duroxide.TagFilterDefaultOnly()) // p2 sees p1's writes a replica lag later
			require.NoError(t, err)
			require.NotNil(t, fresh, "the expired lock can be taken")
			assert.Equal(t, uint32(2), fresh.AttemptCount)

			done := func(r string) *duroxide.WorkItem {
				return &duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: r}}
			}
			requirePermanent(t, p1.AckWorkItem(ctx, stale.LockToken, done("stale")), "stale ack")
			_, err = p1.RenewWorkItemLock(ctx, stale.LockToken, longLock)
			requirePermanent(t, err, "stale renewal")
			requirePermanent(t, p1.AbandonWorkItem(ctx, stale.LockToken, 0, false), "stale abandon")

			_, err = p2.RenewWorkItemLock(ctx, fresh.LockToken, longLock)
			require.NoError(t, err, "the new lock still holds")
			require.NoError(t, p2.AckWorkItem(ctx, fresh.LockToken, done("fresh")))
			item, err := fetchInstance(ctx, p2, inst)
			require.NoError(t, err)
			require.Len(t, item.Messages, 1, "one completion")
			assert.Equal(t, "fresh", item.Messages[0].Kind.(duroxide.ActivityCompletedItem).Result)
		})
	}
}

// TestExpiredLockNobodyTook checks the calls on a lock that expired
// while no other process took it: ack and renewal fail, the abandon
// releases it.
func TestExpiredLockNobodyTook(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	clock := newTestClock()
	p, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	ctx := context.Background()
	const inst = "expired"
	startAndAckFirst(t, p, inst)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e", "1"), 0))
	item, err := p.FetchOrchestrationItem(ctx, 5*time.Second, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	act := activity(inst, 9)
	require.NoError(t, p.EnqueueForWorker(ctx, act))
	w, err := p.FetchWorkItem(ctx, 5*time.Second, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	clock.Advance(6 * time.Second)

	ev := []duroxide.Event{externalEvent(inst, 2, "1")}
	requirePermanent(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, ev, nil, nil, duroxide.ExecutionMetadata{}, nil))
	requirePermanent(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, longLock))
	require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, false))
	requirePermanent(t, p.AckWorkItem(ctx, w.LockToken, nil))
	_, err = p.RenewWorkItemLock(ctx, w.LockToken, longLock)
	requirePermanent(t, err)
	require.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))

	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 1, "the expired ack wrote nothing")
	again, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Len(t, again.Messages, 1)
	wAgain, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.NotNil(t, wAgain)
}

// TestAckKeepsLaterMessages checks that an ack consumes only the
// messages its fetch returned, never ones enqueued after the fetch, also
// when the ack runs in another process (which rebuilds the lock from the
// container).
func TestAckKeepsLaterMessages(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p1, _ := c.process(t, nil)
	p2, _ := c.process(t, nil)
	ctx := context.Background()
	for _, acker := range []*cdb.Provider{p1, p2} {
		inst := fmt.Sprintf("later-%p", acker)
		startAndAckFirst(t, p1, inst)
		require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "before"), 0))
		item, err := fetchInstance(ctx, p1, inst)
		require.NoError(t, err)
		require.Len(t, item.Messages, 1)
		require.NoError(t, p2.EnqueueForOrchestrator(ctx, raised(inst, "e", "after"), 0))
		ev := []duroxide.Event{duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "before"})}
		require.NoError(t, acker.AckOrchestrationItem(ctx, item.LockToken, 1, ev, nil, nil, duroxide.ExecutionMetadata{}, nil))
		next, err := fetchInstance(ctx, p2, inst)
		require.NoError(t, err)
		require.Len(t, next.Messages, 1, "the later message survived the ack")
		assert.Equal(t, "after", next.Messages[0].Kind.(duroxide.ExternalRaisedItem).Data)
		ev = []duroxide.Event{duroxide.NewEvent(3, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "after"})}
		require.NoError(t, p2.AckOrchestrationItem(ctx, next.LockToken, 1, ev, nil, nil, duroxide.ExecutionMetadata{}, nil))
	}
}

// TestProcessesRaceOnInstances runs several processes, each with
// several dispatchers, fetching, acking and sometimes abandoning turns of
// the same instances, and checks that every raised event is processed
// exactly once: each instance's history holds each event once, with
// contiguous event ids.
func TestProcessesRaceOnInstances(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var procs []*cdb.Provider
	for i := 0; i < 3; i++ {
		p, _ := c.process(t, func(cfg *cdb.Config) { cfg.OrchestrationLanes = 2 })
		procs = append(procs, p)
	}
	setup, _ := c.process(t, nil)
	ctx := context.Background()
	const instances, events = 6, 8
	var ids []string
	for i := 0; i < instances; i++ {
		id := fmt.Sprintf("race-%d", i)
		ids = append(ids, id)
		startAndAckFirst(t, setup, id)
	}
	for _, id := range ids {
		for e := 0; e < events; e++ {
			require.NoError(t, procs[e%3].EnqueueForOrchestrator(ctx, raised(id, "e", fmt.Sprintf("%s/%d", id, e)), 0))
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]int{}
	stop := make(chan struct{})
	for pi, p := range procs {
		for d := 0; d < 3; d++ {
			wg.Add(1)
			go func(p *cdb.Provider, seed int64) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				for {
					select {
					case <-stop:
						return
					default:
					}
					item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
					if err != nil || item == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					if rng.Intn(4) == 0 {
						assert.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, rng.Intn(2) == 0))
						continue
					}
					next := uint64(len(item.History)) + 1
					var delta []duroxide.Event
					for _, m := range item.Messages {
						r := m.Kind.(duroxide.ExternalRaisedItem)
						delta = append(delta, duroxide.NewEvent(next, item.Instance, 1, nil, duroxide.ExternalEvent{Name: r.Name, Data: r.Data}))
						next++
					}
					if err := p.AckOrchestrationItem(ctx, item.LockToken, 1, delta, nil, nil, duroxide.ExecutionMetadata{}, nil); assert.NoError(t, err) {
						mu.Lock()
						acked[item.Instance] += len(delta)
						mu.Unlock()
					}
				}
			}(p, int64(10*pi+d))
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		total := 0
		for _, n := range acked {
			total += n
		}
		mu.Unlock()
		if total >= instances*events {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for _, id := range ids {
		history, err := procs[1].Read(ctx, id)
		require.NoError(t, err)
		require.Len(t, history, events+1, "instance %s", id)
		seen := map[string]bool{}
		for i, ev := range history {
			assert.Equal(t, uint64(i+1), ev.EventID)
			if i == 0 {
				continue
			}
			data := ev.Kind.(duroxide.ExternalEvent).Data
			assert.False(t, seen[data], "event %s processed twice", data)
			assert.True(t, strings.HasPrefix(data, id+"/"), "event %s in %s", data, id)
			seen[data] = true
		}
	}
}

// TestProcessesRaceOnWorkItems has several processes fetch and ack
// the same activities concurrently, with some abandons, and checks that
// each activity is acked once and its completion enqueued once.
func TestProcessesRaceOnWorkItems(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	var procs []*cdb.Provider
	for i := 0; i < 3; i++ {
		p, _ := c.process(t, func(cfg *cdb.Config) { cfg.WorkerLanes = 2 })
		procs = append(procs, p)
	}
	setup, _ := c.process(t, nil)
	ctx := context.Background()
	const inst, activities = "race-work", 30
	startAndAckFirst(t, setup, inst)
	for a := uint64(1); a <= activities; a++ {
		act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 100 + a, Name: "A", Input: "i"}}
		require.NoError(t, procs[a%3].EnqueueForWorker(ctx, act))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[uint64]int{}
	for pi, p := range procs {
		for d := 0; d < 3; d++ {
			wg.Add(1)
			go func(p *cdb.Provider, seed int64) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				idle := 0
				for idle < 20 {
					w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
					if err != nil || w == nil {
						idle++
						time.Sleep(2 * time.Millisecond)
						continue
					}
					idle = 0
					act := w.Item.Kind.(duroxide.ActivityExecuteItem)
					if rng.Intn(4) == 0 {
						assert.NoError(t, p.AbandonWorkItem(ctx, w.LockToken, 0, false))
						continue
					}
					done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: act.ID, Result: "r"}}
					if assert.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done)) {
						mu.Lock()
						acked[act.ID]++
						mu.Unlock()
					}
				}
			}(p, int64(10*pi+d))
		}
	}
	wg.Wait()
	require.Len(t, acked, activities)
	for id, n := range acked {
		assert.Equal(t, 1, n, "activity %d acked %d times", id, n)
	}
	completions := partitionDocs(ctx, t, procs[0], inst, "SELECT c.id FROM c WHERE c.type = 'orch_queue'")
	assert.Len(t, completions, activities, "one completion per activity")
}

// TestSessionClaimRace has two workers of different processes race
// for the items of one session and checks that the session's locked items
// all belong to one owner.
func TestSessionClaimRace(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	pa, _ := c.process(t, nil)
	pb, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "session-race"
	sid := "s"
	for a := uint64(1); a <= 8; a++ {
		act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: a, Name: "A", Input: "i", SessionID: &sid}}
		require.NoError(t, pa.EnqueueForWorker(ctx, act))
	}
	owners := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range []struct {
		p     *cdb.Provider
		owner string
	}{{pa, "A"}, {pb, "B"}, {pa, "A"}, {pb, "B"}} {
		wg.Add(1)
		go func(p *cdb.Provider, owner string) {
			defer wg.Done()
			cfg := &duroxide.SessionFetchConfig{OwnerID: owner, LockTimeout: longLock}
			for i := 0; i < 6; i++ {
				item, err := p.FetchWorkItem(ctx, longLock, 0, cfg, duroxide.TagFilterDefaultOnly())
				if !assert.NoError(t, err) {
					return
				}
				if item != nil {
					mu.Lock()
					owners[owner]++
					mu.Unlock()
				}
			}
		}(w.p, w.owner)
	}
	wg.Wait()
	assert.Len(t, owners, 1, "one owner holds the session: %v", owners)
	total := 0
	for _, n := range owners {
		total += n
	}
	assert.Equal(t, 8, total, "the owner fetched every item of its session")
}

// TestDeleteRacingAck force-deletes a running instance while another
// process's ack of its turn commits between the deletion's checks and its
// first write. Nothing of the instance may survive (no history, execution, queue
// or outbox documents), and the same instance id must start again.
func TestDeleteRacingAck(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	deleter, tr := c.process(t, nil)
	worker, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "delete-race"
	startAndAckFirst(t, worker, inst)
	require.NoError(t, worker.EnqueueForOrchestrator(ctx, raised(inst, "e", "1"), 0))
	item, err := fetchInstance(ctx, worker, inst)
	require.NoError(t, err)

	// The hook runs on the deleter's request goroutines, which its
	// change-feed reader shares: fired is atomic.
	var fired atomic.Bool
	tr.setHook(func(req *http.Request) {
		// Before the deletion's first write (its fence of the instance
		// document), after its checks read the instance.
		if req.Header.Get("x-ms-cosmos-is-batch-request") == "" || req.Header.Get("x-ms-documentdb-partitionkey") != `["`+inst+`"]` ||
			!fired.CompareAndSwap(false, true) {
			return
		}
		act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 3, Name: "A", Input: "i"}}
		timer := duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: inst, ExecutionID: 1, ID: 4, FireAtMs: uint64(time.Now().Add(time.Hour).UnixMilli())}}
		require.NoError(t, worker.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
			externalEvent(inst, 2, "1"),
			duroxide.NewEvent(3, inst, 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "i"}),
		}, []duroxide.WorkItem{act}, []duroxide.WorkItem{timer}, duroxide.ExecutionMetadata{}, nil))
	})
	_, err = deleter.DeleteInstancesAtomic(ctx, []string{inst}, true)
	tr.setHook(nil)
	require.True(t, fired.Load())
	if err != nil {
		// A deletion that lost the race may fail retryably; run it again.
		require.True(t, duroxide.IsRetryable(err), "%v", err)
		_, err = deleter.DeleteInstancesAtomic(ctx, []string{inst}, true)
		require.NoError(t, err)
	}
	left := partitionDocs(ctx, t, deleter, inst, "SELECT c.id, c.type FROM c WHERE c.type != 'consumed'")
	assert.Empty(t, left, "documents of the deleted instance survived")

	// The id starts afresh.
	require.NoError(t, worker.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	again, err := fetchInstance(ctx, worker, inst)
	require.NoError(t, err)
	assert.Empty(t, again.History)
	require.NoError(t, worker.AckOrchestrationItem(ctx, again.LockToken, 1, []duroxide.Event{started(inst)}, nil, nil, runningMetadata(), nil))
	history, err := worker.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 1)
}

// TestFiltersUnderConcurrency runs, in two processes at once, workers
// with different tag filters and orchestration dispatchers with different
// capability filters, and checks that each only ever got what its filter
// accepts and that everything was processed exactly once.
func TestFiltersUnderConcurrency(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	pa, _ := c.process(t, nil)
	pb, _ := c.process(t, nil)
	ctx := context.Background()
	gpu := "gpu"
	const activities = 20
	inst := "filters"
	startAndAckFirst(t, pa, inst)
	for a := uint64(1); a <= activities; a++ {
		var tag *string
		if a%2 == 0 {
			tag = &gpu
		}
		act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: 100 + a, Name: "A", Input: "i", Tag: tag}}
		require.NoError(t, pa.EnqueueForWorker(ctx, act))
	}
	// Orchestrations pinned to two versions.
	v1, v2 := duroxide.Version{Major: 1}, duroxide.Version{Major: 2}
	pinned := map[string]duroxide.Version{}
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("pinned-%d", i)
		v := v1
		if i%2 == 1 {
			v = v2
		}
		pinned[id] = v
		require.NoError(t, pa.EnqueueForOrchestrator(ctx, startItem(id), 0))
	}
	for range pinned {
		item, err := pa.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		require.NotNil(t, item)
		md := runningMetadata()
		v := pinned[item.Instance]
		md.PinnedDuroxideVersion = &v
		require.NoError(t, pa.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(item.Instance)}, nil, nil, md, nil))
	}
	for id := range pinned {
		require.NoError(t, pb.EnqueueForOrchestrator(ctx, raised(id, "e", "x"), 0))
	}

	gpuOnly, err := duroxide.TagFilterTags(gpu)
	require.NoError(t, err)
	only := func(v duroxide.Version) *duroxide.DispatcherCapabilityFilter {
		return &duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{{Min: v, Max: v}}}
	}
	var mu sync.Mutex
	acked := map[uint64]int{}
	turns := map[string]int{}
	var wg sync.WaitGroup
	for _, w := range []struct {
		p      *cdb.Provider
		filter duroxide.TagFilter
		orch   *duroxide.DispatcherCapabilityFilter
	}{{pa, gpuOnly, only(v1)}, {pb, duroxide.TagFilterDefaultOnly(), only(v2)}, {pb, gpuOnly, only(v1)}, {pa, duroxide.TagFilterDefaultOnly(), only(v2)}} {
		wg.Add(1)
		go func(p *cdb.Provider, filter duroxide.TagFilter, orch *duroxide.DispatcherCapabilityFilter) {
			defer wg.Done()
			for idle := 0; idle < 30; {
				got := false
				if w, err := p.FetchWorkItem(ctx, longLock, 0, nil, filter); assert.NoError(t, err) && w != nil {
					got = true
					act := w.Item.Kind.(duroxide.ActivityExecuteItem)
					assert.True(t, filter.Matches(act.Tag), "activity %d with tag %v reached filter %s", act.ID, act.Tag, filter)
					if assert.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil)) {
						mu.Lock()
						acked[act.ID]++
						mu.Unlock()
					}
				}
				if item, err := p.FetchOrchestrationItem(ctx, longLock, 0, orch); assert.NoError(t, err) && item != nil {
					got = true
					assert.True(t, orch.IsCompatible(pinned[item.Instance]), "%s pinned to %v reached filter %v", item.Instance, pinned[item.Instance], orch)
					ev := duroxide.NewEvent(2, item.Instance, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "x"})
					if assert.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{ev}, nil, nil, duroxide.ExecutionMetadata{}, nil)) {
						mu.Lock()
						turns[item.Instance]++
						mu.Unlock()
					}
				}
				if got {
					idle = 0
				} else {
					idle++
					time.Sleep(2 * time.Millisecond)
				}
			}
		}(w.p, w.filter, w.orch)
	}
	wg.Wait()
	assert.Len(t, acked, activities)
	for id, n := range acked {
		assert.Equal(t, 1, n, "activity %d", id)
	}
	assert.Len(t, turns, len(pinned))
	for id, n := range turns {
		assert.Equal(t, 1, n, "instance %s", id)
	}
}

// TestDeleteFailingMidwayThenReuse makes a deletion fail after it
// began writing (its batch deletes keep failing), then reuses the instance
// id. The failed deletion must not leave invisible leftovers: the instance
// stays listed (so that deleting it again completes the job) or is gone
// whole. After deleting again, the id starts afresh: its first turn
// commits and sees nothing of the old instance (history, KV, activities).
func TestDeleteFailingMidwayThenReuse(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "delete-midway"
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	set := duroxide.NewEvent(2, inst, 1, nil, duroxide.KeyValueSet{Key: "old", Value: "v", LastUpdatedAtMs: 1})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst), set,
		duroxide.NewEvent(3, inst, 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "i"})},
		[]duroxide.WorkItem{activity(inst, 3)}, nil, runningMetadata(), nil))

	key := inst
	remove := c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Fault: emulator.ServiceUnavailable()})
	// The fault persists: a deadline ends the deletion's retries after a
	// second rather than the default retries' 4.5 s (Config.RetryBudget:
	// a caller's deadline wins).
	failing, cancel := context.WithTimeout(ctx, time.Second)
	_, err = p.DeleteInstancesAtomic(failing, []string{inst}, true)
	cancel()
	remove()
	require.Error(t, err, "the deletion failed midway")
	require.True(t, duroxide.IsRetryable(err), "%v", err)
	listed, err := p.ListInstances(ctx)
	require.NoError(t, err)
	left := partitionDocs(ctx, t, p, inst, "SELECT c.id, c.type FROM c WHERE c.type != 'consumed'")
	if len(listed) == 0 {
		assert.Empty(t, left, "the instance is no longer listed, yet documents of it survived")
	}
	if len(listed) > 0 {
		none, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		require.Nil(t, none, "an instance being deleted is not fetched")
		_, err = p.DeleteInstancesAtomic(ctx, []string{inst}, true)
		require.NoError(t, err, "deleting again completes the job")
	}
	assert.Empty(t, partitionDocs(ctx, t, p, inst, "SELECT c.id, c.type FROM c WHERE c.type != 'consumed'"))

	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	again, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Empty(t, again.History)
	assert.Empty(t, again.KVSnapshot, "nothing of the old instance's KV")
	require.NoError(t, p.AckOrchestrationItem(ctx, again.LockToken, 1, []duroxide.Event{started(inst)}, nil, nil, runningMetadata(), nil),
		"the reused id's first turn commits")
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	assert.Nil(t, w, "the old instance's activity is gone")
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 1)
}
