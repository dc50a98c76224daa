package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// End-to-end runtime tests on the reference in-memory provider.

const waitTimeout = 20 * time.Second

// fastOptions polls quickly and keeps locks short, so that tests that
// depend on expiry or renewal run in about a second.
func fastOptions() runtime.Options {
	return stickyFromEnv(runtime.Options{
		PollInterval:                    5 * time.Millisecond,
		LongPollTimeout:                 200 * time.Millisecond,
		OrchestrationConcurrency:        4,
		WorkerConcurrency:               4,
		OrchestratorLockTimeout:         2 * time.Second,
		WorkerLockTimeout:               2 * time.Second,
		UnregisteredBackoff:             runtime.UnregisteredBackoff{Base: time.Millisecond, Max: 5 * time.Millisecond},
		ActivityCancellationGracePeriod: 2 * time.Second,
	})
}

// stickyFromEnv turns the sticky cache off in o when DUROXIDE_STICKY is
// "off", so that the tests run both ways (README's "Sticky executions").
func stickyFromEnv(o runtime.Options) runtime.Options {
	if os.Getenv("DUROXIDE_STICKY") == "off" {
		o.StickyCacheSize = -1
	}
	return o
}

type env struct {
	t        *testing.T
	provider *memory.MemoryProvider
	client   *runtime.Client
	ctx      context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, provider: p, client: runtime.NewClient(p), ctx: ctx}
}

// start runs a runtime on the env's provider until the test ends.
func (e *env) start(reg *runtime.Registry, opts runtime.Options) *runtime.Runtime {
	e.t.Helper()
	rt, err := runtime.Start(e.ctx, e.provider, reg, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

func (e *env) run(instance, name, input string) runtime.OrchestrationStatus {
	e.t.Helper()
	if err := e.client.StartOrchestration(e.ctx, instance, name, input); err != nil {
		e.t.Fatal(err)
	}
	return e.wait(instance)
}

func (e *env) wait(instance string) runtime.OrchestrationStatus {
	e.t.Helper()
	st, err := e.client.WaitForOrchestration(e.ctx, instance, waitTimeout)
	if err != nil {
		e.t.Fatalf("wait for %s: %v", instance, err)
	}
	return st
}

func mustRegister(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func wantOutput(t *testing.T, st runtime.OrchestrationStatus, want string) {
	t.Helper()
	if st.Kind != runtime.StatusCompleted || st.Output != want {
		t.Fatalf("status = %s %q %v, want Completed %q", st.Kind, st.Output, st.Err(), want)
	}
}

func historyOf(t *testing.T, e *env, instance string) []duroxide.Event {
	t.Helper()
	h, err := e.provider.Read(e.ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHelloWorld(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Hello", func(_ *runtime.ActivityContext, in string) (string, error) { return "Hello, " + in + "!", nil }),
		reg.RegisterOrchestration("HelloWorld", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Hello", in).Get()
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("hello-1", "HelloWorld", "Rust"), "Hello, Rust!")

	h := historyOf(t, e, "hello-1")
	want := []duroxide.EventType{duroxide.EventTypeOrchestrationStarted, duroxide.EventTypeActivityScheduled,
		duroxide.EventTypeActivityCompleted, duroxide.EventTypeOrchestrationCompleted}
	if got := eventTypes(h); !slices.Equal(got, want) {
		t.Fatalf("history = %v", got)
	}
	if *h[2].SourceEventID != 2 || h[3].EventID != 4 {
		t.Fatalf("links/ids wrong: %+v", h)
	}
	info, err := e.client.GetInstanceInfo(e.ctx, "hello-1")
	if err != nil || info.Status != duroxide.StatusCompleted || info.OrchestrationName != "HelloWorld" || info.OrchestrationVersion != "1.0.0" {
		t.Fatalf("instance info = %+v, %v", info, err)
	}
}

func eventTypes(h []duroxide.Event) []duroxide.EventType {
	out := make([]duroxide.EventType, len(h))
	for i, ev := range h {
		out[i] = ev.Type()
	}
	return out
}

func TestFanOutFanIn(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		runtime.RegisterActivityTyped(reg, "Square", func(_ *runtime.ActivityContext, n int) (int, error) { return n * n, nil }),
		runtime.RegisterOrchestrationTyped(reg, "SumSquares", sumOfActivity("Square", 1)))
	e.start(reg, fastOptions())
	if err := runtime.StartOrchestrationTyped(e.ctx, e.client, "fan-1", "SumSquares", 20); err != nil {
		t.Fatal(err)
	}
	got, err := runtime.WaitForOrchestrationTyped[int](e.ctx, e.client, "fan-1", waitTimeout)
	if err != nil || got != 2870 {
		t.Fatalf("sum = %d, %v", got, err)
	}
}

// sumOfActivity returns a typed orchestration that runs activity on first,
// first+1, ..., first+n-1 at once and sums the results.
func sumOfActivity(activity string, first int) func(*runtime.OrchestrationContext, int) (int, error) {
	return func(ctx *runtime.OrchestrationContext, n int) (int, error) {
		futures := make([]*runtime.Future, 0, n)
		for i := first; i < first+n; i++ {
			f, err := runtime.ScheduleActivityTyped(ctx, activity, i)
			if err != nil {
				return 0, err
			}
			futures = append(futures, f)
		}
		values, err := runtime.JoinTyped[int](ctx, futures...)
		sum := 0
		for _, v := range values {
			sum += v
		}
		return sum, err
	}
}

func TestSubOrchestrationsAndDetached(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Upper", func(_ *runtime.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil }),
		reg.RegisterOrchestration("Leaf", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Upper", in).Get()
		}),
		reg.RegisterOrchestration("Root", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			ctx.ScheduleOrchestration("Leaf", "detached-"+ctx.InstanceID(), "free")
			rs := ctx.Join(ctx.ScheduleSubOrchestration("Leaf", in+"-a"), ctx.ScheduleSubOrchestrationWithID("Leaf", "explicit-child", in+"-b"))
			if rs[0].Err != nil || rs[1].Err != nil {
				return "", errors.Join(rs[0].Err, rs[1].Err)
			}
			return rs[0].Value + "+" + rs[1].Value, nil
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("root", "Root", "x"), "X-A+X-B")
	wantOutput(t, e.wait("root::sub::3"), "X-A")
	wantOutput(t, e.wait("explicit-child"), "X-B")
	wantOutput(t, e.wait("detached-root"), "FREE")
	parent, ok, err := mustAdmin(t, e).GetParentID(e.ctx, "root::sub::3")
	if err != nil || !ok || parent != "root" {
		t.Fatalf("parent of child = %q %v %v", parent, ok, err)
	}
	if _, hasParent, _ := mustAdmin(t, e).GetParentID(e.ctx, "detached-root"); hasParent {
		t.Fatal("a detached orchestration has no parent")
	}
}

func mustAdmin(t *testing.T, e *env) duroxide.ProviderAdmin {
	a, ok := duroxide.AsManagementCapability(e.provider)
	if !ok {
		t.Fatal("memory provider has no admin")
	}
	return a
}

func TestCancellationCascadesToChildren(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleWait("never").Get()
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetCustomStatus("children started")
			return ctx.ScheduleSubOrchestrationWithID("Child", "the-child", "").Get()
		}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, "parent", "Parent", ""); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, e, "the-child")
	if err := e.client.CancelInstance(e.ctx, "parent", "user request"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"parent", "the-child"} {
		st := e.wait(id)
		if st.Kind != runtime.StatusFailed || st.Details.Application == nil || st.Details.Application.Kind.Name != duroxide.AppErrorCancelled {
			t.Fatalf("%s: %s %v", id, st.Kind, st.Err())
		}
	}
	if got := fmt.Sprint(e.wait("parent").Err()); got != "canceled: user request" {
		t.Fatalf("parent error = %q", got)
	}
	if got := fmt.Sprint(e.wait("the-child").Err()); got != "canceled: parent canceled" {
		t.Fatalf("child error = %q", got)
	}
}

