package stress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The provider stress harness: a port of duroxide's provider_stress_test
// (src/provider_stress_test/core.rs, parallel_orchestrations.rs,
// large_payload.rs; docs/stress-test-spec.md). RunStress starts a runtime on
// a fresh provider, keeps StressConfig.MaxConcurrent orchestrations in flight
// for StressConfig.Duration, waits for the last ones, then checks every
// orchestration's history (each activity and sub-orchestration result exactly
// once, the terminal status and output right) and reports a StressResult.
//
// Differences from duroxide, all additions: latency is measured per
// orchestration (duroxide reports total time / completed as "average
// latency"), with a p95; the peak heap is sampled; histories are verified;
// provider calls are counted per method; and an optional request counter
// (Cosmos DB requests, for instance) is read before and after the run.

// StressProviderFactory creates the provider of one stress run
// (duroxide's ProviderStressFactory::create_provider). Each call returns a
// fresh provider; run tells it the scenario and the dispatcher concurrency
// (a provider that partitions its dispatch work, such as cdb's lease lanes,
// is configured with them). When the provider has a Close method
// (Close() or Close() error), RunStress calls it at the end of the run.
type StressProviderFactory func(ctx context.Context, run StressRun) (duroxide.Provider, error)

// StressRun identifies one run: a scenario on one dispatcher configuration.
type StressRun struct {
	// Scenario is the workload.
	Scenario StressScenario
	// OrchestrationConcurrency and WorkerConcurrency are the numbers of
	// orchestration and worker dispatcher goroutines.
	OrchestrationConcurrency int
	WorkerConcurrency        int
}

// Label returns the dispatcher configuration as duroxide prints it,
// "orchestration/worker", e.g. "2/2".
func (r StressRun) Label() string {
	return fmt.Sprintf("%d/%d", r.OrchestrationConcurrency, r.WorkerConcurrency)
}

// StressScenario names a stress workload.
type StressScenario string

// The scenarios of duroxide's provider stress tests.
const (
	// ScenarioParallelOrchestrations fans each orchestration out to
	// TasksPerInstance activities and waits for all of them
	// (parallel_orchestrations.rs, FanoutOrchestration).
	ScenarioParallelOrchestrations StressScenario = "parallel_orchestrations"
	// ScenarioLargePayload runs orchestrations with 10/50/100 KB activity
	// inputs and outputs, sequential activities and sub-orchestrations, about
	// 100 history events each (large_payload.rs).
	ScenarioLargePayload StressScenario = "large_payload"
)

// StressScenarios lists the scenarios in the order the binary runs them.
func StressScenarios() []StressScenario {
	return []StressScenario{ScenarioParallelOrchestrations, ScenarioLargePayload}
}

// LargePayloadConfig sizes the large-payload scenario (duroxide's
// LargePayloadConfig; zero fields take its defaults).
type LargePayloadConfig struct {
	// SmallPayloadKB, MediumPayloadKB and LargePayloadKB are the payload
	// sizes in KiB; defaults 10, 50 and 100.
	SmallPayloadKB  int
	MediumPayloadKB int
	LargePayloadKB  int
	// ActivityCount is the number of sequential payload activities of the
	// parent orchestration (a third small, a third medium, the rest large);
	// default 20. Ten more small activities follow the sub-orchestrations.
	ActivityCount int
	// SubOrchestrationCount is the number of sub-orchestrations scheduled in
	// parallel, each running two activities; default 5.
	SubOrchestrationCount int
}

