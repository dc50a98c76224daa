package runtime_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// metricsRun is the known workload of the metric tests, run to its end on
// the in-memory provider with an SDK ManualReader:
//   - "parent-1" (Parent): 3 Ok activities, then the sub-orchestration Child
//     ("parent-1-child": 1 Ok activity); completes;
//   - "fails-1" (Fails): its Boom activity fails (application error); fails;
//   - "loop-1" (Loop): continues as new once, then completes;
//   - "waiter-1" (Waiter): waits for the external event "go", raised by the
//     client; completes;
//   - "sleeper-1" (Sleeper): waits for ever; cancelled by the client;
//   - "missing-1" (CallsMissing): its activity Missing is registered
//     nowhere and becomes poison (MaxAttempts 2); the orchestration fails.
//
// Every instance is awaited with WaitForOrchestration (6 waits), then the
// reader collects once.
type metricsRun struct {
	rm metricdata.ResourceMetrics
}

// observedRegistry registers the orchestrations the metric and trace tests
// share: Parent (3 Ok activities, then the sub-orchestration Child as
// "<instance>-child", with 1 Ok activity) and Fails (its Boom activity
// fails); ok is the Ok activity.
func observedRegistry(t *testing.T, ok runtime.ActivityFunc) *runtime.Registry {
	t.Helper()
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterActivity("Ok", ok))
	require.NoError(t, reg.RegisterActivity("Boom", func(*runtime.ActivityContext, string) (string, error) { return "", errors.New("boom") }))
	require.NoError(t, reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Ok", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		for i := range 3 {
			if _, err := ctx.ScheduleActivity("Ok", strconv.Itoa(i)).Get(); err != nil {
				return "", err
			}
		}
		return ctx.ScheduleSubOrchestrationWithID("Child", ctx.InstanceID()+"-child", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Fails", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Boom", in).Get()
	}))
	return reg
}

func runMetricsWorkload(t *testing.T) metricsRun {
	t.Helper()
	e := newEnv(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	reg := observedRegistry(t, func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil })
	require.NoError(t, reg.RegisterOrchestration("Loop", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		if in == "0" {
			return "", ctx.ContinueAsNew("1")
		}
		return "looped", nil
	}))
	require.NoError(t, reg.RegisterOrchestration("Waiter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleWait("go").Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Sleeper", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleWait("never").Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("CallsMissing", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Missing", in).Get()
	}))
	opts := fastOptions()
	opts.MaxAttempts = 2
	opts.MeterProvider = mp
	rt := e.start(reg, opts)
	client := rt.Client()

	for _, s := range []struct{ id, name, in string }{
		{"parent-1", "Parent", "x"}, {"fails-1", "Fails", "x"}, {"loop-1", "Loop", "0"},
		{"waiter-1", "Waiter", ""}, {"sleeper-1", "Sleeper", ""}, {"missing-1", "CallsMissing", ""},
	} {
		require.NoError(t, client.StartOrchestration(e.ctx, s.id, s.name, s.in))
	}
	// The event and the cancellation wait until their instances are running.
	for _, id := range []string{"waiter-1", "sleeper-1"} {
		require.Eventually(t, func() bool {
			st, err := client.GetOrchestrationStatus(e.ctx, id)
			return err == nil && st.Kind == runtime.StatusRunning
		}, waitTimeout, 5*time.Millisecond)
	}
	require.NoError(t, client.RaiseEvent(e.ctx, "waiter-1", "go", "now"))
	require.NoError(t, client.CancelInstance(e.ctx, "sleeper-1", "test"))
	want := map[string]runtime.StatusKind{
		"parent-1": runtime.StatusCompleted, "fails-1": runtime.StatusFailed, "loop-1": runtime.StatusCompleted,
		"waiter-1": runtime.StatusCompleted, "sleeper-1": runtime.StatusFailed, "missing-1": runtime.StatusFailed,
	}
	for id, kind := range want {
		st, err := client.WaitForOrchestration(e.ctx, id, waitTimeout)
		require.NoError(t, err)
		require.Equal(t, kind, st.Kind, "%s: %v", id, st.Err())
	}
	// Collected while the runtime runs (Shutdown unregisters the gauges);
	// every instance is terminal, so only idle fetches still happen. A
	// turn's metrics are recorded after its commit returns, and an
	// activity's after its ack returns, which the client can see first
	// (TestSubOrchestrationMetrics failed once so under -race): collect
	// until every commit of the workload is recorded (settled), within the
	// wait timeout; the tests then say what is missing.
	var run metricsRun
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(5 * time.Millisecond) {
		require.NoError(t, reader.Collect(context.Background(), &run.rm))
		if run.settled() || time.Now().After(deadline) {
			return run
		}
	}
}

