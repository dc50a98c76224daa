package cdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestReviewStagedTurnReplayedElsewhere lets a process stage a large
// turn's overflow history and die before its final batch; after the lock
// expires, another process replays the turn and acks different, shorter
// content under the same event ids. Every reader (Read, ReadWithExecution,
// the admin history reads, execution info, instance stats, system metrics,
// deletion and pruning counts) must show the committed turn only, never
// the staged leftovers, and later turns must commit normally.
func TestReviewStagedTurnReplayedElsewhere(t *testing.T) {
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
	check(p1, []string{"replayed", "replayed-too", "later"})

	res, err := p1.DeleteInstancesAtomic(ctx, []string{inst}, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(4), res.EventsDeleted, "only committed events are counted")
}

// TestReviewStagedNewExecutionReplayed stages the first turn of a new
// execution (after ContinueAsNew) and lets it die, then checks that the
// instance still reports the old execution, and that a replay of the turn
// by another process commits the new execution with its own content.
func TestReviewStagedNewExecutionReplayed(t *testing.T) {
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
	replay, err := p2.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, replay)
	require.Equal(t, uint64(1), replay.ExecutionID)
	require.NoError(t, p2.AckOrchestrationItem(ctx, replay.LockToken, 2, []duroxide.Event{first}, nil, nil, runningMetadata(), nil))
	history, err := p1.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, history, 1)
	info, err := p1.GetExecutionInfo(ctx, inst, 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.EventCount)
	pruned, err := p1.PruneExecutions(ctx, inst, duroxide.PruneOptions{})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), pruned.ExecutionsDeleted)
	assert.Equal(t, uint64(2), pruned.EventsDeleted)
}
