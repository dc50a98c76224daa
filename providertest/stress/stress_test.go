package stress

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// Short runs of the stress harness on the reference in-memory provider.
// They assert outcomes (every orchestration completed with a verified
// history, every activity fetched and acknowledged exactly once), never
// speed: throughput is what cmd/cdb-stress measures. The runs are parallel
// tests but for the two that count on time (progress reports per second,
// a 2 s wait that only the lost instance may outlast), which run first,
// alone.

// memoryStressFactory returns a fresh in-memory provider per run.
func memoryStressFactory(context.Context, StressRun) (duroxide.Provider, error) {
	return memory.NewMemoryProvider(memory.MemoryOptions{}), nil
}

// shortStress is a run of about a second with fast polling.
func shortStress(scenario StressScenario, orch, worker int) StressConfig {
	return StressConfig{
		Scenario: scenario, Duration: time.Second, MaxConcurrent: 8, TasksPerInstance: 4,
		ActivityDelay: 2 * time.Millisecond, OrchestrationConcurrency: orch, WorkerConcurrency: worker,
		PollInterval: 10 * time.Millisecond, WaitTimeout: 30 * time.Second,
		LargePayload: LargePayloadConfig{SmallPayloadKB: 5, MediumPayloadKB: 10, LargePayloadKB: 20, ActivityCount: 6, SubOrchestrationCount: 2},
	}
}

// requireAllCompleted checks a fault-free run: everything launched
// completed and verified, and each activity was fetched and acknowledged
// exactly once.
func requireAllCompleted(t *testing.T, res StressResult, activitiesPerInstance int) {
	t.Helper()
	require.Positive(t, res.Launched, "the run launched nothing")
	require.Empty(t, res.Problems)
	require.Zero(t, res.Failed)
	require.Equal(t, res.Launched, res.Completed)
	require.InDelta(t, 100.0, res.SuccessRate(), 1e-9)
	want := int64(res.Completed * activitiesPerInstance)
	for _, op := range []string{OpFetchWorkItem, OpAckWorkItem} {
		s, ok := res.Operation(op)
		require.True(t, ok, "%s never called", op)
		require.Equal(t, want, s.Calls, "%s calls with work", op)
		require.Positive(t, s.MeanTime(), "%s duration", op)
	}
	// Shutdown may cancel the fetch each dispatcher goroutine has in flight,
	// and the client's metadata reads fail until the instance exists;
	// nothing else may fail.
	for _, s := range res.Operations {
		limit := int64(0)
		switch s.Operation {
		case OpFetchWorkItem:
			limit = int64(res.Run.WorkerConcurrency)
		case OpFetchOrchestrationItem:
			limit = int64(res.Run.OrchestrationConcurrency)
		case OpGetInstanceInfo:
			// The client's polls before an instance's first turn is
			// committed: the instance does not exist yet.
			limit = int64(res.Launched) * 64
		}
		require.LessOrEqual(t, s.FailedCalls, limit, "%s failures", s.Operation)
	}
	starts, _ := res.Operation(OpEnqueueForOrchestrator)
	require.Equal(t, int64(res.Launched), starts.Calls, "one start per launched orchestration")
	acks, _ := res.Operation(OpAckOrchestrationItem)
	require.GreaterOrEqual(t, acks.Calls, int64(2*res.Completed), "at least a first and a last turn per orchestration")
	require.Positive(t, res.OrchestrationsPerSecond)
	require.InDelta(t, res.OrchestrationsPerSecond*float64(activitiesPerInstance), res.ActivitiesPerSecond, 1e-6)
	require.Positive(t, res.AverageLatency)
	require.GreaterOrEqual(t, res.P95Latency, res.AverageLatency/2)
	require.Positive(t, res.PeakHeapBytes)
	require.Equal(t, int64(-1), res.Requests, "no request counter was configured")
}

