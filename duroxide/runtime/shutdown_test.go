package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// The shutdown tests: duroxide main's two-deadline shutdown
// (src/runtime/shutdown.rs, tests/runtime_lifecycle_tests.rs). The lock
// timeouts are a minute, far beyond waitTimeout, so that work another
// runtime finishes within waitTimeout was handed over by an abandon, not
// by a lock expiry.

// heldAcks wraps the memory provider: the first orchestration ack blocks
// until its context ends (or, with ignoreCtx, until release is closed),
// after closing entered.
type heldAcks struct {
	*memory.MemoryProvider
	ignoreCtx bool
	entered   chan struct{}
	release   chan struct{}
	once      sync.Once
}

func (p *heldAcks) AckOrchestrationItem(ctx context.Context, token string, exec uint64, delta []duroxide.Event, w, o []duroxide.WorkItem, md duroxide.ExecutionMetadata, c []duroxide.ScheduledActivityIdentifier) error {
	first := false
	p.once.Do(func() { first = true })
	if first {
		close(p.entered)
		if p.ignoreCtx {
			<-p.release
		} else {
			select {
			case <-ctx.Done():
				return duroxide.WrapError("ack_orchestration_item", true, ctx.Err())
			case <-p.release:
			}
		}
	}
	return p.MemoryProvider.AckOrchestrationItem(ctx, token, exec, delta, w, o, md, c)
}

// slowLockOptions are fastOptions with minute-long locks.
func slowLockOptions() runtime.Options {
	opts := fastOptions()
	opts.WorkerLockTimeout, opts.OrchestratorLockTimeout = time.Minute, time.Minute
	return opts
}

// quickRegistry registers Quick, an orchestration that completes with
// "quick" in its first turn.
func quickRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Quick", func(*runtime.OrchestrationContext, string) (string, error) {
		return "quick", nil
	}))
	return reg
}

// handOffRegistry registers OneActivity, an orchestration that returns
// the result of its activity Work. With blocking, Work closes entered and
// runs until it is cancelled; without, it returns "finished by the other
// runtime" at once (the runtime that takes the work over).
func handOffRegistry(t *testing.T, entered chan struct{}, blocking bool) *runtime.Registry {
	r := runtime.NewRegistry()
	mustRegister(t,
		r.RegisterActivity("Work", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			if blocking {
				close(entered)
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "finished by the other runtime", nil
		}),
		r.RegisterOrchestration("OneActivity", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleActivity("Work", "").Get()
		}))
	return r
}

// startRaw starts a runtime on p without the env's cleanup Shutdown, for
// tests that shut it down themselves.
func startRaw(t *testing.T, e *env, p duroxide.Provider, reg *runtime.Registry, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.Start(e.ctx, p, reg, opts)
	require.NoError(t, err)
	return rt
}

// TestShutdownWithinGraceDrainsAndAcksInFlightActivity: an activity that
// finishes inside the grace period is acked, the outcome is Drained, and
// the next runtime finds its result (the activity ran once).
func TestShutdownWithinGraceDrainsAndAcksInFlightActivity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	reg := func(first bool) *runtime.Registry {
		r := runtime.NewRegistry()
		mustRegister(t,
			r.RegisterActivity("Work", func(*runtime.ActivityContext, string) (string, error) {
				runs.Add(1)
				if first {
					close(entered)
					<-release
				}
				return "acked in the grace period", nil
			}),
			r.RegisterOrchestration("OneActivity", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
				return ctx.ScheduleActivity("Work", "").Get()
			}))
		return r
	}
	rt := startRaw(t, e, e.provider, reg(true), slowLockOptions())
	require.NoError(t, e.client.StartOrchestration(e.ctx, "drain-1", "OneActivity", ""))
	<-entered
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	outcome, err := rt.ShutdownWithTimeouts(time.Minute, 2*time.Minute)
	require.NoError(t, err)
	require.Equal(t, runtime.ShutdownDrained, outcome)

	e.start(reg(false), slowLockOptions())
	wantOutput(t, e.wait("drain-1"), "acked in the grace period")
	require.Equal(t, int32(1), runs.Load(), "the activity finished in the grace period: it must not run again")
}

