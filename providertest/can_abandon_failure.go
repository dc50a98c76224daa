package providertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The can_abandon_failure group: duroxide main's tests/can_abandon_failure.rs,
// the runtime's poison budget and abandon paths around continue-as-new,
// driven through a provider wrapper that injects attempt counts (upstream's
// PoisonInjectingProvider, tests/common/fault_injection.rs). Like
// race_replay they run this module's runtime over the provider under test,
// so every provider proves the runtime's rules hold on it. The other tests
// of that file run elsewhere (providertest/README.md, "Added after 0.1.26").
var canAbandonFailureCases = []Case{
	{"successor_first_turn_must_obey_poison_budget", SuccessorFirstTurnMustObeyPoisonBudget},
	{"unregistered_can_successor_poison_must_drain_late_inputs", UnregisteredCanSuccessorPoisonMustDrainLateInputs},
	{"failure_commit_must_preserve_collision_notification", FailureCommitMustPreserveCollisionNotification},
	{"failed_can_abandon_leaves_waiting_inputs_for_lease_redelivery", FailedCanAbandonLeavesWaitingInputsForLeaseRedelivery},
}

// poisonInjector wraps a provider and injects faults into its
// orchestration-queue methods, as upstream's PoisonInjectingProvider does:
// an attempt count reported on a chosen fetch (the runtime then sees a
// message fetched more often than it was), abandons that fail, an ack that
// fails; it records what the runtime did (fetches, counted abandon
// delays, failure commits). Every other method is the wrapped provider's.
type poisonInjector struct {
	duroxide.Provider

	mu sync.Mutex
	// skip is how many orchestration fetches that return an item pass
	// unchanged before attempt is injected; attempt is reported on the
	// next one only (0: no injection).
	skip, attempt uint32
	// failAbandon makes every orchestration abandon fail (retryable)
	// without reaching the wrapped provider; failedAbandons counts them.
	failAbandon    bool
	failedAbandons int
	// failNextAck makes the next orchestration ack fail (permanent)
	// without reaching the wrapped provider.
	failNextAck bool
	// fetches are the orchestration fetches that returned an item, by
	// instance; countedDelays the delays of the abandons that counted an
	// attempt (ignoreAttempt false) and reached the wrapped provider.
	fetches       map[string][]fetchRecord
	countedDelays []time.Duration
	// failureCommitNotices counts the acks that commit an
	// OrchestrationFailed together with a SubOrchFailed notice of a
	// colliding parent call ("already exists").
	failureCommitNotices int
}

// fetchRecord is one orchestration fetch: its lock token and attempt
// count as the runtime saw them.
type fetchRecord struct {
	token   string
	attempt uint32
}

// failAbandons makes every later orchestration abandon fail (upstream's
// fail_orchestration_abandon_persistently), or stops it with false.
func (p *poisonInjector) failAbandons(fail bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failAbandon = fail
}

// failNextOrchestrationAck makes the next orchestration ack fail with a
// permanent error (upstream's fail_next_orchestration_ack).
func (p *poisonInjector) failNextOrchestrationAck() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNextAck = true
}

// orchestrationFetches returns the fetches of instance so far, oldest
// first.
func (p *poisonInjector) orchestrationFetches(instance string) []fetchRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]fetchRecord(nil), p.fetches[instance]...)
}

// counted returns the delays of the counted abandons, the number of failed
// abandons and the number of failure commits with a collision notice.
func (p *poisonInjector) counted() (delays []time.Duration, failedAbandons, failureCommitNotices int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.countedDelays...), p.failedAbandons, p.failureCommitNotices
}

// AbandonOrchestrationItem fails when abandons are set to fail, and
// otherwise records a counted abandon's delay and abandons.
func (p *poisonInjector) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	p.mu.Lock()
	if p.failAbandon {
		p.failedAbandons++
		p.mu.Unlock()
		return duroxide.NewRetryableError("abandon_orchestration_item", "injected abandon failure")
	}
	if !ignoreAttempt {
		p.countedDelays = append(p.countedDelays, delay)
	}
	p.mu.Unlock()
	return p.Provider.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
}

