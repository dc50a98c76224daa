package cdb_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// meter is an SDK MeterProvider with a ManualReader, for one test.
type meter struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newMeter(t testing.TB) *meter {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &meter{reader: r, mp: mp}
}

// collected is one collection of a meter.
type collected struct{ rm metricdata.ResourceMetrics }

func (m *meter) collect(t testing.TB) collected {
	t.Helper()
	var c collected
	require.NoError(t, m.reader.Collect(context.Background(), &c.rm))
	return c
}

// data returns the data of the metric called name, nil when not recorded.
func (c collected) data(name string) metricdata.Aggregation {
	for _, sm := range c.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	return nil
}

// matches reports whether attrs has every name/value pair of kv.
func matches(attrs attribute.Set, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		v, ok := attrs.Value(attribute.Key(kv[i]))
		if !ok || v.AsString() != kv[i+1] {
			return false
		}
	}
	return true
}

// intSum adds up the points of an int64 counter whose attributes include
// the name/value pairs kv (0 when the counter recorded nothing).
func (c collected) intSum(t testing.TB, name string, kv ...string) int64 {
	t.Helper()
	return counterSum[int64](t, c, name, kv)
}

// floatSum is intSum for a float64 counter.
func (c collected) floatSum(t testing.TB, name string, kv ...string) float64 {
	t.Helper()
	return counterSum[float64](t, c, name, kv)
}

// counterSum adds up the points of counter name whose attributes include kv.
func counterSum[N int64 | float64](t testing.TB, c collected, name string, kv []string) N {
	t.Helper()
	d := c.data(name)
	if d == nil {
		return 0
	}
	sum, ok := d.(metricdata.Sum[N])
	require.True(t, ok, "%s is a counter of %T", name, N(0))
	var n N
	for _, dp := range sum.DataPoints {
		if matches(dp.Attributes, kv) {
			n += dp.Value
		}
	}
	return n
}

// histogramCount adds up the counts of a float64 histogram's points whose
// attributes include kv.
func (c collected) histogramCount(t testing.TB, name string, kv ...string) uint64 {
	t.Helper()
	h, ok := c.data(name).(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	var n uint64
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, kv) {
			n += dp.Count
		}
	}
	return n
}

// TestRequestMetrics runs a hello-world orchestration with one throttled
// enqueue on a private emulator and checks the request metrics against the
// provider's Usage and the emulator's own counters: every answer counted,
// by provider call and operation kind, with its charge and latency, the
// 429 and its retry.
func TestRequestMetrics(t *testing.T) {
	t.Parallel()
	m := newMeter(t)
	// Nothing of the provider's own may send a request between the
	// collection and Usage: no reconciler, change-feed reader or lease
	// heartbeat (a change-feed read in between made it 37 against 38).
	p, s := newPrivateProvider(t, func(c *cdbConfig) {
		c.DisableReconciler, c.DisableChangeFeedWakeups, c.Leases = true, true, cdb.LeasesInProcess
		c.MeterProvider = m.mp
	})
	ctx := context.Background()
	s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, Times: 1, Fault: emulator.TooManyRequests(0)})
	require.NoError(t, helloWorld(ctx, p, "metrics-1", nil))
	c := m.collect(t)
	u := p.Usage()

	assert.Equal(t, u.Requests, c.intSum(t, "duroxide_cosmosdb_requests_total"), "every answer")
	assert.InDelta(t, u.RequestCharge, c.floatSum(t, "duroxide_cosmosdb_request_charge_total"), 1e-6, "every charge")
	assert.Equal(t, uint64(u.Requests), c.histogramCount(t, "duroxide_cosmosdb_request_duration_seconds"), "every latency")
	counters := s.Counters()
	for kind, op := range map[string]emulator.OpKind{"Batch": emulator.OpBatch, "Query": emulator.OpQuery, "CreateItem": emulator.OpCreateItem, "PatchItem": emulator.OpPatchItem} {
		assert.Equal(t, counters[op].Requests, c.intSum(t, "duroxide_cosmosdb_requests_total", "op_kind", kind), kind)
		assert.InDelta(t, counters[op].RequestCharge, c.floatSum(t, "duroxide_cosmosdb_request_charge_total", "op_kind", kind), 1e-6, kind)
	}

	enqueue := []string{"call", "enqueue_for_orchestrator", "op_kind", "CreateItem"}
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_requests_total", append(enqueue, "status_code", "429")...))
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_requests_total", append(enqueue, "status_code", "201")...))
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_throttled_total", enqueue...))
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_throttled_total"), "one 429 in all")
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_retries_total", "call", "enqueue_for_orchestrator", "reason", "429"))
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_retries_total"), "one retry in all")
	assert.Equal(t, int64(2), c.intSum(t, "duroxide_cosmosdb_requests_total", "call", "ack_orchestration_item", "op_kind", "Batch"),
		"hello-world's two turns: one batch each (README: Cosmos DB requests per call)")
	assert.Positive(t, c.intSum(t, "duroxide_cosmosdb_requests_total", "call", "new", "op_kind", "Metadata"), "New's database and container creation")
	assert.Zero(t, c.intSum(t, "duroxide_cosmosdb_requests_total", "call", ""), "every request is labelled")
	assert.Equal(t, c.intSum(t, "duroxide_cosmosdb_requests_total", "call", "sdk", "op_kind", "Metadata"),
		c.intSum(t, "duroxide_cosmosdb_requests_total", "call", "sdk"),
		"only the SDK's own metadata lookups belong to no provider call")
}

