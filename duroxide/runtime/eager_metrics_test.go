package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// eagerProvider is the in-memory provider reporting fixed eager dispatch
// counts, as a provider with eager dispatch does.
type eagerProvider struct {
	*memory.MemoryProvider
	stats duroxide.EagerDispatchStats
}

func (p eagerProvider) EagerDispatch() duroxide.EagerDispatchStats { return p.stats }

// TestEagerDispatchCountsBecomeAMetric checks that a runtime on a provider
// with eager dispatch reports its counts as duroxide_eager_dispatch_total
// by queue and outcome, and that one without it (or with it off) reports
// no such metric.
func TestEagerDispatchCountsBecomeAMetric(t *testing.T) {
	t.Parallel()
	collect := func(p duroxide.Provider) metricsRun {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		opts := fastOptions()
		opts.MeterProvider = mp
		rt, err := runtime.Start(context.Background(), p, runtime.NewRegistry(), opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
		var r metricsRun
		require.NoError(t, reader.Collect(context.Background(), &r.rm))
		return r
	}
	on := eagerProvider{MemoryProvider: memory.NewMemoryProvider(memory.MemoryOptions{}), stats: duroxide.EagerDispatchStats{
		Enabled:      true,
		Orchestrator: duroxide.EagerDispatchCounts{Hits: 7, Fallbacks: 1},
		Worker:       duroxide.EagerDispatchCounts{Hits: 9},
	}}
	collect(on).requireCounts(t, "duroxide_eager_dispatch_total", map[attribute.Set]int64{
		set("queue", "orchestrator", "outcome", "hit"):      7,
		set("queue", "orchestrator", "outcome", "fallback"): 1,
		set("queue", "worker", "outcome", "hit"):            9,
		set("queue", "worker", "outcome", "fallback"):       0,
	})
	off := on
	off.stats.Enabled = false
	off.MemoryProvider = memory.NewMemoryProvider(memory.MemoryOptions{})
	require.False(t, recorded(collect(off), "duroxide_eager_dispatch_total"))
	require.False(t, recorded(collect(memory.NewMemoryProvider(memory.MemoryOptions{})), "duroxide_eager_dispatch_total"))
}

// recorded reports whether r holds a metric called name.
func recorded(r metricsRun, name string) bool {
	for _, sm := range r.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}
