package runtime

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The runtime's metrics: every metric of duroxide's specification
// (microsoft/duroxide docs/metrics-specification.md), with its name, type,
// labels and histogram buckets, recorded through the OpenTelemetry metric
// API on Options.MeterProvider (the global one by default, so nothing is
// recorded until the application installs an SDK).
//
// Where the Go runtime derives a value differently from duroxide's:
//   - duroxide_orchestration_turns and the final_turn_count label count the
//     turns this process committed for the execution (duroxide counts them
//     in the dispatcher the same way); an execution that moved between
//     processes counts from when this process first saw it;
//   - duroxide_orchestration_duration_seconds and
//     duroxide_suborchestration_duration_seconds are the difference of the
//     events' timestamps (OrchestrationStarted to the terminal event, and
//     SubOrchestrationScheduled to its completion), so they are right
//     whichever process ran the turns; duroxide declares the
//     sub-orchestration metrics but never records them, this runtime does;
//   - duroxide_active_orchestrations is the number of Running instances the
//     provider reports (ProviderAdmin.GetSystemMetrics, read once, at the
//     first collection) plus the starts minus the completions this process
//     committed since; without ProviderAdmin it starts from 0;
//   - the queue depth gauges read ProviderAdmin.GetQueueDepths at each
//     collection (one storage query; a 5 s timeout), as another process's
//     work changes them too;
//   - the client metrics, declared but never recorded by duroxide, are
//     recorded by Client (client_metrics.go).

// Instrument names (duroxide's).
const (
	metricOrchStarts        = "duroxide_orchestration_starts_total"
	metricOrchCompletions   = "duroxide_orchestration_completions_total"
	metricOrchFailures      = "duroxide_orchestration_failures_total"
	metricOrchDuration      = "duroxide_orchestration_duration_seconds"
	metricOrchHistorySize   = "duroxide_orchestration_history_size"
	metricOrchTurns         = "duroxide_orchestration_turns"
	metricOrchInfraErrors   = "duroxide_orchestration_infrastructure_errors_total"
	metricOrchConfigErrors  = "duroxide_orchestration_configuration_errors_total"
	metricOrchContinueAsNew = "duroxide_orchestration_continue_as_new_total"
	metricActiveOrchs       = "duroxide_active_orchestrations"
	metricOrchQueueDepth    = "duroxide_orchestrator_queue_depth"
	metricWorkerQueueDepth  = "duroxide_worker_queue_depth"
	metricActExecutions     = "duroxide_activity_executions_total"
	metricActDuration       = "duroxide_activity_duration_seconds"
	metricActInfraErrors    = "duroxide_activity_infrastructure_errors_total"
	metricActConfigErrors   = "duroxide_activity_configuration_errors_total"
	metricOrchPoison        = "duroxide_orchestration_poison_total"
	metricActPoison         = "duroxide_activity_poison_total"
	// A poison disposition whose ack failed (duroxide main,
	// tests/poison_disposition_tests.rs: its orch_poison_failed); the
	// message stays in circulation. The activity counter is this port's.
	metricOrchPoisonFailed    = "duroxide_orchestration_poison_failed_total"
	metricActPoisonFailed     = "duroxide_activity_poison_failed_total"
	metricEventsDropped       = "duroxide_external_events_dropped_total"
	metricSubCalls            = "duroxide_suborchestration_calls_total"
	metricSubDuration         = "duroxide_suborchestration_duration_seconds"
	metricProviderDuration    = "duroxide_provider_operation_duration_seconds"
	metricProviderErrors      = "duroxide_provider_errors_total"
	metricOrchDispatchFetched = "duroxide.orchestration.dispatcher.items_fetched"
	metricOrchDispatchMs      = "duroxide.orchestration.dispatcher.processing_duration_ms"
	metricWorkDispatchFetched = "duroxide.worker.dispatcher.items_fetched"
	metricWorkDispatchMs      = "duroxide.worker.dispatcher.execution_duration_ms"
	// The sticky cache's (this runtime's; duroxide has no sticky cache).
	metricStickyHits      = "duroxide_orchestration_sticky_cache_hits_total"
	metricStickyMisses    = "duroxide_orchestration_sticky_cache_misses_total"
	metricStickyEvictions = "duroxide_orchestration_sticky_cache_evictions_total"
	// A provider's eager dispatch (duroxide.EagerDispatcher: work handed
	// to its waiting fetches by the ack that produced it), by queue
	// (orchestrator, worker) and outcome (hit, fallback).
	metricEagerDispatch = "duroxide_eager_dispatch_total"
)

