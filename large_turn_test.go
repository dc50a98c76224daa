package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// startTurn enqueues a start for instance and fetches its first turn.
func startTurn(t *testing.T, p duroxide.Provider, instance string) *duroxide.OrchestrationItem {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	item, err := fetchInstance(ctx, p, instance)
	require.NoError(t, err)
	return item
}

// bigEvents returns n ExternalEvent events with payloads of size bytes,
// numbered from first.
func bigEvents(instance string, first uint64, n, size int) []duroxide.Event {
	events := make([]duroxide.Event, n)
	for i := range events {
		events[i] = duroxide.NewEvent(first+uint64(i), instance, 1, nil, duroxide.ExternalEvent{
			Name: fmt.Sprintf("e%d", i), Data: strings.Repeat(string(rune('a'+i%26)), size),
		})
	}
	return events
}

// TestAck300EventsAndFanOut commits a turn of 300 events that schedules 300
// activities (far beyond one batch's 100 operations) and checks that all of
// it landed: the history reads back whole and every activity is fetched
// exactly once.
func TestAck300EventsAndFanOut(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "fan-out"
	item := startTurn(t, p, inst)
	events := []duroxide.Event{started(inst)}
	var acts []duroxide.WorkItem
	for i := uint64(2); i <= 300; i++ {
		events = append(events, duroxide.NewEvent(i, inst, 1, nil, duroxide.ActivityScheduled{Name: "Work", Input: fmt.Sprint(i)}))
		acts = append(acts, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: inst, ExecutionID: 1, ID: i, Name: "Work", Input: fmt.Sprint(i)}})
	}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))

	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 300)
	for i, ev := range history {
		assert.Equal(t, uint64(i+1), ev.EventID)
	}
	seen := map[uint64]bool{}
	for {
		w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
		require.NoError(t, err)
		if w == nil {
			break
		}
		id := w.Item.Kind.(duroxide.ActivityExecuteItem).ID
		assert.False(t, seen[id], "activity %d fetched twice", id)
		seen[id] = true
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
	}
	assert.Len(t, seen, 299, "every scheduled activity reached the worker queue")
	info, err := p.GetExecutionInfo(ctx, inst, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(300), info.EventCount)
}

// TestAckLargeEvents commits 2.5 MB of events in one turn (more than one
// batch's 2 MB) and reads them back intact.
func TestAckLargeEvents(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "large"
	item := startTurn(t, p, inst)
	events := append([]duroxide.Event{started(inst)}, bigEvents(inst, 2, 25, 100_000)...)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, nil, nil, runningMetadata(), nil))
	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 26)
	for i, ev := range history[1:] {
		assert.Equal(t, events[i+1].Kind, ev.Kind)
	}
	stats, err := p.GetInstanceStats(ctx, inst)
	require.NoError(t, err)
	assert.Greater(t, stats.HistorySizeBytes, uint64(2_500_000))
}

// TestAckDyingBeforeFinalBatch makes the final batch of a large turn fail
// every time (as if the process died after staging its overflow history)
// and checks that nothing of the turn is visible, then that the turn
// commits whole once the fault is gone.
func TestAckDyingBeforeFinalBatch(t *testing.T) {
	t.Parallel()
	p, s := newPrivateProvider(t, nil)
	ctx := context.Background()
	const inst = "dies"
	require.NoError(t, helloWorldPrefix(ctx, p, inst))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)

	key, id := inst, "instance"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: &id, Fault: emulator.InternalServerError()})
	events := bigEvents(inst, 3, 250, 10_000) // 2.5 MB in 250 events: staged, then the final batch
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, events, nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.Error(t, err)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe))
	assert.True(t, pe.Retryable)

	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 2, "the staged events are invisible")
	all, err := p.ReadWithExecution(ctx, inst, 1)
	require.NoError(t, err)
	assert.Len(t, all, 2)
	info, err := p.GetExecutionInfo(ctx, inst, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), info.EventCount)
	staged := partitionDocs(ctx, t, p, inst, "SELECT c.id FROM c WHERE c.type = 'history'")
	assert.Greater(t, len(staged), 2, "overflow history was staged before the final batch")

	remove()
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, nil, nil, duroxide.ExecutionMetadata{}, nil))
	history, err = p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 252)
}

