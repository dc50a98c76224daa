package runtime_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The tests of duroxide main's tests/scenarios/suborch_id_collision.rs and
// of the explicit-id half of tests/instance_id_validation_tests.rs, on the
// in-memory provider. Generated child ids are "<parent>::sub::<event id>"
// in a parent's first execution and "<parent>::sub::<execution>_<event id>"
// after continue-as-new; an explicit child id is used exactly as given,
// "::sub::" inside it included, but one that begins with "sub::" (the
// runtime's mark of a generated id) is refused; a detached start's id obeys
// the client's rule (no "sub::" prefix, no "::sub::").

// parentOfChild is a Parent orchestration scheduling one Child with a
// generated id and failing with "child-failed:<error>" when the call
// fails.
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

// wantFailedWith fails t unless st is Failed with a message containing
// substr.
func wantFailedWith(t *testing.T, st runtime.OrchestrationStatus, substr string) {
	t.Helper()
	if st.Kind != runtime.StatusFailed || st.Err() == nil || !strings.Contains(st.Err().Error(), substr) {
		t.Fatalf("status = %s %q %v, want Failed containing %q", st.Kind, st.Output, st.Err(), substr)
	}
}

// squat runs a Squatter orchestration under id, started straight through
// the provider as a client that does not check ids would, and waits for
// it to complete.
func squat(t *testing.T, e *env, id string) {
	t.Helper()
	if err := e.provider.EnqueueForOrchestrator(e.ctx, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: id, Orchestration: "Squatter", ExecutionID: 1,
	}}, 0); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(id); st.Kind != runtime.StatusCompleted {
		t.Fatalf("the squatter %s: %s %v", id, st.Kind, st.Err())
	}
}

// scheduledChildSuffixes returns the instance recorded by the first
// SubOrchestrationScheduled of each of parent's executions 1..n: the
// generated suffix ("sub::2"), not the full id.
func scheduledChildSuffixes(t *testing.T, e *env, parent string, n uint64) []string {
	t.Helper()
	var out []string
	for exec := uint64(1); exec <= n; exec++ {
		h, err := e.provider.ReadWithExecution(e.ctx, parent, exec)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(h, func(ev duroxide.Event) bool {
			_, ok := ev.Kind.(duroxide.SubOrchestrationScheduled)
			return ok
		})
		if i < 0 {
			t.Fatalf("execution %d of %s schedules no sub-orchestration", exec, parent)
		}
		out = append(out, h[i].Kind.(duroxide.SubOrchestrationScheduled).Instance)
	}
	return out
}

// waitQueuesDrained waits until the orchestrator queue has been empty for
// five reads in a row, 50 ms apart (upstream's
// wait_for_orchestrator_queue_drained).
func waitQueuesDrained(t *testing.T, e *env) {
	t.Helper()
	empty := 0
	deadline := time.Now().Add(10 * time.Second)
	for empty < 5 {
		d, err := e.client.GetQueueDepths(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.OrchestratorQueue == 0 {
			empty++
		} else {
			empty = 0
		}
		if time.Now().After(deadline) {
			t.Fatal("the orchestrator queue did not drain")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLegacyProviderBypassTerminalCollisionDoesNotHangParent is
// legacy_provider_bypass_terminal_collision_does_not_hang_parent: a
// completed instance squatting the parent's generated child id (started
// through the provider, past the client's check) fails the parent's call
// with "already exists" instead of leaving the parent waiting.
func TestLegacyProviderBypassTerminalCollisionDoesNotHangParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", parentOfChild),
		reg.RegisterOrchestration("Child", childDone),
		reg.RegisterOrchestration("Squatter", func(*runtime.OrchestrationContext, string) (string, error) { return "squatted", nil }))
	e.start(reg, fastOptions())
	squat(t, e, "job-1::sub::2")
	wantFailedWith(t, e.run("job-1", "Parent", ""), "already exists")
}

// TestRedeliveredChildStartDoesNotFailParent is
// redelivered_child_start_does_not_fail_parent: the completed child's own
// start delivered again (same parent and call, parent execution unknown)
// is not a collision: the completed parent's history does not change and
// it stays Completed.
func TestRedeliveredChildStartDoesNotFailParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", parentOfChild),
		reg.RegisterOrchestration("Child", childDone))
	rec := &ackRecorder{MemoryProvider: e.provider}
	startOn(t, e, rec, reg, fastOptions())
	wantOutput(t, e.run("job-2", "Parent", ""), "parent-got:child-done:child-input")
	before, err := e.provider.Read(e.ctx, "job-2")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.provider.EnqueueForOrchestrator(e.ctx, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: "job-2::sub::2", Orchestration: "Child", Input: "child-input", ExecutionID: 1,
		ParentInstance: duroxide.StringPtr("job-2"), ParentID: duroxide.Uint64Ptr(2),
	}}, 0); err != nil {
		t.Fatal(err)
	}
	waitQueuesDrained(t, e)
	after, err := e.provider.Read(e.ctx, "job-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("the redelivery appended to the parent: %d events, were %d", len(after), len(before))
	}
	wantOutput(t, e.wait("job-2"), "parent-got:child-done:child-input")
	for _, m := range rec.orchestratorItems() {
		if f, ok := m.Kind.(duroxide.SubOrchFailedItem); ok && f.ParentInstance == "job-2" {
			t.Fatalf("the redelivery notified the parent: %+v", f)
		}
	}
}

