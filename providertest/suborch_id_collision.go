package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The suborch_id_collision group: duroxide main's runtime tests of
// sub-orchestration instance ids, tests/scenarios/suborch_id_collision.rs
// and the explicit, detached and versioned-start half of
// tests/instance_id_validation_tests.rs (the client's unversioned starts
// are the runtime's TestStartRefusesReservedChildIDs). Like race_replay
// they run this module's runtime over the provider under test, so every
// provider proves the id rules hold on it: generated child ids are
// "<parent>::sub::<event id>" in a parent's first execution and
// "<parent>::sub::<execution>_<event id>" after continue-as-new; a child
// id that already names a terminal instance of another parent call fails
// the call with "already exists" on the execution that made it; an
// explicit child id is used exactly as given, "::sub::" inside it
// included, but one that begins with "sub::" is refused; a detached
// start's id obeys the client's rule (no "sub::" prefix, no "::sub::").
//
// Where upstream sleeps or polls the queue depth before asserting that
// something did not happen, these cases wait instead for the runtime to
// acknowledge the message in question (turnRecorder), so that the
// assertion holds on a provider whose cross-partition messages travel
// through an outbox, and on a loaded machine.
var suborchIDCollisionCases = []Case{
	{"legacy_provider_bypass_terminal_collision_does_not_hang_parent", LegacyProviderBypassTerminalCollisionDoesNotHangParent},
	{"redelivered_child_start_does_not_fail_parent", RedeliveredChildStartDoesNotFailParent},
	{"parent_with_suborch_survives_continue_as_new", ParentWithSuborchSurvivesContinueAsNew},
	{"continue_as_new_suborch_child_ids_include_execution_after_first", ContinueAsNewSuborchChildIDsIncludeExecutionAfterFirst},
	{"suborch_completion_routes_to_scheduling_execution_not_current", SuborchCompletionRoutesToSchedulingExecutionNotCurrent},
	{"legacy_provider_bypass_terminal_collision_fails_fast_on_execution_two", LegacyProviderBypassTerminalCollisionFailsFastOnExecutionTwo},
	{"legacy_provider_bypass_terminal_collision_routes_via_fallback_on_fresh_runtime", LegacyProviderBypassTerminalCollisionRoutesViaFallbackOnFreshRuntime},
	{"explicit_sub_orchestration_id_allows_reserved_marker_infix", ExplicitSubOrchestrationIDAllowsReservedMarkerInfix},
	{"start_orchestration_versioned_rejects_reserved_infix", StartOrchestrationVersionedRejectsReservedInfix},
	{"schedule_orchestration_rejects_reserved_prefix", ScheduleOrchestrationRejectsReservedPrefix},
	{"schedule_orchestration_rejects_reserved_infix", ScheduleOrchestrationRejectsReservedInfix},
	{"schedule_orchestration_accepts_normal_id", ScheduleOrchestrationAcceptsNormalID},
	{"sub_orchestration_with_id_rejects_leading_reserved_marker", SubOrchestrationWithIDRejectsLeadingReservedMarker},
	{"sub_orchestration_with_id_rejects_pending_placeholder_prefix", SubOrchestrationWithIDRejectsPendingPlaceholderPrefix},
	{"sub_orchestration_with_id_allows_reserved_marker_infix", SubOrchestrationWithIDAllowsReservedMarkerInfix},
	{"sub_orchestration_versioned_with_id_rejects_leading_reserved_marker", SubOrchestrationVersionedWithIDRejectsLeadingReservedMarker},
	{"rejected_explicit_id_writes_no_scheduling_event", RejectedExplicitIDWritesNoSchedulingEvent},
}

// turnRecorder wraps a provider and records what the runtime's
// orchestration turns did: the messages of every acknowledged turn, by
// instance, and the orchestrator items of every ack the runtime attempted
// (recorded before the ack is sent, so they are complete once its outcome
// is visible). Every other method is the wrapped provider's; the cases'
// clients use the unwrapped provider, whose ProviderAdmin the wrapper does
// not forward.
type turnRecorder struct {
	duroxide.Provider

	mu sync.Mutex
	// fetched are the fetched items by lock token.
	fetched map[string]*duroxide.OrchestrationItem
	// consumed are the messages of the acknowledged turns, by instance,
	// in ack order.
	consumed map[string][]duroxide.WorkItem
	// sent are the orchestrator items of every attempted ack.
	sent []duroxide.WorkItem
}