func waitRunning(t *testing.T, e *env, instance string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		st, err := e.client.GetOrchestrationStatus(e.ctx, instance)
		if err != nil {
			t.Fatal(err)
		}
		if st.Kind == runtime.StatusRunning {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never started", instance)
}

func TestContinueAsNewWithCarryForward(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Counter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		msg, err := ctx.DequeueEvent("inbox").Get()
		if err != nil {
			return "", err
		}
		acc, _ := ctx.CustomStatus()
		ctx.SetCustomStatus(acc + msg)
		if n < 2 {
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}
		s, _ := ctx.CustomStatus()
		return s, nil
	}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, "can-1", "Counter", "0"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, e, "can-1")
	for _, m := range []string{"a", "b", "c"} {
		if err := e.client.EnqueueEvent(e.ctx, "can-1", "inbox", m); err != nil {
			t.Fatal(err)
		}
	}
	wantOutput(t, e.wait("can-1"), "abc")
	execs, err := e.client.ListExecutions(e.ctx, "can-1")
	if err != nil || !slices.Equal(execs, []uint64{1, 2, 3}) {
		t.Fatalf("executions = %v, %v", execs, err)
	}
}

func TestKVAndCrossInstanceRead(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Writer", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetKVValue("color", "blue")
			ctx.SetKVValue("temp", "x")
			ctx.ClearKVValue("temp")
			return "written", nil
		}),
		reg.RegisterOrchestration("Reader", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			raw, err := ctx.GetKVValueFromInstance("writer", "color").Get()
			if err != nil {
				return "", err
			}
			v, ok, err := runtime.DecodeKVValue(raw)
			return fmt.Sprintf("%s/%v", v, ok), err
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("writer", "Writer", ""), "written")
	v, ok, err := e.client.GetKVValue(e.ctx, "writer", "color")
	if err != nil || !ok || v != "blue" {
		t.Fatalf("kv = %q %v %v", v, ok, err)
	}
	all, err := e.client.GetKVAllValues(e.ctx, "writer")
	if err != nil || len(all) != 1 {
		t.Fatalf("all kv = %v %v", all, err)
	}
	wantOutput(t, e.run("reader", "Reader", ""), "blue/true")
}

// An activity that is not registered is poisoned after MaxAttempts (as in
// duroxide), and the failure the orchestration and its caller read says
// that the activity is not registered.
func TestUnregisteredActivityBecomesPoisonThatSaysNotRegistered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("UsesMissing", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		_, err := ctx.ScheduleActivity("Missing", "").Get()
		return "", err
	}))
	opts := fastOptions()
	opts.MaxAttempts = 3
	e.start(reg, opts)
	st := e.run("poison-1", "UsesMissing", "")
	want := `poison: activity Missing#2 exceeded 4 attempts (max 3): activity "Missing" is not registered in the runtimes that fetched it: register it, or fix the name`
	if st.Kind != runtime.StatusFailed || !strings.Contains(fmt.Sprint(st.Err()), want) {
		t.Fatalf("status = %s %v, want it to contain %q", st.Kind, st.Err(), want)
	}
}