// StressConfig configures RunStress (duroxide's StressTestConfig). Zero
// fields take duroxide's defaults.
type StressConfig struct {
	// Scenario is the workload; default ScenarioParallelOrchestrations.
	Scenario StressScenario
	// MaxConcurrent is the number of orchestrations kept in flight;
	// default 20 (large payload: 5).
	MaxConcurrent int
	// Duration is how long new orchestrations are launched; the run then
	// waits for the ones in flight. Default 10 s.
	Duration time.Duration
	// TasksPerInstance is the fan-out of the parallel scenario; default 5.
	TasksPerInstance int
	// ActivityDelay is the simulated work of every activity; default 10 ms
	// (large payload: 5 ms). A negative value means none.
	ActivityDelay time.Duration
	// OrchestrationConcurrency and WorkerConcurrency are the numbers of
	// dispatcher goroutines; default 2 each (large payload: 1 each).
	OrchestrationConcurrency int
	WorkerConcurrency        int
	// WaitTimeout bounds the wait for one orchestration to finish; an
	// orchestration still running then counts as failed. Default 60 s
	// (large payload: 120 s).
	WaitTimeout time.Duration
	// PollInterval is the runtime's minimum idle polling cycle
	// (runtime.Options.PollInterval); default 100 ms, duroxide's
	// dispatcher_min_poll_interval in the stress tests.
	PollInterval time.Duration
	// LongPollTimeout is passed to the runtime (runtime.Options); default 0,
	// no long polling, as with duroxide's SQLite stress runs.
	LongPollTimeout time.Duration
	// LargePayload sizes the large-payload scenario.
	LargePayload LargePayloadConfig
	// InstancePrefix starts every instance id; default "stress-test-".
	// Runs sharing a store need distinct prefixes.
	InstancePrefix string
	// RequestCount, when set, returns the number of storage requests made so
	// far (for instance Cosmos DB requests counted by the emulator). It is
	// read before the runtime starts and after it has shut down; the
	// difference is StressResult.Requests.
	RequestCount func() int64
	// RequestCharge, when set, returns the request units (RU) charged so
	// far for those requests (Cosmos DB's x-ms-request-charge), read as
	// RequestCount; the difference is StressResult.RequestCharge.
	RequestCharge func() float64
	// Progress, when set, is called about once per ProgressInterval while
	// orchestrations are launched and drained.
	Progress func(StressProgress)
	// ProgressInterval is the period of Progress calls; default 1 s.
	ProgressInterval time.Duration
	// Logger receives the runtime's logs; nil discards them.
	Logger *slog.Logger
}

// StressProgress is a snapshot of a run in progress.
type StressProgress struct {
	Run       StressRun
	Elapsed   time.Duration
	Launched  int
	Completed int
	Failed    int
	// Active is the number of orchestrations launched and not finished.
	Active int
}

// StressResult is the outcome of one run (duroxide's StressTestResult plus
// the additions listed in the package's stress documentation).
type StressResult struct {
	Run StressRun
	// Config is the configuration the run used, defaults applied.
	Config StressConfig
	// Launched counts the orchestrations started (or whose start failed).
	Launched int
	// Completed counts the orchestrations that completed with the right
	// output and a history that passed verification.
	Completed int
	// Failed counts every other launched orchestration: start errors,
	// Failed status, wait timeouts and failed verifications.
	Failed int
	// FailedInfrastructure, FailedConfiguration and FailedApplication count
	// Failed statuses by their ErrorDetails category (poison counts as
	// infrastructure, as in duroxide).
	FailedInfrastructure int
	FailedConfiguration  int
	FailedApplication    int
	// FailedVerification counts orchestrations that reached a terminal
	// status but whose history or output was wrong: a lost or duplicated
	// activity or sub-orchestration result, a missing or repeated terminal
	// event, an unexpected output, or an activity executed more than once.
	FailedVerification int
	// Problems describes the failures, at most maxStressProblems of them.
	Problems []string
	// TotalTime runs from the runtime's start until the last orchestration
	// finished.
	TotalTime time.Duration
	// OrchestrationsPerSecond is Completed / TotalTime.
	OrchestrationsPerSecond float64
	// ActivitiesPerSecond is the activities of the completed orchestrations
	// (sub-orchestrations' included) / TotalTime.
	ActivitiesPerSecond float64
	// AverageLatency and P95Latency are measured per completed
	// orchestration, from its start request until the client saw it
	// completed (the client polls 5 ms doubling to 100 ms, as duroxide's).
	AverageLatency time.Duration
	P95Latency     time.Duration
	// PeakHeapBytes is the highest live heap of the process sampled during
	// the run (runtime/metrics /memory/classes/heap/objects:bytes), in bytes.
	// It covers everything in the process, an embedded emulator included.
	PeakHeapBytes uint64
	// Requests is the RequestCount difference from the runtime's start to
	// its shutdown (the history verification is not counted), or -1 when no
	// counter was configured.
	Requests int64
	// RequestCharge is the RequestCharge difference over the same window,
	// in request units, or -1 when no charge counter was configured.
	RequestCharge float64
	// Operations counts provider calls per method, from the runtime's start
	// to its shutdown (the history verification is not counted), with the
	// requests each made when the storage transport reports them
	// (AttributeRequest). The last fetch of each dispatcher may be counted
	// as failed: Shutdown cancels it.
	Operations []OperationStats
}