// parentLoopingOverChildren is a Parent that calls Child with its input n
// in every execution and continues as new while n < last.
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

// TestParentWithSuborchSurvivesContinueAsNew is
// parent_with_suborch_survives_continue_as_new, and with last = 2
// continue_as_new_suborch_child_ids_include_execution_after_first: a
// parent that calls a child at the same position in every execution gets
// a distinct child each time, sub::2 then sub::<execution>_2.
func TestParentWithSuborchSurvivesContinueAsNew(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		last int
		want []string
	}{
		{3, []string{"sub::2", "sub::2_2", "sub::3_2", "sub::4_2"}},
		{2, []string{"sub::2", "sub::2_2", "sub::3_2"}},
	} {
		t.Run(strconv.Itoa(c.last), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			reg := runtime.NewRegistry()
			mustRegister(t,
				reg.RegisterOrchestration("Parent", parentLoopingOverChildren(c.last)),
				reg.RegisterOrchestration("Child", childDone))
			e.start(reg, fastOptions())
			parent := "can-job-" + strconv.Itoa(c.last)
			wantOutput(t, e.run(parent, "Parent", "0"), fmt.Sprintf("done:%d:child-done:%d", c.last, c.last))
			if got := scheduledChildSuffixes(t, e, parent, uint64(len(c.want))); !slices.Equal(got, c.want) {
				t.Fatalf("child suffixes %v, want %v", got, c.want)
			}
		})
	}
}

// TestSuborchCompletionRoutesToSchedulingExecutionNotCurrent is
// suborch_completion_routes_to_scheduling_execution_not_current: a child
// that outlives the execution that called it answers that execution (which
// has ended), not the parent's current one: execution 2 goes on waiting and
// completes when released.
func TestSuborchCompletionRoutesToSchedulingExecutionNotCurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const parent = "stale-suborch-route-job"
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
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
		}),
		reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			if _, err := ctx.ScheduleWait("ChildGo").Get(); err != nil {
				return "", err
			}
			return "child-late", nil
		}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, parent, "Parent", "0"); err != nil {
		t.Fatal(err)
	}
	child := parent + "::sub::2"
	deadline := time.Now().Add(10 * time.Second)
	for {
		h2, err := e.provider.ReadWithExecution(e.ctx, parent, 2)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.client.GetOrchestrationStatus(e.ctx, child)
		if err != nil {
			t.Fatal(err)
		}
		if len(h2) > 0 && st.Kind == runtime.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the parent never reached execution 2 with its child running")
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err := e.client.RaiseEvent(e.ctx, child, "ChildGo", "go"); err != nil {
		t.Fatal(err)
	}
	if st := e.wait(child); st.Kind != runtime.StatusCompleted {
		t.Fatalf("child: %s %v", st.Kind, st.Err())
	}
	waitQueuesDrained(t, e)
	if st, err := e.client.GetOrchestrationStatus(e.ctx, parent); err != nil || st.Kind != runtime.StatusRunning {
		t.Fatalf("execution 2 must still wait (the stale child answer must not reach it): %s %v %v", st.Kind, st.Err(), err)
	}
	if err := e.client.RaiseEvent(e.ctx, parent, "Release", "go"); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait(parent), "done")
}

