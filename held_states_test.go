package cdb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// The fetch of an instance whose state this process holds is its lock
// batch alone (internal/held); these tests check that whatever another
// process did meanwhile, the turn is still the stored one.

// fetchSteps records the fetch steps of a provider (cdb.SetFetchTracer).
type fetchSteps struct {
	mu     sync.Mutex
	counts map[string]int
}

func traceSteps(p *cdb.Provider) *fetchSteps {
	s := &fetchSteps{counts: map[string]int{}}
	cdb.SetFetchTracer(p, func(ev string) {
		s.mu.Lock()
		s.counts[ev]++
		s.mu.Unlock()
	})
	return s
}

// take returns the counts recorded since the last take.
func (s *fetchSteps) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	s.counts = map[string]int{}
	return c
}

// hourlyPolls makes a process learn of other processes' messages only at
// its candidate queries (no change feed), whose answers stand for an hour.
func hourlyPolls(c *cdb.Config) {
	c.LongPollInterval, c.DisableChangeFeedWakeups = time.Hour, true
}

// messageNames returns the names of the raised events among items.
func messageNames(items []duroxide.WorkItem) []string {
	var names []string
	for _, it := range items {
		if r, ok := it.Kind.(duroxide.ExternalRaisedItem); ok {
			names = append(names, r.Name)
		}
	}
	return names
}

func TestHeldStateIsRefusedAfterAnotherProcessAckedTheInstance(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, hourlyPolls)
	b, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "held-acked-elsewhere"
	steps := traceSteps(a)
	startAndAckFirst(t, a, inst)
	assert.Equal(t, 1, steps.take()["orch held lock batch"], "a wrote the start: its first fetch is the lock batch")

	require.NoError(t, b.EnqueueForOrchestrator(ctx, raised(inst, "from-b", "1"), 0))
	ackNextTurn(t, b, inst, []duroxide.Event{externalEvent(inst, 2, "1")})

	require.NoError(t, a.EnqueueForOrchestrator(ctx, raised(inst, "from-a", "2"), 0))
	item, err := fetchInstance(ctx, a, inst)
	require.NoError(t, err)
	got := steps.take()
	assert.Equal(t, 1, got["orch held state refused"], "b's ack changed the instance document: the held ETag fails")
	assert.Equal(t, 1, got["orch state query"], "the fetch read the partition instead")
	require.Len(t, item.History, 2, "the turn carries b's event, not the history a held")
	assert.Equal(t, externalEvent(inst, 2, "1").Kind, item.History[1].Kind)
	assert.Equal(t, []string{"from-a"}, messageNames(item.Messages))
}

func TestHeldTurnTakesAnotherProcessesMessageOnceSeen(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, hourlyPolls)
	b, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "held-foreign-message"
	steps := traceSteps(a)
	startAndAckFirst(t, a, inst)
	require.NoError(t, b.EnqueueForOrchestrator(ctx, raised(inst, "from-b", "1"), 0))
	require.NoError(t, a.EnqueueForOrchestrator(ctx, raised(inst, "from-a", "2"), 0))
	steps.take()

	// a's candidate view is trusted for an hour and a wrote "from-a": its
	// turn is the lock batch of what it holds.
	first := ackNextTurn(t, a, inst, []duroxide.Event{externalEvent(inst, 2, "2")})
	assert.Equal(t, []string{"from-a"}, messageNames(first.Messages))
	got := steps.take()
	assert.Equal(t, map[string]int{"orch attempt": 1, "orch held lock batch": 1, "orch found": 1}, got)

	// With nothing left in its pool, a's next fetch queries; the query
	// shows b's message, which a's held turn then takes: b wrote no
	// instance document, so a's held state still holds.
	second := ackNextTurn(t, a, inst, []duroxide.Event{externalEvent(inst, 3, "1")})
	assert.Equal(t, []string{"from-b"}, messageNames(second.Messages))
	assert.Len(t, second.History, 2)
	got = steps.take()
	assert.Equal(t, 1, got["orch candidate query"])
	assert.Equal(t, 1, got["orch held lock batch"])
	assert.Zero(t, got["orch state query"])

	none, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, none, "each message was delivered once")
}

func TestHeldStartIsRefusedWhenTheInstanceExists(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, hourlyPolls)
	b, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "held-start-exists"
	startAndAckFirst(t, b, inst)

	// a knows nothing of the instance: its start is taken to create it,
	// which the lock batch's create checks.
	steps := traceSteps(a)
	require.NoError(t, a.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	item, err := fetchInstance(ctx, a, inst)
	require.NoError(t, err)
	got := steps.take()
	assert.Equal(t, 1, got["orch held state refused"], "the instance document exists: the create fails")
	require.Len(t, item.History, 1, "the turn continues the instance b started")
	assert.Equal(t, uint64(1), item.ExecutionID)
	require.Len(t, item.Messages, 1)
	assert.Equal(t, duroxide.WorkItemStartOrchestration, item.Messages[0].Type())
}