// SuccessRate returns Completed / Launched in percent (0 when nothing was
// launched), duroxide's success_rate.
func (r StressResult) SuccessRate() float64 {
	if r.Launched == 0 {
		return 0
	}
	return float64(r.Completed) / float64(r.Launched) * 100
}

// RequestsPerOrchestration returns Requests / Completed, or -1 when
// requests were not counted or nothing completed.
func (r StressResult) RequestsPerOrchestration() float64 {
	if r.Requests < 0 || r.Completed == 0 {
		return -1
	}
	return float64(r.Requests) / float64(r.Completed)
}

// Operation returns the stats of the provider method op (duroxide's snake
// case name, e.g. "fetch_orchestration_item"); ok is false when it was
// never called.
func (r StressResult) Operation(op string) (s OperationStats, ok bool) {
	for _, s := range r.Operations {
		if s.Operation == op {
			return s, true
		}
	}
	return OperationStats{}, false
}

// maxStressProblems caps StressResult.Problems.
const maxStressProblems = 20

// Defaults of StressConfig that do not depend on the scenario.
const (
	defaultStressDuration         = 10 * time.Second
	defaultStressTasksPerInstance = 5
	defaultStressPollInterval     = 100 * time.Millisecond
	defaultStressInstancePrefix   = "stress-test-"
	stressShutdownTimeout         = 10 * time.Second
)

// stressDefaultsFor returns the defaults of the scenario-dependent fields
// (MaxConcurrent, ActivityDelay, OrchestrationConcurrency,
// WorkerConcurrency, WaitTimeout): duroxide's StressTestConfig::default for
// the parallel scenario (20 in flight, 10 ms activities, 2/2 dispatchers,
// 60 s wait) and its LargePayloadConfig::default for the large-payload one
// (5 in flight, 5 ms activities, 1/1 dispatchers, 120 s wait).
func stressDefaultsFor(scenario StressScenario) StressConfig {
	if scenario == ScenarioLargePayload {
		return StressConfig{MaxConcurrent: 5, ActivityDelay: 5 * time.Millisecond, OrchestrationConcurrency: 1, WorkerConcurrency: 1, WaitTimeout: 120 * time.Second}
	}
	return StressConfig{MaxConcurrent: 20, ActivityDelay: 10 * time.Millisecond, OrchestrationConcurrency: 2, WorkerConcurrency: 2, WaitTimeout: 60 * time.Second}
}

// withDefaults fills the zero fields of c and validates it.
func (c StressConfig) withDefaults() (StressConfig, error) {
	if c.Scenario == "" {
		c.Scenario = ScenarioParallelOrchestrations
	}
	d := stressDefaultsFor(c.Scenario)
	setDefault(&c.MaxConcurrent, d.MaxConcurrent)
	setDefault(&c.Duration, defaultStressDuration)
	setDefault(&c.TasksPerInstance, defaultStressTasksPerInstance)
	setDefault(&c.ActivityDelay, d.ActivityDelay)
	setDefault(&c.OrchestrationConcurrency, d.OrchestrationConcurrency)
	setDefault(&c.WorkerConcurrency, d.WorkerConcurrency)
	setDefault(&c.WaitTimeout, d.WaitTimeout)
	setDefault(&c.PollInterval, defaultStressPollInterval)
	setDefault(&c.ProgressInterval, time.Second)
	setDefault(&c.InstancePrefix, defaultStressInstancePrefix)
	c.LargePayload = c.LargePayload.withDefaults()
	if c.ActivityDelay < 0 {
		c.ActivityDelay = 0
	}
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MaxConcurrent", c.MaxConcurrent}, {"TasksPerInstance", c.TasksPerInstance},
		{"OrchestrationConcurrency", c.OrchestrationConcurrency}, {"WorkerConcurrency", c.WorkerConcurrency},
		{"LargePayload.SmallPayloadKB", c.LargePayload.SmallPayloadKB},
		{"LargePayload.MediumPayloadKB", c.LargePayload.MediumPayloadKB},
		{"LargePayload.LargePayloadKB", c.LargePayload.LargePayloadKB},
		{"LargePayload.ActivityCount", c.LargePayload.ActivityCount},
		{"LargePayload.SubOrchestrationCount", c.LargePayload.SubOrchestrationCount},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %d is negative", f.name, f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"Duration", c.Duration}, {"WaitTimeout", c.WaitTimeout}, {"PollInterval", c.PollInterval},
		{"LongPollTimeout", c.LongPollTimeout}, {"ProgressInterval", c.ProgressInterval},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", f.name, f.v))
		}
	}
	if _, err := newStressWorkload(c); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("stress: invalid stress config: %w", errors.Join(errs...))
	}
	return c, nil
}

