package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// memRaise returns an external event for instance, which wakes its
// orchestration for one turn.
func memRaise(instance string, i int) duroxide.WorkItem {
	return duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: instance, Name: "e", Data: fmt.Sprint(i)}}
}

// memTurn fetches the next turn, which must be instance's, and acks it
// with delta.
func memTurn(tb testing.TB, p *memory.MemoryProvider, instance string, delta []duroxide.Event) *duroxide.OrchestrationItem {
	tb.Helper()
	ctx := context.Background()
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(tb, err)
	require.NotNil(tb, item)
	require.Equal(tb, instance, item.Instance)
	require.Nil(tb, item.HistoryError)
	md := duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Seq"), OrchestrationVersion: duroxide.StringPtr("1.0.0")}
	require.NoError(tb, p.AckOrchestrationItem(ctx, item.LockToken, 1, delta, nil, nil, md, nil))
	return item
}

// memSeed starts instance with its OrchestrationStarted event and then
// events external events in turns of one, and returns the next event id.
func memSeed(tb testing.TB, p *memory.MemoryProvider, instance string, events int) uint64 {
	tb.Helper()
	ctx := context.Background()
	require.NoError(tb, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: "Seq", Input: "{}", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
	}}, 0))
	memTurn(tb, p, instance, []duroxide.Event{duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: "Seq", Version: "1.0.0", Input: "{}"})})
	next := uint64(2)
	for i := range events {
		require.NoError(tb, p.EnqueueForOrchestrator(ctx, memRaise(instance, i), 0))
		memTurn(tb, p, instance, []duroxide.Event{duroxide.NewEvent(next, instance, 1, nil, duroxide.ExternalEvent{Name: "e", Data: fmt.Sprint(i)})})
		next++
	}
	return next
}

// A fetch's history is the whole execution's, and what it returned stays
// as it was when later turns append to the execution, and a caller's
// append to it does not reach the provider's history.
func TestMemoryFetchedHistoryKeepsItsContentsAcrossTurns(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx := context.Background()
	next := memSeed(t, p, "a", 3)

	require.NoError(t, p.EnqueueForOrchestrator(ctx, memRaise("a", 3), 0))
	first := memTurn(t, p, "a", []duroxide.Event{duroxide.NewEvent(next, "a", 1, nil, duroxide.ExternalEvent{Name: "e", Data: "3"})})
	require.Len(t, first.History, 4)
	snapshot := append([]duroxide.Event(nil), first.History...)
	_ = append(first.History, duroxide.NewEvent(99, "a", 1, nil, duroxide.ExternalEvent{Name: "mine"}))

	require.NoError(t, p.EnqueueForOrchestrator(ctx, memRaise("a", 4), 0))
	second := memTurn(t, p, "a", nil)
	require.Equal(t, snapshot, first.History, "the first fetch's history is unchanged by the later ack")
	require.Len(t, second.History, 5)
	require.Equal(t, snapshot, second.History[:4])
	require.Equal(t, next, second.History[4].EventID)
	read, err := p.Read(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, second.History, read)
}

// History appended out of event-id order (AppendWithExecution) is read
// and fetched in event-id order, and an id already stored is refused with
// nothing written.
func TestMemoryHistoryAppendedOutOfOrderIsFetchedInOrder(t *testing.T) {
	t.Parallel()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx := context.Background()
	ev := func(id uint64) duroxide.Event {
		if id == 1 {
			return duroxide.NewEvent(1, "b", 1, nil, duroxide.OrchestrationStarted{Name: "Seq", Version: "1.0.0", Input: "{}"})
		}
		return duroxide.NewEvent(id, "b", 1, nil, duroxide.ExternalEvent{Name: "e", Data: fmt.Sprint(id)})
	}
	require.NoError(t, p.AppendWithExecution(ctx, "b", 1, []duroxide.Event{ev(4), ev(1)}))
	require.NoError(t, p.AppendWithExecution(ctx, "b", 1, []duroxide.Event{ev(3), ev(2)}))
	err := p.AppendWithExecution(ctx, "b", 1, []duroxide.Event{ev(5), ev(3)})
	require.ErrorContains(t, err, "duplicate event_id 3")

	ids := func(events []duroxide.Event) []uint64 {
		var out []uint64
		for _, e := range events {
			out = append(out, e.EventID)
		}
		return out
	}
	read, err := p.Read(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3, 4}, ids(read))

	require.NoError(t, p.EnqueueForOrchestrator(ctx, memRaise("b", 0), 0))
	item := memTurn(t, p, "b", []duroxide.Event{ev(5)})
	require.Equal(t, "Seq", item.OrchestrationName)
	require.Equal(t, read, item.History)
}

// BenchmarkMemoryTurnOnLongHistory measures one turn (enqueue, fetch, ack
// of one event) of an instance whose execution already holds the given
// number of events: the in-memory provider's cost per turn should not
// grow with the history (duroxide's contract hands the whole history to
// every fetch; the provider keeps it decoded instead of decoding it per
// fetch).
//
//	go test ./providertest/memory -run '^$' -bench TurnOnLongHistory
func BenchmarkMemoryTurnOnLongHistory(b *testing.B) {
	for _, events := range []int{400, 4000} {
		b.Run(fmt.Sprintf("history=%d", events), func(b *testing.B) {
			p := memory.NewMemoryProvider(memory.MemoryOptions{})
			ctx := context.Background()
			next := memSeed(b, p, "bench", events)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.EnqueueForOrchestrator(ctx, memRaise("bench", i), 0); err != nil {
					b.Fatal(err)
				}
				memTurn(b, p, "bench", []duroxide.Event{duroxide.NewEvent(next, "bench", 1, nil, duroxide.ExternalEvent{Name: "e", Data: fmt.Sprint(i)})})
				next++
			}
		})
	}
}
