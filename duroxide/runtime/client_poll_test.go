package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// WaitForOrchestration polls the instance metadata (GetInstanceInfo) and
// reads the history only when needed; these tests check that the status it
// returns is GetOrchestrationStatus's (read from the history) for every
// kind of outcome, on the in-memory provider and on cdb.

// readCountingProvider counts the client's Read and GetInstanceInfo calls.
type readCountingProvider struct {
	duroxide.Provider
	admin        duroxide.ProviderAdmin
	reads, infos atomic.Int64
}

func (p *readCountingProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	p.reads.Add(1)
	return p.Provider.Read(ctx, instance)
}

func (p *readCountingProvider) ManagementCapability() duroxide.ProviderAdmin {
	if p.admin == nil {
		return nil
	}
	return infoCountingAdmin{ProviderAdmin: p.admin, p: p}
}

type infoCountingAdmin struct {
	duroxide.ProviderAdmin
	p *readCountingProvider
}

func (a infoCountingAdmin) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	a.p.infos.Add(1)
	return a.ProviderAdmin.GetInstanceInfo(ctx, instance)
}

// counts returns the Read and GetInstanceInfo calls so far.
func (p *readCountingProvider) counts() (reads, infos int64) { return p.reads.Load(), p.infos.Load() }

// statusProviders are the providers the status tests run on, by name.
func statusProviders(t *testing.T) map[string]func(t *testing.T) duroxide.Provider {
	return map[string]func(t *testing.T) duroxide.Provider{
		"memory": func(*testing.T) duroxide.Provider {
			return memory.NewMemoryProvider(memory.MemoryOptions{})
		},
		"cdb": newCDBProvider,
	}
}

// newCDBProvider returns a Cosmos DB provider on a fresh container of the
// test kit's embedded emulator (or COSMOS_ENDPOINT), closed when the test
// ends.
func newCDBProvider(t *testing.T) duroxide.Provider {
	t.Helper()
	return cdbtest.NewProvider(t)
}

// statusRegistry registers an orchestration for every outcome the tests
// wait for.
func statusRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Echo", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterOrchestration("Hello", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Echo", "Hello, "+in+" ✓ \"quoted\"").Get()
		}),
		reg.RegisterOrchestration("Empty", func(*runtime.OrchestrationContext, string) (string, error) { return "", nil }),
		reg.RegisterOrchestration("Custom", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetCustomStatus("step 1")
			if _, err := ctx.ScheduleActivity("Echo", "x").Get(); err != nil {
				return "", err
			}
			ctx.SetCustomStatus(`{"step":2}`)
			return "done", nil
		}),
		reg.RegisterOrchestration("Fails", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetCustomStatus("failing")
			if _, err := ctx.ScheduleActivity("Echo", "x").Get(); err != nil {
				return "", err
			}
			return "", errors.New("it broke")
		}),
		reg.RegisterOrchestration("Counter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			n, _ := strconv.Atoi(in)
			ctx.SetCustomStatus("at " + in)
			if n < 2 {
				return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
			}
			return "counted " + in, nil
		}),
		reg.RegisterOrchestration("Waits", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			return ctx.ScheduleWait("never").Get()
		}),
	)
	return reg
}

func statusOptions() runtime.Options {
	o := fastOptions()
	o.MaxAttempts = 2
	return o
}

// statusRun is a runtime running statusRegistry on a fresh provider, with
// a client whose Read and GetInstanceInfo calls are counted.
type statusRun struct {
	ctx      context.Context
	raw      duroxide.Provider
	counting *readCountingProvider
	client   *runtime.Client
}

// startStatusRun starts a statusRun on newProvider's provider (which must
// have ProviderAdmin); everything stops when the test ends.
func startStatusRun(t *testing.T, newProvider func(t *testing.T) duroxide.Provider) statusRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	raw := newProvider(t)
	admin, ok := duroxide.AsManagementCapability(raw)
	require.True(t, ok, "the provider has ProviderAdmin")
	counting := &readCountingProvider{Provider: raw, admin: admin}
	rt, err := runtime.Start(ctx, raw, statusRegistry(t), statusOptions())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
	return statusRun{ctx: ctx, raw: raw, counting: counting, client: runtime.NewClient(counting)}
}

