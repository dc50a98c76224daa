package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// The poison disposition tests: duroxide main's
// tests/poison_disposition_tests.rs. A poison disposition commits through
// the ack of the message's current lock; when that ack fails (the lease
// expired) the message is not poisoned and stays in circulation, so the
// runtime must not count it as poisoned, and counts it as a failed
// disposition instead.

// dispositionMaxAttempts is MaxAttempts of these tests; injectedAttempt is
// above it, so a delivery that reports it takes the poison path at once.
const (
	dispositionMaxAttempts = 10
	injectedAttempt        = 11
)

// leaseFaults wraps the memory provider: it reports injectedAttempt on
// fetches (every fetch while persistent, else the first one only) and, with
// deadLease, refuses every ack as a provider refuses the ack of an expired
// lease (permanent "Invalid lock token"). activities selects the worker
// queue instead of the orchestrator queue.
type leaseFaults struct {
	*memory.MemoryProvider
	activities bool
	persistent bool
	deadLease  bool

	mu       sync.Mutex
	injected int
}

func (p *leaseFaults) inject() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.persistent && p.injected > 0 {
		return false
	}
	p.injected++
	return true
}

func (p *leaseFaults) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := p.MemoryProvider.FetchOrchestrationItem(ctx, lock, poll, f)
	if item != nil && !p.activities && p.inject() {
		item.AttemptCount = injectedAttempt
	}
	return item, err
}

func (p *leaseFaults) AckOrchestrationItem(ctx context.Context, token string, exec uint64, delta []duroxide.Event, w, o []duroxide.WorkItem, md duroxide.ExecutionMetadata, c []duroxide.ScheduledActivityIdentifier) error {
	if p.deadLease && !p.activities {
		return duroxide.NewPermanentError("ack_orchestration_item", "Invalid lock token")
	}
	return p.MemoryProvider.AckOrchestrationItem(ctx, token, exec, delta, w, o, md, c)
}

func (p *leaseFaults) FetchWorkItem(ctx context.Context, lock, poll time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	item, err := p.MemoryProvider.FetchWorkItem(ctx, lock, poll, session, tags)
	if item != nil && p.activities && p.inject() {
		item.AttemptCount = injectedAttempt
	}
	return item, err
}

func (p *leaseFaults) AckWorkItem(ctx context.Context, token string, completion *duroxide.WorkItem) error {
	if p.deadLease && p.activities {
		return duroxide.NewPermanentError("ack_work_item", "Invalid lock token")
	}
	return p.MemoryProvider.AckWorkItem(ctx, token, completion)
}

// dispositionRun starts a runtime (MaxAttempts 10, an SDK ManualReader)
// over faults with NeverRuns (an orchestration whose code must not run)
// and CallsNeverRuns (an orchestration whose activity must not run), and
// returns a function that sums a counter over its data points (0 when not
// recorded).
func dispositionRun(t *testing.T, faults *leaseFaults) (*env, func(name string) int64) {
	t.Helper()
	e := newEnv(t)
	faults.MemoryProvider = e.provider
	e.client = runtime.NewClient(faults)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	reg := runtime.NewRegistry()
	mustRegister(t,
		reg.RegisterOrchestration("NeverRuns", func(*runtime.OrchestrationContext, string) (string, error) {
			t.Error("orchestration code must not run for a message detected as poison")
			return "", nil
		}),
		reg.RegisterActivity("NeverRuns", func(*runtime.ActivityContext, string) (string, error) {
			t.Error("activity code must not run for a message detected as poison")
			return "", nil
		}),
		reg.RegisterOrchestration("CallsNeverRuns", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("NeverRuns", in).Get()
		}))
	opts := fastOptions()
	opts.MaxAttempts = dispositionMaxAttempts
	opts.MeterProvider = mp
	startOn(t, e, faults, reg, opts)

	sum := func(name string) int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(context.Background(), &rm))
		var n int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
					for _, dp := range s.DataPoints {
						n += dp.Value
					}
				}
			}
		}
		return n
	}
	return e, sum
}

// TestFailedPoisonDispositionIsNotCountedAsPoisoned is upstream's
// failed_poison_disposition_is_not_counted_as_poisoned: every delivery is
// poison-worthy and every ack fails as if the lease were dead on arrival,
// so no message is ever taken out of circulation. The poison counter stays
// at 0 while the failed dispositions are counted, and the instance is not
// failed.
func TestFailedPoisonDispositionIsNotCountedAsPoisoned(t *testing.T) {
	t.Parallel()
	e, sum := dispositionRun(t, &leaseFaults{persistent: true, deadLease: true})
	require.NoError(t, e.client.StartOrchestration(e.ctx, "poison-disposition-fails", "NeverRuns", "{}"))

	require.Eventually(t, func() bool { return sum("duroxide_orchestration_poison_failed_total") >= 3 },
		waitTimeout, 5*time.Millisecond, "several deliveries must each enter the poison path and fail to commit")
	require.Zero(t, sum("duroxide_orchestration_poison_total"),
		"no message was taken out of circulation, so the poison counter must stay at 0")
	st, err := e.client.GetOrchestrationStatus(e.ctx, "poison-disposition-fails")
	require.NoError(t, err)
	require.NotEqual(t, runtime.StatusFailed, st.Kind, "no disposition committed: the instance cannot have failed")
}

// TestSuccessfulPoisonDispositionIsCountedOnce is upstream's
// successful_poison_disposition_is_counted_once: the first delivery is
// poison-worthy and its ack commits, so the orchestration fails as poison,
// is counted once and no failed disposition is counted.
func TestSuccessfulPoisonDispositionIsCountedOnce(t *testing.T) {
	t.Parallel()
	e, sum := dispositionRun(t, &leaseFaults{})
	st := e.run("poison-disposition-commits", "NeverRuns", "{}")
	require.Equal(t, runtime.StatusFailed, st.Kind, "a poisoned orchestration ends Failed: %v", st.Err())
	require.NotNil(t, st.Details.Poison, "details: %+v", st.Details)
	// The counter is recorded after the commit returns, which the client
	// can see first.
	require.Eventually(t, func() bool { return sum("duroxide_orchestration_poison_total") >= 1 },
		waitTimeout, 5*time.Millisecond, "the committed poison disposition must be counted")
	require.Equal(t, int64(1), sum("duroxide_orchestration_poison_total"))
	require.Zero(t, sum("duroxide_orchestration_poison_failed_total"), "nothing failed to commit")
}

// TestFailedActivityPoisonDispositionIsNotCountedAsPoisoned is the same
// rule for the worker queue (this port's): an activity whose poison ack
// fails is counted in duroxide_activity_poison_failed_total, never in
// duroxide_activity_poison_total.
func TestFailedActivityPoisonDispositionIsNotCountedAsPoisoned(t *testing.T) {
	t.Parallel()
	e, sum := dispositionRun(t, &leaseFaults{activities: true, persistent: true, deadLease: true})
	require.NoError(t, e.client.StartOrchestration(e.ctx, "activity-disposition-fails", "CallsNeverRuns", "{}"))

	require.Eventually(t, func() bool { return sum("duroxide_activity_poison_failed_total") >= 1 },
		waitTimeout, 5*time.Millisecond, "the activity's poison disposition must fail to commit and be counted")
	require.Zero(t, sum("duroxide_activity_poison_total"), "no activity was taken out of circulation")
}
