package runtime

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Sticky cache tests at the turn level: a processor with a cache decides
// the same turns as one without, byte for byte, and falls back to a full
// replay whenever the fetched item is not what the cached execution
// consumed.

// stickyClock is the fixed clock of the sticky tests, so that two
// processors stamp the same events with the same times.
func stickyClock() time.Time { return time.UnixMilli(1_700_000_000_000) }

// stickyPair is a processor with a sticky cache and one without, on one
// registry, with the sticky cache's metrics on a manual reader.
type stickyPair struct {
	cached, plain *turnProcessor
	reader        *sdkmetric.ManualReader
	starts        *atomic.Int64 // how many times the orchestration function began
}

// newStickyPair registers "Seq" (n activities "A" one after the other,
// n the input; the output is the last result) and "Waits" (an activity,
// then the external event "go", then an activity, returning the event's
// data).
func newStickyPair(t *testing.T, size int, maxBytes int64) *stickyPair {
	t.Helper()
	starts := &atomic.Int64{}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m := newRuntimeMetrics(mp, nil, (&Options{}).mustDefaults().Logger)
	register := func(r *Registry) {
		_ = r.RegisterOrchestration("Seq", func(ctx *OrchestrationContext, in string) (string, error) {
			starts.Add(1)
			n, _ := strconv.Atoi(in)
			x := "0"
			for range n {
				var err error
				if x, err = ctx.ScheduleActivity("A", x).Get(); err != nil {
					return "", err
				}
			}
			return x, nil
		})
		_ = r.RegisterOrchestration("Waits", func(ctx *OrchestrationContext, in string) (string, error) {
			starts.Add(1)
			if _, err := ctx.ScheduleActivity("A", in).Get(); err != nil {
				return "", err
			}
			ev, err := ctx.ScheduleWait("go").Get()
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("seen", ev)
			return ctx.ScheduleActivity("A", ev).Get()
		})
	}
	cached := testProcessor(t, register)
	cached.now = stickyClock
	cached.metrics = m
	cached.sticky = newStickyCache(size, maxBytes, m)
	t.Cleanup(cached.sticky.close)
	plain := testProcessor(t, register)
	plain.now = stickyClock
	return &stickyPair{cached: cached, plain: plain, reader: reader, starts: starts}
}

// decideBoth decides it on both processors, requires the same decision
// byte for byte, and returns it.
func (sp *stickyPair) decideBoth(t *testing.T, it *duroxide.OrchestrationItem) turnDecision {
	t.Helper()
	d := sp.cached.decide(it)
	full := sp.plain.decide(it)
	a, err := decisionJSON(d)
	require.NoError(t, err)
	b, err := decisionJSON(full)
	require.NoError(t, err)
	require.True(t, bytes.Equal(a, b), "with the cache:\n%s\nwithout:\n%s", a, b)
	return d
}

// counter returns the value of the sticky counter name with reason ("" for
// none).
func (sp *stickyPair) counter(t *testing.T, name, reason string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, sp.reader.Collect(context.Background(), &rm))
	var total int64
	for _, s := range rm.ScopeMetrics {
		for _, m := range s.Metrics {
			if m.Name != name {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if r, _ := dp.Attributes.Value(attribute.Key("reason")); reason == "" || r.AsString() == reason {
					total += dp.Value
				}
			}
		}
	}
	return total
}

// activityDone answers the activity the decision scheduled.
func activityDone(t *testing.T, d turnDecision, result string) duroxide.WorkItem {
	t.Helper()
	require.Len(t, d.ack.workerItems, 1)
	a := d.ack.workerItems[0].Kind.(duroxide.ActivityExecuteItem)
	return actDoneMsg(a.ID, result)
}

func TestStickyResumesEachTurnWithOnlyItsNewEvents(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	const n = 20
	d := sp.decideBoth(t, item("seq", 1, nil, startMsg("seq", "Seq", strconv.Itoa(n))))
	history := d.ack.historyDelta
	for i := 1; i <= n; i++ {
		d = sp.decideBoth(t, item("seq", 1, history, activityDone(t, d, strconv.Itoa(i))))
		history = slices.Concat(history, d.ack.historyDelta)
	}
	require.Equal(t, duroxide.StatusCompleted, *d.ack.metadata.Status)
	assert.Equal(t, strconv.Itoa(n), *d.ack.metadata.Output)
	// The plain processor began the function once per turn; the cached one
	// once in all.
	assert.Equal(t, int64(n+1)+1, sp.starts.Load())
	assert.Equal(t, int64(n), sp.counter(t, metricStickyHits, ""))
	assert.Zero(t, sp.counter(t, metricStickyMisses, ""))
	assert.Zero(t, sp.cached.sticky.len(), "a completed execution is not kept")
}