// FetchOrchestrationItem fetches from the wrapped provider and remembers
// the item's messages under its lock token.
func (r *turnRecorder) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := r.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	if err != nil || item == nil {
		return item, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fetched == nil {
		r.fetched = map[string]*duroxide.OrchestrationItem{}
	}
	r.fetched[item.LockToken] = &duroxide.OrchestrationItem{Instance: item.Instance, Messages: slices.Clone(item.Messages)}
	return item, nil
}

// AckOrchestrationItem records the ack's orchestrator items, acks through
// the wrapped provider and, when that succeeds, records the turn's
// messages as consumed by its instance.
func (r *turnRecorder) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) error {
	r.mu.Lock()
	r.sent = append(r.sent, orchestratorItems...)
	r.mu.Unlock()
	if err := r.Provider.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelled); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if item, ok := r.fetched[lockToken]; ok {
		if r.consumed == nil {
			r.consumed = map[string][]duroxide.WorkItem{}
		}
		r.consumed[item.Instance] = append(r.consumed[item.Instance], item.Messages...)
	}
	return nil
}

// consumedBy returns the messages of instance's acknowledged turns so far.
func (r *turnRecorder) consumedBy(instance string) []duroxide.WorkItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.consumed[instance])
}

// sentItems returns the orchestrator items of every ack attempted so far.
func (r *turnRecorder) sentItems() []duroxide.WorkItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// countConsumed returns how many of instance's consumed messages match.
func (r *turnRecorder) countConsumed(instance string, match func(duroxide.WorkItem) bool) int {
	n := 0
	for _, m := range r.consumedBy(instance) {
		if match(m) {
			n++
		}
	}
	return n
}

// waitConsumed waits up to raceWait until more than already of instance's
// consumed messages match, failing t with what otherwise.
func (r *turnRecorder) waitConsumed(t testing.TB, instance string, already int, match func(duroxide.WorkItem) bool, what string) {
	t.Helper()
	require.Eventually(t, func() bool { return r.countConsumed(instance, match) > already },
		raceWait, 10*time.Millisecond, "%s: the runtime never acknowledged %s", instance, what)
}

// isStartOf reports whether m is a StartOrchestration of instance.
func isStartOf(instance string) func(duroxide.WorkItem) bool {
	return func(m duroxide.WorkItem) bool {
		s, ok := m.Kind.(duroxide.StartOrchestrationItem)
		return ok && s.Instance == instance
	}
}

// collisionOptions are the runtime options of the group: raceOptions, with
// the unregistered backoff at its defaults.
func collisionOptions() runtime.Options { return raceOptions(0, 0) }

// registry returns a registry of the unversioned orchestrations in orchs,
// by name, failing t on error.
func registry(t testing.TB, orchs map[string]runtime.OrchestrationFunc) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	for name, fn := range orchs {
		require.NoError(t, reg.RegisterOrchestration(name, fn), "register %s", name)
	}
	return reg
}

// parentOfChild is a Parent orchestration calling Child with a generated
// id and input "child-input", answering "parent-got:<output>" or failing
// with "child-failed:<error>" (upstream's parent closures).
func parentOfChild(ctx *runtime.OrchestrationContext, _ string) (string, error) {
	out, err := ctx.ScheduleSubOrchestration("Child", "child-input").Get()
	if err != nil {
		return "", fmt.Errorf("child-failed:%w", err)
	}
	return "parent-got:" + out, nil
}

// childDone is a Child orchestration answering "child-done:<input>".
func childDone(_ *runtime.OrchestrationContext, input string) (string, error) {
	return "child-done:" + input, nil
}

// squatter is an orchestration that completes at once with "squatted".
func squatter(*runtime.OrchestrationContext, string) (string, error) { return "squatted", nil }

// requireFailedWith fails t unless st is Failed with a message holding
// every one of substrs.
func requireFailedWith(t testing.TB, st runtime.OrchestrationStatus, substrs ...string) {
	t.Helper()
	require.Equal(t, runtime.StatusFailed, st.Kind, "status %+v (%v)", st, st.Err())
	require.Error(t, st.Err(), "a Failed status carries its error")
	for _, s := range substrs {
		require.Contains(t, st.Err().Error(), s, "the failure names %q", s)
	}
}

