package runtimetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// orders builds a registry whose orchestration "ProcessOrder" runs steps
// in order: "Name" calls activity Name, "timer" waits 1 ms, "wait:X"
// waits for external event X, "sub:X" calls sub-orchestration X. Every
// activity and child named is registered; each returns its name.
func orders(t *testing.T, steps ...string) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	seen := map[string]bool{}
	for _, s := range steps {
		if seen[s] {
			continue
		}
		seen[s] = true
		switch {
		case s == "timer", strings.HasPrefix(s, "wait:"):
		case strings.HasPrefix(s, "sub:"):
			name := strings.TrimPrefix(s, "sub:")
			must(t, reg.RegisterOrchestration(name, func(*runtime.OrchestrationContext, string) (string, error) { return name, nil }))
		default:
			must(t, reg.RegisterActivity(s, func(*runtime.ActivityContext, string) (string, error) { return s, nil }))
		}
	}
	must(t, reg.RegisterOrchestration("ProcessOrder", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		var done []string
		for _, s := range steps {
			var f *runtime.Future
			switch {
			case s == "timer":
				f = ctx.ScheduleTimer(time.Millisecond)
			case strings.HasPrefix(s, "wait:"):
				f = ctx.ScheduleWait(strings.TrimPrefix(s, "wait:"))
			case strings.HasPrefix(s, "sub:"):
				f = ctx.ScheduleSubOrchestration(strings.TrimPrefix(s, "sub:"), input)
			default:
				f = ctx.ScheduleActivity(s, input)
			}
			if _, err := f.Get(); err != nil {
				return "", err
			}
			done = append(done, s)
		}
		return strings.Join(done, ","), nil
	}))
	return reg
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// record runs ProcessOrder of reg (the code as it was) on an in-memory
// provider until it completes, or, when waitFor is set, until it waits for
// that external event, and returns the instance's history read back from
// the provider.
func record(t *testing.T, reg *runtime.Registry, waitFor string) runtimetest.History {
	t.Helper()
	ctx := t.Context()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	rt, err := runtime.Start(ctx, p, reg, runtime.Options{PollInterval: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.Background())) }()
	client := runtime.NewClient(p)
	const id = "order-7"
	must(t, client.StartOrchestration(ctx, id, "ProcessOrder", "o7"))
	if waitFor == "" {
		st, err := client.WaitForOrchestration(ctx, id, 30*time.Second)
		must(t, err)
		if st.Kind != runtime.StatusCompleted {
			t.Fatalf("recording: %+v", st)
		}
	} else {
		waitForSubscription(t, p, id, waitFor)
	}
	hs, err := runtimetest.ReadProvider(ctx, p, id)
	must(t, err)
	return hs[0]
}

// waitForSubscription waits until instance's history subscribes to event
// name (a bound of 30 s against a hang, not a speed check).
func waitForSubscription(t *testing.T, p duroxide.Provider, instance, name string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		events, err := p.Read(t.Context(), instance)
		must(t, err)
		for _, ev := range events {
			if k, ok := ev.Kind.(duroxide.ExternalSubscribed); ok && k.Name == name {
				return
			}
		}
	}
	t.Fatalf("%s never subscribed to %q", instance, name)
}

// nondeterminism replays h against reg and returns the
// *runtime.NondeterminismError, failing the test if there is none.
func nondeterminism(t *testing.T, reg *runtime.Registry, h runtimetest.History) *runtime.NondeterminismError {
	t.Helper()
	err := runtimetest.Replay(reg, h)
	var nd *runtime.NondeterminismError
	if !errors.As(err, &nd) {
		t.Fatalf("want a NondeterminismError, got %v", err)
	}
	return nd
}

// wantDivergence checks the error's event, and that its message says what
// history has and what the code does.
func wantDivergence(t *testing.T, nd *runtime.NondeterminismError, eventID uint64, history, code string) {
	t.Helper()
	want := fmt.Sprintf(`event %d: history has %s, code %s`, eventID, history, code)
	if !strings.Contains(nd.Error(), want) {
		t.Errorf("message:\n got %s\nwant it to contain %s", nd.Error(), want)
	}
	if nd.EventID != eventID || nd.EventIndex != int(eventID)-1 || nd.Event.EventID != eventID {
		t.Errorf("event id %d, index %d, event %d; want %d", nd.EventID, nd.EventIndex, nd.Event.EventID, eventID)
	}
	if nd.Instance != "order-7" || nd.ExecutionID != 1 || nd.Orchestration != "ProcessOrder" || nd.Version != "1.0.0" {
		t.Errorf("instance %q execution %d %s@%s", nd.Instance, nd.ExecutionID, nd.Orchestration, nd.Version)
	}
}