// An orchestration that is not registered is poisoned after MaxAttempts
// (as in duroxide), keeping duroxide's poison details, and its status says
// that the orchestration is not registered.
func TestUnregisteredOrchestrationBecomesPoisonThatSaysNotRegistered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	opts := fastOptions()
	opts.MaxAttempts = 2
	e.start(runtime.NewRegistry(), opts)
	st := e.run("nobody", "NotRegistered", "")
	if st.Kind != runtime.StatusFailed || st.Details.Poison == nil || st.Details.Poison.MessageType.Orchestration == nil {
		t.Fatalf("status = %s %v", st.Kind, st.Err())
	}
	want := `poison: orchestration nobody exceeded 3 attempts (max 2): orchestration "NotRegistered" is not registered in the runtimes that fetched it: register it, or fix the name`
	var failed *runtime.OrchestrationFailedError
	if !errors.As(st.Err(), &failed) || failed.Message() != want {
		t.Fatalf("status error = %v, want %q", st.Err(), want)
	}
}

// TestEmptySubOrchestrationNameBecomesPoison checks that a child started
// with an empty orchestration name is treated like any unregistered name
// (backoff, then poison, reported to the parent) rather than having its
// start message dropped, which left the parent waiting for ever.
func TestEmptySubOrchestrationNameBecomesPoison(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("StartsNameless", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleSubOrchestration("", "").Get()
	}))
	opts := fastOptions()
	opts.MaxAttempts = 2
	e.start(reg, opts)
	st := e.run("nameless-parent", "StartsNameless", "")
	if st.Kind != runtime.StatusFailed || !strings.Contains(fmt.Sprint(st.Err()), "poison: orchestration nameless-parent::sub::2 exceeded 3 attempts (max 2)") {
		t.Fatalf("status = %s %v", st.Kind, st.Err())
	}
}

func TestSelectLoserActivityIsCancelledCooperatively(t *testing.T) {
	e := newEnv(t)
	observed := make(chan error, 1)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Slow", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			<-ctx.Done()
			observed <- context.Cause(ctx)
			return "", ctx.Err()
		}),
		reg.RegisterOrchestration("Race", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			w, _, _ := ctx.Select(ctx.ScheduleActivity("Slow", ""), ctx.ScheduleTimer(100*time.Millisecond))
			return strconv.Itoa(w), nil
		}))
	opts := fastOptions()
	opts.WorkerLockTimeout = 400 * time.Millisecond // renewals every 200ms notice the cancellation
	e.start(reg, opts)
	wantOutput(t, e.run("race-1", "Race", ""), "1")
	select {
	case <-observed:
	case <-time.After(waitTimeout):
		t.Fatal("the losing activity was never cancelled")
	}
	h := historyOf(t, e, "race-1")
	found := false
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityCancelRequested); ok && k.Reason == "dropped_future" && *ev.SourceEventID == 2 {
			found = true
		}
		if ev.Type() == duroxide.EventTypeActivityCompleted || ev.Type() == duroxide.EventTypeActivityFailed {
			t.Fatalf("a cancelled activity's outcome must be dropped: %v", eventTypes(h))
		}
	}
	if !found {
		t.Fatalf("no ActivityCancelRequested: %v", eventTypes(h))
	}
}

func TestNondeterminismFailsOrchestration(t *testing.T) {
	e := newEnv(t)
	var changed atomic.Bool
	release := make(chan struct{})
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("A", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			<-release
			return "a", nil
		}),
		reg.RegisterOrchestration("Drifting", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			name := "A"
			if changed.Load() {
				name = "B" // the code changed after the history was written
			}
			return ctx.ScheduleActivity(name, "").Get()
		}))
	// The flag stands for a deployment of changed code, which comes with
	// a new process: a suspended execution in this runtime's sticky cache
	// would not run its first step again, so the cache is off here.
	opts := fastOptions()
	opts.StickyCacheSize = -1
	e.start(reg, opts)
	if err := e.client.StartOrchestration(e.ctx, "nd-1", "Drifting", ""); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, e, "nd-1")
	changed.Store(true)
	close(release)
	st := e.wait("nd-1")
	if st.Kind != runtime.StatusFailed || st.Details.Configuration == nil || st.Details.Configuration.Kind != duroxide.ConfigErrorNondeterminism {
		t.Fatalf("status = %s %v", st.Kind, st.Err())
	}
}

func TestResumesOnANewRuntimeFromHistoryAlone(t *testing.T) {
	e := newEnv(t)
	reg := func() *runtime.Registry {
		r := runtime.NewRegistry()
		mustRegister(t,
			r.RegisterActivity("Echo", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
			r.RegisterOrchestration("TwoPhase", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				first, err := ctx.ScheduleActivity("Echo", "one").Get()
				if err != nil {
					return "", err
				}
				ev, err := ctx.ScheduleWait("Go").Get()
				if err != nil {
					return "", err
				}
				second, err := ctx.ScheduleActivity("Echo", ev).Get()
				return first + "," + second, err
			}))
		return r
	}
	first, err := runtime.Start(e.ctx, e.provider, reg(), fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, "resume-1", "TwoPhase", ""); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, e, "resume-1", duroxide.EventTypeExternalSubscribed)
	if err := first.Shutdown(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.start(reg(), fastOptions())
	if err := e.client.RaiseEvent(e.ctx, "resume-1", "Go", "two"); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait("resume-1"), "one,two")
}

func waitForEvent(t *testing.T, e *env, instance string, typ duroxide.EventType) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if slices.Contains(eventTypes(historyOf(t, e, instance)), typ) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never recorded %s", instance, typ)
}