// squat starts a Squatter under id straight through the provider, as a
// client that does not check ids would (a start message with no parent),
// and waits for it to complete.
func squat(t testing.TB, p duroxide.Provider, id string) {
	t.Helper()
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{Instance: id, Orchestration: "Squatter", ExecutionID: 1}})
	st := waitStatus(t, p, id)
	require.Equal(t, runtime.StatusCompleted, st.Kind, "the squatter %s must complete first: %+v (%v)", id, st, st.Err())
}

// startAndWait starts instance as orchestration name with input through a
// client of p and waits for it to finish.
func startAndWait(t testing.TB, p duroxide.Provider, instance, name, input string) runtime.OrchestrationStatus {
	t.Helper()
	require.NoError(t, runtime.NewClient(p).StartOrchestration(t.Context(), instance, name, input), "start %s", instance)
	return waitStatus(t, p, instance)
}

// requireFailedIn fails t unless execution exec of instance holds an
// OrchestrationFailed.
func requireFailedIn(t testing.TB, p duroxide.Provider, instance string, exec uint64) {
	t.Helper()
	h := readExecution(t, p, instance, exec)
	require.True(t, slices.ContainsFunc(h, func(ev duroxide.Event) bool {
		_, ok := ev.Kind.(duroxide.OrchestrationFailed)
		return ok
	}), "execution %d of %s must hold the OrchestrationFailed: %+v", exec, instance, h)
}

// requireInstances fails t unless the instances p lists are want, in any
// order. p must implement ProviderAdmin (upstream's management capability).
func requireInstances(t testing.TB, p duroxide.Provider, want []string, msgAndArgs ...any) {
	t.Helper()
	got, err := runtime.NewClient(p).ListAllInstances(t.Context())
	require.NoError(t, err, "list instances (the provider needs ProviderAdmin)")
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	require.Equal(t, want, got, msgAndArgs...)
}

// requireNoStartSent fails t unless no ack recorded by r sent a
// StartOrchestration.
func requireNoStartSent(t testing.TB, r *turnRecorder, msg string) {
	t.Helper()
	for _, m := range r.sentItems() {
		_, start := m.Kind.(duroxide.StartOrchestrationItem)
		require.False(t, start, "%s: %+v", msg, m)
	}
}

// LegacyProviderBypassTerminalCollisionDoesNotHangParent is duroxide's
// legacy_provider_bypass_terminal_collision_does_not_hang_parent: a
// completed instance squatting the parent's generated child id
// ("job-1::sub::2", started through the provider, past the client's check)
// fails the parent's call with "already exists" instead of leaving the
// parent waiting.
func LegacyProviderBypassTerminalCollisionDoesNotHangParent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	startRuntime(t, p, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": parentOfChild, "Child": childDone, "Squatter": squatter,
	}), collisionOptions())
	squat(t, p, "job-1::sub::2")
	requireFailedWith(t, startAndWait(t, p, "job-1", "Parent", ""), "already exists")
}

// RedeliveredChildStartDoesNotFailParent is duroxide's
// redelivered_child_start_does_not_fail_parent: the completed child's own
// start delivered again (same parent and call, parent execution unknown)
// is not a collision. Once the runtime has acknowledged the redelivered
// start, no SubOrchFailed was sent to the parent, nothing waits in the
// orchestrator queue, the parent's history has not changed and it stays
// Completed.
func RedeliveredChildStartDoesNotFailParent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const parent, child = "job-2", "job-2::sub::2"
	rec := &turnRecorder{Provider: p}
	startRuntime(t, rec, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": parentOfChild, "Child": childDone,
	}), collisionOptions())
	requireCompletedWith(t, startAndWait(t, p, parent, "Parent", ""), "parent-got:child-done:child-input", "the parent completes first")
	before, err := p.Read(t.Context(), parent)
	require.NoError(t, err)

	starts := rec.countConsumed(child, isStartOf(child))
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "Child", Input: "child-input", ExecutionID: 1,
		ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(2),
	}})
	rec.waitConsumed(t, child, starts, isStartOf(child), "the redelivered child start")

	for _, m := range rec.sentItems() {
		if fl, ok := m.Kind.(duroxide.SubOrchFailedItem); ok {
			require.NotEqual(t, parent, fl.ParentInstance, "the redelivery must not notify the parent: %+v", fl)
		}
	}
	if admin, ok := p.(duroxide.ProviderAdmin); ok {
		d, err := admin.GetQueueDepths(t.Context())
		require.NoError(t, err)
		require.Zero(t, d.OrchestratorQueue, "no parent-targeted SubOrchFailed may wait in the orchestrator queue")
	}
	after, err := p.Read(t.Context(), parent)
	require.NoError(t, err)
	require.Equal(t, before, after, "the redelivery must not append to the parent's history")
	requireCompletedWith(t, waitStatus(t, p, parent), "parent-got:child-done:child-input", "the redelivery must not fail the parent")
}

