package cdb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/internal/emulator"
)

// dataOps are the operation kinds that touch documents; the others
// (account, database, container, partition key ranges) are the SDK's
// metadata lookups, cached after the first use.
var dataOps = []emulator.OpKind{
	emulator.OpReadItem, emulator.OpCreateItem, emulator.OpReplaceItem, emulator.OpUpsertItem,
	emulator.OpDeleteItem, emulator.OpPatchItem, emulator.OpBatch, emulator.OpQuery,
	emulator.OpChangeFeed, emulator.OpReadFeed,
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
// hello-world orchestration when the provider's candidate pool is fresh
// (the candidate query of the warm-up is still trusted, and the
// orchestration's messages were written by this process): the figures the
// methods' doc comments give (fetch 2 for a new instance and 3 with
// history, ack 1, work-item fetch 1, work-item ack 1, enqueue 1).
func TestRequestBudget(t *testing.T) {
	got := countHelloWorld(t, time.Hour)
	want := map[helloStep]int64{
		stepEnqueue: 1, stepFetchNew: 2, stepAckFirst: 1, stepFetchWork: 1,
		stepAckWork: 1, stepFetchAgain: 3, stepAckLast: 1,
	}
	assert.Equal(t, want, got)
	assert.Equal(t, int64(10), total(got), "requests per hello-world orchestration")
}

// TestRequestBudgetStalePool is TestRequestBudget with a candidate pool
// that is never fresh (LongPollInterval of 1 ns): each fetch makes its
// candidate query first (fetch 3 and 4, work-item fetch 2).
func TestRequestBudgetStalePool(t *testing.T) {
	got := countHelloWorld(t, time.Nanosecond)
	want := map[helloStep]int64{
		stepEnqueue: 1, stepFetchNew: 3, stepAckFirst: 1, stepFetchWork: 2,
		stepAckWork: 1, stepFetchAgain: 4, stepAckLast: 1,
	}
	assert.Equal(t, want, got)
	assert.Equal(t, int64(13), total(got), "requests per hello-world orchestration")
}

// countHelloWorld runs a warm-up and a counted hello-world orchestration on
// a provider with the given LongPollInterval and returns the requests of
// each counted call.
func countHelloWorld(t *testing.T, pollInterval time.Duration) map[helloStep]int64 {
	p, s := newPrivateProvider(t, func(c *cdbConfig) { c.DisableReconciler, c.LongPollInterval = true, pollInterval })
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
