package cdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// These tests show that a process reads its own writes on an account with
// Session consistency whose secondary replicas trail the primary (the
// emulator's, readYourWritesLag): each scenario is a write followed at once by the
// read that must see it, run readYourWritesTrials times. With the session
// tokens they must all see it; with the tokens turned off
// (cdb.DisableSessionTokens) at least one must not, which shows the
// scenario reads from lagging replicas and the tokens are what makes it
// pass. The held state and history are off, so that the fetches read the
// partition rather than trusting what this process wrote.

// readYourWritesTrials is how often each scenario runs with the tokens;
// maxTrialsWithoutTokens bounds the runs without them until one misses
// its write (about one in six does in the slowest-to-miss scenario: 200
// all seeing it has a chance below 1e-14).
const (
	readYourWritesTrials   = 20
	maxTrialsWithoutTokens = 200
)

// readYourWritesLag is the secondaries' lag of these tests: long beside
// one write and the read after it even under the race detector on a
// loaded machine (with 20 ms, 200 trials without the tokens all saw their
// writes there once, as the replicas had caught up), short enough that a
// setup without the tokens waits little for them.
const readYourWritesLag = 500 * time.Millisecond

// laggingProcess is a provider of laggingProvider and whether its reads
// carry the session tokens.
type laggingProcess struct {
	*cdb.Provider
	tokens bool
}

// laggingProvider opens a provider on a private emulator with Session
// consistency and readYourWritesLag of replica lag, its held caches off, and its
// session tokens turned off unless tokens.
func laggingProvider(t *testing.T, tokens bool) laggingProcess {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{Consistency: emulator.ConsistencySession, ReplicaLag: readYourWritesLag})
	cfg := a.Config()
	cfg.HeldInstanceStates, cfg.HeldHistoryEvents = -1, -1
	cfg.DisableReconciler, cfg.LongPollInterval = true, 20*time.Millisecond
	p := a.NewProvider(t, cfg)
	cdb.DisableSessionTokens(p, !tokens)
	return laggingProcess{p, tokens}
}

// settingUp runs f, the setup of a scenario (what comes before the write
// and the read under test), with p's session tokens on, then restores p's
// mode. Without them a setup fetch that reads a lagging replica finds no
// message, gives its instance up and waits for the next candidate query
// (changefeed.HealthyViewLifetime, 10 s): a wait that proves nothing.
func settingUp(p laggingProcess, f func()) {
	cdb.DisableSessionTokens(p.Provider, false)
	defer cdb.DisableSessionTokens(p.Provider, !p.tokens)
	f()
}

// fetchTurnOf fetches the turn of instance, waiting for it (a poll of up
// to 1 s per try), for the setup of a scenario (settingUp).
func fetchTurnOf(ctx context.Context, t *testing.T, p laggingProcess, instance string) (turn *duroxide.OrchestrationItem) {
	t.Helper()
	settingUp(p, func() { turn = fetchTurnOfInstance(ctx, t, p.Provider, instance) })
	return turn
}

// fetchTurnOfInstance is fetchTurnOf's loop.
func fetchTurnOfInstance(ctx context.Context, t *testing.T, p *cdb.Provider, instance string) *duroxide.OrchestrationItem {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		item, err := p.FetchOrchestrationItem(ctx, longLock, time.Second, nil)
		require.NoError(t, err)
		if item != nil && item.Instance == instance {
			return item
		}
		if item != nil {
			finishTurn(ctx, t, p, item)
		}
	}
	t.Fatalf("no turn of %s within 30 s", instance)
	return nil
}

// finishTurn acks item with nothing new: a turn of an earlier trial that
// a fetch returned instead of the one it looked for.
func finishTurn(ctx context.Context, t *testing.T, p *cdb.Provider, item *duroxide.OrchestrationItem) {
	t.Helper()
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, item.ExecutionID, nil, nil, nil, duroxide.ExecutionMetadata{}, nil))
}

// readYourWrites runs scenario (one trial on a fresh instance; it reports
// whether the read saw the write) readYourWritesTrials times with the
// session tokens, each of which must see the write, then without them
// until one does not (at most maxTrialsWithoutTokens times).
func readYourWrites(t *testing.T, scenario func(ctx context.Context, t *testing.T, p laggingProcess, instance string) bool) {
	t.Helper()
	ctx := context.Background()
	p := laggingProvider(t, true)
	for i := 0; i < readYourWritesTrials; i++ {
		assert.True(t, scenario(ctx, t, p, fmt.Sprintf("ryw-tokens-%d", i)), "trial %d: with the session tokens every read sees the write before it", i)
	}
	p = laggingProvider(t, false)
	for i := 0; i < maxTrialsWithoutTokens; i++ {
		if !scenario(ctx, t, p, fmt.Sprintf("ryw-none-%d", i)) {
			return
		}
	}
	t.Errorf("without the session tokens %d reads all saw the write before them: the scenario proves nothing", maxTrialsWithoutTokens)
}