func TestStickyReplaysInFullWhenTheHistoryIsNotWhatItConsumed(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	d1 := sp.decideBoth(t, item("h", 1, nil, startMsg("h", "Seq", "3")))
	h1 := d1.ack.historyDelta
	d2 := sp.decideBoth(t, item("h", 1, h1, activityDone(t, d1, "1")))
	h2 := slices.Concat(h1, d2.ack.historyDelta)

	// Another process committed the third turn: the history is longer
	// than what the cached execution consumed.
	d3 := sp.plain.decide(item("h", 1, h2, activityDone(t, d2, "2")))
	h3 := slices.Concat(h2, d3.ack.historyDelta)
	startsBefore := sp.starts.Load()
	sp.decideBoth(t, item("h", 1, h3, activityDone(t, d3, "3")))
	assert.Equal(t, startsBefore+2, sp.starts.Load(), "both processors replayed from the first event")
	assert.Equal(t, int64(1), sp.counter(t, metricStickyMisses, stickyMissHistory))

	// The same length, but the last event is not the one it wrote (another
	// process's turn with a different timestamp).
	sp2 := newStickyPair(t, 10, 1<<20)
	e1 := sp2.decideBoth(t, item("t", 1, nil, startMsg("t", "Seq", "2")))
	altered := slices.Clone(e1.ack.historyDelta)
	altered[len(altered)-1].TimestampMs++
	startsBefore = sp2.starts.Load()
	sp2.decideBoth(t, item("t", 1, altered, activityDone(t, e1, "1")))
	assert.Equal(t, startsBefore+2, sp2.starts.Load())
	assert.Equal(t, int64(1), sp2.counter(t, metricStickyMisses, stickyMissHistory))

	// A KV snapshot that is not the execution's seed.
	sp3 := newStickyPair(t, 10, 1<<20)
	f1 := sp3.decideBoth(t, item("k", 1, nil, startMsg("k", "Seq", "2")))
	it := item("k", 1, f1.ack.historyDelta, activityDone(t, f1, "1"))
	it.KVSnapshot = map[string]duroxide.KvEntry{"x": {Value: "y", LastUpdatedAtMs: 1}}
	sp3.decideBoth(t, it)
	assert.Equal(t, int64(1), sp3.counter(t, metricStickyMisses, stickyMissKV))
}

func TestStickyReplaysInFullAfterARegistryChange(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	d1 := sp.decideBoth(t, item("r", 1, nil, startMsg("r", "Seq", "2")))
	require.NoError(t, sp.cached.registry.RegisterOrchestrationVersion("Seq", "2.0.0", func(*OrchestrationContext, string) (string, error) { return "", nil }))
	sp.decideBoth(t, item("r", 1, d1.ack.historyDelta, activityDone(t, d1, "1")))
	assert.Equal(t, int64(1), sp.counter(t, metricStickyMisses, stickyMissRegistry))
}

func TestStickyCacheEvictsPastItsSizeAndItsBytes(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 2, 1<<20)
	for _, id := range []string{"a", "b", "c"} {
		sp.decideBoth(t, item(id, 1, nil, startMsg(id, "Seq", "5")))
	}
	assert.Equal(t, 2, sp.cached.sticky.len())
	assert.False(t, sp.cached.sticky.has("a"), "the least recently used goes first")
	assert.Equal(t, int64(1), sp.counter(t, metricStickyEvictions, stickyEvictSize))

	// One execution takes the 8 KiB overhead plus its events: a 9 KiB
	// bound keeps one small execution, not two.
	small := newStickyPair(t, 10, 9<<10)
	small.decideBoth(t, item("x", 1, nil, startMsg("x", "Seq", "5")))
	small.decideBoth(t, item("y", 1, nil, startMsg("y", "Seq", "5")))
	assert.Equal(t, 1, small.cached.sticky.len())
	assert.True(t, small.cached.sticky.has("y"))
	assert.Equal(t, int64(1), small.counter(t, metricStickyEvictions, stickyEvictBytes))

	// An execution over the bound alone is not kept.
	tiny := newStickyPair(t, 10, 1<<10)
	tiny.decideBoth(t, item("z", 1, nil, startMsg("z", "Seq", "5")))
	assert.Zero(t, tiny.cached.sticky.len())
}