func TestHeldTurnReadsTheKVDocuments(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler, c.LongPollInterval = true, time.Hour })
	ctx := context.Background()
	const inst = "held-kv"
	steps := traceSteps(p)
	set := func(id uint64, key, value string) duroxide.Event {
		return duroxide.NewEvent(id, inst, 1, nil, duroxide.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: 1000 + id})
	}
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(inst), set(2, "k1", "v1")}, nil, nil, runningMetadata(), nil))

	// The second turn is the held lock batch, which reads the KV delta the
	// first turn wrote, so that its ack keeps k1.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "go", "x"), 0))
	steps.take()
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Equal(t, 1, steps.take()["orch held lock batch"])
	md := runningMetadata()
	md.Status, md.Output = duroxide.StringPtr(duroxide.StatusCompleted), duroxide.StringPtr(`"done"`)
	done := duroxide.NewEvent(4, inst, 1, nil, duroxide.OrchestrationCompleted{Output: `"done"`})
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{set(3, "k2", "v2"), done}, nil, nil, md, nil))
	all, err := p.GetKVAllValues(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k1": "v1", "k2": "v2"}, all)

	// The completed execution merged them into the store, which the next
	// held lock batch reads as the turn's KV snapshot.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "late", "y"), 0))
	steps.take()
	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Equal(t, 1, steps.take()["orch held lock batch"])
	assert.Equal(t, map[string]duroxide.KvEntry{"k1": {Value: "v1", LastUpdatedAtMs: 1002}, "k2": {Value: "v2", LastUpdatedAtMs: 1003}}, item.KVSnapshot)
	assert.Len(t, item.History, 4)
}

func TestHeldLockBatchWithALostAnswerReleasesTheLock(t *testing.T) {
	t.Parallel()
	p, s := newPrivateProvider(t, func(c *cdb.Config) { c.DisableReconciler = true })
	ctx := context.Background()
	const inst = "held-lost-answer"
	key := inst
	steps := traceSteps(p)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(inst), 0))
	s.InjectFault(emulator.FaultRule{Op: emulator.OpBatch, PartitionKey: &key, Times: 1, Fault: emulator.ApplyThenDrop()})

	// The held lock batch landed but its answer was lost: the fetch
	// releases that lock at once and locks the instance again by reading
	// its partition, instead of leaving it locked for 30 s; the lost
	// attempt is not counted.
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), item.AttemptCount)
	assert.Len(t, item.Messages, 1)
	got := steps.take()
	assert.Equal(t, 1, got["orch held lock batch"])
	assert.Equal(t, 1, got["orch state query"])
	assert.Equal(t, 1, got["orch lock batch"])
}

func TestHeldStatesOffKeepsTwoRequestFetches(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler, c.HeldInstanceStates = true, -1 })
	steps := traceSteps(p)
	require.NoError(t, helloWorld(context.Background(), p, "held-off", nil))
	got := steps.take()
	assert.Zero(t, got["orch held lock batch"])
	assert.Equal(t, 2, got["orch state query"])
	assert.Equal(t, 2, got["orch lock batch"])
}

func TestHeldTurnTakesTheMessagesItsCandidateStandsFor(t *testing.T) {
	t.Parallel()
	p := newProvider(t, func(c *cdb.Config) { c.DisableReconciler, c.LongPollInterval = true, time.Hour })
	ctx := context.Background()
	const inst = "held-candidate-messages"
	steps := traceSteps(p)
	startAndAckFirst(t, p, inst)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e1", "1"), 0))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)

	// While the turn is locked, the provider loses what it held of the
	// instance (as when another process's message made it read the
	// partition), and a message arrives that only the candidate pool
	// records; the ack then holds the instance again, and one more
	// message arrives.
	cdb.ForgetHeldState(p, inst)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e2", "2"), 0))
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{externalEvent(inst, 2, "1")}, nil, nil, duroxide.ExecutionMetadata{}, nil))
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e3", "3"), 0))
	steps.take()

	item, err = fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	assert.Equal(t, []string{"e2", "e3"}, messageNames(item.Messages), "the held turn takes every message its candidate stands for, in order")
	assert.Equal(t, 1, steps.take()["orch held lock batch"])
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{externalEvent(inst, 3, "2"), externalEvent(inst, 4, "3")}, nil, nil, duroxide.ExecutionMetadata{}, nil))
	none, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, none, "nothing is left behind")
}