// TestKilledRuntimeMidFanOut cancels a runtime's context while a fan-out of
// 20 activities is half done; a new runtime on the same provider finishes
// the orchestration with every activity result recorded exactly once.
func TestKilledRuntimeMidFanOut(t *testing.T) {
	e := newEnv(t)
	var executions atomic.Int64
	var mu sync.Mutex
	started := map[int]int{}
	reg := func(gate chan struct{}) *runtime.Registry {
		r := runtime.NewRegistry()
		mustRegister(t,
			runtime.RegisterActivityTyped(r, "Work", func(ctx *runtime.ActivityContext, n int) (int, error) {
				mu.Lock()
				started[n]++
				mu.Unlock()
				if executions.Add(1) > 10 && gate != nil {
					<-ctx.Done() // the first runtime stalls after ten activities, until killed
					return 0, ctx.Err()
				}
				return n * 10, nil
			}),
			runtime.RegisterOrchestrationTyped(r, "FanOut", sumOfActivity("Work", 0)))
		return r
	}
	killCtx, kill := context.WithCancel(e.ctx)
	opts := fastOptions()
	opts.WorkerLockTimeout = 500 * time.Millisecond
	opts.OrchestratorLockTimeout = 500 * time.Millisecond
	// The killed runtime's stalled activities are cancelled and abandoned
	// 100 ms after the kill, not after the default 5 s grace period.
	opts.ShutdownGracePeriod = 100 * time.Millisecond
	if _, err := runtime.Start(killCtx, e.provider, reg(make(chan struct{})), opts); err != nil {
		t.Fatal(err)
	}
	if err := runtime.StartOrchestrationTyped(e.ctx, e.client, "fan-kill", "FanOut", 20); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for executions.Load() < 12 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	kill() // no Shutdown: a crash
	t.Logf("executions before kill: %d", executions.Load())
	e.start(reg(nil), opts)
	got, err := runtime.WaitForOrchestrationTyped[int](e.ctx, e.client, "fan-kill", waitTimeout)
	if err != nil || got != 1900 {
		t.Fatalf("sum = %d, %v", got, err)
	}
	completions := map[uint64]int{}
	for _, ev := range historyOf(t, e, "fan-kill") {
		if ev.Type() == duroxide.EventTypeActivityCompleted {
			completions[*ev.SourceEventID]++
		}
		if ev.Type() == duroxide.EventTypeActivityFailed {
			t.Fatalf("no activity may fail: %+v", ev)
		}
	}
	t.Logf("executions in total: %d", executions.Load())
	if len(completions) != 20 {
		t.Fatalf("completions for %d activities, want 20", len(completions))
	}
	for id, n := range completions {
		if n != 1 {
			t.Fatalf("activity %d recorded %d times", id, n)
		}
	}
}

// startOneActivity starts, on a runtime the test must shut down itself, an
// orchestration "O" that calls activity fn once.
func (e *env) startOneActivity(instance string, fn runtime.ActivityFunc) (*runtime.Registry, *runtime.Runtime) {
	e.t.Helper()
	reg := runtime.NewRegistry()
	mustRegister(e.t,
		reg.RegisterActivity("Act", fn),
		reg.RegisterOrchestration("O", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Act", "").Get()
		}))
	rt, err := runtime.Start(e.ctx, e.provider, reg, fastOptions())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, instance, "O", ""); err != nil {
		e.t.Fatal(err)
	}
	return reg, rt
}

func TestGracefulShutdownFinishesInFlightActivity(t *testing.T) {
	e := newEnv(t)
	entered := make(chan struct{})
	_, rt := e.startOneActivity("gs-1", func(_ *runtime.ActivityContext, _ string) (string, error) {
		close(entered)
		time.Sleep(100 * time.Millisecond)
		return "finished", nil
	})
	<-entered
	if err := rt.Shutdown(e.ctx); err != nil {
		t.Fatal(err)
	}
	h := historyOf(t, e, "gs-1")
	if !slices.Contains(eventTypes(h), duroxide.EventTypeActivityScheduled) {
		t.Fatalf("history = %v", eventTypes(h))
	}
	// The completion was acked before Shutdown returned: a new runtime
	// finishes without running the activity again.
	depth, err := mustAdmin(t, e).GetQueueDepths(e.ctx)
	if err != nil || depth.WorkerQueue != 0 || depth.OrchestratorQueue != 1 {
		t.Fatalf("queues after shutdown = %+v %v", depth, err)
	}
}

