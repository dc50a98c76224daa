package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// Ports of duroxide main's tests/can_abandon_failure.rs and
// tests/runtime_version_warnings.rs on the in-memory provider: the
// continue-as-new window's poison budget, which duplicate sub-orchestration
// starts notify their parent, and invalid version stamps.

// seedTurn stores one acknowledged turn of instance on e's provider:
// start is fetched and acked as execution 1 with history, the orchestrator
// items (enqueued atomically with it) and metadata.
func seedTurn(t *testing.T, e *env, start duroxide.StartOrchestrationItem, history []duroxide.Event, items []duroxide.WorkItem, md duroxide.ExecutionMetadata) {
	t.Helper()
	if err := e.provider.EnqueueForOrchestrator(e.ctx, duroxide.WorkItem{Kind: start}, 0); err != nil {
		t.Fatal(err)
	}
	item, err := e.provider.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	if err != nil || item == nil || item.Instance != start.Instance {
		t.Fatalf("seed fetch: %+v, %v", item, err)
	}
	if err := e.provider.AckOrchestrationItem(e.ctx, item.LockToken, 1, history, nil, items, md, nil); err != nil {
		t.Fatal(err)
	}
}

// TestMissingContinueAsNewStartPoisonsWaitingInputsAfterMaxAttempts is
// missing_can_start_poisons_waiting_inputs_after_max_attempts: an execution
// ended with continue-as-new but its successor's start is gone
// (corruption); the inputs that wait for it are deferred with counted
// attempts and poison the instance after MaxAttempts instead of waiting
// for ever, and the successor never runs.
func TestMissingContinueAsNewStartPoisonsWaitingInputsAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const instance = "can-start-missing"
	seedTurn(t, e, duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "Transition", ExecutionID: 1},
		[]duroxide.Event{
			duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: "Transition", Version: "1.0.0"}),
			duroxide.NewEvent(2, instance, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
		},
		[]duroxide.WorkItem{{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}}},
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Transition", func(*runtime.OrchestrationContext, string) (string, error) {
		return "successor incorrectly ran", nil
	}))
	opts := fastOptions()
	opts.MaxAttempts = 3
	opts.UnregisteredBackoff = runtime.UnregisteredBackoff{Base: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	e.start(reg, opts)
	st := e.wait(instance)
	if st.Kind != runtime.StatusFailed || st.Details == nil || st.Details.Poison == nil {
		t.Fatalf("a start that never appears must poison the waiting inputs: %s %v", st.Kind, st.Err())
	}
	if execs, err := e.client.ListExecutions(e.ctx, instance); err != nil || len(execs) != 1 {
		t.Fatalf("the successor ran: executions %v, %v", execs, err)
	}
}

// TestDuplicateSubOrchestrationStartNotifiesOnlyOtherParentCalls is
// live_collision_ignores_only_the_same_known_parent_call: a start of a
// running child that repeats the call that created it (same parent, event
// id and known parent execution) is ignored; any other call (another event
// id, a later parent execution, or generations unknown on either side)
// fails with "already exists". The child runs on undisturbed either way.
func TestDuplicateSubOrchestrationStartNotifiesOnlyOtherParentCalls(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		recorded, incomingExec *uint64
		incomingID             uint64
		notified               bool
	}{
		{duroxide.Uint64Ptr(1), duroxide.Uint64Ptr(1), 7, false}, // the same call
		{duroxide.Uint64Ptr(1), duroxide.Uint64Ptr(1), 8, true},  // another call of the parent
		{duroxide.Uint64Ptr(1), duroxide.Uint64Ptr(2), 7, true},  // the same id from a later execution
		{nil, nil, 7, true}, // unknown generations cannot prove the same call
	} {
		t.Run(fmt.Sprintf("id=%d,notified=%v,known=%v", c.incomingID, c.notified, c.recorded != nil), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			const instance = "live-collision"
			start := func(id uint64, exec *uint64) duroxide.StartOrchestrationItem {
				return duroxide.StartOrchestrationItem{
					Instance: instance, Orchestration: "Child", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
					ParentInstance: duroxide.StringPtr("parent"), ParentID: duroxide.Uint64Ptr(id), ParentExecutionID: exec,
				}
			}
			seedTurn(t, e, start(7, c.recorded),
				[]duroxide.Event{duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{
					Name: "Child", Version: "1.0.0", ParentInstance: duroxide.StringPtr("parent"), ParentID: duroxide.Uint64Ptr(7),
					ParentExecutionID: c.recorded,
				})},
				[]duroxide.WorkItem{
					{Kind: start(c.incomingID, c.incomingExec)},
					{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}},
				},
				duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Child"), OrchestrationVersion: duroxide.StringPtr("1.0.0")})
			reg := runtime.NewRegistry()
			mustRegister(t, reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				return ctx.DequeueEvent("q").Get()
			}))
			rec := &ackRecorder{MemoryProvider: e.provider}
			startOn(t, e, rec, reg, fastOptions())
			wantOutput(t, e.wait(instance), "late")
			notices := 0
			for _, m := range rec.orchestratorItems() {
				if f, ok := m.Kind.(duroxide.SubOrchFailedItem); ok && f.ParentInstance == "parent" && f.ParentID == c.incomingID &&
					strings.Contains(f.Details.DisplayMessage(), "already exists") {
					notices++
				}
			}
			if got := notices > 0; got != c.notified {
				t.Fatalf("parent notified = %v (%d notices), want %v", got, notices, c.notified)
			}
		})
	}
}