// Histogram buckets of duroxide's specification.
var (
	bucketsOrchDuration = []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 600, 1800, 3600}
	bucketsHistorySize  = []float64{10, 50, 100, 500, 1000, 5000, 10000}
	bucketsTurns        = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}
	bucketsActDuration  = []float64{0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	bucketsSubDuration  = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 600}
	bucketsProvider     = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5}
)

// meterName is the instrumentation scope of the runtime's and client's
// instruments.
const meterName = "github.com/duroxide-go/duroxide-cdb/duroxide/runtime"

// maxTrackedExecutions bounds the per-execution turn counters; past it
// they are cleared (the turns of executions then in flight count from 0).
const maxTrackedExecutions = 100_000

// instruments creates instruments on one meter, remembering the first
// error (an SDK refusing an instrument); a refused instrument is a no-op.
type instruments struct {
	m   metric.Meter
	err error
}

func (in *instruments) counter(name, desc, unit string) metric.Int64Counter {
	c, err := in.m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
	in.err = errors.Join(in.err, err)
	return c
}

func (in *instruments) histogram(name, desc, unit string, buckets []float64) metric.Float64Histogram {
	opts := []metric.Float64HistogramOption{metric.WithDescription(desc), metric.WithUnit(unit)}
	if buckets != nil {
		opts = append(opts, metric.WithExplicitBucketBoundaries(buckets...))
	}
	h, err := in.m.Float64Histogram(name, opts...)
	in.err = errors.Join(in.err, err)
	return h
}

// meterProvider returns mp, or the global MeterProvider when mp is nil.
func meterProvider(mp metric.MeterProvider) metric.MeterProvider {
	if mp == nil {
		return otel.GetMeterProvider()
	}
	return mp
}

// runtimeMetrics are the runtime's instruments and the state behind its
// gauges. Its methods are safe for concurrent use.
type runtimeMetrics struct {
	orchStarts, orchCompletions, orchFailures      metric.Int64Counter
	orchInfraErrors, orchConfigErrors, orchCAN     metric.Int64Counter
	orchPoison, actPoison                          metric.Int64Counter
	orchPoisonFailed, actPoisonFailed              metric.Int64Counter
	orchDuration, orchHistorySize, orchTurns       metric.Float64Histogram
	actExecutions, actInfraErrors, actConfigErrors metric.Int64Counter
	actDuration                                    metric.Float64Histogram
	subCalls                                       metric.Int64Counter
	evDropped                                      metric.Int64Counter
	subDuration                                    metric.Float64Histogram
	providerDuration                               metric.Float64Histogram
	providerErrors                                 metric.Int64Counter
	orchFetched, workFetched                       metric.Int64Counter
	orchProcessingMs, workExecutionMs              metric.Float64Histogram
	stickyHits, stickyMisses, stickyEvictions      metric.Int64Counter

	// registration is the gauges' callback, unregistered by close;
	// eagerRegistration the eager dispatch counter's (nil: none).
	registration, eagerRegistration metric.Registration
	// admin answers the gauges (nil: the queue gauges report nothing and
	// the active gauge starts from 0).
	admin duroxide.ProviderAdmin
	// activeDelta is the starts minus the completions committed here;
	// activeBase the provider's Running count at the first collection,
	// less the delta then.
	activeDelta    atomic.Int64
	activeBaseOnce sync.Once
	activeBase     int64

	turnsMu sync.Mutex
	turns   map[executionKey]int64

	logger *slog.Logger
}

