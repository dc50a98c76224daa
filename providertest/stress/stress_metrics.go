package stress

import (
	goruntime "runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// Measurements of a stress run besides the counts: per-orchestration
// latency statistics and the peak live heap.

// stressHeapSampleInterval is how often the heap sampler reads the heap.
const stressHeapSampleInterval = 50 * time.Millisecond

// heapObjectsMetric is the runtime/metrics name of the bytes held by heap
// objects, live and not yet swept.
const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

// latencyStats returns the mean and the 95th percentile (nearest rank) of
// ds; zero for none.
func latencyStats(ds []time.Duration) (avg, p95 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	rank := (95*len(sorted) + 99) / 100 // ceil(0.95 n), 1-based
	return sum / time.Duration(len(sorted)), sorted[rank-1]
}

// heapSampler records the peak heap from its start until stop.
type heapSampler struct {
	done     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	mu       sync.Mutex
	peak     uint64
	sample   []metrics.Sample
}

// startHeapSampler collects garbage (so runs start from the same baseline)
// and samples the heap every interval until stop.
func startHeapSampler(interval time.Duration) *heapSampler {
	goruntime.GC()
	h := &heapSampler{done: make(chan struct{}), sample: []metrics.Sample{{Name: heapObjectsMetric}}}
	h.read()
	h.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				h.read()
			}
		}
	})
	return h
}

// read takes one sample.
func (h *heapSampler) read() {
	h.mu.Lock()
	defer h.mu.Unlock()
	metrics.Read(h.sample)
	if v := h.sample[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > h.peak {
		h.peak = v.Uint64()
	}
}

// stop ends sampling (the first call; later calls only read) and returns
// the peak in bytes.
func (h *heapSampler) stop() uint64 {
	h.stopOnce.Do(func() {
		close(h.done)
		h.wg.Wait()
		h.read()
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}
