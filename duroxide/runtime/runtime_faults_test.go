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

// faultyProvider wraps the memory provider to fail chosen calls and record
// others.
type faultyProvider struct {
	*memory.MemoryProvider

	mu               sync.Mutex
	failFetches      int // next FetchOrchestrationItem calls to fail (retryable unless permanentFetches)
	permanentFetches bool
	failAcks         int  // next AckOrchestrationItem calls to fail
	permanentAcks    bool // whether those ack failures are permanent
	sessionOwners    [][]string
	cleanups         int
	fetchFailures    int
	ackFailuresSeen  int
	failRenewals     int           // next RenewWorkItemLock calls to fail (retryable)
	renewFailures    chan struct{} // receives one value per injected renewal failure, when set
}

func (p *faultyProvider) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	p.mu.Lock()
	if p.failFetches > 0 {
		p.failFetches--
		p.fetchFailures++
		permanent := p.permanentFetches
		p.mu.Unlock()
		if permanent {
			return nil, duroxide.NewPermanentError("fetch_orchestration_item", "injected: container not found")
		}
		return nil, duroxide.NewRetryableError("fetch_orchestration_item", "injected: throttled")
	}
	p.mu.Unlock()
	return p.MemoryProvider.FetchOrchestrationItem(ctx, lock, poll, f)
}

func (p *faultyProvider) AckOrchestrationItem(ctx context.Context, token string, exec uint64, delta []duroxide.Event, w, o []duroxide.WorkItem, md duroxide.ExecutionMetadata, c []duroxide.ScheduledActivityIdentifier) error {
	p.mu.Lock()
	if p.failAcks > 0 {
		p.failAcks--
		p.ackFailuresSeen++
		permanent := p.permanentAcks
		p.mu.Unlock()
		if permanent {
			return duroxide.NewPermanentError("ack_orchestration_item", "injected: payload rejected")
		}
		return duroxide.NewRetryableError("ack_orchestration_item", "injected: service unavailable")
	}
	p.mu.Unlock()
	return p.MemoryProvider.AckOrchestrationItem(ctx, token, exec, delta, w, o, md, c)
}

func (p *faultyProvider) RenewWorkItemLock(ctx context.Context, token string, extend time.Duration) (duroxide.ExecutionState, error) {
	p.mu.Lock()
	if p.failRenewals > 0 {
		p.failRenewals--
		p.mu.Unlock()
		if p.renewFailures != nil {
			select {
			case p.renewFailures <- struct{}{}:
			default:
			}
		}
		return duroxide.ExecutionState{}, duroxide.NewRetryableError("renew_work_item_lock", "injected: service unavailable")
	}
	p.mu.Unlock()
	return p.MemoryProvider.RenewWorkItemLock(ctx, token, extend)
}

func (p *faultyProvider) RenewSessionLock(ctx context.Context, owners []string, extend, idle time.Duration) (int, error) {
	p.mu.Lock()
	p.sessionOwners = append(p.sessionOwners, slices.Clone(owners))
	p.mu.Unlock()
	return p.MemoryProvider.RenewSessionLock(ctx, owners, extend, idle)
}

func (p *faultyProvider) CleanupOrphanedSessions(ctx context.Context, idle time.Duration) (int, error) {
	p.mu.Lock()
	p.cleanups++
	p.mu.Unlock()
	return p.MemoryProvider.CleanupOrphanedSessions(ctx, idle)
}

func newFaultyEnv(t *testing.T, setup func(p *faultyProvider)) (*env, *faultyProvider) {
	e := newEnv(t)
	fp := &faultyProvider{MemoryProvider: e.provider}
	setup(fp)
	e.client = runtime.NewClient(fp)
	return e, fp
}

func startOn(t *testing.T, e *env, p duroxide.Provider, reg *runtime.Registry, opts runtime.Options) {
	t.Helper()
	rt, err := runtime.Start(e.ctx, p, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
}

func echoRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Echo", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterOrchestration("EchoTwice", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			a, err := ctx.ScheduleActivity("Echo", in).Get()
			if err != nil {
				return "", err
			}
			return ctx.ScheduleActivity("Echo", a+a).Get()
		}))
	return reg
}