func TestStressParallelOrchestrationsOnMemory(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]int{{1, 1}, {2, 2}} {
		cfg := shortStress(ScenarioParallelOrchestrations, c[0], c[1])
		res, err := RunStress(t.Context(), memoryStressFactory, cfg)
		require.NoError(t, err)
		require.Equal(t, StressRun{Scenario: ScenarioParallelOrchestrations, OrchestrationConcurrency: c[0], WorkerConcurrency: c[1]}, res.Run)
		requireAllCompleted(t, res, cfg.TasksPerInstance)
		// The client polls the instance metadata through the counted
		// ProviderAdmin: at least one successful call per orchestration.
		info, ok := res.Operation(OpGetInstanceInfo)
		require.True(t, ok, "get_instance_info is counted")
		require.GreaterOrEqual(t, info.Calls, int64(res.Completed))
	}
}

func TestStressLargePayloadOnMemory(t *testing.T) {
	t.Parallel()
	cfg := shortStress(ScenarioLargePayload, 2, 2)
	cfg.MaxConcurrent = 2
	res, err := RunStress(t.Context(), memoryStressFactory, cfg)
	require.NoError(t, err)
	lp := cfg.LargePayload
	requireAllCompleted(t, res, lp.ActivityCount+largePayloadFinalTasks+lp.SubOrchestrationCount*largePayloadSubActivities)
}

// TestStressRequestCounterAndProgress checks the optional callbacks: the
// request counter is read at the start and at the end of the run, and
// progress reports arrive with a final snapshot that matches the result.
func TestStressRequestCounterAndProgress(t *testing.T) {
	var counter atomic.Int64
	counter.Store(1000)
	var last atomic.Pointer[StressProgress]
	reports := atomic.Int64{}
	cfg := shortStress(ScenarioParallelOrchestrations, 1, 1)
	cfg.ProgressInterval = 100 * time.Millisecond
	cfg.Progress = func(p StressProgress) { reports.Add(1); last.Store(&p) }
	// Every provider call "makes" three requests.
	cfg.RequestCount = func() int64 { return counter.Load() }
	factory := func(ctx context.Context, run StressRun) (duroxide.Provider, error) {
		return requestCountingProvider{Provider: memory.NewMemoryProvider(memory.MemoryOptions{}), counter: &counter}, nil
	}
	res, err := RunStress(t.Context(), factory, cfg)
	require.NoError(t, err)
	require.Positive(t, res.Completed)
	require.Positive(t, res.Requests)
	require.InDelta(t, float64(res.Requests)/float64(res.Completed), res.RequestsPerOrchestration(), 1e-9)
	require.GreaterOrEqual(t, reports.Load(), int64(5), "about ten reports in a one-second run")
	final := last.Load()
	require.NotNil(t, final)
	require.Equal(t, res.Launched, final.Launched)
	require.Equal(t, res.Completed, final.Completed)
	require.Zero(t, final.Active)
}

// requestCountingProvider pretends every orchestration fetch or ack makes
// three requests of requestChargeRU each, attributed through
// AttributeRequest and AttributeRequestCharge like a transport would.
type requestCountingProvider struct {
	duroxide.Provider
	counter *atomic.Int64
	// microRU, when set, adds up the charges in millionths of an RU.
	microRU *atomic.Int64
}

// requestChargeRU is what requestCountingProvider charges per request.
const requestChargeRU = 1.25

func (p requestCountingProvider) requests(ctx context.Context) {
	for range 3 {
		p.counter.Add(1)
		AttributeRequest(ctx)
		if p.microRU != nil {
			p.microRU.Add(requestChargeRU * 1e6)
			AttributeRequestCharge(ctx, requestChargeRU)
		}
	}
}

func (p requestCountingProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	p.requests(ctx)
	return p.Provider.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
}

func (p requestCountingProvider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) error {
	p.requests(ctx)
	return p.Provider.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelled)
}