func TestForcedShutdownAbandonsActivity(t *testing.T) {
	e := newEnv(t)
	entered := make(chan struct{})
	var runs atomic.Int32
	reg, rt := e.startOneActivity("fs-1", func(ctx *runtime.ActivityContext, _ string) (string, error) {
		if runs.Add(1) == 1 {
			close(entered)
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "second run", nil
	})
	<-entered
	short, cancel := context.WithTimeout(e.ctx, 50*time.Millisecond)
	defer cancel()
	if err := rt.Shutdown(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forced shutdown = %v", err)
	}
	// The abandoned item is visible at once (no lock expiry wait).
	e.start(reg, fastOptions())
	wantOutput(t, e.wait("fs-1"), "second run")
}

func TestSessionsAndTags(t *testing.T) {
	e := newEnv(t)
	var gpuWorker atomic.Value
	reg := func() *runtime.Registry {
		r := runtime.NewRegistry()
		mustRegister(t,
			r.RegisterActivity("Where", func(ctx *runtime.ActivityContext, _ string) (string, error) {
				if ctx.Tag() == "gpu" {
					gpuWorker.Store(ctx.WorkerID())
				}
				return ctx.SessionID() + "|" + ctx.Tag(), nil
			}),
			r.RegisterOrchestration("O", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				a, err := ctx.ScheduleActivityOnSession("Where", "", "sess-1").Get()
				if err != nil {
					return "", err
				}
				b, err := ctx.ScheduleActivityWith("Where", "", runtime.ActivityOptions{Tag: "gpu"}).Get()
				return a + "," + b, err
			}))
		return r
	}
	e.start(reg(), fastOptions()) // default filter: untagged only
	gpuOpts := fastOptions()
	gpuOpts.OrchestrationConcurrency = -1 // worker-only
	gpuOpts.TagFilter, _ = duroxide.TagFilterTags("gpu")
	gpuOpts.WorkerNodeID = "gpu-node"
	e.start(reg(), gpuOpts)
	wantOutput(t, e.run("st-1", "O", ""), "sess-1|,|gpu")
	if w, _ := gpuWorker.Load().(string); !strings.HasSuffix(w, "gpu-node") {
		t.Fatalf("gpu activity ran on %q", w)
	}
}

func TestVersionedStartAndPolicy(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	for _, v := range []string{"1.0.0", "2.0.0"} {
		mustRegister(t, reg.RegisterOrchestrationVersion("V", v, func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return "v" + ctx.OrchestrationVersion(), nil
		}))
	}
	e.start(reg, fastOptions())
	wantOutput(t, e.run("v-latest", "V", ""), "v2.0.0")
	if err := e.client.StartOrchestrationVersioned(e.ctx, "v-exact", "V", "1.0.0", ""); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait("v-exact"), "v1.0.0")
}

func TestClientManagementAndErrors(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Quick", func(*runtime.OrchestrationContext, string) (string, error) { return "q", nil }))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("m-1", "Quick", ""), "q")
	if !e.client.HasManagementCapability() {
		t.Fatal("memory provider implements ProviderAdmin")
	}
	ids, err := e.client.ListInstancesByStatus(e.ctx, duroxide.StatusCompleted)
	if err != nil || !slices.Contains(ids, "m-1") {
		t.Fatalf("completed = %v %v", ids, err)
	}
	st, err := e.client.GetOrchestrationStatus(e.ctx, "nope")
	if err != nil || st.Kind != runtime.StatusNotFound {
		t.Fatalf("unknown = %+v %v", st, err)
	}
	if _, err := e.client.WaitForOrchestration(e.ctx, "nope", 20*time.Millisecond); !errors.Is(err, runtime.ErrTimeout) {
		t.Fatalf("wait on unknown = %v", err)
	}
	res, err := e.client.DeleteInstance(e.ctx, "m-1", false)
	if err != nil || res.InstancesDeleted != 1 {
		t.Fatalf("delete = %+v %v", res, err)
	}
	if _, err := e.client.DeleteInstance(e.ctx, "m-1", false); !errors.Is(err, runtime.ErrInstanceNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	noAdmin := runtime.NewClient(struct{ duroxide.Provider }{e.provider})
	if _, err := noAdmin.ListAllInstances(e.ctx); !errors.Is(err, runtime.ErrManagementNotAvailable) {
		t.Fatalf("without admin = %v", err)
	}
}

func TestStartValidation(t *testing.T) {
	e := newEnv(t)
	if _, err := runtime.Start(e.ctx, nil, runtime.NewRegistry(), runtime.Options{}); err == nil {
		t.Fatal("nil provider accepted")
	}
	if _, err := runtime.Start(e.ctx, e.provider, runtime.NewRegistry(), runtime.Options{PollInterval: -time.Second}); err == nil {
		t.Fatal("negative poll interval accepted")
	}
	if _, err := runtime.Start(e.ctx, e.provider, runtime.NewRegistry(), runtime.Options{SessionIdleTimeout: time.Second}); err == nil {
		t.Fatal("session idle timeout below the worker renewal interval accepted")
	}
	// Every other negative duration is refused too, naming the field; a
	// negative SessionCleanupInterval used to panic in time.NewTicker on the
	// session manager's goroutine and crash the process.
	for field, opts := range map[string]runtime.Options{
		"OrchestratorLockRenewalBuffer":   {OrchestratorLockRenewalBuffer: -time.Second},
		"WorkerLockRenewalBuffer":         {WorkerLockRenewalBuffer: -time.Second},
		"ActivityCancellationGracePeriod": {ActivityCancellationGracePeriod: -time.Second},
		"SessionLockTimeout":              {SessionLockTimeout: -time.Second},
		"SessionLockRenewalBuffer":        {SessionLockRenewalBuffer: -time.Second},
		"SessionCleanupInterval":          {SessionCleanupInterval: -time.Second},
		"UnregisteredBackoff.Base":        {UnregisteredBackoff: runtime.UnregisteredBackoff{Base: -time.Second}},
		"UnregisteredBackoff.Max":         {UnregisteredBackoff: runtime.UnregisteredBackoff{Max: -time.Second}},
		"MaxSessionsPerRuntime":           {MaxSessionsPerRuntime: -1},
	} {
		rt, err := runtime.Start(e.ctx, e.provider, runtime.NewRegistry(), opts)
		if err == nil {
			_ = rt.Shutdown(e.ctx)
			t.Errorf("negative %s accepted", field)
		} else if !strings.Contains(err.Error(), "Options."+field) {
			t.Errorf("negative %s: error %q does not name the field", field, err)
		}
	}
	// A negative LongPollTimeout is valid: it disables long polling.
	rt, err := runtime.Start(e.ctx, e.provider, runtime.NewRegistry(), runtime.Options{LongPollTimeout: -time.Second})
	if err != nil {
		t.Fatalf("negative LongPollTimeout refused: %v", err)
	}
	_ = rt.Shutdown(e.ctx)
	if err := e.client.StartOrchestration(e.ctx, "", "X", ""); err == nil {
		t.Fatal("empty instance id accepted")
	}
}

// TestNilInputsAreErrors checks that a nil provider, client, registry,
// runtime or error value gives an error (or a harmless result) instead of a
// panic.
func TestNilInputsAreErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := runtime.Start(ctx, nil, runtime.NewRegistry(), runtime.Options{}); !errors.Is(err, runtime.ErrNilProvider) {
		t.Errorf("Start(nil provider) = %v, want ErrNilProvider", err)
	}
	var nilRuntime *runtime.Runtime
	if err := nilRuntime.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown of a nil runtime = %v", err)
	}
	for name, c := range map[string]*runtime.Client{"NewClient(nil)": runtime.NewClient(nil), "nil *Client": nil} {
		calls := map[string]error{
			"StartOrchestration": c.StartOrchestration(ctx, "i", "O", ""),
			"RaiseEvent":         c.RaiseEvent(ctx, "i", "e", ""),
			"EnqueueEvent":       c.EnqueueEvent(ctx, "i", "q", ""),
			"CancelInstance":     c.CancelInstance(ctx, "i", "r"),
		}
		_, calls["GetOrchestrationStatus"] = c.GetOrchestrationStatus(ctx, "i")
		_, calls["WaitForOrchestration"] = c.WaitForOrchestration(ctx, "i", time.Second)
		_, calls["WaitForStatusChange"] = c.WaitForStatusChange(ctx, "i", 0, time.Millisecond, time.Second)
		_, _, calls["GetKVValue"] = c.GetKVValue(ctx, "i", "k")
		_, calls["GetKVAllValues"] = c.GetKVAllValues(ctx, "i")
		_, calls["WaitForKVValue"] = c.WaitForKVValue(ctx, "i", "k", time.Second)
		_, calls["ListAllInstances"] = c.ListAllInstances(ctx)
		_, calls["DeleteInstance"] = c.DeleteInstance(ctx, "i", true)
		for call, err := range calls {
			if !errors.Is(err, runtime.ErrNilProvider) {
				t.Errorf("%s: %s = %v, want ErrNilProvider", name, call, err)
			}
		}
		if c.HasManagementCapability() {
			t.Errorf("%s has management capability", name)
		}
	}
	var nilRegistry *runtime.Registry
	noop := func(*runtime.ActivityContext, string) (string, error) { return "", nil }
	if err := nilRegistry.RegisterActivity("A", noop); err == nil {
		t.Error("RegisterActivity on a nil registry accepted")
	}
	if err := runtime.RegisterOrchestrationTyped(nilRegistry, "O", func(*runtime.OrchestrationContext, int) (int, error) { return 0, nil }); err == nil {
		t.Error("RegisterOrchestrationTyped on a nil registry accepted")
	}
	nilRegistry.SetVersionPolicy("O", runtime.LatestVersion())
	var taskErr *runtime.TaskFailedError
	var orchErr *runtime.OrchestrationFailedError
	if taskErr.Error() != "<nil>" || orchErr.Error() != "<nil>" {
		t.Errorf("nil error values print %q and %q", taskErr.Error(), orchErr.Error())
	}
}