// parentLoopingOverChildren is a Parent that calls Child with its input n
// in every execution and continues as new while n < last, answering
// "done:<n>:<child output>".
func parentLoopingOverChildren(last int) runtime.OrchestrationFunc {
	return func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		r, err := ctx.ScheduleSubOrchestration("Child", strconv.Itoa(n)).Get()
		if err != nil {
			return "", err
		}
		if n < last {
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}
		return fmt.Sprintf("done:%d:%s", n, r), nil
	}
}

// runLoopingParent runs parentLoopingOverChildren(last) as parent on p
// and checks that it completes and that the SubOrchestrationScheduled of
// each execution records the generated suffixes want, in execution order
// (the suffix, "sub::2", not the full id: upstream's
// scheduled_child_suffix).
func runLoopingParent(t *testing.T, f Factory, parent string, last int, want []string) {
	p := f.NewProvider(t)
	startRuntime(t, p, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": parentLoopingOverChildren(last), "Child": childDone,
	}), collisionOptions())
	requireCompletedWith(t, startAndWait(t, p, parent, "Parent", "0"), fmt.Sprintf("done:%d:child-done:%d", last, last),
		"the parent must run through every execution, not hang")
	var got []string
	for exec := uint64(1); exec <= uint64(len(want)); exec++ {
		h := readExecution(t, p, parent, exec)
		i := slices.IndexFunc(h, func(ev duroxide.Event) bool {
			_, ok := ev.Kind.(duroxide.SubOrchestrationScheduled)
			return ok
		})
		require.GreaterOrEqual(t, i, 0, "execution %d of %s schedules no sub-orchestration: %+v", exec, parent, h)
		got = append(got, h[i].Kind.(duroxide.SubOrchestrationScheduled).Instance)
	}
	require.Equal(t, want, got, "each execution must generate its own child id")
}

// ParentWithSuborchSurvivesContinueAsNew is duroxide's
// parent_with_suborch_survives_continue_as_new: a parent that calls a
// child at the same position in each of four executions gets a distinct
// child each time (sub::2, sub::2_2, sub::3_2, sub::4_2) and completes.
func ParentWithSuborchSurvivesContinueAsNew(t *testing.T, f Factory) {
	runLoopingParent(t, f, "can-job", 3, []string{"sub::2", "sub::2_2", "sub::3_2", "sub::4_2"})
}

// ContinueAsNewSuborchChildIDsIncludeExecutionAfterFirst is duroxide's
// continue_as_new_suborch_child_ids_include_execution_after_first: the
// same over three executions (sub::2, sub::2_2, sub::3_2).
func ContinueAsNewSuborchChildIDsIncludeExecutionAfterFirst(t *testing.T, f Factory) {
	runLoopingParent(t, f, "can-child-id-job", 2, []string{"sub::2", "sub::2_2", "sub::3_2"})
}