// TestLockRaceMetrics makes provider a lose the instance lock and the work
// item lock to provider b, deterministically: b fetches from inside a's
// fetch, between a's read and a's lock request (the fetch tracer reports
// the lock request just before sending it).
func TestLockRaceMetrics(t *testing.T) {
	t.Parallel()
	m := newMeter(t)
	cfg := env.config()
	cfg.DisableReconciler = true
	cfg.Leases = cdb.LeasesInProcess // both processes may take every instance
	b := startProvider(t, cfg)
	cfg.MeterProvider = m.mp
	a := startProvider(t, cfg)
	ctx := context.Background()

	var bItem *duroxide.OrchestrationItem
	var bWork *duroxide.LockedWorkItem
	var once sync.Once
	var workOnce sync.Once
	var raced atomic.Bool
	cdb.SetFetchTracer(a, func(ev string) {
		switch ev {
		case "orch lock batch", "orch held lock batch":
			once.Do(func() {
				var err error
				bItem, err = b.FetchOrchestrationItem(ctx, longLock, fetchWait, nil) // b sees a's enqueue a replica lag later
				require.NoError(t, err)
				raced.Store(true)
			})
		case "work lock":
			workOnce.Do(func() {
				var err error
				bWork, err = b.FetchWorkItem(ctx, longLock, fetchWait, nil, duroxide.TagFilterDefaultOnly())
				require.NoError(t, err)
			})
		}
	})
	require.NoError(t, a.EnqueueForOrchestrator(ctx, startItem("race-1"), 0))
	got, err := a.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.True(t, raced.Load())
	require.NotNil(t, bItem, "b took the instance")
	assert.Nil(t, got, "a lost the race")

	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: "race-1", ExecutionID: 1, ID: 2, Name: "Greet", Input: `"x"`}}
	require.NoError(t, a.EnqueueForWorker(ctx, act))
	work, err := a.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, bWork, "b took the work item")
	assert.Nil(t, work, "a lost the race")

	c := m.collect(t)
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_lock_races_lost_total", "queue", "orchestrator"))
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_lock_races_lost_total", "queue", "worker"))
}

