package cdb_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// dataOps are the operation kinds that touch documents and that provider
// calls make; the others are the SDK's metadata lookups (account,
// database, container, partition key ranges), cached after the first use,
// and the change-feed reader's reads, which run on their own clock (one
// per ChangeFeedInterval) and belong to no call.
var dataOps = []emulator.OpKind{
	emulator.OpReadItem, emulator.OpCreateItem, emulator.OpReplaceItem, emulator.OpUpsertItem,
	emulator.OpDeleteItem, emulator.OpPatchItem, emulator.OpBatch, emulator.OpQuery,
	emulator.OpReadFeed,
}

// dataRequests returns the number of document requests s has served since
// its counters were last reset.
func dataRequests(s *emulator.Server) int64 {
	c := s.Counters()
	var n int64
	for _, op := range dataOps {
		n += c[op].Requests
	}
	return n
}

// TestRequestBudget counts the Cosmos DB requests of each call of a
// hello-world orchestration. With a fresh candidate pool (the candidate
// query of the warm-up is still trusted, and the orchestration's messages
// were written by this process) they are the figures the methods' doc
// comments give: an orchestration fetch is 1 request, its lock batch,
// since this process wrote the start and acked the previous turn (held
// instance state), ack 1, work-item fetch 1, work-item ack 1, enqueue 1: 7.
// Without held state (HeldInstanceStates < 0, which stands for a process
// that did not write the instance last) an orchestration fetch reads the
// partition first: 2, and 9 in all. With a pool that is never fresh (a
// LongPollInterval of 1 ns, without the change feed, which would make a
// query's answer stand for 10 s) each fetch makes its candidate query
// first.
func TestRequestBudget(t *testing.T) {
	for _, c := range []struct {
		name         string
		pollInterval time.Duration
		heldStates   int
		fetch, work  int64
	}{
		{"held state, fresh pool", time.Hour, 0, 1, 1},
		{"held state, stale pool", time.Nanosecond, 0, 2, 2},
		{"no held state, fresh pool", time.Hour, -1, 2, 1},
		{"no held state, stale pool", time.Nanosecond, -1, 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := countHelloWorld(t, c.pollInterval, c.heldStates)
			want := map[helloStep]int64{
				stepEnqueue: 1, stepFetchNew: c.fetch, stepAckFirst: 1, stepFetchWork: c.work,
				stepAckWork: 1, stepFetchAgain: c.fetch, stepAckLast: 1,
			}
			assert.Equal(t, want, got)
			assert.Equal(t, 4+2*c.fetch+c.work, total(got), "requests per hello-world orchestration")
		})
	}
}

// countHelloWorld runs a warm-up and a counted hello-world orchestration on
// a provider with the given LongPollInterval and HeldInstanceStates and
// returns the requests of each counted call.
func countHelloWorld(t *testing.T, pollInterval time.Duration, heldStates int) map[helloStep]int64 {
	p, s := newPrivateProvider(t, func(c *cdbConfig) {
		c.DisableReconciler, c.LongPollInterval, c.HeldInstanceStates = true, pollInterval, heldStates
		c.DisableChangeFeedWakeups = true
	})
	ctx := context.Background()
	// Warm the SDK's metadata caches with one orchestration.
	require.NoError(t, helloWorld(ctx, p, "warm-up", nil))
	got := map[helloStep]int64{}
	s.ResetCounters()
	require.NoError(t, helloWorld(ctx, p, "counted", func(step helloStep) {
		got[step] = dataRequests(s)
		s.ResetCounters()
	}))
	return got
}