// executionKey names one execution of an instance.
type executionKey struct {
	instance  string
	execution uint64
}

// gaugeTimeout bounds the provider reads of one gauge collection.
const gaugeTimeout = 5 * time.Second

// newRuntimeMetrics creates the runtime's instruments on mp (the global
// MeterProvider when nil) and registers its gauges' callback; admin, when
// not nil, answers the gauges. An instrument the SDK refuses is logged and
// records nothing.
func newRuntimeMetrics(mp metric.MeterProvider, admin duroxide.ProviderAdmin, logger *slog.Logger) *runtimeMetrics {
	in := &instruments{m: meterProvider(mp).Meter(meterName)}
	m := &runtimeMetrics{admin: admin, logger: logger, turns: map[executionKey]int64{}}
	m.orchStarts = in.counter(metricOrchStarts, "Orchestration instances started", "{orchestration}")
	m.orchCompletions = in.counter(metricOrchCompletions, "Orchestrations that completed (successfully or failed)", "{orchestration}")
	m.orchFailures = in.counter(metricOrchFailures, "Orchestration failures by error classification", "{orchestration}")
	m.orchDuration = in.histogram(metricOrchDuration, "End-to-end orchestration execution time", "s", bucketsOrchDuration)
	m.orchHistorySize = in.histogram(metricOrchHistorySize, "History events at orchestration completion", "{event}", bucketsHistorySize)
	m.orchTurns = in.histogram(metricOrchTurns, "Execution turns to orchestration completion", "{turn}", bucketsTurns)
	m.orchInfraErrors = in.counter(metricOrchInfraErrors, "Infrastructure-level orchestration errors, poison messages included", "{error}")
	m.orchConfigErrors = in.counter(metricOrchConfigErrors, "Configuration-level orchestration errors (nondeterminism)", "{error}")
	m.orchCAN = in.counter(metricOrchContinueAsNew, "Continue-as-new operations performed", "{execution}")
	m.actExecutions = in.counter(metricActExecutions, "Activity execution attempts by outcome", "{execution}")
	m.actDuration = in.histogram(metricActDuration, "Activity execution time (wall clock)", "s", bucketsActDuration)
	m.actInfraErrors = in.counter(metricActInfraErrors, "Infrastructure-level activity errors, poison messages included", "{error}")
	m.actConfigErrors = in.counter(metricActConfigErrors, "Configuration-level activity errors", "{error}")
	m.evDropped = in.counter(metricEventsDropped, "External events raised while no wait for them was pending (dropped by duroxide's rule; they stay in history)", "{event}")
	m.orchPoison = in.counter(metricOrchPoison, "Orchestration items that exceeded max_attempts", "{message}")
	m.actPoison = in.counter(metricActPoison, "Activity items that exceeded max_attempts", "{message}")
	m.orchPoisonFailed = in.counter(metricOrchPoisonFailed, "Poison dispositions of orchestration items whose ack failed (the message stays in circulation)", "{message}")
	m.actPoisonFailed = in.counter(metricActPoisonFailed, "Poison dispositions of activity items whose ack failed (the message stays in circulation)", "{message}")
	m.subCalls = in.counter(metricSubCalls, "Sub-orchestration invocations by outcome", "{call}")
	m.subDuration = in.histogram(metricSubDuration, "Sub-orchestration execution time", "s", bucketsSubDuration)
	m.providerDuration = in.histogram(metricProviderDuration, "Provider operation latency", "s", bucketsProvider)
	m.providerErrors = in.counter(metricProviderErrors, "Provider operation errors", "{error}")
	m.orchFetched = in.counter(metricOrchDispatchFetched, "Items fetched by the orchestration dispatcher", "{item}")
	m.orchProcessingMs = in.histogram(metricOrchDispatchMs, "Time to process an orchestration item", "ms", nil)
	m.workFetched = in.counter(metricWorkDispatchFetched, "Activities fetched by the worker dispatcher", "{item}")
	m.workExecutionMs = in.histogram(metricWorkDispatchMs, "Activity execution duration", "ms", nil)
	m.stickyHits = in.counter(metricStickyHits, "Turns that resumed a suspended execution from the sticky cache", "{turn}")
	m.stickyMisses = in.counter(metricStickyMisses, "Turns of a running execution replayed in full, by reason", "{turn}")
	m.stickyEvictions = in.counter(metricStickyEvictions, "Suspended executions dropped from the sticky cache, by reason", "{execution}")

	activeOrchs, err := in.m.Int64ObservableGauge(metricActiveOrchs, metric.WithDescription("Orchestration instances currently running"), metric.WithUnit("{orchestration}"))
	in.err = errors.Join(in.err, err)
	orchDepth, err := in.m.Int64ObservableGauge(metricOrchQueueDepth, metric.WithDescription("Unlocked items in the orchestrator queue"), metric.WithUnit("{item}"))
	in.err = errors.Join(in.err, err)
	workDepth, err := in.m.Int64ObservableGauge(metricWorkerQueueDepth, metric.WithDescription("Unlocked items in the worker queue"), metric.WithUnit("{item}"))
	in.err = errors.Join(in.err, err)
	if in.err == nil {
		m.registration, in.err = in.m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
			return m.observeGauges(ctx, o, activeOrchs, orchDepth, workDepth)
		}, activeOrchs, orchDepth, workDepth)
	}
	if in.err != nil {
		logger.Warn("metrics: an instrument could not be created; it records nothing", "error", in.err)
	}
	return m
}