// TestLegacyProviderBypassTerminalCollisionFailsFastOnExecutionTwo is
// legacy_provider_bypass_terminal_collision_fails_fast_on_execution_two: a
// squatter on the generated id of execution 2's child ("coll::sub::2_2")
// fails that call with "already exists", recorded in execution 2. The
// squatter runs on a runtime stopped before the parent's starts.
func TestLegacyProviderBypassTerminalCollisionFailsFastOnExecutionTwo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	squatters := runtime.NewRegistry()
	mustRegister(t, squatters.RegisterOrchestration("Squatter", func(*runtime.OrchestrationContext, string) (string, error) { return "squatted", nil }))
	first := e.start(squatters, fastOptions())
	squat(t, e, "coll::sub::2_2")
	if err := first.Shutdown(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.start(parentCallingInExecutionTwo(t), fastOptions())
	wantFailedWith(t, e.run("coll", "Parent", "0"), "already exists")
	requireFailedIn(t, e, "coll", 2)
}

// parentCallingInExecutionTwo returns a registry whose Parent continues as
// new at once (input "0") and calls Child in execution 2 (parentOfChild),
// whose generated id is "<parent>::sub::2_2".
func parentCallingInExecutionTwo(t *testing.T) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if in == "0" {
				return "", ctx.ContinueAsNew("1")
			}
			return parentOfChild(ctx, in)
		}),
		reg.RegisterOrchestration("Child", childDone))
	return reg
}

// requireFailedIn fails t unless execution exec of instance holds an
// OrchestrationFailed.
func requireFailedIn(t *testing.T, e *env, instance string, exec uint64) {
	t.Helper()
	h, err := e.provider.ReadWithExecution(e.ctx, instance, exec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h, func(ev duroxide.Event) bool {
		_, ok := ev.Kind.(duroxide.OrchestrationFailed)
		return ok
	}) {
		t.Fatalf("execution %d of %s holds no OrchestrationFailed: %+v", exec, instance, h)
	}
}

// TestLegacyProviderBypassTerminalCollisionRoutesViaFallbackOnFreshRuntime
// is legacy_provider_bypass_terminal_collision_routes_via_fallback_on_fresh_runtime:
// a colliding start without a parent execution (a message older than the
// field) is answered on the parent's execution read from the provider (2
// here), by a runtime that never ran the parent, so the parent fails fast.
func TestLegacyProviderBypassTerminalCollisionRoutesViaFallbackOnFreshRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const parent, child = "seeded-parent", "seeded-parent::sub::2_2"
	seedTurn(t, e, duroxide.StartOrchestrationItem{Instance: child, Orchestration: "Squatter", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1},
		[]duroxide.Event{
			duroxide.NewEvent(1, child, 1, nil, duroxide.OrchestrationStarted{Name: "Squatter", Version: "1.0.0"}),
			duroxide.NewEvent(2, child, 1, nil, duroxide.OrchestrationCompleted{Output: "squatted"}),
		}, nil,
		duroxide.ExecutionMetadata{
			Status: duroxide.StringPtr(duroxide.StatusCompleted), Output: duroxide.StringPtr("squatted"),
			OrchestrationName: duroxide.StringPtr("Squatter"), OrchestrationVersion: duroxide.StringPtr("1.0.0"),
		})
	seedTurnOfExecution(t, e, 2, duroxide.StartOrchestrationItem{Instance: parent, Orchestration: "Parent", Input: "1", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 2},
		[]duroxide.Event{
			duroxide.NewEvent(1, parent, 2, nil, duroxide.OrchestrationStarted{Name: "Parent", Version: "1.0.0", Input: "1"}),
			duroxide.NewEvent(2, parent, 2, nil, duroxide.SubOrchestrationScheduled{Name: "Child", Instance: "sub::2_2", Input: "child-input"}),
		},
		nil,
		duroxide.ExecutionMetadata{OrchestrationName: duroxide.StringPtr("Parent"), OrchestrationVersion: duroxide.StringPtr("1.0.0")})
	if err := e.provider.EnqueueForOrchestrator(e.ctx, duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
		Instance: child, Orchestration: "Child", Input: "child-input", Version: duroxide.StringPtr("1.0.0"), ExecutionID: 1,
		ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(2),
	}}, 0); err != nil {
		t.Fatal(err)
	}
	e.start(parentCallingInExecutionTwo(t), fastOptions())
	wantFailedWith(t, e.wait(parent), "already exists")
	requireFailedIn(t, e, parent, 2)
}