// setDefault sets *v to def when it is the zero value.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// stressCounters are the live counts of a run.
type stressCounters struct {
	launched, completed, failed, active atomic.Int64
}

// stressOutcome is what one orchestration's goroutine learned.
type stressOutcome struct {
	instance string
	status   runtime.OrchestrationStatus
	// err is a start or wait error; status is meaningless then.
	err     error
	latency time.Duration
}

// RunStress runs cfg's scenario on a provider from newProvider and returns
// the result (duroxide's run_stress_test). Failed or lost orchestrations are
// reported in the result, not as an error; the error is for what prevents a
// run: an invalid config, a provider or runtime that cannot start, or ctx
// ending.
func RunStress(ctx context.Context, newProvider StressProviderFactory, cfg StressConfig) (StressResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return StressResult{}, err
	}
	run := StressRun{Scenario: cfg.Scenario, OrchestrationConcurrency: cfg.OrchestrationConcurrency, WorkerConcurrency: cfg.WorkerConcurrency}
	w, _ := newStressWorkload(cfg)
	inner, err := newProvider(ctx, run)
	if err != nil {
		return StressResult{}, fmt.Errorf("stress: create provider for %s %s: %w", run.Scenario, run.Label(), err)
	}
	if inner == nil {
		return StressResult{}, fmt.Errorf("stress: provider factory returned nil for %s %s", run.Scenario, run.Label())
	}
	defer closeProvider(inner)
	provider := newCallCountingProvider(inner)

	executions := newExecutionLog()
	registry := runtime.NewRegistry()
	if err := w.register(registry, executions); err != nil {
		return StressResult{}, fmt.Errorf("stress: register %s: %w", run.Scenario, err)
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	heap := startHeapSampler(stressHeapSampleInterval)
	defer heap.stop()

	requestsBefore := int64(-1)
	if cfg.RequestCount != nil {
		requestsBefore = cfg.RequestCount()
	}
	chargeBefore := 0.0
	if cfg.RequestCharge != nil {
		chargeBefore = cfg.RequestCharge()
	}
	start := time.Now()
	rt, err := runtime.Start(runCtx, provider, registry, runtime.Options{
		PollInterval:             cfg.PollInterval,
		LongPollTimeout:          cfg.LongPollTimeout,
		OrchestrationConcurrency: cfg.OrchestrationConcurrency,
		WorkerConcurrency:        cfg.WorkerConcurrency,
		Logger:                   cfg.Logger,
	})
	if err != nil {
		return StressResult{}, fmt.Errorf("stress: start runtime: %w", err)
	}
	client := runtime.NewClient(provider)

	var counters stressCounters
	stopProgress := startStressProgress(cfg, run, start, &counters)
	outcomes := pumpStress(runCtx, cfg, w, client, start.Add(cfg.Duration), &counters)
	stopProgress()
	totalTime := time.Since(start)
	peakHeap := heap.stop()
	shutdownCtx, cancelShutdown := context.WithTimeout(context.WithoutCancel(ctx), stressShutdownTimeout)
	shutdownErr := rt.Shutdown(shutdownCtx)
	cancelShutdown()
	// Requests and calls are taken once the runtime has stopped, so that
	// every request counted belongs to a finished call.
	requests := int64(-1)
	if cfg.RequestCount != nil {
		requests = cfg.RequestCount() - requestsBefore
	}
	charge := -1.0
	if cfg.RequestCharge != nil {
		charge = cfg.RequestCharge() - chargeBefore
	}
	operations := provider.stats()
	if err := ctx.Err(); err != nil {
		return StressResult{}, fmt.Errorf("stress: stress run %s %s: %w", run.Scenario, run.Label(), err)
	}

	res := StressResult{Run: run, Config: cfg, Launched: len(outcomes), TotalTime: totalTime, Requests: requests, RequestCharge: charge}
	var latencies []time.Duration
	for _, o := range outcomes {
		if ok := res.classify(ctx, inner, w, executions, o); ok {
			latencies = append(latencies, o.latency)
		}
	}
	if shutdownErr != nil {
		res.addProblem(fmt.Sprintf("runtime shutdown: %v", shutdownErr))
	}
	res.PeakHeapBytes = peakHeap
	res.Operations = operations
	secs := totalTime.Seconds()
	res.OrchestrationsPerSecond = float64(res.Completed) / secs
	res.ActivitiesPerSecond = float64(res.Completed*w.activitiesPerInstance()) / secs
	res.AverageLatency, res.P95Latency = latencyStats(latencies)
	return res, nil
}