func total(m map[helloStep]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestRequestBudgetHistoryOfAnotherExecution checks the fetch of a process
// that does not know the instance's current execution: it reads the first
// execution's history with the instance's state, sees that the instance has
// moved on (continued as new), and reads the current execution's history
// with 1 more query (candidate query, state, lock, history: 4). The turn
// carries the current execution's history only.
func TestRequestBudgetHistoryOfAnotherExecution(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	a, _ := c.process(t, nil)
	ctx := context.Background()
	const instance = "continued"
	startAndAckFirst(t, a, instance)
	// Execution 2 (as after a ContinueAsNew), acked by the same process.
	require.NoError(t, a.EnqueueForOrchestrator(ctx, raised(instance, "go", `"x"`), 0))
	item, err := fetchInstance(ctx, a, instance)
	require.NoError(t, err)
	second := []duroxide.Event{
		duroxide.NewEvent(1, instance, 2, nil, duroxide.OrchestrationStarted{Name: helloOrch, Version: helloVersion, Input: `"again"`}),
		duroxide.NewEvent(2, instance, 2, nil, duroxide.ExternalSubscribed{Name: "next"}),
	}
	require.NoError(t, a.AckOrchestrationItem(ctx, item.LockToken, 2, second, nil, nil, runningMetadata(), nil))

	// Another process on the same container knows nothing of the instance.
	b, _ := c.process(t, nil)
	require.NoError(t, b.EnqueueForOrchestrator(ctx, raised(instance, "next", `"y"`), 0))
	c.emu.ResetCounters()
	item, err = fetchInstance(ctx, b, instance)
	require.NoError(t, err)
	assert.Equal(t, int64(4), dataRequests(c.emu), "candidate query, state with execution 1's history, lock, execution 2's history")
	assert.Equal(t, uint64(2), item.ExecutionID)
	require.Len(t, item.History, 2)
	for _, ev := range item.History {
		assert.Equal(t, uint64(2), ev.ExecutionID, "event %d", ev.EventID)
	}

	// Now that it knows, its next fetch of the instance reads the right
	// history with the state.
	require.NoError(t, b.AckOrchestrationItem(ctx, item.LockToken, 2, []duroxide.Event{
		duroxide.NewEvent(3, instance, 2, nil, duroxide.ExternalEvent{Name: "next", Data: `"y"`}),
	}, nil, nil, runningMetadata(), nil))
	require.NoError(t, b.EnqueueForOrchestrator(ctx, raised(instance, "later", `"z"`), 0))
	c.emu.ResetCounters()
	item, err = fetchInstance(ctx, b, instance)
	require.NoError(t, err)
	assert.LessOrEqual(t, dataRequests(c.emu), int64(3), "state with the current execution's history, lock, and at most a candidate query")
	assert.Len(t, item.History, 3)
}

// BenchmarkHelloWorldRequests runs hello-world orchestrations (start, one
// activity, complete) through the provider calls the runtime makes and
// reports the Cosmos DB document requests each one costs.
func BenchmarkHelloWorldRequests(b *testing.B) {
	p, s := newPrivateProvider(b, func(c *cdbConfig) { c.DisableReconciler = true })
	ctx := context.Background()
	require.NoError(b, helloWorld(ctx, p, "warm-up", nil))
	s.ResetCounters()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := helloWorld(ctx, p, fmt.Sprintf("hello-%d", i), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(dataRequests(s))/float64(b.N), "requests/orchestration")
	c := s.Counters()
	b.ReportMetric(float64(c[emulator.OpQuery].Requests)/float64(b.N), "queries/orchestration")
	b.ReportMetric(float64(c[emulator.OpBatch].Requests)/float64(b.N), "batches/orchestration")
}

// attributingTransport sends requests to an emulator and attributes each
// to the provider call that made it (stress.AttributeRequest).
type attributingTransport struct{ inner *http.Client }

func (t attributingTransport) Do(req *http.Request) (*http.Response, error) {
	stress.AttributeRequest(req.Context())
	return t.inner.Do(req)
}

// fetchTrace counts the steps of a provider's fetches.
type fetchTrace struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (f *fetchTrace) add(ev string) {
	f.mu.Lock()
	f.counts[ev]++
	f.mu.Unlock()
}

func (f *fetchTrace) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k := range f.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s string
	for _, k := range keys {
		s += fmt.Sprintf("  %-36s %6d\n", k, f.counts[k])
	}
	return s
}

// runStressOnCDB runs the parallel stress scenario for d on a provider of
// its own emulator with orch/worker dispatchers, and returns the result
// and the steps of the provider's fetches.
func runStressOnCDB(t *testing.T, orch, worker int, d time.Duration) (stress.StressResult, *fetchTrace) {
	t.Helper()
	trace := &fetchTrace{counts: map[string]int64{}}
	factory := func(ctx context.Context, run stress.StressRun) (duroxide.Provider, error) {
		s, err := emulator.Start(emulator.Options{})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		cfg := cdb.Config{Endpoint: s.Endpoint(), Key: s.Key(), Container: "stress",
			ClientOptions:      &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: attributingTransport{s.HTTPClient()}}},
			OrchestrationLanes: run.OrchestrationConcurrency, WorkerLanes: run.WorkerConcurrency}
		p, err := cdb.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		cdb.SetFetchTracer(p, trace.add)
		return p, nil
	}
	res, err := stress.RunStress(t.Context(), factory, stress.StressConfig{
		Duration: d, OrchestrationConcurrency: orch, WorkerConcurrency: worker,
	})
	require.NoError(t, err)
	return res, trace
}

// TestFetchRequestsUnderLoad drives the stress binary's workload (the
// parallel scenario: 20 orchestrations in flight, each fanning out to 5
// activities of 10 ms, on a duroxide runtime) on the dispatcher configs
// 1/1, 2/2 and 4/4, and checks that a successful fetch costs on average no
// more Cosmos DB requests than the provider issue's budget: 4 for an
// orchestration turn, 2 for a work item. The requests of a fetch include
// those of its empty polls before it found work, and its candidate
// queries, state reads and lost lock attempts. On failure the fetch steps
// of the run are printed.
func TestFetchRequestsUnderLoad(t *testing.T) {
	t.Parallel()
	const orchBudget, workBudget = 4.0, 2.0
	for _, c := range [][2]int{{1, 1}, {2, 2}, {4, 4}} {
		t.Run(fmt.Sprintf("%d-%d", c[0], c[1]), func(t *testing.T) {
			t.Parallel() // each on its emulator
			res, trace := runStressOnCDB(t, c[0], c[1], 2*time.Second)
			require.Positive(t, res.Completed)
			require.Zero(t, res.Failed, "failed orchestrations: %v", res.Problems)
			of, _ := res.Operation(stress.OpFetchOrchestrationItem)
			wf, _ := res.Operation(stress.OpFetchWorkItem)
			t.Logf("%d/%d: %d orchestrations; orchestration fetch %.2f requests (%d calls), work item fetch %.2f (%d calls)\n%s",
				c[0], c[1], res.Completed, of.RequestsPerCall(), of.Calls, wf.RequestsPerCall(), wf.Calls, trace)
			assert.LessOrEqual(t, of.RequestsPerCall(), orchBudget, "requests per orchestration fetch\n%s", trace)
			assert.LessOrEqual(t, wf.RequestsPerCall(), workBudget, "requests per work item fetch\n%s", trace)
		})
	}
}
