package cdb_test

import (
	"context"
	"fmt"
	"testing"

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
// hello-world orchestration; the figures are the ones the methods' doc
// comments give (fetch 3 for a new instance and 4 with history, ack 1,
// work-item fetch 2, work-item ack 1, enqueue 1).
func TestRequestBudget(t *testing.T) {
	p, s := newPrivateProvider(t, func(c *cdbConfig) { c.DisableReconciler = true })
	ctx := context.Background()
	// Warm the SDK's metadata caches with one orchestration.
	require.NoError(t, helloWorld(ctx, p, "warm-up", nil))

	want := map[helloStep]int64{
		stepEnqueue: 1, stepFetchNew: 3, stepAckFirst: 1, stepFetchWork: 2,
		stepAckWork: 1, stepFetchAgain: 4, stepAckLast: 1,
	}
	got := map[helloStep]int64{}
	s.ResetCounters()
	require.NoError(t, helloWorld(ctx, p, "counted", func(step helloStep) {
		got[step] = dataRequests(s)
		s.ResetCounters()
	}))
	assert.Equal(t, want, got)
	var total int64
	for _, n := range got {
		total += n
	}
	assert.Equal(t, int64(13), total, "requests per hello-world orchestration")
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
