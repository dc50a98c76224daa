package cdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// runTurns gives instance n more turns through p, each consuming one raised
// event and appending its ExternalEvent, from event id first on.
func runTurns(t *testing.T, p duroxide.Provider, instance string, first uint64, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(instance, "e", fmt.Sprint(i)), 0))
		ackNextTurn(t, p, instance, []duroxide.Event{externalEvent(instance, first+uint64(i), fmt.Sprint(i))})
	}
}

// TestHeldHistoryTurnReadsOnlyTheNewEvents: the turn of an instance this
// process ran reads only the history documents after the ones it holds,
// and still returns the whole history; a process holding nothing reads it
// all.
func TestHeldHistoryTurnReadsOnlyTheNewEvents(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	cold, _ := c.process(t, func(cfg *cdb.Config) { cfg.HeldHistoryEvents = -1 })
	ctx := context.Background()
	const inst = "held-reads"
	startAndAckFirst(t, p, inst)
	runTurns(t, p, inst, 2, 30) // history: events 1..31

	fetchCounting := func(q duroxide.Provider) (*duroxide.OrchestrationItem, int64) {
		require.NoError(t, q.EnqueueForOrchestrator(ctx, raised(inst, "e", "x"), 0))
		c.emu.ResetCounters()
		item, err := fetchInstance(ctx, q, inst)
		require.NoError(t, err)
		return item, c.emu.Counters()[emulator.OpQuery].ItemsReturned
	}
	item, warmItems := fetchCounting(p)
	require.Len(t, item.History, 31)
	for i, ev := range item.History {
		require.Equal(t, uint64(i+1), ev.EventID)
	}
	require.NoError(t, p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))

	item, coldItems := fetchCounting(cold)
	require.Len(t, item.History, 31)
	require.NoError(t, cold.AbandonOrchestrationItem(ctx, item.LockToken, 0, true))
	assert.Less(t, warmItems, int64(10), "the held turn read only the instance, its messages and no old event")
	assert.GreaterOrEqual(t, coldItems, int64(31), "a process holding nothing reads every event")
}

// TestHeldHistoryIsNotUsedForARecreatedInstance: another process deletes
// an instance this process holds and starts it again; this process's next
// turn of it has the new history, not the held one.
func TestHeldHistoryIsNotUsedForARecreatedInstance(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, nil)
	b, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "held-recreated"
	startAndAckFirst(t, a, inst)
	runTurns(t, a, inst, 2, 5) // a holds events 1..6

	_, err := b.DeleteInstance(ctx, inst, true)
	require.NoError(t, err)
	startAndAckFirst(t, b, inst)
	runTurns(t, b, inst, 2, 7) // the new instance: events 1..8, other data

	require.NoError(t, a.EnqueueForOrchestrator(ctx, raised(inst, "e", "last"), 0))
	item, err := fetchInstance(ctx, a, inst)
	require.NoError(t, err)
	want, err := b.Read(ctx, inst)
	require.NoError(t, err)
	require.Len(t, item.History, 8)
	assert.Equal(t, want, item.History)
}

// TestHeldHistoryFollowsTurnsOfAnotherProcess: turns committed by another
// process since this one held the history are read and appended.
func TestHeldHistoryFollowsTurnsOfAnotherProcess(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, nil)
	b, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "held-elsewhere"
	startAndAckFirst(t, a, inst)
	runTurns(t, a, inst, 2, 3) // a holds 1..4
	runTurns(t, b, inst, 5, 4) // b commits 5..8
	require.NoError(t, a.EnqueueForOrchestrator(ctx, raised(inst, "e", "last"), 0))
	item, err := fetchInstance(ctx, a, inst)
	require.NoError(t, err)
	want, err := b.Read(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, want, item.History)
}