// classify folds one outcome into r and reports whether it counts as
// completed.
func (r *StressResult) classify(ctx context.Context, p duroxide.Provider, w stressWorkload, executions *executionLog, o stressOutcome) bool {
	switch {
	case o.err != nil:
		r.Failed++
		r.addProblem(fmt.Sprintf("%s: %v", o.instance, o.err))
		return false
	case o.status.Kind == runtime.StatusFailed:
		r.Failed++
		switch o.status.Details.Category() {
		case "configuration":
			r.FailedConfiguration++
		case "application":
			r.FailedApplication++
		default:
			r.FailedInfrastructure++
		}
		r.addProblem(fmt.Sprintf("%s failed (%s): %v", o.instance, o.status.Details.Category(), o.status.Err()))
		return false
	}
	problems := w.verify(ctx, p, o.instance, o.status)
	problems = append(problems, executions.duplicates(o.instance)...)
	if len(problems) > 0 {
		r.Failed++
		r.FailedVerification++
		for _, p := range problems {
			r.addProblem(p)
		}
		return false
	}
	r.Completed++
	return true
}

// addProblem records a problem description, up to maxStressProblems.
func (r *StressResult) addProblem(p string) {
	if len(r.Problems) < maxStressProblems {
		r.Problems = append(r.Problems, p)
	}
}

// pumpStress launches orchestrations until deadline, never more than
// cfg.MaxConcurrent at once, then waits for all of them (duroxide's
// continuous orchestration pump).
func pumpStress(ctx context.Context, cfg StressConfig, w stressWorkload, client *runtime.Client, deadline time.Time, c *stressCounters) []stressOutcome {
	var (
		mu       sync.Mutex
		outcomes []stressOutcome
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, cfg.MaxConcurrent)
	input := w.input()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
pump:
	for n := 1; ; n++ {
		select {
		case slots <- struct{}{}:
		case <-timer.C:
			break pump
		case <-ctx.Done():
			break pump
		}
		if !time.Now().Before(deadline) {
			<-slots
			break
		}
		instance := fmt.Sprintf("%s%d", cfg.InstancePrefix, n)
		c.launched.Add(1)
		c.active.Add(1)
		wg.Go(func() {
			defer func() { <-slots }()
			o := runStressInstance(ctx, cfg, client, w.orchestrationName(), instance, input)
			if o.err == nil && o.status.Kind == runtime.StatusCompleted {
				c.completed.Add(1)
			} else {
				c.failed.Add(1)
			}
			c.active.Add(-1)
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		})
	}
	wg.Wait()
	return outcomes
}

// runStressInstance starts one orchestration and waits for its end.
func runStressInstance(ctx context.Context, cfg StressConfig, client *runtime.Client, name, instance, input string) stressOutcome {
	o := stressOutcome{instance: instance}
	begin := time.Now()
	if err := client.StartOrchestration(ctx, instance, name, input); err != nil {
		o.err = fmt.Errorf("start: %w", err)
		return o
	}
	o.status, o.err = client.WaitForOrchestration(ctx, instance, cfg.WaitTimeout)
	if o.err != nil {
		o.err = fmt.Errorf("wait: %w", o.err)
	}
	o.latency = time.Since(begin)
	return o
}

// startStressProgress calls cfg.Progress every cfg.ProgressInterval until
// the returned function is called, which also reports a last snapshot.
func startStressProgress(cfg StressConfig, run StressRun, start time.Time, c *stressCounters) func() {
	if cfg.Progress == nil {
		return func() {}
	}
	snapshot := func() StressProgress {
		return StressProgress{
			Run: run, Elapsed: time.Since(start), Launched: int(c.launched.Load()),
			Completed: int(c.completed.Load()), Failed: int(c.failed.Load()), Active: int(c.active.Load()),
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(cfg.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				cfg.Progress(snapshot())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		cfg.Progress(snapshot())
	}
}

// closeProvider closes p when it has a Close method.
func closeProvider(p duroxide.Provider) {
	switch c := p.(type) {
	case io.Closer:
		_ = c.Close()
	case interface{ Close() }:
		c.Close()
	}
}