func TestStressAttributesRequestsToOperations(t *testing.T) {
	t.Parallel()
	var counter, microRU atomic.Int64
	cfg := shortStress(ScenarioParallelOrchestrations, 2, 2)
	cfg.RequestCount = func() int64 { return counter.Load() }
	cfg.RequestCharge = func() float64 { return float64(microRU.Load()) / 1e6 }
	res, err := RunStress(t.Context(), func(context.Context, StressRun) (duroxide.Provider, error) {
		return requestCountingProvider{Provider: memory.NewMemoryProvider(memory.MemoryOptions{}), counter: &counter, microRU: &microRU}, nil
	}, cfg)
	require.NoError(t, err)
	fetch, _ := res.Operation(OpFetchOrchestrationItem)
	ack, _ := res.Operation(OpAckOrchestrationItem)
	require.Equal(t, 3*fetch.Calls, fetch.Requests)
	require.Equal(t, 3*fetch.EmptyCalls, fetch.EmptyRequests)
	require.Equal(t, 3.0, ack.RequestsPerCall())
	work, _ := res.Operation(OpFetchWorkItem)
	require.Zero(t, work.Requests, "work item fetches made no requests")
	require.Equal(t, fetch.Requests+fetch.EmptyRequests+fetch.FailedRequests+ack.Requests+ack.FailedRequests, res.Requests,
		"every request of the run belongs to a counted call")
	require.False(t, AttributeRequest(t.Context()), "a context outside any provider call has no tally")
	require.False(t, AttributeRequestCharge(t.Context(), 1), "a context outside any provider call has no tally")

	require.InDelta(t, requestChargeRU*float64(fetch.Requests), fetch.RequestCharge, 1e-6)
	require.InDelta(t, requestChargeRU*float64(fetch.EmptyRequests), fetch.EmptyRequestCharge, 1e-6)
	require.InDelta(t, 3*requestChargeRU, ack.RequestChargePerCall(), 1e-6)
	require.InDelta(t, requestChargeRU*float64(res.Requests), res.RequestCharge, 1e-6, "the run's charge covers its requests")
}

// duplicatingProvider schedules the first activity of instance twice, as a
// provider that redelivers an acknowledged work item would.
type duplicatingProvider struct {
	duroxide.Provider
	instance string
	done     *atomic.Bool
}

func (p duplicatingProvider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) error {
	if len(workerItems) > 0 && workerItems[0].Kind.(duroxide.ActivityExecuteItem).Instance == p.instance && p.done.CompareAndSwap(false, true) {
		workerItems = append(workerItems, workerItems[0])
	}
	return p.Provider.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelled)
}

func TestStressFailsOnDuplicatedActivity(t *testing.T) {
	t.Parallel()
	cfg := shortStress(ScenarioParallelOrchestrations, 2, 2)
	res, err := RunStress(t.Context(), func(context.Context, StressRun) (duroxide.Provider, error) {
		return duplicatingProvider{Provider: memory.NewMemoryProvider(memory.MemoryOptions{}), instance: "stress-test-1", done: new(atomic.Bool)}, nil
	}, cfg)
	require.NoError(t, err)
	require.Equal(t, res.Launched-1, res.Completed, "every orchestration but the duplicated one completes")
	require.Equal(t, 1, res.Failed)
	// The runtime ignores the second completion, so the history is clean;
	// the second execution itself is what the harness must catch.
	require.Equal(t, 1, res.FailedVerification)
	require.True(t, containsProblem(res.Problems, "stress-test-1: activity 2 of execution 1 ran 2 times"), "problems: %q", res.Problems)
}

// losingProvider drops the completion of the first activity of instance, as
// a provider that acknowledged a work item without enqueueing its result
// would.
type losingProvider struct {
	duroxide.Provider
	instance string
	done     *atomic.Bool
}

func (p losingProvider) AckWorkItem(ctx context.Context, lockToken string, completion *duroxide.WorkItem) error {
	if completion != nil && completion.Kind.TargetInstance() == p.instance && p.done.CompareAndSwap(false, true) {
		completion = nil
	}
	return p.Provider.AckWorkItem(ctx, lockToken, completion)
}