// observeEagerDispatch reports the provider's eager dispatch counts
// (duroxide.EagerDispatcher) as duroxide_eager_dispatch_total{queue,
// outcome} at each collection, when the provider has eager dispatch and
// it is on.
func (m *runtimeMetrics) observeEagerDispatch(mp metric.MeterProvider, p duroxide.Provider) {
	ed, ok := p.(duroxide.EagerDispatcher)
	if !ok || !ed.EagerDispatch().Enabled {
		return
	}
	meter := meterProvider(mp).Meter(meterName)
	c, err := meter.Int64ObservableCounter(metricEagerDispatch,
		metric.WithDescription("Items a provider handed to its own waiting fetches in the batch of the ack that produced them (hit), or tried to and left to the normal path (fallback)"),
		metric.WithUnit("{item}"))
	if err == nil {
		m.eagerRegistration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			st := ed.EagerDispatch()
			for _, q := range []struct {
				queue string
				c     duroxide.EagerDispatchCounts
			}{{"orchestrator", st.Orchestrator}, {"worker", st.Worker}} {
				o.ObserveInt64(c, int64(q.c.Hits), metric.WithAttributes(attribute.String("queue", q.queue), attribute.String("outcome", "hit")))
				o.ObserveInt64(c, int64(q.c.Fallbacks), metric.WithAttributes(attribute.String("queue", q.queue), attribute.String("outcome", "fallback")))
			}
			return nil
		}, c)
	}
	if err != nil {
		m.logger.Warn("metrics: the eager dispatch counter could not be created; it records nothing", "error", err)
	}
}

// stateAll is the state label of duroxide_active_orchestrations (duroxide
// records "all" only).
var stateAll = metric.WithAttributes(attribute.String("state", "all"))

// observeGauges reports the three gauges.
func (m *runtimeMetrics) observeGauges(ctx context.Context, o metric.Observer, active, orchDepth, workDepth metric.Int64Observable) error {
	ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
	defer cancel()
	m.activeBaseOnce.Do(func() {
		if m.admin == nil {
			return
		}
		delta := m.activeDelta.Load()
		sm, err := m.admin.GetSystemMetrics(ctx)
		if err != nil {
			m.logger.Debug("metrics: system metrics unavailable; active orchestrations count from 0", "error", err)
			return
		}
		m.activeBase = int64(sm.RunningInstances) - delta
	})
	o.ObserveInt64(active, max(m.activeBase+m.activeDelta.Load(), 0), stateAll)
	if m.admin == nil {
		return nil
	}
	q, err := m.admin.GetQueueDepths(ctx)
	if err != nil {
		m.logger.Debug("metrics: queue depths unavailable", "error", err)
		return nil
	}
	o.ObserveInt64(orchDepth, int64(q.OrchestratorQueue))
	o.ObserveInt64(workDepth, int64(q.WorkerQueue))
	return nil
}