func TestWaitForOrchestrationReturnsTheHistoryStatus(t *testing.T) {
	results := map[string]map[string]runtime.OrchestrationStatus{}
	for name, newProvider := range statusProviders(t) {
		t.Run(name, func(t *testing.T) {
			run := startStatusRun(t, newProvider)
			ctx, counting, client, history := run.ctx, run.counting, run.client, runtime.NewClient(run.raw)

			instances := map[string]string{
				"hello": "Hello", "empty": "Empty", "custom": "Custom", "fails": "Fails", "counter": "Counter",
				"cancelled": "Waits", "unregistered": "NotRegistered",
			}
			for inst, orch := range instances {
				require.NoError(t, client.StartOrchestration(ctx, inst, orch, "0"))
			}
			waitRunningOn(t, ctx, history, "cancelled")
			require.NoError(t, client.CancelInstance(ctx, "cancelled", "stop"))

			got := map[string]runtime.OrchestrationStatus{}
			for inst := range instances {
				st, err := client.WaitForOrchestration(ctx, inst, waitTimeout)
				require.NoError(t, err, inst)
				want, err := history.GetOrchestrationStatus(ctx, inst)
				require.NoError(t, err, inst)
				require.Equal(t, want, st, "%s: WaitForOrchestration returns GetOrchestrationStatus's status", inst)
				got[inst] = st
			}
			require.Equal(t, runtime.StatusCompleted, got["hello"].Kind)
			require.Equal(t, `Hello, 0 ✓ "quoted"`, got["hello"].Output)
			require.Equal(t, runtime.StatusCompleted, got["empty"].Kind)
			require.Equal(t, "done", got["custom"].Output)
			require.Equal(t, `{"step":2}`, *got["custom"].CustomStatus)
			require.Equal(t, uint64(2), got["custom"].CustomStatusVersion)
			require.Equal(t, runtime.StatusFailed, got["fails"].Kind)
			require.Equal(t, "failing", *got["fails"].CustomStatus)
			require.Contains(t, got["fails"].Err().Error(), "it broke")
			require.Equal(t, "counted 2", got["counter"].Output)
			require.Equal(t, runtime.StatusFailed, got["cancelled"].Kind)
			require.Contains(t, got["cancelled"].Err().Error(), "stop")
			require.Equal(t, runtime.StatusFailed, got["unregistered"].Kind)
			require.NotNil(t, got["unregistered"].Details.Poison)

			// Once terminal: a Completed instance costs one metadata read
			// and no history read; a Failed one reads its history for the
			// error details.
			for inst, wantReads := range map[string]int64{"hello": 0, "custom": 0, "counter": 0, "fails": 1, "cancelled": 1} {
				reads, infos := counting.counts()
				st, err := client.WaitForOrchestration(ctx, inst, waitTimeout)
				require.NoError(t, err)
				require.Equal(t, got[inst], st)
				r2, i2 := counting.counts()
				require.Equal(t, wantReads, r2-reads, "%s: history reads", inst)
				require.Equal(t, int64(1), i2-infos, "%s: metadata reads", inst)
			}
			delete(got, "unregistered") // its poison message counts attempts, which may differ
			results[name] = got
		})
	}
	if len(results) == 2 {
		require.Equal(t, results["memory"], results["cdb"], "both providers give the same statuses")
	}
}

// waitRunningOn polls until instance is Running.
func waitRunningOn(t *testing.T, ctx context.Context, c *runtime.Client, instance string) {
	t.Helper()
	for {
		st, err := c.GetOrchestrationStatus(ctx, instance)
		require.NoError(t, err)
		if st.Kind == runtime.StatusRunning {
			return
		}
		require.NoError(t, ctx.Err(), "%s never started", instance)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWaitingOnARunningInstanceReadsNoHistory(t *testing.T) {
	t.Parallel()
	for name, newProvider := range statusProviders(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := startStatusRun(t, newProvider)
			ctx, counting, client := run.ctx, run.counting, run.client
			require.NoError(t, client.StartOrchestration(ctx, "w", "Waits", ""))
			waitRunningOn(t, ctx, runtime.NewClient(run.raw), "w")

			reads, infos := counting.counts()
			// Long enough for several polls on a loaded machine (a poll of the
			// emulator took over 100 ms at load 12: one poll fitted in 100 ms).
			st, err := client.WaitForOrchestration(ctx, "w", time.Second)
			require.ErrorIs(t, err, runtime.ErrTimeout)
			require.Equal(t, runtime.StatusRunning, st.Kind, "a timed-out wait returns the last status it saw")
			r2, i2 := counting.counts()
			require.Zero(t, r2-reads, "no history read while the metadata says Running")
			require.Greater(t, i2-infos, int64(1), "every poll read the metadata")

			reads, _ = counting.counts()
			st, err = client.WaitForStatusChange(ctx, "w", 0, 10*time.Millisecond, 100*time.Millisecond)
			require.ErrorIs(t, err, runtime.ErrTimeout)
			require.Equal(t, runtime.StatusRunning, st.Kind, "a timed-out wait returns the last status it saw")
			r2, _ = counting.counts()
			require.Zero(t, r2-reads, "WaitForStatusChange reads no history while nothing changes")
		})
	}
}