func TestStressFailsOnLostActivityResult(t *testing.T) {
	cfg := shortStress(ScenarioParallelOrchestrations, 2, 2)
	cfg.WaitTimeout = 2 * time.Second
	res, err := RunStress(t.Context(), func(context.Context, StressRun) (duroxide.Provider, error) {
		return losingProvider{Provider: memory.NewMemoryProvider(memory.MemoryOptions{}), instance: "stress-test-1", done: new(atomic.Bool)}, nil
	}, cfg)
	require.NoError(t, err)
	require.Equal(t, res.Launched-1, res.Completed)
	require.Equal(t, 1, res.Failed)
	require.True(t, containsProblem(res.Problems, "stress-test-1: wait:"), "problems: %q", res.Problems)
	require.Less(t, res.SuccessRate(), 100.0)
}

func containsProblem(problems []string, substr string) bool {
	for _, p := range problems {
		if strings.Contains(p, substr) {
			return true
		}
	}
	return false
}

func TestStressRejectsBadConfigAndFactories(t *testing.T) {
	ctx := t.Context()
	_, err := RunStress(ctx, memoryStressFactory, StressConfig{MaxConcurrent: -1})
	require.ErrorContains(t, err, "MaxConcurrent -1 is negative")
	_, err = RunStress(ctx, memoryStressFactory, StressConfig{Scenario: "nope"})
	require.ErrorContains(t, err, `unknown scenario "nope"`)
	_, err = RunStress(ctx, memoryStressFactory, StressConfig{Duration: -time.Second})
	require.ErrorContains(t, err, "Duration -1s is negative")
	boom := errors.New("boom")
	_, err = RunStress(ctx, func(context.Context, StressRun) (duroxide.Provider, error) { return nil, boom }, StressConfig{})
	require.ErrorIs(t, err, boom)
	_, err = RunStress(ctx, func(context.Context, StressRun) (duroxide.Provider, error) { return nil, nil }, StressConfig{})
	require.ErrorContains(t, err, "returned nil")
}

func TestStressDefaultsPerScenario(t *testing.T) {
	par, err := StressConfig{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, ScenarioParallelOrchestrations, par.Scenario)
	require.Equal(t, 20, par.MaxConcurrent)
	require.Equal(t, 10*time.Second, par.Duration)
	require.Equal(t, 5, par.TasksPerInstance)
	require.Equal(t, 10*time.Millisecond, par.ActivityDelay)
	require.Equal(t, 2, par.OrchestrationConcurrency)
	require.Equal(t, 2, par.WorkerConcurrency)
	require.Equal(t, 60*time.Second, par.WaitTimeout)
	large, err := StressConfig{Scenario: ScenarioLargePayload}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, 5, large.MaxConcurrent)
	require.Equal(t, 5*time.Millisecond, large.ActivityDelay)
	require.Equal(t, 1, large.OrchestrationConcurrency)
	require.Equal(t, 120*time.Second, large.WaitTimeout)
	require.Equal(t, LargePayloadConfig{SmallPayloadKB: 10, MediumPayloadKB: 50, LargePayloadKB: 100, ActivityCount: 20, SubOrchestrationCount: 5}, large.LargePayload)
}

// stressEvent builds one history event of instance "i".
func stressEvent(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.NewEvent(id, "i", duroxide.InitialExecutionID, source, kind)
}

// fanoutHistory is a correct history of a two-activity fan-out.
func fanoutHistory() []duroxide.Event {
	return []duroxide.Event{
		stressEvent(1, nil, duroxide.OrchestrationStarted{Name: fanoutOrchestrationName, Version: "1.0.0", Input: "{}"}),
		stressEvent(2, nil, duroxide.ActivityScheduled{Name: processTaskActivity, Input: "task-0"}),
		stressEvent(3, nil, duroxide.ActivityScheduled{Name: processTaskActivity, Input: "task-1"}),
		stressEvent(4, duroxide.Uint64Ptr(3), duroxide.ActivityCompleted{Result: "processed: task-1"}),
		stressEvent(5, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: "processed: task-0"}),
		stressEvent(6, nil, duroxide.OrchestrationCompleted{Output: fanoutOutput(2, 2)}),
	}
}