// AckOrchestrationItem fails once when an ack failure is due, and
// otherwise acks and records a failure commit that notifies a colliding
// parent.
func (p *poisonInjector) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) error {
	p.mu.Lock()
	if p.failNextAck {
		p.failNextAck = false
		p.mu.Unlock()
		return duroxide.NewPermanentError("ack_orchestration_item", "injected ack failure")
	}
	p.mu.Unlock()
	if err := p.Provider.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelled); err != nil {
		return err
	}
	failed := slices.ContainsFunc(historyDelta, func(ev duroxide.Event) bool {
		_, ok := ev.Kind.(duroxide.OrchestrationFailed)
		return ok
	})
	notice := slices.ContainsFunc(orchestratorItems, func(m duroxide.WorkItem) bool {
		f, ok := m.Kind.(duroxide.SubOrchFailedItem)
		return ok && strings.Contains(f.Details.DisplayMessage(), "already exists")
	})
	if failed && notice {
		p.mu.Lock()
		p.failureCommitNotices++
		p.mu.Unlock()
	}
	return nil
}

// injectAfterSkip makes the orchestration fetch after the next skip ones
// (that return an item) report attempt as its attempt count (upstream's
// inject_orchestration_poison_after_skip).
func (p *poisonInjector) injectAfterSkip(skip, attempt uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skip, p.attempt = skip, attempt
}

// FetchOrchestrationItem fetches from the wrapped provider and rewrites the
// attempt count when an injection is due.
func (p *poisonInjector) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil {
		return item, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.skip > 0:
		p.skip--
	case p.attempt > 0:
		item.AttemptCount, p.attempt = p.attempt, 0
	}
	if p.fetches == nil {
		p.fetches = map[string][]fetchRecord{}
	}
	p.fetches[item.Instance] = append(p.fetches[item.Instance], fetchRecord{item.LockToken, item.AttemptCount})
	return item, nil
}

// seedWaitingContinueAsNew stores execution 1 of instance, orchestration
// name, ended with continue-as-new (input "next") and no successor start,
// with waiting enqueued beside it: upstream's seed_waiting_can.
func seedWaitingContinueAsNew(t testing.TB, p duroxide.Provider, instance, name string, waiting duroxide.WorkItem) {
	t.Helper()
	seedTurn(t, p, instance,
		[]duroxide.Event{started(instance, name, "old"), continuedAsNew(instance, "next")},
		[]duroxide.WorkItem{waiting},
		duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusContinuedAsNew)})
}

// requirePoisoned fails t unless st is Failed with poison details.
func requirePoisoned(t testing.TB, st runtime.OrchestrationStatus, msg string) {
	t.Helper()
	require.Equal(t, runtime.StatusFailed, st.Kind, "%s: status %+v (%v)", msg, st, st.Err())
	require.NotNil(t, st.Details, msg)
	require.NotNil(t, st.Details.Poison, "%s: details %+v", msg, st.Details)
}

// requireLateInputsDrained is upstream's assert_late_inputs_are_drained:
// the poisoned instance's latest history holds the ContinuedAsNew and the
// failure; a queue event, an external event and a cancel sent afterwards
// are consumed by the runtime (acknowledged away, not deferred for ever),
// so once it stops no orchestration item is left, and the history has not
// changed.
func requireLateInputsDrained(t testing.TB, p duroxide.Provider, stop func(), instance string) {
	t.Helper()
	before, err := p.Read(t.Context(), instance)
	require.NoError(t, err, "read the poisoned history")
	var continued, failed bool
	for _, ev := range before {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationContinuedAsNew:
			continued = true
		case duroxide.OrchestrationFailed:
			failed = true
		}
	}
	require.True(t, continued, "the latest history must hold the ContinuedAsNew: %+v", before)
	require.True(t, failed, "the latest history must hold the poison failure: %+v", before)

	client := runtime.NewClient(p)
	require.NoError(t, client.EnqueueEvent(t.Context(), instance, "q", "late"), "late queue event")
	require.NoError(t, client.RaiseEvent(t.Context(), instance, "signal", "late"), "late signal")
	require.NoError(t, client.CancelInstance(t.Context(), instance, "late cancel"), "late cancel")
	time.Sleep(2 * time.Second)
	stop()
	// An item the runtime held when it stopped is released by its shutdown
	// or by its lock expiring; give it the time upstream gives.
	time.Sleep(1200 * time.Millisecond)
	item, err := p.FetchOrchestrationItem(t.Context(), time.Second, 0, nil)
	require.NoError(t, err, "inspect the terminal instance's queue")
	if item != nil {
		t.Fatalf("a poisoned continue-as-new successor must drain late queue, signal and cancel inputs; left: %+v", item.Messages)
	}
	after, err := p.Read(t.Context(), instance)
	require.NoError(t, err, "read the history again")
	require.Equal(t, before, after, "late inputs must not change the poisoned history")
}

