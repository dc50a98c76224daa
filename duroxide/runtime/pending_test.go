package runtime_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// pendingOptions are fastOptions with an unregistered backoff of a minute:
// a start whose orchestration is not registered is abandoned once, and the
// next attempt is far beyond any test's wait.
func pendingOptions() runtime.Options {
	opts := fastOptions()
	opts.UnregisteredBackoff = runtime.UnregisteredBackoff{Base: time.Minute, Max: time.Minute}
	return opts
}

// waitPendingReason polls instance's status until it is Pending with a
// reason, and returns it.
func waitPendingReason(t *testing.T, e *env, instance string) runtime.OrchestrationStatus {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		st, err := e.client.GetOrchestrationStatus(e.ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		if st.Kind != runtime.StatusPending {
			t.Fatalf("status = %s, want Pending", st.Kind)
		}
		if st.PendingReason != "" {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pending reason for %s within %s", instance, waitTimeout)
	return runtime.OrchestrationStatus{}
}

// A start that no runtime has run reads Pending, not NotFound, and the
// admin calls report and list it.
func TestStartThatHasNotRunIsPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.client.StartOrchestration(e.ctx, "pend-1", "Later", "in"); err != nil {
		t.Fatal(err)
	}
	st, err := e.client.GetOrchestrationStatus(e.ctx, "pend-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != runtime.StatusPending || st.PendingReason != "" || st.IsTerminal() {
		t.Fatalf("status = %+v, want Pending without a reason", st)
	}
	info, err := e.client.GetInstanceInfo(e.ctx, "pend-1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != duroxide.StatusPending || info.OrchestrationName != "Later" || info.CurrentExecutionID != 0 {
		t.Fatalf("info = %+v", info)
	}
	ids, err := e.client.ListInstancesByStatus(e.ctx, duroxide.StatusPending)
	if err != nil || len(ids) != 1 || ids[0] != "pend-1" {
		t.Fatalf("pending instances = %v %v", ids, err)
	}
	st, err = e.client.GetOrchestrationStatus(e.ctx, "never-started")
	if err != nil || st.Kind != runtime.StatusNotFound {
		t.Fatalf("unknown instance: %+v %v", st, err)
	}
}

// A typo'd orchestration name is visible at once: the first abandon of its
// start records why, naming the runtime and the attempt, long before the
// start is poisoned.
func TestUnregisteredStartIsPendingWithTheReasonOfTheFirstAbandon(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Process", func(*runtime.OrchestrationContext, string) (string, error) { return "done", nil }))
	rt := e.start(reg, pendingOptions())
	if err := e.client.StartOrchestration(e.ctx, "typo-1", "Procss", ""); err != nil {
		t.Fatal(err)
	}
	st := waitPendingReason(t, e, "typo-1")
	want := `orchestration "Procss" is not registered on runtime ` + rt.ID() + `, attempt 1`
	if st.PendingReason != want {
		t.Fatalf("reason = %q, want %q", st.PendingReason, want)
	}
	info, err := e.client.GetInstanceInfo(e.ctx, "typo-1")
	if err != nil || info.PendingReason != want {
		t.Fatalf("info = %+v %v", info, err)
	}
}

// A start of a pending instance is refused with an error that says the
// instance is pending, and why once a runtime said so.
func TestStartOfPendingInstanceSaysItIsPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.client.StartOrchestration(e.ctx, "again-1", "Procss", ""); err != nil {
		t.Fatal(err)
	}
	err := e.client.StartOrchestration(e.ctx, "again-1", "Process", "")
	if !errors.Is(err, runtime.ErrInstancePending) || !errors.Is(err, runtime.ErrInstanceExists) {
		t.Fatalf("second start = %v, want ErrInstancePending and ErrInstanceExists", err)
	}
	if want := `runtime: start "again-1": instance "again-1" is pending: its start is stored and has not run yet`; err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
	e.start(runtime.NewRegistry(), pendingOptions())
	st := waitPendingReason(t, e, "again-1")
	err = e.client.StartOrchestration(e.ctx, "again-1", "Process", "")
	if !errors.Is(err, runtime.ErrInstancePending) || !strings.HasSuffix(err.Error(), "has not run yet ("+st.PendingReason+")") {
		t.Fatalf("start after the abandon = %v, want the reason %q", err, st.PendingReason)
	}
}

