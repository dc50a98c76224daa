package cdb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// emulatorTotals adds up the emulator's counters over every operation kind.
func emulatorTotals(s *emulator.Server) (requests int64, charge float64) {
	for _, c := range s.Counters() {
		requests += c.Requests
		charge += c.RequestCharge
	}
	return requests, charge
}

// TestUsageCountsEveryResponseCharge checks that the provider reads the
// request charge of every answer: on a private emulator, whose only client
// is the provider, Usage equals what the emulator charged, from New's
// database and container creation to a hello-world orchestration, a
// throttled request included, and ByCall splits them by provider call. The change-feed reader is off: Close cancels
// its read in flight, which the emulator counts and the provider never
// gets an answer to.
func TestUsageCountsEveryResponseCharge(t *testing.T) {
	t.Parallel()
	p, s := newPrivateProvider(t, func(c *cdbConfig) { c.DisableChangeFeedWakeups = true })
	ctx := context.Background()
	s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, Times: 1, Fault: emulator.TooManyRequests(0)})
	require.NoError(t, helloWorld(ctx, p, "usage-1", nil))
	require.NoError(t, p.Close(), "the reconciler stops: nothing more is sent")

	u := p.Usage()
	requests, charge := emulatorTotals(s)
	assert.Equal(t, requests, u.Requests, "every answer counted")
	assert.InDelta(t, charge, u.RequestCharge, 1e-6, "every answer's x-ms-request-charge added up")
	assert.Equal(t, int64(1), u.Throttled, "the injected 429")
	assert.Greater(t, u.RequestCharge, float64(u.Requests), "writes cost more than 1 RU")
	var byCall int64
	for _, n := range u.ByCall {
		byCall += n
	}
	assert.Equal(t, u.Requests, byCall, "ByCall splits every answer: %v", u.ByCall)
	for _, call := range []string{"new", "fetch_orchestration_item", "ack_orchestration_item", "fetch_work_item", "ack_work_item"} {
		assert.Positive(t, u.ByCall[call], "requests of %s: %v", call, u.ByCall)
	}
}

// BenchmarkHelloWorldRequestCharge reports the request units of one
// hello-world orchestration (start, one activity, complete) as the
// provider read them from the embedded emulator's answers (its cost model
// is an estimate: emulator/README.md), without the change-feed reader,
// whose reads are a cost per process and second, not per orchestration.
func BenchmarkHelloWorldRequestCharge(b *testing.B) {
	p, _ := newPrivateProvider(b, func(c *cdbConfig) { c.DisableReconciler, c.DisableChangeFeedWakeups = true, true })
	ctx := context.Background()
	require.NoError(b, helloWorld(ctx, p, "warm-up", nil))
	before := p.Usage()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := helloWorld(ctx, p, fmt.Sprintf("hello-%d", i), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after := p.Usage()
	b.ReportMetric((after.RequestCharge-before.RequestCharge)/float64(b.N), "RU/orchestration")
	b.ReportMetric(float64(after.Requests-before.Requests)/float64(b.N), "requests/orchestration")
}