// close unregisters the gauges' callback.
func (m *runtimeMetrics) close() {
	if m.eagerRegistration != nil {
		_ = m.eagerRegistration.Unregister()
	}
	if m.registration != nil {
		_ = m.registration.Unregister()
	}
}

// orchestrationFetched counts one item of the orchestration dispatcher and
// returns the function that records its processing time.
func (m *runtimeMetrics) orchestrationFetched() func() {
	ctx := context.Background()
	m.orchFetched.Add(ctx, 1)
	start := time.Now()
	return func() { m.orchProcessingMs.Record(ctx, float64(time.Since(start))/float64(time.Millisecond)) }
}

// workItemFetched counts one item of the worker dispatcher.
func (m *runtimeMetrics) workItemFetched() { m.workFetched.Add(context.Background(), 1) }

// turnCommitted records what a committed turn did: starts, completions,
// failures, continue-as-new, sub-orchestration results, poison; turns is
// the execution's turn count with this turn (countTurn, taken before the
// ack).
func (m *runtimeMetrics) turnCommitted(item *duroxide.OrchestrationItem, d turnDecision, turns int64) {
	ctx := context.Background()
	name, version := item.OrchestrationName, item.Version
	delta := d.ack.historyDelta
	key := executionKey{item.Instance, d.ack.executionID}
	if d.poison {
		m.orchPoison.Add(ctx, 1)
	}
	// The execution's OrchestrationStarted (the delta's, else the
	// history's last one of this execution) is only needed when the turn
	// ends the execution: the history is scanned then, not every turn.
	var deltaStarted *duroxide.Event
	started := func() *duroxide.Event {
		if deltaStarted != nil {
			return deltaStarted
		}
		var s *duroxide.Event
		for i := range item.History {
			if _, ok := item.History[i].Kind.(duroxide.OrchestrationStarted); ok && item.History[i].ExecutionID == d.ack.executionID {
				s = &item.History[i]
			}
		}
		return s
	}
	for i := range delta {
		ev := &delta[i]
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			deltaStarted = ev
			if k.Version != "" {
				version = k.Version
			}
			if k.Name != "" {
				name = k.Name
			}
			initiatedBy := "client"
			switch {
			case ev.ExecutionID > 1:
				initiatedBy = "continueAsNew"
			case k.ParentInstance != nil:
				initiatedBy = "suborchestration"
			}
			m.orchStarts.Add(ctx, 1, metric.WithAttributes(
				attribute.String("orchestration_name", name), attribute.String("version", version), attribute.String("initiated_by", initiatedBy)))
			if initiatedBy != "continueAsNew" {
				m.activeDelta.Add(1)
			}
		case duroxide.OrchestrationCompleted:
			m.completed(ctx, name, version, "success", started(), ev, turns, len(item.History)+len(delta))
			m.forget(key)
		case duroxide.OrchestrationFailed:
			status := "failed"
			if a := k.Details.Application; a != nil && a.Kind.Name == duroxide.AppErrorCancelled {
				status = "cancelled"
			}
			m.failed(ctx, name, version, k.Details)
			m.completed(ctx, name, version, status, started(), ev, turns, len(item.History)+len(delta))
			m.forget(key)
		case duroxide.OrchestrationContinuedAsNew:
			m.orchCAN.Add(ctx, 1, metric.WithAttributes(
				attribute.String("orchestration_name", name), attribute.String("execution_id", strconv.FormatUint(ev.ExecutionID, 10))))
			m.forget(key)
		case duroxide.SubOrchestrationCompleted:
			m.subOrchestration(ctx, name, item.History, delta, ev, "success")
		case duroxide.SubOrchestrationFailed:
			m.subOrchestration(ctx, name, item.History, delta, ev, "failed")
		}
	}
}