// checkFanout runs the fan-out checks of a two-activity history.
func checkFanout(events []duroxide.Event) []string {
	h := indexStressHistory("i", events)
	problems := append([]string{}, h.problems...)
	problems = append(problems, h.expectActivities(processTaskActivity, 2, func(in, out string) bool { return out == "processed: "+in })...)
	return append(problems, h.expectSubOrchestrations(0)...)
}

func TestStressHistoryVerification(t *testing.T) {
	require.Empty(t, checkFanout(fanoutHistory()), "a correct history passes")

	renumber := func(evs []duroxide.Event) []duroxide.Event {
		for i := range evs {
			evs[i].EventID = uint64(i + 1)
		}
		return evs
	}
	cases := []struct {
		name   string
		edit   func([]duroxide.Event) []duroxide.Event
		expect string
	}{
		{"lost result", func(h []duroxide.Event) []duroxide.Event {
			return renumber(append(h[:4:4], h[5]))
		}, "activity ProcessTask (event 2) has no result: lost"},
		{"duplicated result", func(h []duroxide.Event) []duroxide.Event {
			dup := stressEvent(0, duroxide.Uint64Ptr(2), duroxide.ActivityCompleted{Result: "processed: task-0"})
			return renumber(append(h[:5:5], dup, h[5]))
		}, "(event 2) has 2 results: duplicated"},
		{"swapped result", func(h []duroxide.Event) []duroxide.Event {
			h[3].Kind = duroxide.ActivityCompleted{Result: "processed: task-0"}
			return h
		}, "has a result that does not match its input"},
		{"failed activity", func(h []duroxide.Event) []duroxide.Event {
			h[3].Kind = duroxide.ActivityFailed{Details: duroxide.ErrorDetails{Application: &duroxide.ApplicationDetails{Message: "boom"}}}
			return h
		}, "failed: "},
		{"repeated event id", func(h []duroxide.Event) []duroxide.Event {
			h[4].EventID = 4
			return h
		}, "event 5 has id 4"},
		{"result for an unknown event", func(h []duroxide.Event) []duroxide.Event {
			h[3].SourceEventID = duroxide.Uint64Ptr(1)
			return h
		}, "answers event 1, which is not a matching scheduled event"},
		{"no terminal event", func(h []duroxide.Event) []duroxide.Event { return h[:5] }, "0 terminal events, want 1"},
		{"two terminal events", func(h []duroxide.Event) []duroxide.Event {
			return renumber(append(h, h[5]))
		}, "2 terminal events, want 1"},
		{"missing activity", func(h []duroxide.Event) []duroxide.Event {
			return renumber([]duroxide.Event{h[0], h[1], h[4], h[5]})
		}, "1 activities scheduled, want 2"},
		{"empty history", func([]duroxide.Event) []duroxide.Event { return nil }, "i: no history"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems := checkFanout(c.edit(fanoutHistory()))
			require.True(t, containsProblem(problems, c.expect), "want a problem containing %q, got %q", c.expect, problems)
		})
	}
}

func TestStressSubOrchestrationChildIDs(t *testing.T) {
	h := indexStressHistory("i", []duroxide.Event{
		stressEvent(1, nil, duroxide.OrchestrationStarted{Name: "p", Version: "1.0.0"}),
		stressEvent(2, nil, duroxide.SubOrchestrationScheduled{Name: "c", Instance: "sub::2"}),
		stressEvent(3, nil, duroxide.SubOrchestrationScheduled{Name: "c", Instance: "explicit-child"}),
		stressEvent(4, duroxide.Uint64Ptr(2), duroxide.SubOrchestrationCompleted{Result: "a"}),
		stressEvent(5, duroxide.Uint64Ptr(3), duroxide.SubOrchestrationCompleted{Result: "b"}),
		stressEvent(6, nil, duroxide.OrchestrationCompleted{Output: "x"}),
	})
	require.Empty(t, h.problems)
	require.Empty(t, h.expectSubOrchestrations(2))
	require.Equal(t, []string{"i::sub::2", "explicit-child"}, h.children())
	r, ok := h.subResult("i::sub::2")
	require.True(t, ok)
	require.Equal(t, "a", r)
}