// SuborchCompletionRoutesToSchedulingExecutionNotCurrent is duroxide's
// suborch_completion_routes_to_scheduling_execution_not_current: a child
// that outlives the execution that called it answers that execution
// (ParentExecutionID 1, which has ended), not the parent's current one.
// Once the parent has acknowledged the child's answer, execution 2 is
// still Running, waiting for Release, and it completes when released.
func SuborchCompletionRoutesToSchedulingExecutionNotCurrent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const parent = "stale-suborch-route-job"
	const child = parent + "::sub::2"
	rec := &turnRecorder{Provider: p}
	startRuntime(t, rec, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if in == "0" {
				ctx.ScheduleSubOrchestration("Child", "x") // never awaited
				if _, err := ctx.ScheduleTimer(50 * time.Millisecond).Get(); err != nil {
					return "", err
				}
				return "", ctx.ContinueAsNew("1")
			}
			if _, err := ctx.ScheduleWait("Release").Get(); err != nil {
				return "", err
			}
			return "done", nil
		},
		"Child": func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			if _, err := ctx.ScheduleWait("ChildGo").Get(); err != nil {
				return "", err
			}
			return "child-late", nil
		},
	}), collisionOptions())
	client := runtime.NewClient(p)
	require.NoError(t, client.StartOrchestration(t.Context(), parent, "Parent", "0"))
	require.Eventually(t, func() bool {
		h2, err := p.ReadWithExecution(t.Context(), parent, 2)
		if err != nil || !slices.ContainsFunc(h2, func(ev duroxide.Event) bool {
			_, ok := ev.Kind.(duroxide.OrchestrationStarted)
			return ok
		}) {
			return false
		}
		st, err := client.GetOrchestrationStatus(t.Context(), child)
		return err == nil && st.Kind == runtime.StatusRunning
	}, raceWait, 25*time.Millisecond, "the parent never reached execution 2 with its child running")

	isAnswer := func(m duroxide.WorkItem) bool {
		c, ok := m.Kind.(duroxide.SubOrchCompletedItem)
		return ok && c.ParentID == 2
	}
	answers := rec.countConsumed(parent, isAnswer)
	require.NoError(t, client.RaiseEvent(t.Context(), child, "ChildGo", "go"))
	requireCompletedWith(t, waitStatus(t, p, child), "child-late", "the child completes once released")
	rec.waitConsumed(t, parent, answers, isAnswer, "the child's late answer")
	for _, m := range rec.consumedBy(parent) {
		if c, ok := m.Kind.(duroxide.SubOrchCompletedItem); ok {
			require.Equal(t, uint64(1), c.ParentExecutionID, "the answer goes to the execution that made the call: %+v", c)
		}
	}

	st, err := client.GetOrchestrationStatus(t.Context(), parent)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusRunning, st.Kind, "execution 2 must still wait (the stale answer must not reach it): %+v (%v)", st, st.Err())
	require.NoError(t, client.RaiseEvent(t.Context(), parent, "Release", "go"))
	requireCompletedWith(t, waitStatus(t, p, parent), "done", "execution 2 completes when released")
}

// parentCallingInExecutionTwo returns the orchestrations of the
// execution-two collisions: a Parent that continues as new at once (input
// "0") and in execution 2 is parentOfChild, whose generated child id is
// "<parent>::sub::2_2", and Child.
func parentCallingInExecutionTwo() map[string]runtime.OrchestrationFunc {
	return map[string]runtime.OrchestrationFunc{
		"Parent": func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if in == "0" {
				return "", ctx.ContinueAsNew("1")
			}
			return parentOfChild(ctx, in)
		},
		"Child": childDone,
	}
}

// LegacyProviderBypassTerminalCollisionFailsFastOnExecutionTwo is
// duroxide's legacy_provider_bypass_terminal_collision_fails_fast_on_execution_two:
// a squatter on the generated id of execution 2's child ("coll::sub::2_2"),
// run by a runtime stopped before the parent starts, fails that call with
// "already exists", recorded in execution 2.
func LegacyProviderBypassTerminalCollisionFailsFastOnExecutionTwo(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	stop := startRuntime(t, p, registry(t, map[string]runtime.OrchestrationFunc{"Squatter": squatter}), collisionOptions())
	squat(t, p, "coll::sub::2_2")
	stop()
	startRuntime(t, p, registry(t, parentCallingInExecutionTwo()), collisionOptions())
	requireFailedWith(t, startAndWait(t, p, "coll", "Parent", "0"), "already exists")
	requireFailedIn(t, p, "coll", 2)
}

// seedStartTurn enqueues start, fetches it and acks it as execution exec
// of its instance with history, the orchestrator items (enqueued
// atomically with it) and metadata: upstream's seed_history_turn.
func seedStartTurn(t testing.TB, p duroxide.Provider, start duroxide.WorkItem, exec uint64, history []duroxide.Event, orchItems []duroxide.WorkItem, md duroxide.ExecutionMetadata) {
	t.Helper()
	enqueueOrch(t, p, start)
	item := fetchOrch(t, p, longLock)
	require.Equal(t, start.Instance(), item.Instance, "the seed fetch returned another instance")
	require.NoError(t, p.AckOrchestrationItem(t.Context(), item.LockToken, exec, history, nil, orchItems, md, nil), "seed ack")
}