// helloWorldPrefix runs the first turn of a hello-world orchestration
// (two events, one activity) and completes the activity, leaving the
// instance with a message to fetch.
func helloWorldPrefix(ctx context.Context, p duroxide.Provider, instance string) error {
	if err := p.EnqueueForOrchestrator(ctx, startItem(instance), 0); err != nil {
		return err
	}
	item, err := fetchInstance(ctx, p, instance)
	if err != nil {
		return err
	}
	scheduled := duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "Greet", Input: `"world"`})
	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: 1, ID: 2, Name: "Greet", Input: `"world"`}}
	if err := p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(instance), scheduled}, []duroxide.WorkItem{act}, nil, runningMetadata(), nil); err != nil {
		return err
	}
	w, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	if err != nil || w == nil {
		return fmt.Errorf("fetch work item: %v %v", w, err)
	}
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: "r"}}
	return p.AckWorkItem(ctx, w.LockToken, &done)
}

// TestAckRefusesWhatCannotFit checks that an event larger than an item and
// an event id already in the history are permanent errors that write
// nothing and keep the lock.
func TestAckRefusesWhatCannotFit(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	const inst = "refused"
	require.NoError(t, helloWorldPrefix(ctx, p, inst))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)

	huge := bigEvents(inst, 3, 1, 2_100_000)
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, huge, nil, nil, duroxide.ExecutionMetadata{}, nil)
	var pe *duroxide.ProviderError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.False(t, pe.Retryable)
	assert.Contains(t, pe.Message, "limited to")

	dup := bigEvents(inst, 2, 2, 10) // event 2 is already in the history
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, dup, nil, nil, duroxide.ExecutionMetadata{}, nil)
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.False(t, pe.Retryable)
	assert.Contains(t, pe.Message, "duplicate event_id 2")

	history, err := p.Read(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, history, 2, "nothing was written")
	require.NoError(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, longLock), "the lock is still held")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, bigEvents(inst, 3, 1, 10), nil, nil, duroxide.ExecutionMetadata{}, nil))
}

// TestStagedTurnReplayedElsewhere lets a process stage a large
// turn's overflow history and die before its final batch; after the lock
// expires, another process replays the turn and acks different, shorter
// content under the same event ids. Every reader (Read, ReadWithExecution,
// the admin history reads, execution info, instance stats, system metrics,
// deletion and pruning counts) must show the committed turn only, never
// the staged leftovers, and later turns must commit normally.
func TestStagedTurnReplayedElsewhere(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	clock := newTestClock()
	p1, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	p2, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	ctx := context.Background()
	const inst = "staged-replay"
	startAndAckFirst(t, p1, inst)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "x"), 0))
	item, err := p1.FetchOrchestrationItem(ctx, 5*time.Second, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)

	// p1's final batch (the one replacing the instance document) never
	// lands: it "dies" after staging.
	key, id := inst, "instance"
	remove := c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: &id, Fault: emulator.InternalServerError()})
	big := bigEvents(inst, 2, 250, 10_000)
	require.Error(t, p1.AckOrchestrationItem(ctx, item.LockToken, 1, big, nil, nil, duroxide.ExecutionMetadata{}, nil))
	remove()
	staged := partitionDocs(ctx, t, p1, inst, "SELECT c.id FROM c WHERE c.type = 'history'")
	require.Greater(t, len(staged), 100, "overflow history was staged")

	clock.Advance(6 * time.Second)
	replay, err := p2.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, replay)
	require.Len(t, replay.History, 1, "staged events are not part of the replayed turn")
	short := []duroxide.Event{
		duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "replayed"}),
		duroxide.NewEvent(3, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "replayed-too"}),
	}
	require.NoError(t, p2.AckOrchestrationItem(ctx, replay.LockToken, 1, short, nil, nil, duroxide.ExecutionMetadata{}, nil))
	requirePermanent(t, p1.AckOrchestrationItem(ctx, item.LockToken, 1, big, nil, nil, duroxide.ExecutionMetadata{}, nil), "the dead process's turn cannot commit any more")

	check := func(p *cdb.Provider, want []string) {
		t.Helper()
		for _, read := range []func() ([]duroxide.Event, error){
			func() ([]duroxide.Event, error) { return p.Read(ctx, inst) },
			func() ([]duroxide.Event, error) { return p.ReadWithExecution(ctx, inst, 1) },
			func() ([]duroxide.Event, error) { return p.ReadHistory(ctx, inst) },
			func() ([]duroxide.Event, error) { return p.ReadHistoryWithExecutionID(ctx, inst, 1) },
		} {
			history, err := read()
			require.NoError(t, err)
			require.Len(t, history, len(want)+1)
			for i, w := range want {
				assert.Equal(t, w, history[i+1].Kind.(duroxide.ExternalEvent).Data)
			}
		}
		info, err := p.GetExecutionInfo(ctx, inst, 1)
		require.NoError(t, err)
		assert.Equal(t, uint64(len(want)+1), info.EventCount)
		stats, err := p.GetInstanceStats(ctx, inst)
		require.NoError(t, err)
		assert.Equal(t, uint64(len(want)+1), stats.HistoryEventCount)
		metrics, err := p.GetSystemMetrics(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(len(want)+1), metrics.TotalEvents)
	}
	check(p1, []string{"replayed", "replayed-too"})
	check(p2, []string{"replayed", "replayed-too"})

	// A later turn writes the next ids over the leftovers.
	require.NoError(t, p2.EnqueueForOrchestrator(ctx, raised(inst, "e", "later"), 0))
	next, err := fetchInstance(ctx, p2, inst)
	require.NoError(t, err)
	require.Len(t, next.History, 3)
	require.NoError(t, p2.AckOrchestrationItem(ctx, next.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(4, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "later"}),
	}, nil, nil, duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr("done")}, nil))
	check(p2, []string{"replayed", "replayed-too", "later"}) // the acking process reads its own write

	res, err := p1.DeleteInstancesAtomic(ctx, []string{inst}, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), res.EventsDeleted, "only committed events are counted")
}