func TestReplayReportsARenamedActivity(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "ChargeCard", "Ship"), "")
	nd := nondeterminism(t, orders(t, "Reserve", "Charge", "Ship"), h)
	wantDivergence(t, nd, 4, `ActivityScheduled "ChargeCard"`, `scheduled activity "Charge"`)
	if !strings.Contains(nd.Detail, "schedule mismatch") {
		t.Errorf("detail %q is not the engine's message", nd.Detail)
	}
}

func TestReplayReportsTwoReorderedActivities(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "Charge"), "")
	nd := nondeterminism(t, orders(t, "Charge", "Reserve"), h)
	wantDivergence(t, nd, 2, `ActivityScheduled "Reserve"`, `scheduled activity "Charge"`)
}

func TestReplayReportsARemovedActivity(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "Charge", "Ship"), "")
	nd := nondeterminism(t, orders(t, "Reserve", "Ship"), h)
	wantDivergence(t, nd, 4, `ActivityScheduled "Charge"`, `scheduled activity "Ship"`)
}

func TestReplayReportsTheLastActivityRemoved(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "Charge"), "")
	nd := nondeterminism(t, orders(t, "Reserve"), h)
	wantDivergence(t, nd, 4, `ActivityScheduled "Charge"`, `scheduled nothing more (it returned)`)
}

func TestReplayReportsAnActivityAddedBeforeExistingOnes(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Charge", "Ship"), "")
	nd := nondeterminism(t, orders(t, "Validate", "Charge", "Ship"), h)
	wantDivergence(t, nd, 2, `ActivityScheduled "Charge"`, `scheduled activity "Validate"`)
}

func TestReplayReportsARemovedTimer(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "timer", "Charge"), "")
	nd := nondeterminism(t, orders(t, "Reserve", "Charge"), h)
	wantDivergence(t, nd, 4, `TimerCreated`, `scheduled activity "Charge"`)
}

func TestReplayReportsARenamedSubOrchestration(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "sub:Payment"), "")
	nd := nondeterminism(t, orders(t, "Reserve", "sub:Billing"), h)
	wantDivergence(t, nd, 4, `SubOrchestrationScheduled "Payment"`, `scheduled sub-orchestration "Billing"`)
}

func TestReplayReportsAnEventWaitReplacedByATimer(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "wait:approval", "Ship"), "approval")
	nd := nondeterminism(t, orders(t, "Reserve", "timer", "Ship"), h)
	wantDivergence(t, nd, 4, `ExternalSubscribed "approval"`, `created a timer`)
}

func TestReplayReportsAChangedActivityInput(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve"), "")
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Reserve", func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
	must(t, reg.RegisterOrchestration("ProcessOrder", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		return ctx.ScheduleActivity("Reserve", input+"-v2").Get()
	}))
	nd := nondeterminism(t, reg, h)
	wantDivergence(t, nd, 2, `ActivityScheduled "Reserve" with input "o7"`, `scheduled activity "Reserve" with input "o7-v2"`)
}

func TestReplayAcceptsCodeAddedAfterTheLastRecordedEvent(t *testing.T) {
	t.Parallel()
	// The instance is still running, waiting for approval: new steps
	// after the wait run on its next turns.
	h := record(t, orders(t, "Reserve", "wait:approval"), "approval")
	if err := runtimetest.Replay(orders(t, "Reserve", "wait:approval", "Ship", "Notify"), h); err != nil {
		t.Fatal(err)
	}
	// A timer's delay is not part of the check.
	h = record(t, orders(t, "Reserve", "timer", "Charge"), "")
	reg := runtime.NewRegistry()
	for _, a := range []string{"Reserve", "Charge"} {
		must(t, reg.RegisterActivity(a, func(*runtime.ActivityContext, string) (string, error) { return a, nil }))
	}
	must(t, reg.RegisterOrchestration("ProcessOrder", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		for _, f := range []*runtime.Future{ctx.ScheduleActivity("Reserve", input), ctx.ScheduleTimer(time.Hour), ctx.ScheduleActivity("Charge", input)} {
			if _, err := f.Get(); err != nil {
				return "", err
			}
		}
		return "changed output", nil
	}))
	if err := runtimetest.Replay(reg, h); err != nil {
		t.Fatal(err)
	}
}