// LegacyProviderBypassTerminalCollisionRoutesViaFallbackOnFreshRuntime is
// duroxide's legacy_provider_bypass_terminal_collision_routes_via_fallback_on_fresh_runtime:
// the parent is seeded on execution 2, waiting for its child
// "seeded-parent::sub::2_2", which a completed squatter holds; the
// colliding start carries no parent execution (a message older than the
// field). A runtime that never ran the parent answers it on the parent's
// execution read from the provider (2), so the parent fails fast with
// "already exists", recorded in execution 2.
func LegacyProviderBypassTerminalCollisionRoutesViaFallbackOnFreshRuntime(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const parent, child = "seeded-parent", "seeded-parent::sub::2_2"
	seedStartTurn(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "Squatter", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
	}}, 1, []duroxide.Event{
		duroxide.NewEvent(1, child, 1, nil, duroxide.OrchestrationStarted{Name: "Squatter", Version: "1.0.0"}),
		duroxide.NewEvent(2, child, 1, nil, duroxide.OrchestrationCompleted{Output: "squatted"}),
	}, nil, duroxide.ExecutionMetadata{
		Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr("squatted"),
		OrchestrationName: duroxide.StringPtr("Squatter"), OrchestrationVersion: duroxide.StringPtr("1.0.0"),
	})
	seedStartTurn(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: parent, Orchestration: "Parent", Input: "1", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 2,
	}}, 2, []duroxide.Event{
		duroxide.NewEvent(1, parent, 2, nil, duroxide.OrchestrationStarted{Name: "Parent", Version: "1.0.0", Input: "1"}),
		duroxide.NewEvent(2, parent, 2, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "sub::2_2", Input: "child-input"}),
	}, nil, orchMetadata("Parent", "1.0.0"))
	history, err := p.Read(t.Context(), parent)
	require.NoError(t, err)
	require.NotEmpty(t, history, "the seeded parent has history")
	require.Equal(t, uint64(2), history[len(history)-1].ExecutionID, "the seeded parent is on execution 2")
	enqueueOrch(t, p, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "Child", Input: "child-input", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
		ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(2),
	}})
	startRuntime(t, p, registry(t, parentCallingInExecutionTwo()), collisionOptions())
	requireFailedWith(t, waitStatus(t, p, parent), "already exists")
	requireFailedIn(t, p, parent, 2)
}

// parentWithExplicitChild is a Parent calling Child under the explicit id
// (ScheduleSubOrchestrationWithID, or ScheduleSubOrchestrationWith and
// version 1.0.0 when versioned), answering "ok:<output>" or failing with
// "rejected:<error>".
func parentWithExplicitChild(id string, versioned bool) runtime.OrchestrationFunc {
	return func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		var fut *runtime.Future
		if versioned {
			fut = ctx.ScheduleSubOrchestrationWith("Child", "child-input", runtime.SubOrchestrationOptions{InstanceID: id, Version: "1.0.0"})
		} else {
			fut = ctx.ScheduleSubOrchestrationWithID("Child", id, "child-input")
		}
		out, err := fut.Get()
		if err != nil {
			return "", fmt.Errorf("rejected:%w", err)
		}
		return "ok:" + out, nil
	}
}

// runParentWithExplicitChildID runs parentWithExplicitChild(id, versioned)
// as parent, with Child registered at version 1.0.0, and returns its final
// status and the runtime's turn recorder (upstream's
// run_parent_with_explicit_child_id).
func runParentWithExplicitChildID(t *testing.T, p duroxide.Provider, parent, id string, versioned bool) (runtime.OrchestrationStatus, *turnRecorder) {
	t.Helper()
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Parent", parentWithExplicitChild(id, versioned)))
	require.NoError(t, reg.RegisterOrchestrationVersion("Child", "1.0.0", childDone))
	rec := &turnRecorder{Provider: p}
	startRuntime(t, rec, reg, collisionOptions())
	return startAndWait(t, p, parent, "Parent", ""), rec
}