// TestStagedNewExecutionReplayed stages the first turn of a new
// execution (after ContinueAsNew) and lets it die, then checks that the
// instance still reports the old execution, and that a replay of the turn
// by another process commits the new execution with its own content.
func TestStagedNewExecutionReplayed(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	clock := newTestClock()
	p1, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	p2, _ := c.process(t, func(cfg *cdb.Config) { cfg.Now = clock.Now })
	ctx := context.Background()
	const inst = "staged-can"
	startAndAckFirst(t, p1, inst)
	require.NoError(t, p1.EnqueueForOrchestrator(ctx, raised(inst, "e", "x"), 0))
	item, err := fetchInstance(ctx, p1, inst)
	require.NoError(t, err)
	can := duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{Instance: inst, Orchestration: helloOrch, Input: "next", Version: duroxide.StringPtr(helloVersion)}}
	require.NoError(t, p1.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
		duroxide.NewEvent(2, inst, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
	}, nil, []duroxide.WorkItem{can}, duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew), Output: duroxide.StringPtr("next")}, nil))

	item, err = p1.FetchOrchestrationItem(ctx, 5*time.Second, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	key, id := inst, "instance"
	remove := c.emu.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, ItemID: &id, Fault: emulator.InternalServerError()})
	first := duroxide.NewEvent(1, inst, 2, nil, duroxide.OrchestrationStarted{Name: helloOrch, Version: helloVersion, Input: "next"})
	big := append([]duroxide.Event{first}, bigEvents(inst, 2, 250, 10_000)...)
	for i := range big {
		big[i].ExecutionID = 2
	}
	require.Error(t, p1.AckOrchestrationItem(ctx, item.LockToken, 2, big, nil, nil, runningMetadata(), nil))
	remove()

	latest, err := p1.LatestExecutionID(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), latest, "the dead turn did not start execution 2")
	executions, err := p1.ListExecutions(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1}, executions)
	h2, err := p1.ReadWithExecution(ctx, inst, 2)
	require.NoError(t, err)
	assert.Empty(t, h2)

	clock.Advance(6 * time.Second)
	replay, err := p2.FetchOrchestrationItem(ctx, longLock, fetchWait, nil) // p2 sees p1's writes a replica lag later
	require.NoError(t, err)
	require.NotNil(t, replay)
	require.Equal(t, uint64(1), replay.ExecutionID)
	require.NoError(t, p2.AckOrchestrationItem(ctx, replay.LockToken, 2, []duroxide.Event{first}, nil, nil, runningMetadata(), nil))
	history, err := p2.Read(ctx, inst) // the acking process reads its own write
	require.NoError(t, err)
	require.Len(t, history, 1)
	info, err := p2.GetExecutionInfo(ctx, inst, 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.EventCount)
	pruned, err := p2.PruneExecutions(ctx, inst, duroxide.PruneOptions{}) // p1 may not see execution 2 yet: it would prune less
	require.NoError(t, err)
	assert.Equal(t, uint64(1), pruned.ExecutionsDeleted)
	assert.Equal(t, uint64(2), pruned.EventsDeleted)
}