func TestRetryableProviderErrorsAreRetried(t *testing.T) {
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failFetches, p.failAcks = 3, 3 })
	startOn(t, e, fp, echoRegistry(t), fastOptions())
	wantOutput(t, e.run("retry-1", "EchoTwice", "x"), "xx")
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if fp.fetchFailures != 3 || fp.ackFailuresSeen != 3 {
		t.Fatalf("injected fetch failures %d, ack failures %d", fp.fetchFailures, fp.ackFailuresSeen)
	}
	var completions int
	for _, ev := range historyOf(t, e, "retry-1") {
		if ev.Type() == duroxide.EventTypeActivityCompleted {
			completions++
		}
	}
	if completions != 2 {
		t.Fatalf("retried acks must not duplicate history: %d completions", completions)
	}
}

func TestPermanentAckFailureFailsTheOrchestration(t *testing.T) {
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failAcks, p.permanentAcks = 1, true })
	startOn(t, e, fp, echoRegistry(t), fastOptions())
	st := e.run("perm-1", "EchoTwice", "x")
	inf := st.Details
	if st.Kind != runtime.StatusFailed || inf == nil || inf.Infrastructure == nil || !strings.Contains(inf.Infrastructure.Message, "payload rejected") {
		t.Fatalf("status = %s %v", st.Kind, st.Err())
	}
}

func TestSessionHeartbeatAndCleanup(t *testing.T) {
	e, fp := newFaultyEnv(t, func(*faultyProvider) {})
	opts := fastOptions()
	opts.WorkerNodeID = "node-7"
	opts.SessionLockTimeout = 100 * time.Millisecond
	opts.SessionCleanupInterval = 50 * time.Millisecond
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Where", func(ctx *runtime.ActivityContext, _ string) (string, error) { return ctx.WorkerID(), nil }),
		reg.RegisterOrchestration("OnSession", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			a, _ := ctx.ScheduleActivityOnSession("Where", "", "s").Get()
			if _, err := ctx.ScheduleTimer(300 * time.Millisecond).Get(); err != nil {
				return "", err
			}
			b, _ := ctx.ScheduleActivityOnSession("Where", "", "s").Get()
			return a + "," + b, nil
		}))
	startOn(t, e, fp, reg, opts)
	out := e.run("sess-1", "OnSession", "")
	if out.Kind != runtime.StatusCompleted || strings.Count(out.Output, "node-7") != 2 {
		t.Fatalf("status = %s %q", out.Kind, out.Output)
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if len(fp.sessionOwners) == 0 || !slices.Equal(fp.sessionOwners[0], []string{"node-7"}) || fp.cleanups == 0 {
		t.Fatalf("heartbeats %v, cleanups %d", fp.sessionOwners, fp.cleanups)
	}
}

func TestCancelInstanceCancelsRunningActivity(t *testing.T) {
	e := newEnv(t)
	cancelled := make(chan struct{})
	started := make(chan struct{})
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Long", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return "", ctx.Err()
		}),
		reg.RegisterOrchestration("O", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Long", "").Get()
		}))
	opts := fastOptions()
	opts.WorkerLockTimeout = 400 * time.Millisecond
	e.start(reg, opts)
	if err := e.client.StartOrchestration(e.ctx, "c-1", "O", ""); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := e.client.CancelInstance(e.ctx, "c-1", "enough"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(e.wait("c-1").Err()); got != "canceled: enough" {
		t.Fatalf("error = %q", got)
	}
	select {
	case <-cancelled:
	case <-time.After(waitTimeout):
		t.Fatal("the running activity was not cancelled")
	}
}

// A retryable renewal error while the lock is still valid must not end the
// activity: the runtime keeps renewing and the activity's result is recorded.
func TestRetryableRenewalErrorKeepsActivityRunning(t *testing.T) {
	failures := make(chan struct{}, 8)
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failRenewals, p.renewFailures = 2, failures })
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Long", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			for range 2 { // outlive two failed renewals
				select {
				case <-failures:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return "finished", nil
		}),
		reg.RegisterOrchestration("O", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Long", "").Get()
		}))
	opts := fastOptions()
	opts.WorkerLockTimeout = 2 * time.Second // renewals every second, retries sooner
	startOn(t, e, fp, reg, opts)
	wantOutput(t, e.run("renew-flaky-1", "O", ""), "finished")
	var completions int
	for _, ev := range historyOf(t, e, "renew-flaky-1") {
		if ev.Type() == duroxide.EventTypeActivityCompleted {
			completions++
		}
	}
	if completions != 1 {
		t.Fatalf("%d activity completions, want 1", completions)
	}
}