// requireExplicitIDRefused runs a parent calling a child under the
// reserved explicit id and checks the refusal: the parent fails naming the
// reserved marker and the id, no start was sent and no child exists (not
// "<parent>::<id>" either).
func requireExplicitIDRefused(t *testing.T, f Factory, parent, id string, versioned bool) {
	p := f.NewProvider(t)
	st, rec := runParentWithExplicitChildID(t, p, parent, id, versioned)
	requireFailedWith(t, st, "reserved marker", id)
	requireNoStartSent(t, rec, "a refused child id must send no start")
	requireInstances(t, p, []string{parent}, "a refused child id must create no child")
}

// SubOrchestrationWithIDRejectsLeadingReservedMarker is duroxide's
// sub_orchestration_with_id_rejects_leading_reserved_marker: an explicit
// child id "sub::my-child" (which the runtime used to prefix with the
// parent) is refused: the call fails with ErrReservedChildID naming the
// id, and no child is created.
func SubOrchestrationWithIDRejectsLeadingReservedMarker(t *testing.T, f Factory) {
	requireExplicitIDRefused(t, f, "p", "sub::my-child", false)
}

// SubOrchestrationWithIDRejectsPendingPlaceholderPrefix is duroxide's
// sub_orchestration_with_id_rejects_pending_placeholder_prefix: the same
// for "sub::pending_99", the shape of the runtime's placeholder, which it
// used to replace by a generated id.
func SubOrchestrationWithIDRejectsPendingPlaceholderPrefix(t *testing.T, f Factory) {
	requireExplicitIDRefused(t, f, "p", "sub::pending_99", false)
}

// SubOrchestrationVersionedWithIDRejectsLeadingReservedMarker is
// duroxide's sub_orchestration_versioned_with_id_rejects_leading_reserved_marker:
// the versioned call (ScheduleSubOrchestrationWith) refuses "sub::v" the
// same way.
func SubOrchestrationVersionedWithIDRejectsLeadingReservedMarker(t *testing.T, f Factory) {
	requireExplicitIDRefused(t, f, "pv", "sub::v", true)
}

// SubOrchestrationWithIDAllowsReservedMarkerInfix is duroxide's
// sub_orchestration_with_id_allows_reserved_marker_infix: an explicit
// child id with "::sub::" inside ("tenant::sub::99") is used exactly as
// given, with no parent prefix.
func SubOrchestrationWithIDAllowsReservedMarkerInfix(t *testing.T, f Factory) {
	requireExplicitIDAccepted(t, f.NewProvider(t), "p", "tenant::sub::99")
}

// requireExplicitIDAccepted runs a parent calling a child under the
// explicit id and checks that the call succeeds, and that the child ran
// under exactly that id: the instances are the parent and id, no
// "<parent>::" prefix.
func requireExplicitIDAccepted(t *testing.T, p duroxide.Provider, parent, id string) {
	t.Helper()
	st, _ := runParentWithExplicitChildID(t, p, parent, id, false)
	requireCompletedWith(t, st, "ok:child-done:child-input", "the explicit child id %q must be accepted", id)
	requireCompletedWith(t, waitStatus(t, p, id), "child-done:child-input", "the child runs under the explicit id")
	requireInstances(t, p, []string{parent, id}, "the explicit id is used verbatim, with no parent prefix")
}

// ExplicitSubOrchestrationIDAllowsReservedMarkerInfix is duroxide's
// explicit_sub_orchestration_id_allows_reserved_marker_infix (earlier
// explicit_sub_orchestration_id_bypasses_reserved_marker_validation): the
// id "tenant::sub::99", which a client start refuses
// (ErrReservedInstanceID), is accepted as an explicit child id and used
// exactly as given.
func ExplicitSubOrchestrationIDAllowsReservedMarkerInfix(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const explicit = "tenant::sub::99"
	err := runtime.NewClient(p).StartOrchestration(t.Context(), explicit, "Parent", "")
	require.ErrorIs(t, err, runtime.ErrReservedInstanceID, "a client start of %q", explicit)
	requireExplicitIDAccepted(t, p, "tenant-parent", explicit)
}