// settled reports whether every commit of the workload is recorded: the 17
// turns (TestProviderAndDispatcherMetrics counts them) and 6 activity acks
// in the provider's operation durations, the 7 executions' completions,
// the 6 activities' executions and the sub-orchestration call.
func (r metricsRun) settled() bool {
	var turns, activityAcks uint64
	var completions, activities, subCalls int64
	for _, sm := range r.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				if m.Name != "duroxide_provider_operation_duration_seconds" {
					continue
				}
				for _, dp := range d.DataPoints {
					switch op, _ := dp.Attributes.Value("operation"); op.AsString() {
					case "ack_orchestration_item":
						turns += dp.Count
					case "ack_work_item":
						activityAcks += dp.Count
					}
				}
			case metricdata.Sum[int64]:
				var n int64
				for _, dp := range d.DataPoints {
					n += dp.Value
				}
				switch m.Name {
				case "duroxide_orchestration_completions_total":
					completions = n
				case "duroxide_activity_executions_total":
					activities = n
				case "duroxide_suborchestration_calls_total":
					subCalls = n
				}
			}
		}
	}
	return turns >= 17 && activityAcks >= 6 && completions >= 7 && activities >= 6 && subCalls >= 1
}

// find returns the metric called name.
func (r metricsRun) find(t *testing.T, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range r.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("metric %s was not recorded", name)
	return metricdata.Metrics{}
}

// set builds an attribute set from name/value pairs.
func set(kv ...string) attribute.Set {
	attrs := make([]attribute.KeyValue, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		attrs = append(attrs, attribute.String(kv[i], kv[i+1]))
	}
	return attribute.NewSet(attrs...)
}

// counts returns a counter's values by attribute set (encoded).
func (r metricsRun) counts(t *testing.T, name string) map[attribute.Distinct]int64 {
	t.Helper()
	sum, ok := r.find(t, name).Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 counter", name)
	require.True(t, sum.IsMonotonic, name)
	out := map[attribute.Distinct]int64{}
	for _, dp := range sum.DataPoints {
		out[dp.Attributes.Equivalent()] = dp.Value
	}
	return out
}

// requireCounts checks a counter's complete set of data points.
func (r metricsRun) requireCounts(t *testing.T, name string, want map[attribute.Set]int64) {
	t.Helper()
	got := r.counts(t, name)
	wantD := map[attribute.Distinct]int64{}
	for s, v := range want {
		wantD[s.Equivalent()] = v
	}
	assert.Equal(t, wantD, got, name)
}

// histogram returns a histogram's data point with attrs.
func (r metricsRun) histogram(t *testing.T, name string, attrs attribute.Set) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := r.find(t, name).Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&attrs) {
			return dp
		}
	}
	t.Fatalf("%s has no data point %v", name, attrs.ToSlice())
	return metricdata.HistogramDataPoint[float64]{}
}