func TestWaitForOrchestrationWithoutProviderAdmin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := memory.NewMemoryProvider(memory.MemoryOptions{})
	counting := &readCountingProvider{Provider: raw} // no admin
	rt, err := runtime.Start(ctx, raw, statusRegistry(t), statusOptions())
	require.NoError(t, err)
	defer func() { _ = rt.Shutdown(context.Background()) }()
	client := runtime.NewClient(counting)
	for inst, orch := range map[string]string{"hello": "Hello", "fails": "Fails"} {
		require.NoError(t, client.StartOrchestration(ctx, inst, orch, "0"))
		st, err := client.WaitForOrchestration(ctx, inst, waitTimeout)
		require.NoError(t, err)
		want, err := runtime.NewClient(raw).GetOrchestrationStatus(ctx, inst)
		require.NoError(t, err)
		require.Equal(t, want, st)
	}
	reads, infos := counting.counts()
	require.Positive(t, reads, "without ProviderAdmin the history is read")
	require.Zero(t, infos)
}

func TestWaitForOrchestrationReturnsReadErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewMemoryProvider(memory.MemoryOptions{})
	p := &failingReadProvider{Provider: mem, admin: mem}
	// GetInstanceInfo fails (the instance does not exist), so the history
	// decides, and its read fails.
	_, err := runtime.NewClient(p).WaitForOrchestration(ctx, "never-started", time.Second)
	var pe *duroxide.ProviderError
	require.ErrorAs(t, err, &pe, "the history read's error, as GetOrchestrationStatus returns it")
	require.Equal(t, "storage down", pe.Message)
	require.Equal(t, `runtime: status "never-started": storage down`, err.Error())
}

// failingReadProvider fails every Read.
type failingReadProvider struct {
	duroxide.Provider
	admin duroxide.ProviderAdmin
}

func (p *failingReadProvider) ManagementCapability() duroxide.ProviderAdmin { return p.admin }

func (p *failingReadProvider) Read(context.Context, string) ([]duroxide.Event, error) {
	return nil, &duroxide.ProviderError{Operation: "read", Message: "storage down", Retryable: false}
}

// TestWaitsOnAStatusWatcherReturnTheHistoryStatus waits through cdb's
// duroxide.StatusWatcher (the raw provider, not a counting wrapper): the
// waits wake on the provider's acks and return what
// GetOrchestrationStatus returns.
func TestWaitsOnAStatusWatcherReturnTheHistoryStatus(t *testing.T) {
	run := startStatusRun(t, newCDBProvider)
	ctx := run.ctx
	client := runtime.NewClient(run.raw)
	_, ok := duroxide.AsStatusWatcher(run.raw)
	require.True(t, ok)

	require.NoError(t, client.StartOrchestration(ctx, "hello", "Hello", "you"))
	st, err := client.WaitForOrchestration(ctx, "hello", 30*time.Second)
	require.NoError(t, err)
	want, err := client.GetOrchestrationStatus(ctx, "hello")
	require.NoError(t, err)
	require.Equal(t, want, st)
	require.Equal(t, runtime.StatusCompleted, st.Kind)

	require.NoError(t, client.StartOrchestration(ctx, "custom", "Custom", ""))
	st, err = client.WaitForStatusChange(ctx, "custom", 0, time.Second, 30*time.Second)
	require.NoError(t, err)
	require.NotNil(t, st.CustomStatus, "the custom status update woke the wait")

	require.NoError(t, client.StartOrchestration(ctx, "w", "Waits", ""))
	_, err = client.WaitForOrchestration(ctx, "w", 150*time.Millisecond)
	require.ErrorIs(t, err, runtime.ErrTimeout, "a running instance times out")
}

// statusCallCounter counts a client's status reads through cdb: the
// provider's GetInstanceStatus, GetInstanceInfo, GetCustomStatus and Read
// calls; its watcher is cdb's own.
type statusCallCounter struct {
	duroxide.Provider
	raw                             *cdb.Provider
	statuses, infos, customs, reads atomic.Int64
}

func (p *statusCallCounter) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	p.reads.Add(1)
	return p.Provider.Read(ctx, instance)
}

func (p *statusCallCounter) GetCustomStatus(ctx context.Context, instance string, v uint64) (*duroxide.CustomStatus, error) {
	p.customs.Add(1)
	return p.Provider.GetCustomStatus(ctx, instance, v)
}

func (p *statusCallCounter) ManagementCapability() duroxide.ProviderAdmin {
	return statusCountingAdmin{p.raw, p}
}

func (p *statusCallCounter) StatusWatchCapability() duroxide.StatusWatcher { return p.raw }