// A second registration of a name (an orchestration's name and version)
// is refused with ErrDuplicateRegistration; another version is not a
// duplicate.
func TestADuplicateRegistrationIsRefused(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	noop := func(*runtime.ActivityContext, string) (string, error) { return "", nil }
	orch := func(*runtime.OrchestrationContext, string) (string, error) { return "", nil }
	mustRegister(t, reg.RegisterActivity("A", noop), reg.RegisterOrchestration("O", orch),
		reg.RegisterOrchestrationVersion("O", "2.0.0", orch))
	for what, err := range map[string]error{
		"activity":          reg.RegisterActivity("A", noop),
		"orchestration":     reg.RegisterOrchestration("O", orch),
		"its other version": reg.RegisterOrchestrationVersion("O", "2.0.0", orch),
	} {
		if !errors.Is(err, runtime.ErrDuplicateRegistration) {
			t.Errorf("%s registered twice: %v, want ErrDuplicateRegistration", what, err)
		}
	}
}

// TestClientRefusesEmptyInstanceIDs checks that every enqueueing call
// refuses an empty instance id before the provider sees it.
func TestClientRefusesEmptyInstanceIDs(t *testing.T) {
	e := newEnv(t)
	for call, err := range map[string]error{
		"StartOrchestration": e.client.StartOrchestration(e.ctx, "", "O", ""),
		"RaiseEvent":         e.client.RaiseEvent(e.ctx, "", "e", ""),
		"EnqueueEvent":       e.client.EnqueueEvent(e.ctx, "", "q", ""),
		"CancelInstance":     e.client.CancelInstance(e.ctx, "", "r"),
	} {
		if err == nil {
			t.Errorf("%s with an empty instance id accepted", call)
		}
	}
	depths, err := e.provider.GetQueueDepths(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if depths.OrchestratorQueue != 0 {
		t.Errorf("%d messages enqueued", depths.OrchestratorQueue)
	}
}

func TestActivityContextDescribesItsOrchestration(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Describe", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			return fmt.Sprintf("%s/%d/%s@%s/%s#%d", ctx.InstanceID(), ctx.ExecutionID(), ctx.OrchestrationName(),
				ctx.OrchestrationVersion(), ctx.ActivityName(), ctx.ActivityID()), nil
		}),
		reg.RegisterOrchestrationVersion("Described", "3.1.4", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Describe", "").Get()
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("desc-1", "Described", ""), "desc-1/1/Described@3.1.4/Describe#2")
}