// TestShutdownPastGraceHandsWorkToAnotherRuntime: work still in flight at
// the grace deadline is cut short and abandoned (a turn's without counting
// an attempt), so another runtime takes it at once, not after the
// minute-long lock: an activity still running is cancelled and its work
// item abandoned; a turn whose commit is still on its way is abandoned.
func TestShutdownPastGraceHandsWorkToAnotherRuntime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, orchestration, want string
		// setup returns the provider and registry of the runtime to shut
		// down, a channel closed once its work is in flight, and the
		// registry of the runtime that takes the work over.
		setup func(t *testing.T, e *env) (p duroxide.Provider, first *runtime.Registry, inFlight <-chan struct{}, next *runtime.Registry)
	}{
		{name: "activity", orchestration: "OneActivity", want: "finished by the other runtime",
			setup: func(t *testing.T, e *env) (duroxide.Provider, *runtime.Registry, <-chan struct{}, *runtime.Registry) {
				entered := make(chan struct{})
				return e.provider, handOffRegistry(t, entered, true), entered, handOffRegistry(t, entered, false)
			}},
		{name: "turn", orchestration: "Quick", want: "quick",
			setup: func(t *testing.T, e *env) (duroxide.Provider, *runtime.Registry, <-chan struct{}, *runtime.Registry) {
				held := &heldAcks{MemoryProvider: e.provider, entered: make(chan struct{}), release: make(chan struct{})}
				return held, quickRegistry(t), held.entered, quickRegistry(t)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			p, first, inFlight, next := c.setup(t, e)
			rt := startRaw(t, e, p, first, slowLockOptions())
			inst := "force-" + c.name + "-1"
			require.NoError(t, e.client.StartOrchestration(e.ctx, inst, c.orchestration, ""))
			<-inFlight
			outcome, err := rt.ShutdownWithTimeouts(100*time.Millisecond, time.Minute)
			require.NoError(t, err)
			require.Equal(t, runtime.ShutdownForced, outcome)

			e.start(next, slowLockOptions())
			wantOutput(t, e.wait(inst), c.want)
		})
	}
}

// TestShutdownReturnsByItsTotalDeadline: a provider call that ignores its
// context keeps a runtime goroutine alive; ShutdownWithTimeouts returns
// ErrShutdownTimedOut at the total deadline anyway, a later call with a
// longer grace is bound by the first call's deadlines, and WaitForShutdown
// reports Forced once the call returned.
func TestShutdownReturnsByItsTotalDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	held := &heldAcks{MemoryProvider: e.provider, ignoreCtx: true, entered: make(chan struct{}), release: make(chan struct{})}
	rt := startRaw(t, e, held, quickRegistry(t), slowLockOptions())
	require.NoError(t, e.client.StartOrchestration(e.ctx, "stuck-1", "Quick", ""))
	<-held.entered

	start := time.Now()
	_, err := rt.ShutdownWithTimeouts(50*time.Millisecond, 300*time.Millisecond)
	require.ErrorIs(t, err, runtime.ErrShutdownTimedOut)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "not before the total deadline")
	require.Less(t, time.Since(start), 10*time.Second, "by the total deadline (300 ms), not when the blocked call returns")

	again := time.Now()
	_, err = rt.ShutdownWithGrace(time.Hour)
	require.ErrorIs(t, err, runtime.ErrShutdownTimedOut, "the first accepted shutdown's deadlines hold")
	require.Less(t, time.Since(again), 10*time.Second)
	require.ErrorIs(t, rt.Shutdown(context.Background()), runtime.ErrShutdownTimedOut)

	close(held.release)
	outcome, err := rt.WaitForShutdown(e.ctx)
	require.NoError(t, err)
	require.Equal(t, runtime.ShutdownForced, outcome)
}

// TestShutdownRejectsInvalidTimeoutsAndKeepsRunning: a total deadline
// before the grace deadline, or a negative grace, is refused and stops
// nothing.
func TestShutdownRejectsInvalidTimeoutsAndKeepsRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rt := e.start(quickRegistry(t), fastOptions())
	_, err := rt.ShutdownWithTimeouts(time.Second, 0)
	require.ErrorIs(t, err, runtime.ErrInvalidShutdownTimeouts)
	_, err = rt.ShutdownWithGrace(-time.Second)
	require.ErrorIs(t, err, runtime.ErrInvalidShutdownTimeouts)
	_, err = rt.WaitForShutdown(e.ctx)
	require.ErrorIs(t, err, runtime.ErrShutdownNotRequested)
	wantOutput(t, e.run("still-running-1", "Quick", ""), "quick")

	outcome, err := rt.ShutdownWithGrace(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, runtime.ShutdownDrained, outcome, "an idle runtime drains")
}

// TestShutdownTimeoutMustNotBeShorterThanGracePeriod names the fields.
func TestShutdownTimeoutMustNotBeShorterThanGracePeriod(t *testing.T) {
	t.Parallel()
	opts := fastOptions()
	opts.ShutdownGracePeriod, opts.ShutdownTimeout = 2*time.Second, time.Second
	_, err := runtime.Start(context.Background(), memory.NewMemoryProvider(memory.MemoryOptions{}), runtime.NewRegistry(), opts)
	require.Error(t, err)
	require.Contains(t, err.Error(), "ShutdownTimeout")
	require.False(t, errors.Is(err, runtime.ErrShutdownTimedOut))
}