// TestAStartIsReadBackAtOnce: a client that starts an instance and reads it
// finds it (Pending), never NotFound.
func TestAStartIsReadBackAtOnce(t *testing.T) {
	t.Parallel()
	readYourWrites(t, func(ctx context.Context, t *testing.T, p laggingProcess, instance string) bool {
		require.NoError(t, p.EnqueueStart(ctx, duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "o", ExecutionID: 1}))
		info, err := p.GetInstanceInfo(ctx, instance)
		return err == nil && info.Status == duroxide.StatusPending
	})
}

// TestAnEnqueueIsFetchedAtOnce: a fetch with no wait right after an
// enqueue returns its turn.
func TestAnEnqueueIsFetchedAtOnce(t *testing.T) {
	t.Parallel()
	readYourWrites(t, func(ctx context.Context, t *testing.T, p laggingProcess, instance string) bool {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
		item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		if item == nil {
			return false
		}
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(item.Instance)}, nil, nil, runningMetadata(), nil))
		return item.Instance == instance
	})
}

// TestAnAckIsSeenByTheNextTurn: the turn fetched at once after an ack
// (and a new message) has the history the ack wrote.
func TestAnAckIsSeenByTheNextTurn(t *testing.T) {
	t.Parallel()
	readYourWrites(t, func(ctx context.Context, t *testing.T, p laggingProcess, instance string) bool {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
		first := fetchTurnOf(ctx, t, p, instance)
		require.NoError(t, p.AckOrchestrationItem(ctx, first.LockToken, 1, []duroxide.Event{started(instance)}, nil,
			[]duroxide.WorkItem{raised(instance, "e", "d")}, runningMetadata(), nil))
		item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		if item == nil {
			return false
		}
		finishTurn(ctx, t, p.Provider, item)
		if item.Instance != instance {
			return false // an earlier trial's turn, that a stale read delayed
		}
		require.Len(t, item.History, 1, "a turn is never handed a history shorter than its watermark")
		return true
	})
}

// TestAWorkItemAckIsSeenByTheOrchestrationsTurn: the orchestration's turn
// fetched at once after a work item's ack carries the completion.
func TestAWorkItemAckIsSeenByTheOrchestrationsTurn(t *testing.T) {
	t.Parallel()
	readYourWrites(t, func(ctx context.Context, t *testing.T, p laggingProcess, instance string) bool {
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(instance), 0))
		first := fetchTurnOf(ctx, t, p, instance)
		scheduled := duroxide.NewEvent(2, instance, 1, nil, duroxide.ActivityScheduled{Name: "A", Input: "i"})
		require.NoError(t, p.AckOrchestrationItem(ctx, first.LockToken, 1, []duroxide.Event{started(instance), scheduled},
			[]duroxide.WorkItem{activity(instance, 2)}, nil, runningMetadata(), nil))
		var w *duroxide.LockedWorkItem
		settingUp(p, func() {
			for deadline := time.Now().Add(30 * time.Second); w == nil && time.Now().Before(deadline); {
				var err error
				w, err = p.FetchWorkItem(ctx, longLock, time.Second, nil, duroxide.TagFilterDefaultOnly())
				require.NoError(t, err)
			}
		})
		require.NotNil(t, w)
		done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: "r"}}
		require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))
		item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
		require.NoError(t, err)
		if item == nil {
			return false
		}
		finishTurn(ctx, t, p.Provider, item)
		if item.Instance != instance || len(item.Messages) != 1 {
			return false
		}
		_, ok := item.Messages[0].Kind.(duroxide.ActivityCompletedItem)
		return ok
	})
}

// TestDeleteInstanceFindsAnInstanceAnotherProcessStarted: a process that
// never read an instance deletes it right after another process started
// it, on an account whose secondaries trail by 10 s (every read they serve
// is older than the start): the parent lookup's "not found" is confirmed
// at the primary, so the deletion goes through instead of refusing an
// instance that exists.
func TestDeleteInstanceFindsAnInstanceAnotherProcessStarted(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{Consistency: emulator.ConsistencySession, ReplicaLag: 10 * time.Second})
	cfg := a.Config()
	cfg.DisableReconciler, cfg.LongPollInterval = true, 20*time.Millisecond
	starter, deleter := a.NewProvider(t, cfg), a.NewProvider(t, cfg)
	ctx := context.Background()
	for i := range 8 { // a secondary serves 3 reads in 4: all 8 at the primary by chance is 1 in 65,536
		inst := fmt.Sprintf("deleted-elsewhere-%d", i)
		startAndAckFirst(t, starter, inst)
		res, err := deleter.DeleteInstance(ctx, inst, true)
		require.NoError(t, err, "instance %s", inst)
		assert.Equal(t, uint64(1), res.InstancesDeleted, "instance %s", inst)
	}
}