func TestOrchestrationLifecycleMetrics(t *testing.T) {
	t.Parallel()
	r := runMetricsWorkload(t)
	r.requireCounts(t, "duroxide_orchestration_starts_total", map[attribute.Set]int64{
		set("orchestration_name", "Parent", "version", "1.0.0", "initiated_by", "client"):          1,
		set("orchestration_name", "Child", "version", "1.0.0", "initiated_by", "suborchestration"): 1,
		set("orchestration_name", "Fails", "version", "1.0.0", "initiated_by", "client"):           1,
		set("orchestration_name", "Loop", "version", "1.0.0", "initiated_by", "client"):            1,
		set("orchestration_name", "Loop", "version", "1.0.0", "initiated_by", "continueAsNew"):     1,
		set("orchestration_name", "Waiter", "version", "1.0.0", "initiated_by", "client"):          1,
		set("orchestration_name", "Sleeper", "version", "1.0.0", "initiated_by", "client"):         1,
		set("orchestration_name", "CallsMissing", "version", "1.0.0", "initiated_by", "client"):    1,
	})
	r.requireCounts(t, "duroxide_orchestration_completions_total", map[attribute.Set]int64{
		set("orchestration_name", "Parent", "version", "1.0.0", "status", "success", "final_turn_count", "1-5"):      1,
		set("orchestration_name", "Child", "version", "1.0.0", "status", "success", "final_turn_count", "1-5"):       1,
		set("orchestration_name", "Fails", "version", "1.0.0", "status", "failed", "final_turn_count", "1-5"):        1,
		set("orchestration_name", "Loop", "version", "1.0.0", "status", "success", "final_turn_count", "1-5"):        1,
		set("orchestration_name", "Waiter", "version", "1.0.0", "status", "success", "final_turn_count", "1-5"):      1,
		set("orchestration_name", "Sleeper", "version", "1.0.0", "status", "cancelled", "final_turn_count", "1-5"):   1,
		set("orchestration_name", "CallsMissing", "version", "1.0.0", "status", "failed", "final_turn_count", "1-5"): 1,
	})
	r.requireCounts(t, "duroxide_orchestration_failures_total", map[attribute.Set]int64{
		set("orchestration_name", "Fails", "version", "1.0.0", "error_type", "app_error", "error_category", "application"):   1,
		set("orchestration_name", "Sleeper", "version", "1.0.0", "error_type", "app_error", "error_category", "application"): 1,
		set("orchestration_name", "CallsMissing", "version", "1.0.0", "error_type", "poison", "error_category", "poison"):    1,
	})
	r.requireCounts(t, "duroxide_orchestration_infrastructure_errors_total", map[attribute.Set]int64{
		set("orchestration_name", "CallsMissing", "error_category", "poison"): 1,
	})
	r.requireCounts(t, "duroxide_orchestration_continue_as_new_total", map[attribute.Set]int64{
		set("orchestration_name", "Loop", "execution_id", "1"): 1,
	})
	turns := r.histogram(t, "duroxide_orchestration_turns", set("orchestration_name", "Parent"))
	assert.Equal(t, uint64(1), turns.Count)
	assert.Equal(t, 5.0, turns.Sum, "start, 3 activity results, the child's result")
	assert.Equal(t, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}, turns.Bounds)
	history := r.histogram(t, "duroxide_orchestration_history_size", set("orchestration_name", "Parent"))
	assert.Equal(t, 10.0, history.Sum, "started, 3 × (scheduled, completed), sub scheduled and completed, completed")
	assert.Equal(t, []float64{10, 50, 100, 500, 1000, 5000, 10000}, history.Bounds)
	duration := r.histogram(t, "duroxide_orchestration_duration_seconds", set("orchestration_name", "Loop", "version", "1.0.0", "status", "success"))
	assert.Equal(t, uint64(1), duration.Count, "one per terminal execution: the continued execution is not")
	assert.Equal(t, []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 600, 1800, 3600}, duration.Bounds)

	active, ok := r.find(t, "duroxide_active_orchestrations").Data.(metricdata.Gauge[int64])
	require.True(t, ok)
	require.Len(t, active.DataPoints, 1)
	assert.Equal(t, int64(0), active.DataPoints[0].Value, "every orchestration ended")
	assert.True(t, active.DataPoints[0].Attributes.Equals(ptr(set("state", "all"))))
	for _, q := range []string{"duroxide_orchestrator_queue_depth", "duroxide_worker_queue_depth"} {
		g, ok := r.find(t, q).Data.(metricdata.Gauge[int64])
		require.True(t, ok)
		require.Len(t, g.DataPoints, 1, q)
		assert.Equal(t, int64(0), g.DataPoints[0].Value, q)
	}
}

func ptr[T any](v T) *T { return &v }

func TestActivityAndPoisonMetrics(t *testing.T) {
	t.Parallel()
	r := runMetricsWorkload(t)
	r.requireCounts(t, "duroxide_activity_executions_total", map[attribute.Set]int64{
		set("activity_name", "Ok", "outcome", "success", "retry_attempt", "0", "tag", "default"):     4,
		set("activity_name", "Boom", "outcome", "app_error", "retry_attempt", "0", "tag", "default"): 1,
		set("activity_name", "Missing", "outcome", "poison", "retry_attempt", "0", "tag", "default"): 1,
	})
	ok := r.histogram(t, "duroxide_activity_duration_seconds", set("activity_name", "Ok", "outcome", "success", "tag", "default"))
	assert.Equal(t, uint64(4), ok.Count)
	assert.Equal(t, []float64{0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}, ok.Bounds)
	r.requireCounts(t, "duroxide_activity_infrastructure_errors_total", map[attribute.Set]int64{set("activity_name", "Missing"): 1})
	r.requireCounts(t, "duroxide_activity_poison_total", map[attribute.Set]int64{set(): 1})
	r.requireCounts(t, "duroxide.worker.dispatcher.items_fetched", map[attribute.Set]int64{set(): 4 + 1 + 2 + 1}) // 4 Ok, 1 Boom, and Missing fetched twice (abandoned unregistered), then poisoned on the third fetch

}

func TestSubOrchestrationMetrics(t *testing.T) {
	t.Parallel()
	r := runMetricsWorkload(t)
	labels := set("parent_orchestration", "Parent", "child_orchestration", "Child", "outcome", "success")
	r.requireCounts(t, "duroxide_suborchestration_calls_total", map[attribute.Set]int64{labels: 1})
	d := r.histogram(t, "duroxide_suborchestration_duration_seconds", labels)
	assert.Equal(t, uint64(1), d.Count)
	assert.Equal(t, []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 600}, d.Bounds)
}