// TestOutboxMetrics leaves one outbox intent undelivered (the child's
// partition refuses writes), checks the backlog gauges on a clock the test
// moves, then delivers it with ReconcileOutbox and checks the deliveries.
func TestOutboxMetrics(t *testing.T) {
	t.Parallel()
	m := newMeter(t)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	p, s := newPrivateProvider(t, func(c *cdbConfig) {
		c.DisableReconciler, c.MeterProvider = true, m.mp
		c.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	})
	c := m.collect(t)
	assert.Equal(t, []int64{0}, gaugeInts(t, c, "duroxide_cosmosdb_outbox_pending"))

	child := "outbox-metrics::child"
	remove := s.InjectFault(emulator.FaultRule{Op: emulator.OpCreateItem, PartitionKey: &child, Fault: emulator.ServiceUnavailable()})
	startChild(t, p, "outbox-metrics", child)
	remove()
	clock.Add(5000)
	c = m.collect(t)
	assert.Equal(t, []int64{1}, gaugeInts(t, c, "duroxide_cosmosdb_outbox_pending"))
	age, ok := c.data("duroxide_cosmosdb_outbox_oldest_age_seconds").(metricdata.Gauge[float64])
	require.True(t, ok)
	require.Len(t, age.DataPoints, 1)
	assert.Equal(t, 5.0, age.DataPoints[0].Value, "created at the ack, 5 s ago on the test's clock")

	n, err := p.ReconcileOutbox(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	c = m.collect(t)
	assert.Equal(t, int64(1), c.intSum(t, "duroxide_cosmosdb_reconciler_deliveries_total"))
	assert.Equal(t, []int64{0}, gaugeInts(t, c, "duroxide_cosmosdb_outbox_pending"))
}

// gaugeInts returns the values of an int64 gauge.
func gaugeInts(t testing.TB, c collected, name string) []int64 {
	t.Helper()
	g, ok := c.data(name).(metricdata.Gauge[int64])
	require.True(t, ok, "%s is an int64 gauge", name)
	var out []int64
	for _, dp := range g.DataPoints {
		out = append(out, dp.Value)
	}
	return out
}

// partialLeases is a LeaseProvider that owns 100 of the 256 slots, as one
// of several processes sharing a queue would.
type partialLeases struct{ cdb.LeaseProvider }

func (partialLeases) OwnedSlots() int { return 100 }

// plainLeases is a LeaseProvider that does not report ownership.
type plainLeases struct{ cdb.LeaseProvider }

// TestSlotsOwnedGauge checks duroxide_cosmosdb_slots_owned: all 256 slots
// for the default in-memory leases, the lease provider's own count when it
// implements SlotOwner, nothing when it does not.
func TestSlotsOwnedGauge(t *testing.T) {
	t.Parallel()
	m := newMeter(t)
	newProvider(t, func(c *cdbConfig) { c.DisableReconciler, c.MeterProvider, c.Leases = true, m.mp, cdb.LeasesInProcess })
	assert.Equal(t, map[string]int64{"orchestrator": 256, "worker": 256}, slotsOwned(t, m.collect(t)))

	m2 := newMeter(t)
	newProvider(t, func(c *cdbConfig) {
		c.DisableReconciler, c.MeterProvider = true, m2.mp
		c.OrchestrationLeases = partialLeases{cdb.NewInMemoryLeaseProvider(1)}
		c.WorkerLeases = plainLeases{cdb.NewInMemoryLeaseProvider(1)}
	})
	assert.Equal(t, map[string]int64{"orchestrator": 100}, slotsOwned(t, m2.collect(t)))
}

// slotsOwned returns the slots-owned gauge by queue.
func slotsOwned(t testing.TB, c collected) map[string]int64 {
	t.Helper()
	g, ok := c.data("duroxide_cosmosdb_slots_owned").(metricdata.Gauge[int64])
	require.True(t, ok)
	out := map[string]int64{}
	for _, dp := range g.DataPoints {
		q, _ := dp.Attributes.Value("queue")
		out[q.AsString()] = dp.Value
	}
	return out
}

// TestSlotsOwnedGaugeFollowsContainerLeases: with leases in the container
// the gauge reports each process's share, 256 alone and 128 each once a
// second process on the same container has taken its half.
func TestSlotsOwnedGaugeFollowsContainerLeases(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	m1, m2 := newMeter(t), newMeter(t)
	c1, c2 := cfg, cfg
	c1.MeterProvider, c2.MeterProvider = m1.mp, m2.mp
	p1 := startServingProvider(t, c1)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), p1))
	assert.Equal(t, map[string]int64{"orchestrator": 256, "worker": 256}, slotsOwned(t, m1.collect(t)))
	startServingProvider(t, c2)
	half := map[string]int64{"orchestrator": 128, "worker": 128}
	eventually(t, "the slots are shared", func() bool {
		return assert.ObjectsAreEqual(half, slotsOwned(t, m1.collect(t))) && assert.ObjectsAreEqual(half, slotsOwned(t, m2.collect(t)))
	})
}