// When renewal keeps failing until the lock expires, the runtime stops the
// activity without consuming its work item, so the item is fetched again
// and the activity's next attempt completes the orchestration.
func TestRenewalFailingPastLockExpiryLeavesItemForRetry(t *testing.T) {
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failRenewals = 1 << 30 })
	var mu sync.Mutex
	attempts := 0
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Long", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			mu.Lock()
			attempts++
			n := attempts
			mu.Unlock()
			if n == 1 {
				<-ctx.Done() // the first attempt outlives its lock
				fp.mu.Lock()
				fp.failRenewals = 0
				fp.mu.Unlock()
				return "", ctx.Err()
			}
			return "second attempt", nil
		}),
		reg.RegisterOrchestration("O", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Long", "").Get()
		}))
	opts := fastOptions()
	opts.WorkerLockTimeout = 300 * time.Millisecond
	startOn(t, e, fp, reg, opts)
	wantOutput(t, e.run("renew-down-1", "O", ""), "second attempt")
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 {
		t.Fatalf("activity ran %d times, want 2", attempts)
	}
}

// TestAPermanentOutageBacksOffAndLogsOncePerStep: while every fetch fails
// with a permanent error (a deleted container), the dispatchers back off
// (100 ms doubling, not a flat 100 ms) and the runtime logs the 1st, 2nd,
// 4th... failure of the outage, not one line per fetch; the first success
// logs the recovery once.
func TestAPermanentOutageBacksOffAndLogsOncePerStep(t *testing.T) {
	t.Parallel()
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failFetches, p.permanentFetches = 1<<30, true })
	var logs lockedBuffer
	opts := fastOptions()
	opts.OrchestrationConcurrency = 4
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	startOn(t, e, fp, echoRegistry(t), opts)
	time.Sleep(1500 * time.Millisecond) // the outage

	fp.mu.Lock()
	failures := fp.fetchFailures
	fp.failFetches = 0
	fp.mu.Unlock()
	warned := strings.Count(logs.String(), "error fetching")
	// 4 dispatchers at 100, 200, 400, 800 ms fail at most 5 times each in
	// 1.5 s; a flat 100 ms made 15 each. Fewer when the machine is slow.
	if failures == 0 || failures > 4*5 {
		t.Errorf("%d failed fetches in 1.5 s, want 1 to 20 (backoff on permanent errors)", failures)
	}
	if warned == 0 || warned > 5 {
		t.Errorf("%d warnings for %d failed fetches, want one per doubling (at most 5):\n%s", warned, failures, logs.String())
	}
	mustRegister(t, e.client.StartOrchestration(e.ctx, "after-outage", "EchoTwice", "x"))
	e.wait("after-outage")
	if n := strings.Count(logs.String(), "store reachable again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs.String())
	}
}

// healthReportingProvider is a faultyProvider that reports its store's
// health itself (duroxide.StoreHealthReporter).
type healthReportingProvider struct{ *faultyProvider }

func (healthReportingProvider) ReportsStoreHealth() bool { return true }

// On a provider that logs its store's outages itself, the runtime's own
// lines of a retryable outage are Debug (the provider's are the true ones:
// a fetch can succeed without reaching the store), while a permanent
// error is still a warning.
func TestAProviderThatReportsItsStoresHealthIsNotLoggedTwice(t *testing.T) {
	t.Parallel()
	e, fp := newFaultyEnv(t, func(p *faultyProvider) { p.failFetches = 3 })
	var logs lockedBuffer
	opts := fastOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	startOn(t, e, healthReportingProvider{fp}, echoRegistry(t), opts)
	mustRegister(t, e.client.StartOrchestration(e.ctx, "quiet", "EchoTwice", "x"))
	e.wait("quiet")
	out := logs.String()
	if !strings.Contains(out, "level=DEBUG msg=\"error fetching") || !strings.Contains(out, "level=DEBUG msg=\"store reachable again") {
		t.Errorf("the retryable outage is not logged at Debug:\n%s", out)
	}
	if strings.Contains(out, "level=WARN msg=\"error fetching") || strings.Contains(out, "level=INFO msg=\"store reachable again") {
		t.Errorf("the runtime logs the provider's outage too:\n%s", out)
	}

	fp.mu.Lock()
	fp.failFetches, fp.permanentFetches = 1, true
	fp.mu.Unlock()
	mustRegister(t, e.client.StartOrchestration(e.ctx, "permanent", "EchoTwice", "x"))
	e.wait("permanent")
	if !strings.Contains(logs.String(), "level=WARN msg=\"error fetching") {
		t.Errorf("a permanent error is not a warning:\n%s", logs.String())
	}
}