// Deleting a pending instance purges its start and everything else queued
// for it; its id can be started again.
func TestDeletePurgesAPendingInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.client.StartOrchestration(e.ctx, "purge-1", "Procss", ""); err != nil {
		t.Fatal(err)
	}
	if err := e.client.RaiseEvent(e.ctx, "purge-1", "Go", "x"); err != nil {
		t.Fatal(err)
	}
	res, err := e.client.DeleteInstance(e.ctx, "purge-1", false)
	if err != nil {
		t.Fatal(err)
	}
	if res.InstancesDeleted != 1 || res.QueueMessagesDeleted != 2 {
		t.Fatalf("deleted %+v, want 1 instance and 2 messages", res)
	}
	st, err := e.client.GetOrchestrationStatus(e.ctx, "purge-1")
	if err != nil || st.Kind != runtime.StatusNotFound {
		t.Fatalf("status after delete = %+v %v", st, err)
	}
	depths, err := e.client.GetQueueDepths(e.ctx)
	if err != nil || depths.OrchestratorQueue != 0 {
		t.Fatalf("queue depths = %+v %v", depths, err)
	}
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Process", func(_ *runtime.OrchestrationContext, in string) (string, error) { return "done:" + in, nil }))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("purge-1", "Process", "again"), "done:again")
}

// A pending instance whose orchestration gets registered runs, and then
// reports its own status, the reason gone.
func TestPendingInstanceRunsOnceARuntimeHasItsOrchestration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	opts := fastOptions()
	opts.MaxAttempts = 1000
	opts.UnregisteredBackoff = runtime.UnregisteredBackoff{Base: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	first := e.start(runtime.NewRegistry(), opts)
	if err := e.client.StartOrchestration(e.ctx, "late-1", "Late", "in"); err != nil {
		t.Fatal(err)
	}
	waitPendingReason(t, e, "late-1")
	if err := first.Shutdown(e.ctx); err != nil {
		t.Fatal(err)
	}
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Late", func(_ *runtime.OrchestrationContext, in string) (string, error) { return "late:" + in, nil }))
	e.start(reg, opts)
	wantOutput(t, e.wait("late-1"), "late:in")
	info, err := e.client.GetInstanceInfo(e.ctx, "late-1")
	if err != nil || info.Status != duroxide.StatusCompleted || info.PendingReason != "" {
		t.Fatalf("info = %+v %v", info, err)
	}
}

// A pending instance reads Pending on both providers, and a wait for it
// polls its metadata only: no history read while it has none.
func TestWaitOnAPendingInstanceReadsNoHistory(t *testing.T) {
	t.Parallel()
	for name, newProvider := range statusProviders(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw := newProvider(t)
			admin, ok := duroxide.AsManagementCapability(raw)
			if !ok {
				t.Fatal("no ProviderAdmin")
			}
			ctx := t.Context()
			if err := runtime.NewClient(raw).StartOrchestration(ctx, "pend-wait", "Later", ""); err != nil {
				t.Fatal(err)
			}
			counting := &readCountingProvider{Provider: raw, admin: admin}
			client := runtime.NewClient(counting)
			st, err := client.GetOrchestrationStatus(ctx, "pend-wait")
			if err != nil || st.Kind != runtime.StatusPending {
				t.Fatalf("status = %+v %v, want Pending", st, err)
			}
			before, _ := counting.counts()
			if _, err := client.WaitForOrchestration(ctx, "pend-wait", 300*time.Millisecond); !errors.Is(err, runtime.ErrTimeout) {
				t.Fatalf("wait = %v, want ErrTimeout", err)
			}
			reads, infos := counting.counts()
			if reads != before || infos < 2 {
				t.Fatalf("the wait read the history %d times and the metadata %d times; want only metadata", reads-before, infos)
			}
		})
	}
}