// completed records a terminal execution (success, failed or cancelled).
func (m *runtimeMetrics) completed(ctx context.Context, name, version, status string, started, terminal *duroxide.Event, turns int64, events int) {
	m.orchCompletions.Add(ctx, 1, metric.WithAttributes(attribute.String("orchestration_name", name),
		attribute.String("version", version), attribute.String("status", status), attribute.String("final_turn_count", turnBucket(turns))))
	if started != nil && terminal.TimestampMs >= started.TimestampMs {
		m.orchDuration.Record(ctx, float64(terminal.TimestampMs-started.TimestampMs)/1000, metric.WithAttributes(
			attribute.String("orchestration_name", name), attribute.String("version", version), attribute.String("status", status)))
	}
	byName := metric.WithAttributes(attribute.String("orchestration_name", name))
	m.orchTurns.Record(ctx, float64(turns), byName)
	m.orchHistorySize.Record(ctx, float64(events), byName)
	m.activeDelta.Add(-1)
}

// failed records an orchestration failure by duroxide's classification:
// error_type app_error, infrastructure_error, config_error or poison, and
// error_category the details' category; infrastructure failures and poison
// also count as infrastructure errors, configuration failures as
// configuration errors.
func (m *runtimeMetrics) failed(ctx context.Context, name, version string, d duroxide.ErrorDetails) {
	category := d.Category()
	errorType := errorTypeOf(category, "infrastructure_error", "unknown")
	m.orchFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("orchestration_name", name), attribute.String("version", version),
		attribute.String("error_type", errorType), attribute.String("error_category", category)))
	labels := metric.WithAttributes(attribute.String("orchestration_name", name), attribute.String("error_category", category))
	switch category {
	case "infrastructure", "poison":
		m.orchInfraErrors.Add(ctx, 1, labels)
	case "configuration":
		m.orchConfigErrors.Add(ctx, 1, labels)
	}
}

// errorTypeOf maps an ErrorDetails category to duroxide's error_type or
// outcome label; infra is the infrastructure spelling (the orchestration
// and activity metrics spell it differently), other the value for an
// unknown category.
func errorTypeOf(category, infra, other string) string {
	switch category {
	case "application":
		return "app_error"
	case "infrastructure":
		return infra
	case "configuration":
		return "config_error"
	case "poison":
		return "poison"
	}
	return other
}

// subOrchestration records a child's result, named after the
// SubOrchestrationScheduled event it answers.
func (m *runtimeMetrics) subOrchestration(ctx context.Context, parent string, history, delta []duroxide.Event, ev *duroxide.Event, outcome string) {
	child := ""
	var scheduledAt uint64
	if ev.SourceEventID != nil {
		for _, list := range [][]duroxide.Event{history, delta} {
			for _, e := range list {
				if s, ok := e.Kind.(duroxide.SubOrchestrationScheduled); ok && e.EventID == *ev.SourceEventID {
					child, scheduledAt = s.Name, e.TimestampMs
				}
			}
		}
	}
	labels := metric.WithAttributes(attribute.String("parent_orchestration", parent),
		attribute.String("child_orchestration", child), attribute.String("outcome", outcome))
	m.subCalls.Add(ctx, 1, labels)
	if scheduledAt != 0 && ev.TimestampMs >= scheduledAt {
		m.subDuration.Record(ctx, float64(ev.TimestampMs-scheduledAt)/1000, labels)
	}
}

// turnBucket is duroxide's final_turn_count label.
func turnBucket(turns int64) string {
	switch {
	case turns <= 5:
		return "1-5"
	case turns <= 10:
		return "6-10"
	case turns <= 50:
		return "11-50"
	}
	return "50+"
}

// countTurn counts one turn of key's execution about to be committed and
// returns the count so far (Runtime.ackCounted says why before the ack);
// uncountTurn takes the count back when the ack fails.
func (m *runtimeMetrics) countTurn(key executionKey) int64 {
	m.turnsMu.Lock()
	defer m.turnsMu.Unlock()
	if len(m.turns) >= maxTrackedExecutions {
		clear(m.turns)
	}
	m.turns[key]++
	return m.turns[key]
}