func TestStickyDetectsNondeterminismOnAResumedExecution(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	d1 := sp.decideBoth(t, item("nd", 1, nil, startMsg("nd", "Seq", "3")))
	require.True(t, sp.cached.sticky.has("nd"))
	scheduled := d1.ack.workerItems[0].Kind.(duroxide.ActivityExecuteItem).ID
	// A timer fires for the id of an activity: the new event does not match
	// what the resumed code scheduled.
	d2 := sp.decideBoth(t, item("nd", 1, d1.ack.historyDelta, timerMsg(scheduled)))
	require.Equal(t, duroxide.StatusFailed, *d2.ack.metadata.Status)
	assert.Contains(t, *d2.ack.metadata.Output, "nondeterministic")
	assert.Equal(t, int64(1), sp.counter(t, metricStickyHits, ""), "it was resumed")
	assert.Zero(t, sp.cached.sticky.len(), "a failed execution is not kept")
}

func TestStickyResumedWaitMatchesAFullReplay(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	d := sp.decideBoth(t, item("w", 1, nil, startMsg("w", "Waits", "in")))
	history := d.ack.historyDelta
	d = sp.decideBoth(t, item("w", 1, history, activityDone(t, d, "a1")))
	history = slices.Concat(history, d.ack.historyDelta)
	// An event nobody waits for yet, then the one the wait takes.
	d = sp.decideBoth(t, item("w", 1, history, msg(duroxide.ExternalRaisedItem{Instance: "w", Name: "go", Data: "now"})))
	history = slices.Concat(history, d.ack.historyDelta)
	d = sp.decideBoth(t, item("w", 1, history, activityDone(t, d, "done")))
	require.Equal(t, duroxide.StatusCompleted, *d.ack.metadata.Status)
	assert.Equal(t, int64(3), sp.counter(t, metricStickyHits, ""))
}

func TestStickyVerifyComparesResumedTurnsWithAFullReplay(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	var checked atomic.Int64
	sp.cached.verify = func(instance string, err error) {
		assert.NoError(t, err, instance)
		checked.Add(1)
	}
	d := sp.decideBoth(t, item("v", 1, nil, startMsg("v", "Seq", "3")))
	history := d.ack.historyDelta
	for i := 1; i <= 3; i++ {
		d = sp.decideBoth(t, item("v", 1, history, activityDone(t, d, strconv.Itoa(i))))
		history = slices.Concat(history, d.ack.historyDelta)
	}
	assert.Equal(t, int64(3), checked.Load())
}

func TestStickyCacheCloseReleasesTheParkedGoroutines(t *testing.T) {
	t.Parallel()
	sp := newStickyPair(t, 10, 1<<20)
	sp.decideBoth(t, item("g1", 1, nil, startMsg("g1", "Seq", "5")))
	sp.decideBoth(t, item("g2", 1, nil, startMsg("g2", "Waits", "x")))
	var runs []*replayRun
	for _, id := range []string{"g1", "g2"} {
		e := sp.cached.sticky.take(id)
		require.NotNil(t, e)
		runs = append(runs, e.run)
		sp.cached.sticky.put(e)
	}
	sp.cached.sticky.close()
	for _, r := range runs {
		select {
		case <-r.co.exited:
		case <-time.After(10 * time.Second):
			t.Fatal("a cached execution's goroutine is still running after close")
		}
	}
	assert.Equal(t, int64(2), sp.counter(t, metricStickyEvictions, stickyEvictShutdown))
	// A put after close releases at once.
	sp.cached.sticky.put(&stickyEntry{instance: "late", run: runs[0]})
	assert.Zero(t, sp.cached.sticky.len())
}

func TestStickyVerifyReportsAResumedTurnThatAFullReplayDecidesOtherwise(t *testing.T) {
	t.Parallel()
	var changed atomic.Bool
	p := testProcessor(t, func(r *Registry) {
		_ = r.RegisterOrchestration("Drifts", func(ctx *OrchestrationContext, _ string) (string, error) {
			name := "A"
			if changed.Load() {
				name = "B" // the code changed under a suspended execution
			}
			if _, err := ctx.ScheduleActivity(name, "").Get(); err != nil {
				return "", err
			}
			return ctx.ScheduleActivity("C", "").Get()
		})
	})
	p.now = stickyClock
	p.sticky = newStickyCache(10, 1<<20, nil)
	t.Cleanup(p.sticky.close)
	var reports []error
	p.verify = func(_ string, err error) { reports = append(reports, err) }
	d1 := p.decide(item("d", 1, nil, startMsg("d", "Drifts", "")))
	changed.Store(true)
	d2 := p.decide(item("d", 1, d1.ack.historyDelta, activityDone(t, d1, "a")))
	require.Len(t, reports, 1)
	require.Error(t, reports[0])
	assert.Contains(t, reports[0].Error(), "the full replay")
	require.Equal(t, duroxide.StatusFailed, *d2.ack.metadata.Status, "the full replay's decision is committed")
	assert.Zero(t, p.sticky.len(), "the execution that disagreed is dropped")
}