type point struct {
	X, Y int
}

func TestTypedHelpers(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		runtime.RegisterOrchestrationTyped(reg, "Double", func(_ *runtime.OrchestrationContext, p point) (point, error) {
			return point{p.X * 2, p.Y * 2}, nil
		}),
		runtime.RegisterOrchestrationTyped(reg, "Walk", func(ctx *runtime.OrchestrationContext, p point) (point, error) {
			if p.X < 4 {
				// Generated child ids repeat across executions (as in
				// duroxide), so children are only started in the last one.
				return point{}, runtime.ContinueAsNewTyped(ctx, point{p.X * 2, p.Y * 2})
			}
			f, err := runtime.ScheduleSubOrchestrationTyped(ctx, "Double", p)
			if err != nil {
				return point{}, err
			}
			doubled, err := runtime.Await[point](f)
			if err != nil {
				return point{}, err
			}
			step, err := runtime.Await[point](ctx.ScheduleWait("step"))
			if err != nil {
				return point{}, err
			}
			extra, err := runtime.Await[point](ctx.DequeueEvent("extra"))
			return point{doubled.X + step.X + extra.X, doubled.Y + step.Y + extra.Y}, err
		}))
	e.start(reg, fastOptions())
	if err := runtime.StartOrchestrationTyped(e.ctx, e.client, "walk-1", "Walk", point{1, 1}); err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, e, "walk-1", duroxide.EventTypeExternalSubscribed)
	if err := runtime.EnqueueEventTyped(e.ctx, e.client, "walk-1", "extra", point{100, 100}); err != nil {
		t.Fatal(err)
	}
	if err := runtime.RaiseEventTyped(e.ctx, e.client, "walk-1", "step", point{10, 20}); err != nil {
		t.Fatal(err)
	}
	got, err := runtime.WaitForOrchestrationTyped[point](e.ctx, e.client, "walk-1", waitTimeout)
	if err != nil || got != (point{118, 128}) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestCodecMatchesDuroxide(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{{"plain", "plain"}, {42, "42"}, {point{1, 2}, `{"X":1,"Y":2}`}, {nil, "null"}, {[]string{"a"}, `["a"]`}} {
		got, err := runtime.Encode(c.in)
		if err != nil || got != c.want {
			t.Errorf("Encode(%v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if s, err := runtime.Decode[string]("not json"); err != nil || s != "not json" {
		t.Errorf("raw string decode = %q, %v", s, err)
	}
	if s, err := runtime.Decode[string](`"quoted"`); err != nil || s != "quoted" {
		t.Errorf("JSON string decode = %q, %v", s, err)
	}
	if _, err := runtime.Decode[int]("x"); err == nil {
		t.Error("decoding text into an int must fail")
	}
	if _, err := runtime.Encode(make(chan int)); err == nil {
		t.Error("encoding a channel must fail")
	}
}

// A second start of a running instance must not change what runs, even
// from a provider that stores it (no duroxide.InstanceStarter; here the
// start is enqueued on the provider directly): the instance keeps running
// the orchestration its history started, against its own history, and its
// output is that orchestration's.
func TestStartOfRunningInstanceDoesNotChangeWhatRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Approval", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			data, err := ctx.ScheduleWait("Go").Get()
			return "approval:" + in + ":" + data, err
		}),
		reg.RegisterOrchestration("Echo", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return "echo:" + in, nil
		}))
	e.start(reg, fastOptions())
	if err := e.client.StartOrchestration(e.ctx, "dup-start-1", "Approval", "first"); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, e, "dup-start-1")
	second := duroxide.StartOrchestrationItem{Instance: "dup-start-1", Orchestration: "Echo", Input: "second", ExecutionID: duroxide.InitialExecutionID}
	if err := e.provider.EnqueueForOrchestrator(e.ctx, duroxide.WorkItem{Kind: second}, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.client.RaiseEvent(e.ctx, "dup-start-1", "Go", "yes"); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait("dup-start-1"), "approval:first:yes")
	var starts []string
	for _, ev := range historyOf(t, e, "dup-start-1") {
		if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			starts = append(starts, s.Name+"("+s.Input+")")
		}
	}
	if len(starts) != 1 || starts[0] != "Approval(first)" {
		t.Fatalf("OrchestrationStarted events: %v", starts)
	}
}

// StartOrchestration of an instance that exists returns ErrInstanceExists
// and changes nothing: while its start waits for a runtime, while it runs,
// and once it completed; after DeleteInstance the id starts afresh.
func TestStartOfExistingInstanceReturnsErrInstanceExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("Approval", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			data, err := ctx.ScheduleWait("Go").Get()
			return "approval:" + in + ":" + data, err
		}),
		reg.RegisterOrchestration("Echo", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return "echo:" + in, nil
		}))
	const id = "exists-1"
	requireExists := func(when string) {
		t.Helper()
		err := e.client.StartOrchestration(e.ctx, id, "Echo", "second")
		if !errors.Is(err, runtime.ErrInstanceExists) {
			t.Fatalf("%s: StartOrchestration = %v, want ErrInstanceExists", when, err)
		}
	}
	if err := e.client.StartOrchestration(e.ctx, id, "Approval", "first"); err != nil {
		t.Fatal(err)
	}
	requireExists("start queued")
	e.start(reg, fastOptions())
	waitRunning(t, e, id)
	requireExists("running")
	if err := e.client.RaiseEvent(e.ctx, id, "Go", "yes"); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, e.wait(id), "approval:first:yes")
	requireExists("completed")

	if _, err := e.client.DeleteInstance(e.ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, id, "Echo", "again"); err != nil {
		t.Fatalf("start after delete: %v", err)
	}
	wantOutput(t, e.wait(id), "echo:again")
}