func TestStressExecutionLogReportsDuplicates(t *testing.T) {
	l := newExecutionLog()
	l.count[executionKey{"a", 1, 2}] = 1
	l.count[executionKey{"a::sub::3", 1, 4}] = 2
	l.count[executionKey{"ab", 1, 2}] = 3
	require.Equal(t, []string{"a::sub::3: activity 4 of execution 1 ran 2 times"}, l.duplicates("a"))
	require.Empty(t, l.duplicates("b"))
}

func TestLatencyStats(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	avg, p95 := latencyStats(ds)
	require.Equal(t, 50500*time.Microsecond, avg)
	require.Equal(t, 95*time.Millisecond, p95)
	avg, p95 = latencyStats([]time.Duration{7 * time.Millisecond})
	require.Equal(t, 7*time.Millisecond, avg)
	require.Equal(t, 7*time.Millisecond, p95)
	avg, p95 = latencyStats(nil)
	require.Zero(t, avg)
	require.Zero(t, p95)
}

func TestGeneratePayload(t *testing.T) {
	for _, kb := range []int{1, 10, 50, 100} {
		p := generatePayload(kb)
		require.Len(t, p, kb*1024)
		require.True(t, strings.HasPrefix(p, payloadPattern))
	}
	require.Empty(t, generatePayload(0))
}

func TestWriteStressTable(t *testing.T) {
	res := StressResult{
		Run:      StressRun{Scenario: ScenarioParallelOrchestrations, OrchestrationConcurrency: 2, WorkerConcurrency: 2},
		Launched: 200, Completed: 199, Failed: 1, FailedInfrastructure: 1,
		OrchestrationsPerSecond: 19.9, ActivitiesPerSecond: 99.5,
		AverageLatency: 160780 * time.Microsecond, P95Latency: 250 * time.Millisecond,
		PeakHeapBytes: 12 << 20, Requests: 4975,
	}
	var b bytes.Buffer
	require.NoError(t, WriteStressTable(&b, []StressRow{{Provider: "cdb (emulator)", Result: res}}))
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []string{"Provider", "Config", "Completed", "Failed", "Infra", "Config", "App", "Success", "%", "Orch/sec",
		"Activity/sec", "Avg", "Latency", "P95", "Latency", "Verify", "Req/orch", "Peak", "heap"}, strings.Fields(lines[0]))
	require.Equal(t, strings.Repeat("-", 150), lines[1])
	require.Equal(t, []string{"cdb", "(emulator)", "2/2", "199", "1", "1", "0", "0", "99.50", "19.90", "99.50",
		"160.78ms", "250.00ms", "0", "25.0", "12.0MiB"}, strings.Fields(lines[2]))
	// Columns start where duroxide's do.
	require.Equal(t, 21, strings.Index(lines[2], "2/2"))
	require.Equal(t, 32, strings.Index(lines[2], "199"))
}

// The counting wrapper forwards the provider's PendingReasonRecorder, so
// the runtime records why it abandoned a start through it; its calls count
// as abandons.
func TestCountingProviderForwardsThePendingReasonRecorder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	inner := memory.NewMemoryProvider(memory.MemoryOptions{})
	p := newCallCountingProvider(inner)
	r, ok := duroxide.AsPendingReasonRecorder(p)
	require.True(t, ok)
	require.NoError(t, inner.EnqueueStart(ctx, duroxide.StartOrchestrationItem{Instance: "a", Orchestration: "Procss", ExecutionID: 1}))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	require.NoError(t, r.AbandonOrchestrationItemWithReason(ctx, item.LockToken, 0, false, "not registered"))
	info, err := inner.GetInstanceInfo(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "not registered", info.PendingReason)
	abandons, ok := func() (OperationStats, bool) {
		for _, s := range p.stats() {
			if s.Operation == OpAbandonOrchestrationItem {
				return s, true
			}
		}
		return OperationStats{}, false
	}()
	require.True(t, ok)
	require.Equal(t, int64(1), abandons.Calls)
}