// uncountTurn takes back countTurn for a turn whose ack failed.
func (m *runtimeMetrics) uncountTurn(key executionKey) {
	m.turnsMu.Lock()
	defer m.turnsMu.Unlock()
	if m.turns[key] > 1 {
		m.turns[key]--
	} else {
		delete(m.turns, key)
	}
}

// forget drops the turn counter of an execution that ended.
func (m *runtimeMetrics) forget(key executionKey) {
	m.turnsMu.Lock()
	delete(m.turns, key)
	m.turnsMu.Unlock()
}

// activityDone records an executed activity by its completion: outcome
// success, or the failure's classification (app_error, infra_error,
// config_error, poison); elapsed is its wall-clock time.
func (m *runtimeMetrics) activityDone(item duroxide.ActivityExecuteItem, completion duroxide.WorkItem, elapsed time.Duration) {
	outcome := "success"
	if f, ok := completion.Kind.(duroxide.ActivityFailedItem); ok {
		outcome = errorTypeOf(f.Details.Category(), "infra_error", "app_error")
	}
	m.activity(item, outcome, elapsed)
}

// poisonFailed counts a poison disposition whose ack failed: of an
// orchestration item, or (activity true) of an activity item. It is never
// counted as poisoned (duroxide main's poison disposition rule).
func (m *runtimeMetrics) poisonFailed(activity bool) {
	if activity {
		m.actPoisonFailed.Add(context.Background(), 1)
		return
	}
	m.orchPoisonFailed.Add(context.Background(), 1)
}

// activity records one activity execution with outcome.
func (m *runtimeMetrics) activity(item duroxide.ActivityExecuteItem, outcome string, elapsed time.Duration) {
	ctx := context.Background()
	tag := "default"
	if item.Tag != nil {
		tag = *item.Tag
	}
	m.actExecutions.Add(ctx, 1, metric.WithAttributes(attribute.String("activity_name", item.Name),
		attribute.String("outcome", outcome), attribute.String("retry_attempt", "0"), attribute.String("tag", tag)))
	m.actDuration.Record(ctx, elapsed.Seconds(), metric.WithAttributes(attribute.String("activity_name", item.Name),
		attribute.String("outcome", outcome), attribute.String("tag", tag)))
	if outcome != "poison" && outcome != "cancelled" {
		m.workExecutionMs.Record(ctx, float64(elapsed)/float64(time.Millisecond))
	}
	byName := metric.WithAttributes(attribute.String("activity_name", item.Name))
	switch outcome {
	case "infra_error", "poison":
		m.actInfraErrors.Add(ctx, 1, byName)
	case "config_error":
		m.actConfigErrors.Add(ctx, 1, byName)
	}
	if outcome == "poison" {
		m.actPoison.Add(ctx, 1)
	}
}

// stickyHit counts a turn that resumed a cached execution.
func (m *runtimeMetrics) stickyHit() {
	if m != nil {
		m.stickyHits.Add(context.Background(), 1)
	}
}

// stickyMissed counts a turn of a running execution that replayed in full
// (reason: not_cached, history, execution, version, registry or kv).
func (m *runtimeMetrics) stickyMissed(reason string) {
	if m != nil {
		m.stickyMisses.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
	}
}

// stickyEvicted counts a cached execution dropped for reason (size, bytes,
// shutdown or turn_failed).
func (m *runtimeMetrics) stickyEvicted(reason string) {
	if m != nil {
		m.stickyEvictions.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
	}
}

// eventsDropped counts the ExternalEvents of a committed turn of item that
// no wait was pending for (labels orchestration_name, event_name).
func (m *runtimeMetrics) eventsDropped(item *duroxide.OrchestrationItem, names []string) {
	for _, name := range names {
		m.evDropped.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("orchestration_name", item.OrchestrationName), attribute.String("event_name", name)))
	}
}