type statusCountingAdmin struct {
	*cdb.Provider
	c *statusCallCounter
}

func (a statusCountingAdmin) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	a.c.infos.Add(1)
	return a.Provider.GetInstanceInfo(ctx, instance)
}

func (a statusCountingAdmin) GetInstanceStatus(ctx context.Context, instance string) (duroxide.InstanceInfo, *duroxide.CustomStatus, error) {
	a.c.statuses.Add(1)
	return a.Provider.GetInstanceStatus(ctx, instance)
}

// TestWaitOnAWatcherOfAllProcessesReadsOnlyAtStartAndEnd: with cdb's
// change-feed wake-ups the status watch covers every process, so a wait
// reads the instance once when it begins and again only when the watch
// fires, each a GetInstanceStatus (metadata and custom status in one
// read): no backoff poll, no history read, no separate custom status read.
func TestWaitOnAWatcherOfAllProcessesReadsOnlyAtStartAndEnd(t *testing.T) {
	t.Parallel()
	raw := cdbtest.NewProvider(t)
	require.True(t, raw.WatchesAllProcesses())
	counter := &statusCallCounter{Provider: raw, raw: raw}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterActivity("Slow", func(_ *runtime.ActivityContext, in string) (string, error) {
			time.Sleep(300 * time.Millisecond) // past the first backoff polls of a wait without the watch
			return in, nil
		}),
		reg.RegisterOrchestration("Slow", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			ctx.SetCustomStatus("working")
			return ctx.ScheduleActivity("Slow", in).Get()
		}))
	rt, err := runtime.Start(ctx, raw, reg, fastOptions())
	require.NoError(t, err)
	defer func() { _ = rt.Shutdown(context.Background()) }()
	client := runtime.NewClient(counter)

	require.NoError(t, client.StartOrchestration(ctx, "slow", "Slow", "done"))
	st, err := client.WaitForOrchestration(ctx, "slow", 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusCompleted, st.Kind)
	require.Equal(t, "done", st.Output)
	require.NotNil(t, st.CustomStatus)
	require.Equal(t, "working", *st.CustomStatus)
	// One read at the start, one when the custom status update fired the
	// watch, one when the completion did; a backoff poll (100 ms, 300 ms,
	// ...) would add more during the 300 ms activity.
	require.LessOrEqual(t, counter.statuses.Load(), int64(3))
	require.Zero(t, counter.infos.Load()+counter.customs.Load()+counter.reads.Load(), "no other status read")
}

// TestATimedOutWaitReturnsTheLastStatusSeen: a wait that times out returns
// what it last saw, not an empty status: NotFound for an id never started,
// Pending for a start no runtime has run.
func TestATimedOutWaitReturnsTheLastStatusSeen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st, err := e.client.WaitForOrchestration(e.ctx, "never-started", 30*time.Millisecond)
	require.ErrorIs(t, err, runtime.ErrTimeout)
	require.Equal(t, runtime.StatusNotFound, st.Kind)

	require.NoError(t, e.client.StartOrchestration(e.ctx, "no-runtime", "Any", ""))
	st, err = e.client.WaitForOrchestration(e.ctx, "no-runtime", 30*time.Millisecond)
	require.ErrorIs(t, err, runtime.ErrTimeout)
	require.Equal(t, runtime.StatusPending, st.Kind)
}

// olderCustomStatus answers every GetCustomStatus after the first one that
// found a status with nil, as a read from a replica behind the first
// would (another process wrote the status; a provider without session
// tokens).
type olderCustomStatus struct {
	duroxide.Provider
	seen atomic.Bool
}

func (p *olderCustomStatus) GetCustomStatus(ctx context.Context, instance string, v uint64) (*duroxide.CustomStatus, error) {
	if p.seen.Load() {
		return nil, nil
	}
	cs, err := p.Provider.GetCustomStatus(ctx, instance, v)
	if cs != nil {
		p.seen.Store(true)
	}
	return cs, err
}

// TestWaitForStatusChangeNeverGoesBackInTime: the status a wait returns
// carries the custom status the wait saw change, even when the status
// read after it comes from an older replica.
func TestWaitForStatusChangeNeverGoesBackInTime(t *testing.T) {
	t.Parallel()
	run := startStatusRun(t, statusProviders(t)["memory"])
	client := runtime.NewClient(&olderCustomStatus{Provider: run.raw})
	require.NoError(t, client.StartOrchestration(run.ctx, "older", "Custom", ""))
	st, err := client.WaitForStatusChange(run.ctx, "older", 0, 10*time.Millisecond, 30*time.Second)
	require.NoError(t, err)
	require.NotNil(t, st.CustomStatus, "the custom status seen stays seen")
	require.NotZero(t, st.CustomStatusVersion)
}