// parentWithExplicitChild is a Parent calling Child under the explicit id
// (through ScheduleSubOrchestrationWithID, or ScheduleSubOrchestrationWith
// and a version when versioned), answering "ok:<output>" or failing with
// "rejected:<error>".
func parentWithExplicitChild(id string, versioned bool) runtime.OrchestrationFunc {
	return func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		f := ctx.ScheduleSubOrchestrationWithID("Child", id, "child-input")
		if versioned {
			f = ctx.ScheduleSubOrchestrationWith("Child", "child-input", runtime.SubOrchestrationOptions{InstanceID: id, Version: "1.0.0"})
		}
		out, err := f.Get()
		if err != nil {
			return "", fmt.Errorf("rejected:%w", err)
		}
		return "ok:" + out, nil
	}
}

// TestExplicitSubOrchestrationIDAllowsReservedMarkerInfix is
// explicit_sub_orchestration_id_allows_reserved_marker_infix (and
// instance_id_validation_tests' sub_orchestration_with_id_allows_reserved_marker_infix):
// an explicit child id with "::sub::" inside, which a client start
// refuses, is used exactly as given: no parent prefix.
func TestExplicitSubOrchestrationIDAllowsReservedMarkerInfix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const explicit = "tenant::sub::99"
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", parentWithExplicitChild(explicit, false)),
		reg.RegisterOrchestration("Child", childDone))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, explicit, "Parent", ""); !errors.Is(err, runtime.ErrReservedInstanceID) {
		t.Fatalf("a client start of %q: %v, want ErrReservedInstanceID", explicit, err)
	}
	wantOutput(t, e.run("tenant-parent", "Parent", ""), "ok:child-done:child-input")
	if st := e.wait(explicit); st.Kind != runtime.StatusCompleted {
		t.Fatalf("the child did not run under %q: %s", explicit, st.Kind)
	}
	instances, err := e.client.ListAllInstances(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(instances)
	if want := []string{"tenant-parent", explicit}; !slices.Equal(instances, want) {
		t.Fatalf("instances %v, want %v", instances, want)
	}
}

// TestSubOrchestrationWithIDRejectsLeadingReservedMarker is
// instance_id_validation_tests' sub_orchestration_with_id_rejects_leading_reserved_marker,
// sub_orchestration_with_id_rejects_pending_placeholder_prefix and
// sub_orchestration_versioned_with_id_rejects_leading_reserved_marker: an
// explicit child id that begins with "sub::" (which the runtime used to
// prefix with the parent, or, for "sub::pending_", replace by a generated
// id) is refused: the call fails with ErrReservedChildID, naming the id,
// and no child is created.
func TestSubOrchestrationWithIDRejectsLeadingReservedMarker(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id        string
		versioned bool
	}{{"sub::my-child", false}, {"sub::pending_99", false}, {"sub::v", true}} {
		t.Run(c.id, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			reg := runtime.NewRegistry()
			mustRegister(t,
				reg.RegisterOrchestration("Parent", parentWithExplicitChild(c.id, c.versioned)),
				reg.RegisterOrchestrationVersion("Child", "1.0.0", childDone))
			e.start(reg, fastOptions())
			st := e.run("p", "Parent", "")
			wantFailedWith(t, st, "reserved marker")
			wantFailedWith(t, st, c.id)
			instances, err := e.client.ListAllInstances(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(instances, []string{"p"}) {
				t.Fatalf("instances %v: a refused child id must create no child (not p::%s either)", instances, c.id)
			}
		})
	}
}