// TestInvalidStampWarnsOnEveryTurn is invalid_stamp_warns_on_every_turn:
// an execution whose OrchestrationStarted carries an empty or garbage
// duroxide_version still runs, and every turn warns about the stamp.
func TestInvalidStampWarnsOnEveryTurn(t *testing.T) {
	t.Parallel()
	for _, stamp := range []string{"", "garbage"} {
		t.Run(fmt.Sprintf("%q", stamp), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			instance := "invalid-version-" + stamp
			started := duroxide.NewEvent(1, instance, 1, nil, duroxide.OrchestrationStarted{Name: "Warning", Version: "1.0.0"})
			started.DuroxideVersion = stamp
			seedTurn(t, e, duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "Warning", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1},
				[]duroxide.Event{started}, nil,
				duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Warning"), OrchestrationVersion: duroxide.StringPtr("1.0.0")})
			reg := runtime.NewRegistry()
			mustRegister(t, reg.RegisterOrchestration("Warning", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				first, err := ctx.DequeueEvent("q").Get()
				if err != nil {
					return "", err
				}
				second, err := ctx.DequeueEvent("q").Get()
				return first + "," + second, err
			}))
			var logs lockedBuffer
			opts := fastOptions()
			opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			e.start(reg, opts)
			mustRegister(t, e.client.EnqueueEvent(e.ctx, instance, "q", "first"))
			waitForEvents(t, e, instance, duroxide.EventTypeQueueSubscribed, 2)
			mustRegister(t, e.client.EnqueueEvent(e.ctx, instance, "q", "second"))
			wantOutput(t, e.wait(instance), "first,second")
			if n := strings.Count(logs.String(), "Invalid pinned version"); n < 2 {
				t.Fatalf("%d warnings about the stamp, want one per turn (at least 2):\n%s", n, logs.String())
			}
		})
	}
}

// ackRecorder records the orchestrator items of every turn acked through
// it.
type ackRecorder struct {
	*memory.MemoryProvider
	mu    sync.Mutex
	items []duroxide.WorkItem
}

func (a *ackRecorder) AckOrchestrationItem(ctx context.Context, token string, exec uint64, delta []duroxide.Event, w, o []duroxide.WorkItem, md duroxide.ExecutionMetadata, c []duroxide.ScheduledActivityIdentifier) error {
	err := a.MemoryProvider.AckOrchestrationItem(ctx, token, exec, delta, w, o, md, c)
	if err == nil {
		a.mu.Lock()
		a.items = append(a.items, o...)
		a.mu.Unlock()
	}
	return err
}

// orchestratorItems returns the orchestrator items acked so far.
func (a *ackRecorder) orchestratorItems() []duroxide.WorkItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.items)
}

// waitForEvents waits until instance's history holds n events of type et.
func waitForEvents(t *testing.T, e *env, instance string, et duroxide.EventType, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		got := 0
		for _, ev := range historyOf(t, e, instance) {
			if ev.Type() == et {
				got++
			}
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never had %d %s events", instance, n, et)
}
