package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// historyPagesCases check the dashboard's optional read capabilities (Go
// additions, no Rust test): duroxide.HistoryPageReader (a range of an
// execution's history with its metadata, and events by id) and
// duroxide.InstanceMessagesReader (an instance's queued messages). A
// provider whose admin lacks one skips its case, saying so.
var historyPagesCases = []Case{
	{"test_history_pages_read_ranges_and_events", HistoryPagesReadRangesAndEvents},
	{"test_instance_messages_list_queued_work", InstanceMessagesListQueuedWork},
}

// HistoryPagesReadRangesAndEvents checks ReadHistoryPage over a 10-event
// execution (a range, a range past the end, the execution's metadata) and
// ReadHistoryEvents (the ids that exist, in order), and that an unknown
// execution is a permanent error.
func HistoryPagesReadRangesAndEvents(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	pr, ok := admin.(duroxide.HistoryPageReader)
	if !ok {
		t.Skip("skipped: the provider's admin lacks the optional capability duroxide.HistoryPageReader")
	}
	const id = "hist-pages"
	events := []duroxide.Event{startedEvent(id, 1, 1, testOrch, testOrchVersion)}
	for i := uint64(2); i <= 10; i++ {
		events = append(events, duroxide.NewEvent(i, id, 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "{}"}))
	}
	delTurn(t, p, startItem(id), 1, events, nil, delMetadata(duroxide.StatusRunning, "", ""))
	ctx := t.Context()
	page, err := pr.ReadHistoryPage(ctx, id, 1, 3, 4)
	require.NoError(t, err)
	var ids []uint64
	for _, ev := range page.Events {
		ids = append(ids, ev.EventID)
	}
	assert.Equal(t, []uint64{3, 4, 5, 6}, ids, "events 3 to 6")
	assert.EqualValues(t, 10, page.Execution.EventCount)
	assert.Equal(t, duroxide.StatusRunning, page.Execution.Status)
	assert.EqualValues(t, 1, page.Execution.ExecutionID)
	past, err := pr.ReadHistoryPage(ctx, id, 1, 11, 5)
	require.NoError(t, err)
	assert.Empty(t, past.Events, "a range past the end")
	assert.EqualValues(t, 10, past.Execution.EventCount)
	some, err := pr.ReadHistoryEvents(ctx, id, 1, []uint64{9, 1, 99})
	require.NoError(t, err)
	ids = nil
	for _, ev := range some {
		ids = append(ids, ev.EventID)
	}
	assert.Equal(t, []uint64{1, 9}, ids, "the ids that exist, in order")
	_, err = pr.ReadHistoryPage(ctx, id, 7, 1, 5)
	requirePermanent(t, err, "an unknown execution")
}

// InstanceMessagesListQueuedWork checks ListInstanceMessages: a turn that
// schedules an activity and a timer leaves a worker message and an
// invisible TimerFired; once a worker fetches the activity, its message
// is locked, with the lock's token and attempt 1. Another instance's
// messages are not listed.
func InstanceMessagesListQueuedWork(t *testing.T, f Factory) {
	p, admin := delProvider(t, f)
	mr, ok := admin.(duroxide.InstanceMessagesReader)
	if !ok {
		t.Skip("skipped: the provider's admin lacks the optional capability duroxide.InstanceMessagesReader")
	}
	const id = "inst-msgs"
	ctx := t.Context()
	fireAt := uint64(time.Now().Add(time.Hour).UnixMilli())
	enqueueOrch(t, p, startItem(id))
	item := fetchOrch(t, p, longLock)
	timer := duroxide.WorkItem{Kind: duroxide.TimerFiredItem{Instance: id, ExecutionID: 1, ID: 3, FireAtMs: fireAt}}
	activity := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 2, Name: "A", Input: "{}"}}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{
		startedEvent(id, 1, 1, testOrch, testOrchVersion),
		duroxide.NewEvent(2, id, 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "{}"}),
		duroxide.NewEvent(3, id, 1, nil, duroxide.TimerCreated{FireAtMs: fireAt}),
	}, []duroxide.WorkItem{activity}, []duroxide.WorkItem{timer}, delMetadata(duroxide.StatusRunning, "", ""), nil))
	createInstance(t, p, "inst-msgs-other")

	msgs, err := mr.ListInstanceMessages(ctx, id)
	require.NoError(t, err)
	require.Len(t, msgs, 2, "the timer and the activity: %+v", msgs)
	assert.Equal(t, duroxide.QueueOrchestrator, msgs[0].Queue)
	fired, ok := msgs[0].Item.Kind.(duroxide.TimerFiredItem)
	require.True(t, ok, "the orchestrator queue holds the timer: %+v", msgs[0].Item)
	assert.EqualValues(t, 3, fired.ID)
	assert.GreaterOrEqual(t, msgs[0].VisibleAt, fireAt-1000, "invisible until it fires")
	assert.Equal(t, duroxide.QueueWorker, msgs[1].Queue)
	assert.Zero(t, msgs[1].LockedUntil, "not fetched yet")

	work, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, work)
	msgs, err = mr.ListInstanceMessages(ctx, id)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	act, ok := msgs[1].Item.Kind.(duroxide.ActivityExecuteItem)
	require.True(t, ok)
	assert.Equal(t, "A", act.Name)
	assert.EqualValues(t, 2, act.ID)
	assert.NotZero(t, msgs[1].LockedUntil, "locked by the fetch")
	assert.NotEmpty(t, msgs[1].LockToken)
	assert.EqualValues(t, 1, msgs[1].AttemptCount, "the first attempt")
	none, err := mr.ListInstanceMessages(ctx, "no-such-instance")
	require.NoError(t, err)
	assert.Empty(t, none)
}
