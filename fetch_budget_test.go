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
	"github.com/duroxide-go/duroxide-cdb/providertest"
)

// attributingTransport sends requests to an emulator and attributes each
// to the provider call that made it (providertest.AttributeRequest).
type attributingTransport struct{ inner *http.Client }

func (t attributingTransport) Do(req *http.Request) (*http.Response, error) {
	providertest.AttributeRequest(req.Context())
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
func runStressOnCDB(t *testing.T, orch, worker int, d time.Duration) (providertest.StressResult, *fetchTrace) {
	t.Helper()
	trace := &fetchTrace{counts: map[string]int64{}}
	factory := func(ctx context.Context, run providertest.StressRun) (duroxide.Provider, error) {
		s, err := emulator.Start(emulator.Options{})
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = s.Close() })
		cfg := cdb.Config{Endpoint: s.Endpoint(), Key: s.Key(), Container: "stress",
			ClientOptions:            &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: attributingTransport{s.HTTPClient()}}},
			OrchestrationConcurrency: run.OrchestrationConcurrency, WorkerConcurrency: run.WorkerConcurrency}
		p, err := cdb.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		cdb.SetFetchTracer(p, trace.add)
		return p, nil
	}
	res, err := providertest.RunStress(t.Context(), factory, providertest.StressConfig{
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
	const orchBudget, workBudget = 4.0, 2.0
	for _, c := range [][2]int{{1, 1}, {2, 2}, {4, 4}} {
		t.Run(fmt.Sprintf("%d-%d", c[0], c[1]), func(t *testing.T) {
			res, trace := runStressOnCDB(t, c[0], c[1], 2*time.Second)
			require.Positive(t, res.Completed)
			require.Zero(t, res.Failed, "failed orchestrations: %v", res.Problems)
			of, _ := res.Operation(providertest.OpFetchOrchestrationItem)
			wf, _ := res.Operation(providertest.OpFetchWorkItem)
			t.Logf("%d/%d: %d orchestrations; orchestration fetch %.2f requests (%d calls), work item fetch %.2f (%d calls)\n%s",
				c[0], c[1], res.Completed, of.RequestsPerCall(), of.Calls, wf.RequestsPerCall(), wf.Calls, trace)
			assert.LessOrEqual(t, of.RequestsPerCall(), orchBudget, "requests per orchestration fetch\n%s", trace)
			assert.LessOrEqual(t, wf.RequestsPerCall(), workBudget, "requests per work item fetch\n%s", trace)
		})
	}
}