// RejectedExplicitIDWritesNoSchedulingEvent is duroxide's
// rejected_explicit_id_writes_no_scheduling_event: the refused call's
// future fails at once with ErrReservedChildID and nothing is recorded for
// it, so the parent goes on (a timer makes a second turn replay the
// refusal) and completes; its history holds no SubOrchestrationScheduled.
func RejectedExplicitIDWritesNoSchedulingEvent(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	startRuntime(t, p, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			_, err := ctx.ScheduleSubOrchestrationWithID("Child", "sub::nope", "x").Get()
			if !errors.Is(err, runtime.ErrReservedChildID) {
				return "", fmt.Errorf("the call returned %v, want ErrReservedChildID", err)
			}
			if _, err := ctx.ScheduleTimer(time.Millisecond).Get(); err != nil {
				return "", err
			}
			return "rejected", nil
		},
		"Child": childDone,
	}), collisionOptions())
	requireCompletedWith(t, startAndWait(t, p, "ph", "Parent", ""), "rejected", "the future fails without scheduling")
	h, err := p.Read(t.Context(), "ph")
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(h, func(ev duroxide.Event) bool {
		_, ok := ev.Kind.(duroxide.SubOrchestrationScheduled)
		return ok
	}), "a refused id must record no SubOrchestrationScheduled: %+v", h)
}

// runParentWithDetachedID runs a Parent ("dp") that detaches Detached
// under id and returns its final status and the runtime's turn recorder
// (upstream's run_parent_with_detached_id).
func runParentWithDetachedID(t *testing.T, p duroxide.Provider, id string) (runtime.OrchestrationStatus, *turnRecorder) {
	t.Helper()
	rec := &turnRecorder{Provider: p}
	startRuntime(t, rec, registry(t, map[string]runtime.OrchestrationFunc{
		"Parent": func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.ScheduleOrchestration("Detached", id, "payload")
			return "scheduled", nil
		},
		"Detached": func(*runtime.OrchestrationContext, string) (string, error) { return "detached-done", nil },
	}), collisionOptions())
	return startAndWait(t, p, "dp", "Parent", ""), rec
}

// requireDetachedIDRefused checks that a detached start under the reserved
// id fails the scheduling orchestration ("reserved sub-orchestration
// marker"), sends no start and creates nothing.
func requireDetachedIDRefused(t *testing.T, f Factory, id string) {
	p := f.NewProvider(t)
	st, rec := runParentWithDetachedID(t, p, id)
	requireFailedWith(t, st, "reserved sub-orchestration marker")
	requireNoStartSent(t, rec, "a refused detached id must send no start")
	requireInstances(t, p, []string{"dp"}, "no detached instance may be created for a refused id")
}

// ScheduleOrchestrationRejectsReservedPrefix is duroxide's
// schedule_orchestration_rejects_reserved_prefix: a detached start is a
// root instance, so its id obeys the client's rule; "sub::squatter" fails
// the scheduling orchestration and creates nothing.
func ScheduleOrchestrationRejectsReservedPrefix(t *testing.T, f Factory) {
	requireDetachedIDRefused(t, f, "sub::squatter")
}

// ScheduleOrchestrationRejectsReservedInfix is duroxide's
// schedule_orchestration_rejects_reserved_infix: the same for
// "victim::sub::2", the shape of another instance's child id.
func ScheduleOrchestrationRejectsReservedInfix(t *testing.T, f Factory) {
	requireDetachedIDRefused(t, f, "victim::sub::2")
}

// ScheduleOrchestrationAcceptsNormalID is duroxide's
// schedule_orchestration_accepts_normal_id: any other id, "::" included
// ("tenant-7::order-42"), starts as given.
func ScheduleOrchestrationAcceptsNormalID(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	const id = "tenant-7::order-42"
	st, _ := runParentWithDetachedID(t, p, id)
	requireCompletedWith(t, st, "scheduled", "the parent completes")
	requireCompletedWith(t, waitStatus(t, p, id), "detached-done", "the detached instance runs under the id as given")
	requireInstances(t, p, []string{"dp", id}, "the detached instance is created with the id used verbatim")
}

// StartOrchestrationVersionedRejectsReservedInfix is duroxide's
// instance_id_validation_tests start_orchestration_versioned_rejects_reserved_infix:
// a versioned client start of "a::sub::3" fails with ErrReservedInstanceID
// and enqueues nothing.
func StartOrchestrationVersionedRejectsReservedInfix(t *testing.T, f Factory) {
	p := f.NewProvider(t)
	err := runtime.NewClient(p).StartOrchestrationVersioned(t.Context(), "a::sub::3", "AnyOrch", "1.0.0", "")
	require.ErrorIs(t, err, runtime.ErrReservedInstanceID, "a versioned start of a reserved id")
	requireNoOrch(t, p, longLock, "a refused start must enqueue nothing")
}