// SuccessorFirstTurnMustObeyPoisonBudget is duroxide's
// successor_first_turn_must_obey_poison_budget: the first turn of a
// continue-as-new successor is not exempt from the poison budget. The
// fetch of the successor's start reports attempt 2 with MaxAttempts 1; the
// instance must fail as poisoned rather than run the successor, and later
// inputs must then be drained.
func SuccessorFirstTurnMustObeyPoisonBudget(t *testing.T, f Factory) {
	p := &poisonInjector{Provider: f.NewProvider(t)}
	const maxAttempts = 1
	const instance = "CAN-first-turn-poison"
	// The first fetch is execution 1's start; the next is the successor's.
	p.injectAfterSkip(1, maxAttempts+1)
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Transition", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() == 1 {
			return "", ctx.ContinueAsNew("next")
		}
		return "successor incorrectly ran", nil
	}))
	require.NoError(t, runtime.NewClient(p).StartOrchestration(t.Context(), instance, "Transition", ""), "start")
	opts := raceOptions(0, 0)
	opts.MaxAttempts = maxAttempts
	opts.OrchestrationConcurrency = 1
	stop := startRuntime(t, p, reg, opts)
	requirePoisoned(t, waitStatus(t, p, instance), "the successor's first-turn attempts must not be exempt from poison")
	requireLateInputsDrained(t, p, stop, instance)
}

// UnregisteredCanSuccessorPoisonMustDrainLateInputs is duroxide's
// unregistered_can_successor_poison_must_drain_late_inputs: a successor
// whose orchestration no runtime has backs off as unregistered with its
// attempts counted, is poisoned after MaxAttempts (1 here) together with
// the input waiting in the continue-as-new window, and later inputs are
// drained.
func UnregisteredCanSuccessorPoisonMustDrainLateInputs(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const instance = "CAN-unregistered-poison"
	seedWaitingContinueAsNew(t, p, instance, "MissingHandler",
		duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}})
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
		Instance: instance, Orchestration: "MissingHandler", Input: "next", Version: duroxide.StringPtr("1.0.0"),
	}}, 0), "enqueue the successor's start")
	opts := raceOptions(20*time.Millisecond, 20*time.Millisecond)
	opts.MaxAttempts = 1
	opts.OrchestrationConcurrency = 1
	stop := startRuntime(t, p, runtime.NewRegistry(), opts)
	requirePoisoned(t, waitStatus(t, p, instance), fmt.Sprintf("%s: an unregistered successor must be poisoned after MaxAttempts", instance))
	requireLateInputsDrained(t, p, stop, instance)
}