// TestRejectedExplicitIDWritesNoSchedulingEvent is
// rejected_explicit_id_writes_no_scheduling_event: the refused call's
// future fails at once with ErrReservedChildID and nothing is recorded for
// it, so the parent can go on (and replays the same).
func TestRejectedExplicitIDWritesNoSchedulingEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			_, err := ctx.ScheduleSubOrchestrationWithID("Child", "sub::nope", "x").Get()
			if !errors.Is(err, runtime.ErrReservedChildID) {
				return "", fmt.Errorf("the call returned %v, want ErrReservedChildID", err)
			}
			if _, err := ctx.ScheduleTimer(time.Millisecond).Get(); err != nil { // a second turn replays the refusal
				return "", err
			}
			return "rejected", nil
		}),
		reg.RegisterOrchestration("Child", childDone))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("ph", "Parent", ""), "rejected")
	h, err := e.provider.Read(e.ctx, "ph")
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(h, func(ev duroxide.Event) bool {
		_, ok := ev.Kind.(duroxide.SubOrchestrationScheduled)
		return ok
	}) {
		t.Fatalf("a refused id recorded a SubOrchestrationScheduled: %+v", h)
	}
}

// TestScheduleOrchestrationRejectsReservedIDs is instance_id_validation_tests'
// schedule_orchestration_rejects_reserved_prefix,
// schedule_orchestration_rejects_reserved_infix and
// schedule_orchestration_accepts_normal_id: a detached start is a root
// instance, so its id obeys the client's rule; a reserved one fails the
// scheduling orchestration ("reserved sub-orchestration marker") and
// creates nothing; any other id, "::" included, starts as given.
func TestScheduleOrchestrationRejectsReservedIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"sub::squatter", "victim::sub::2", "tenant-7::order-42"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			reg := runtime.NewRegistry()
			mustRegister(t,
				reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
					ctx.ScheduleOrchestration("Detached", id, "payload")
					return "scheduled", nil
				}),
				reg.RegisterOrchestration("Detached", func(*runtime.OrchestrationContext, string) (string, error) { return "detached-done", nil }))
			e.start(reg, fastOptions())
			st := e.run("dp", "Parent", "")
			want := []string{"dp"}
			if strings.Contains(id, "sub::") {
				wantFailedWith(t, st, "reserved sub-orchestration marker")
				time.Sleep(300 * time.Millisecond) // a detached start, if one were sent, would show by now
			} else {
				wantOutput(t, st, "scheduled")
				wantOutput(t, e.wait(id), "detached-done")
				want = append(want, id)
			}
			instances, err := e.client.ListAllInstances(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(instances)
			if !slices.Equal(instances, want) {
				t.Fatalf("instances %v, want %v", instances, want)
			}
		})
	}
}

// TestStartOrchestrationVersionedRejectsReservedInfix is
// instance_id_validation_tests' start_orchestration_versioned_rejects_reserved_infix
// (the unversioned starts are TestStartRefusesReservedChildIDs').
func TestStartOrchestrationVersionedRejectsReservedInfix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.client.StartOrchestrationVersioned(e.ctx, "a::sub::3", "AnyOrch", "1.0.0", ""); !errors.Is(err, runtime.ErrReservedInstanceID) {
		t.Fatalf("a versioned start of a reserved id: %v, want ErrReservedInstanceID", err)
	}
}