func TestReplayReportsCodeThatWouldNotEndWhereTheHistoryEnded(t *testing.T) {
	t.Parallel()
	// A completed history: code that now schedules more after the last
	// activity would not have completed there.
	h := record(t, orders(t, "Reserve", "Charge"), "")
	nd := nondeterminism(t, orders(t, "Reserve", "Charge", "Ship"), h)
	wantDivergence(t, nd, 6, `OrchestrationCompleted`, `scheduled activity "Ship"`)
	if nd.Detail != "" {
		t.Errorf("detail %q: a runtime never replays a completed history", nd.Detail)
	}
}

func TestReplayOfUnchangedCodeSucceeds(t *testing.T) {
	t.Parallel()
	reg := orders(t, "Reserve", "timer", "sub:Payment", "Charge")
	if err := runtimetest.Replay(reg, record(t, reg, "")); err != nil {
		t.Fatal(err)
	}
}

func TestReplayChecksEveryExecutionOfAContinueAsNewChain(t *testing.T) {
	t.Parallel()
	old := func(step string) *runtime.Registry {
		reg := runtime.NewRegistry()
		must(t, reg.RegisterActivity("Tick", func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
		must(t, reg.RegisterActivity("Tock", func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
		must(t, reg.RegisterOrchestration("ProcessOrder", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
			name := "Tick"
			if input == "2" {
				name = step
			}
			if _, err := ctx.ScheduleActivity(name, input).Get(); err != nil {
				return "", err
			}
			if input == "o7" {
				return "", ctx.ContinueAsNew("2")
			}
			return "done", nil
		}))
		return reg
	}
	h := record(t, old("Tick"), "")
	if len(h.Executions) != 2 {
		t.Fatalf("%d executions recorded", len(h.Executions))
	}
	if err := runtimetest.Replay(old("Tick"), h); err != nil {
		t.Fatal(err)
	}
	nd := nondeterminism(t, old("Tock"), h)
	if nd.ExecutionID != 2 || nd.EventID != 2 || !strings.Contains(nd.Error(), `history has ActivityScheduled "Tick", code scheduled activity "Tock"`) {
		t.Fatalf("%v (execution %d)", nd, nd.ExecutionID)
	}
}

func TestReplayOfAnUnregisteredOrchestrationSaysSo(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve"), "")
	err := runtimetest.Replay(runtime.NewRegistry(), h)
	if !errors.Is(err, runtime.ErrNotRegistered) || !strings.Contains(err.Error(), "ProcessOrder@1.0.0") {
		t.Fatalf("%v", err)
	}
}

// writeExport writes h as cdb-admin export does, into dir/name.
func writeExport(t *testing.T, dir, name string, h runtimetest.History) string {
	t.Helper()
	data, err := json.Marshal(h)
	must(t, err)
	path := filepath.Join(dir, name)
	must(t, os.WriteFile(path, data, 0o600))
	return path
}

func TestReadFileReadsExportsAndEventArrays(t *testing.T) {
	t.Parallel()
	h := record(t, orders(t, "Reserve", "Charge"), "")
	dir := t.TempDir()
	export := filepath.Join(dir, "order-7.json")
	must(t, h.WriteFile(export))
	events, err := json.Marshal(h.Executions[0].Events)
	must(t, err)
	array := filepath.Join(dir, "history.json")
	must(t, os.WriteFile(array, events, 0o600))
	for _, path := range []string{export, array} {
		got, err := runtimetest.ReadFile(path)
		must(t, err)
		if got.InstanceID != "order-7" || got.Source != path || len(got.Executions) != 1 ||
			got.Executions[0].ExecutionID != 1 || len(got.Events()) != len(h.Events()) {
			t.Errorf("%s: %+v", path, got)
		}
	}
	for name, content := range map[string]string{"empty.json": "[]", "none.json": `{"instance_id":"x","executions":[]}`} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		if _, err := runtimetest.ReadFile(filepath.Join(dir, name)); !errors.Is(err, runtimetest.ErrNoHistory) {
			t.Errorf("%s: %v", name, err)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"instance_id":"x","executions":[{"execution_id":1,"events":[{"type":"Nope"}]}]}`), 0o600))
	if _, err := runtimetest.ReadFile(filepath.Join(dir, "bad.json")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("malformed event: %v", err)
	}
}

func TestReplayDirReportsEachFailingFileWithItsHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeExport(t, dir, "a.json", record(t, orders(t, "Reserve", "ChargeCard"), ""))
	writeExport(t, dir, "b.json", record(t, orders(t, "Reserve"), ""))
	must(t, os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a history"), 0o600))
	newCode := orders(t, "Reserve", "Charge")

	rec := capture(t, func(tb testing.TB) { runtimetest.ReplayDir(tb, newCode, dir) })
	if len(rec.errors) != 2 || rec.fatal != "" {
		t.Fatalf("errors %q, fatal %q", rec.errors, rec.fatal)
	}
	first := rec.errors[0]
	for _, want := range []string{filepath.Join(dir, "a.json"), `event 4: history has ActivityScheduled "ChargeCard", code scheduled activity "Charge"`, "> ", "ActivityScheduled"} {
		if !strings.Contains(first, want) {
			t.Errorf("report lacks %q:\n%s", want, first)
		}
	}
	if !strings.Contains(rec.errors[1], `history has OrchestrationCompleted, code scheduled activity "Charge"`) {
		t.Errorf("second report: %s", rec.errors[1])
	}

	rec = capture(t, func(tb testing.TB) { runtimetest.ReplayDir(tb, newCode, filepath.Join(dir, "missing")) })
	if rec.fatal == "" {
		t.Error("a missing directory passed")
	}
	empty := t.TempDir()
	rec = capture(t, func(tb testing.TB) { runtimetest.ReplayDir(tb, newCode, empty) })
	if !strings.Contains(rec.fatal, "no history") {
		t.Errorf("an empty directory: %q", rec.fatal)
	}
}

// recorder is a testing.TB that records errors and fatal failures instead
// of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex // Errorf may come from the runtime's goroutines
	errors []string
	fatal  string
}

// capture runs fn with a recorder on a goroutine of its own (a fatal
// failure ends that goroutine) and returns what it recorded.
func capture(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Errorf(f string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(f, a...))
}
func (r *recorder) Fatal(args ...any)         { r.fatal = fmt.Sprint(args...); goruntime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...); goruntime.Goexit() }

func TestReplayProviderReplaysEveryInstance(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reg := orders(t, "Reserve", "Charge")
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	rt, err := runtime.Start(ctx, p, reg, runtime.Options{PollInterval: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	client := runtime.NewClient(p)
	for i := range 3 {
		id := fmt.Sprintf("order-%d", i)
		must(t, client.StartOrchestration(ctx, id, "ProcessOrder", id))
		_, err := client.WaitForOrchestration(ctx, id, 30*time.Second)
		must(t, err)
	}
	must(t, rt.Shutdown(context.Background()))
	runtimetest.ReplayProvider(t, reg, p)

	reordered := orders(t, "Charge", "Reserve")
	rec := capture(t, func(tb testing.TB) { runtimetest.ReplayProvider(tb, reordered, p) })
	if len(rec.errors) != 3 {
		t.Fatalf("%d errors: %q", len(rec.errors), rec.errors)
	}
	hs, err := runtimetest.ReadProvider(ctx, p)
	must(t, err)
	if len(hs) != 3 || hs[0].InstanceID != "order-0" || hs[2].InstanceID != "order-2" {
		t.Fatalf("%+v", hs)
	}
}

func TestReplayOfUnchangedCodeWithRacesStatusKVAndDetachedStartsSucceeds(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	must(t, reg.RegisterActivity("Slow", func(ctx *runtime.ActivityContext, _ string) (string, error) {
		select { // loses the race below, most likely; either way the history replays
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return "slow", nil
	}))
	must(t, reg.RegisterActivity("Fast", func(*runtime.ActivityContext, string) (string, error) { return "fast", nil }))
	must(t, reg.RegisterOrchestration("Audit", func(*runtime.OrchestrationContext, string) (string, error) { return "", nil }))
	must(t, reg.RegisterOrchestration("ProcessOrder", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		ctx.SetKVValue("stage", "racing")
		winner, _, err := ctx.Select(ctx.ScheduleActivity("Slow", input), ctx.ScheduleTimer(time.Millisecond))
		if err != nil {
			return "", err
		}
		v, _ := ctx.KVValue("stage")
		out, err := ctx.ScheduleActivity("Fast", v).Get()
		if err != nil {
			return "", err
		}
		// Calls after the last completion, in the turn that completes.
		ctx.SetCustomStatus("done")
		ctx.ClearKVValue("stage")
		ctx.ScheduleOrchestration("Audit", input+"-audit", out)
		return fmt.Sprint(winner, out), nil
	}))
	h := record(t, reg, "")
	if err := runtimetest.Replay(reg, h); err != nil {
		t.Fatalf("%v\n%s", err, runtimetest.FormatHistory(h.Events(), -1))
	}
}