// Two retried activities fanned out and joined end to end: each fails its
// first attempt and succeeds on the second; both first attempts run before
// either retry.
func TestRetriedActivitiesRunInParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var calls []string
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Flaky", func(_ *runtime.ActivityContext, in string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, in)
			if slices.Index(calls, in) == len(calls)-1 { // first call for in
				return "", fmt.Errorf("%s failed once", in)
			}
			return in + "-ok", nil
		}),
		reg.RegisterOrchestration("Both", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			policy := runtime.RetryPolicy{MaxAttempts: 2, Backoff: runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: 10 * time.Millisecond}}
			res := ctx.Join(ctx.ScheduleActivityWithRetry("Flaky", "a", policy), ctx.ScheduleActivityWithRetry("Flaky", "b", policy))
			if res[0].Err != nil || res[1].Err != nil {
				return "", fmt.Errorf("%v / %v", res[0].Err, res[1].Err)
			}
			return res[0].Value + "," + res[1].Value, nil
		}))
	e.start(reg, fastOptions())
	wantOutput(t, e.run("retry-fan-out", "Both", ""), "a-ok,b-ok")
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 4 || !slices.Contains(calls[:2], "a") || !slices.Contains(calls[:2], "b") {
		t.Fatalf("activity calls %v: want both first attempts before either retry", calls)
	}
}

func TestJoinTypedDecodesInOrderAndReturnsTheFirstFailure(t *testing.T) {
	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t,
		runtime.RegisterActivityTyped(reg, "Double", func(_ *runtime.ActivityContext, n int) (int, error) {
			if n < 0 {
				return 0, errors.New("negative")
			}
			return 2 * n, nil
		}),
		runtime.RegisterOrchestrationTyped(reg, "Doubles", func(ctx *runtime.OrchestrationContext, ns []int) ([]int, error) {
			futures := make([]*runtime.Future, 0, len(ns))
			for _, n := range ns {
				f, err := runtime.ScheduleActivityTyped(ctx, "Double", n)
				if err != nil {
					return nil, err
				}
				futures = append(futures, f)
			}
			return runtime.JoinTyped[int](ctx, futures...)
		}))
	e.start(reg, fastOptions())
	if err := runtime.StartOrchestrationTyped(e.ctx, e.client, "doubles", "Doubles", []int{3, 1, 2}); err != nil {
		t.Fatal(err)
	}
	got, err := runtime.WaitForOrchestrationTyped[[]int](e.ctx, e.client, "doubles", waitTimeout)
	if err != nil || len(got) != 3 || got[0] != 6 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("JoinTyped = %v, %v; want [6 2 4] in the futures' order", got, err)
	}
	if err := runtime.StartOrchestrationTyped(e.ctx, e.client, "doubles-fail", "Doubles", []int{1, -1, 2}); err != nil {
		t.Fatal(err)
	}
	_, err = runtime.WaitForOrchestrationTyped[[]int](e.ctx, e.client, "doubles-fail", waitTimeout)
	var failed *runtime.OrchestrationFailedError
	if !errors.As(err, &failed) || !strings.Contains(failed.Error(), "negative") {
		t.Fatalf("the failed activity's error reaches the orchestration: %v", err)
	}
}

// TestCancellingStartsContextHandsInFlightWorkToAnotherRuntime: the
// service pattern (Start with a context that SIGTERM cancels) shuts down
// gracefully: the activity the runtime runs is cancelled after the grace
// period and abandoned, so a second runtime runs it at once. Before, the
// cancel stopped everything holding its locks, and the second runtime
// waited for the worker lock timeout (here 1 minute, past the test's
// deadline).
func TestCancellingStartsContextHandsInFlightWorkToAnotherRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	entered := make(chan struct{})
	reg := func(blocking bool) *runtime.Registry { return handOffRegistry(t, entered, blocking) }
	opts := slowLockOptions()
	opts.ShutdownGracePeriod = 100 * time.Millisecond
	first, stop := context.WithCancel(e.ctx)
	rt, err := runtime.Start(first, e.provider, reg(true), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.StartOrchestration(e.ctx, "sigterm-1", "OneActivity", ""); err != nil {
		t.Fatal(err)
	}
	<-entered
	stop() // SIGTERM
	e.start(reg(false), opts)
	wantOutput(t, e.wait("sigterm-1"), "finished by the other runtime")
	// The first runtime's own Shutdown (deferred in a service) returns once
	// the graceful shutdown ended.
	if err := rt.Shutdown(e.ctx); err != nil {
		t.Fatalf("Shutdown after the cancel: %v", err)
	}
}

// TestShutdownGracePeriodMustNotBeNegative names the field.
func TestShutdownGracePeriodMustNotBeNegative(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := runtime.Start(e.ctx, e.provider, runtime.NewRegistry(), runtime.Options{ShutdownGracePeriod: -time.Second})
	if err == nil || !strings.Contains(err.Error(), "Options.ShutdownGracePeriod") {
		t.Fatalf("negative ShutdownGracePeriod: %v", err)
	}
}