// FailureCommitMustPreserveCollisionNotification is duroxide's
// failure_commit_must_preserve_collision_notification: a running root
// instance receives another parent's start of its id (a collision) in the
// turn that completes it; that ack fails, and the failure the runtime
// commits instead must still carry the SubOrchFailed ("already exists")
// to the colliding parent, in the same commit.
func FailureCommitMustPreserveCollisionNotification(t *testing.T, f Factory) {
	p := &poisonInjector{Provider: f.NewProvider(t)}
	const instance = "collision-failure-commit"
	seedTurn(t, p, instance,
		[]duroxide.Event{started(instance, "Transition", "")},
		[]duroxide.WorkItem{{Kind: duroxide.StartOrchestrationItem{
			Instance: instance, Orchestration: "Transition", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
			ParentInstance: duroxide.StringPtr("incoming-parent"), ParentID: duroxide.Uint64Ptr(42), ParentExecutionID: duroxide.Uint64Ptr(1),
		}}},
		duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Transition"), OrchestrationVersion: duroxide.StringPtr("1.0.0")})
	p.failNextOrchestrationAck()
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Transition", func(*runtime.OrchestrationContext, string) (string, error) {
		return "done", nil
	}))
	opts := raceOptions(0, 0)
	opts.OrchestrationConcurrency = 1
	startRuntime(t, p, reg, opts)
	st := waitStatus(t, p, instance)
	require.Equal(t, runtime.StatusFailed, st.Kind, "the failed ack must fail the instance: %+v", st)
	// The wrapper counts the commit once the wrapped ack returns, which
	// may be after the client saw its status.
	require.Eventually(t, func() bool {
		_, _, notices := p.counted()
		return notices > 0
	}, 10*time.Second, 10*time.Millisecond, "the failure commit must notify the colliding parent atomically")
	_, _, notices := p.counted()
	require.Equal(t, 1, notices, "one failure commit, with the notice")
}

// FailedCanAbandonLeavesWaitingInputsForLeaseRedelivery is duroxide's
// failed_can_abandon_leaves_waiting_inputs_for_lease_redelivery: when the
// abandon of an input waiting in a continue-as-new window fails, the input
// is left to its lock: it expires and the input is fetched again under a
// new lock with its attempt counted, and it is not poisoned for it; once
// the successor's start arrives it reaches the successor, and execution 1
// is unchanged.
func FailedCanAbandonLeavesWaitingInputsForLeaseRedelivery(t *testing.T, f Factory) {
	p := &poisonInjector{Provider: f.NewProvider(t)}
	const instance = "CAN-abandon-failure"
	seedWaitingContinueAsNew(t, p, instance, "Transition",
		duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}})
	// Seeding fetched the instance once; count only the runtime's fetches.
	seeded := len(p.orchestrationFetches(instance))
	p.failAbandons(true)
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Transition", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() != 2 {
			return "", fmt.Errorf("ran execution %d, want 2", ctx.ExecutionID())
		}
		return ctx.DequeueEvent("q").Get()
	}))
	opts := raceOptions(50*time.Millisecond, 200*time.Millisecond)
	opts.OrchestrationConcurrency = 2
	opts.OrchestratorLockTimeout = 300 * time.Millisecond
	opts.OrchestratorLockRenewalBuffer = 100 * time.Millisecond
	startRuntime(t, p, reg, opts)

	var deliveries []fetchRecord
	require.Eventually(t, func() bool {
		deliveries = p.orchestrationFetches(instance)[seeded:]
		return len(deliveries) >= 2
	}, 10*time.Second, 20*time.Millisecond, "the waiting input must be redelivered after its lock expires")
	require.NotEqual(t, deliveries[0].token, deliveries[1].token, "a redelivery must come under a new lock")
	require.Greater(t, deliveries[1].attempt, deliveries[0].attempt, "the failed delivery keeps its attempt: %+v", deliveries)
	require.Eventually(t, func() bool {
		_, failedAbandons, _ := p.counted()
		return failedAbandons >= 2
	}, 10*time.Second, 10*time.Millisecond, "both deliveries must have failed to abandon")
	history, err := p.Read(t.Context(), instance)
	require.NoError(t, err)
	for _, ev := range history {
		_, failed := ev.Kind.(duroxide.OrchestrationFailed)
		require.False(t, failed, "failed abandons must not poison a waiting input: %+v", history)
	}

	p.failAbandons(false)
	require.NoError(t, p.EnqueueForOrchestrator(t.Context(), duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{
		Instance: instance, Orchestration: "Transition", Input: "next", Version: duroxide.StringPtr("1.0.0"),
	}}, 0), "enqueue the successor's start")
	requireCompletedWith(t, waitStatus(t, p, instance), "late", "the waiting input must reach the successor after the failed abandons")
	require.Len(t, readExecution(t, p, instance, 1), 2, "waiting must not change execution 1")
}