func TestClientMetrics(t *testing.T) {
	t.Parallel()
	r := runMetricsWorkload(t)
	r.requireCounts(t, "duroxide_client_orchestration_starts_total", map[attribute.Set]int64{
		set("orchestration_name", "Parent"): 1, set("orchestration_name", "Fails"): 1, set("orchestration_name", "Loop"): 1,
		set("orchestration_name", "Waiter"): 1, set("orchestration_name", "Sleeper"): 1, set("orchestration_name", "CallsMissing"): 1,
	})
	r.requireCounts(t, "duroxide_client_external_events_raised_total", map[attribute.Set]int64{set("event_name", "go"): 1})
	r.requireCounts(t, "duroxide_client_cancellations_total", map[attribute.Set]int64{set(): 1})
	wait := r.histogram(t, "duroxide_client_wait_duration_seconds", set())
	assert.Equal(t, uint64(6), wait.Count)
	assert.Equal(t, []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120}, wait.Bounds)
}

func TestProviderAndDispatcherMetrics(t *testing.T) {
	t.Parallel()
	r := runMetricsWorkload(t)
	h, ok := r.find(t, "duroxide_provider_operation_duration_seconds").Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	byOp := map[string]uint64{}
	for _, dp := range h.DataPoints {
		op, _ := dp.Attributes.Value("operation")
		status, _ := dp.Attributes.Value("status")
		require.Equal(t, "success", status.AsString(), "no provider call failed: %s", op.AsString())
		require.Equal(t, []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5}, dp.Bounds)
		byOp[op.AsString()] += dp.Count
	}
	acks := byOp["ack_orchestration_item"]
	// One ack per committed turn: Parent 5 (start, 3 activity results, the
	// child's result), Child 2, Fails 2, Loop 2 (one per execution), Waiter
	// 2, Sleeper 2, CallsMissing 2.
	assert.Equal(t, uint64(5+2+2+2+2+2+2), acks)
	assert.Equal(t, uint64(4+1+1), byOp["ack_work_item"], "Ok ×4, Boom, the poisoned Missing")
	assert.Positive(t, byOp["fetch_orchestration_item"])
	assert.Positive(t, byOp["fetch_work_item"])
	empty := set()
	assert.Equal(t, acks, uint64(r.counts(t, "duroxide.orchestration.dispatcher.items_fetched")[empty.Equivalent()]),
		"every fetched orchestration item was acked")
	_, hasErrors := func() (metricdata.Metrics, bool) {
		for _, sm := range r.rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == "duroxide_provider_errors_total" {
					return m, len(m.Data.(metricdata.Sum[int64]).DataPoints) > 0
				}
			}
		}
		return metricdata.Metrics{}, false
	}()
	assert.False(t, hasErrors, "no provider errors")
}

// TestGaugesReadTheProvider checks the three gauges against a store with
// known content: one instance Running (started by another runtime) and two
// starts waiting in the orchestrator queue of a runtime that has no
// dispatchers, so nothing moves while the reader collects.
func TestGaugesReadTheProvider(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("Waiter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleWait("go").Get()
	}))
	first := e.start(reg, fastOptions())
	require.NoError(t, first.Client().StartOrchestration(e.ctx, "running-1", "Waiter", ""))
	require.Eventually(t, func() bool {
		st, err := first.Client().GetOrchestrationStatus(e.ctx, "running-1")
		return err == nil && st.Kind == runtime.StatusRunning
	}, waitTimeout, 5*time.Millisecond)
	require.NoError(t, first.Shutdown(e.ctx))

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	opts := fastOptions()
	opts.OrchestrationConcurrency, opts.WorkerConcurrency, opts.MeterProvider = -1, -1, mp
	idle := e.start(reg, opts)
	for _, id := range []string{"queued-1", "queued-2"} {
		require.NoError(t, idle.Client().StartOrchestration(e.ctx, id, "Waiter", ""))
	}
	var r metricsRun
	require.NoError(t, reader.Collect(context.Background(), &r.rm))
	for name, want := range map[string]int64{
		"duroxide_active_orchestrations":    1,
		"duroxide_orchestrator_queue_depth": 2,
		"duroxide_worker_queue_depth":       0,
	} {
		g, ok := r.find(t, name).Data.(metricdata.Gauge[int64])
		require.True(t, ok, name)
		require.Len(t, g.DataPoints, 1, name)
		assert.Equal(t, want, g.DataPoints[0].Value, name)
	}
}
