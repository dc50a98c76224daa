package runtime

import (
	"log/slog"
	"sync"
	"time"
)

// storeHealth is what the dispatchers of one runtime know of their
// provider's reachability, so that an outage reads as a few log lines
// instead of one per failed fetch of every dispatcher: the first failure
// is logged, then the 2nd, 4th, 8th... of the outage (across all
// dispatchers: about one line per backoff step), and the first success
// after it logs once how long the store was unreachable.
type storeHealth struct {
	logger *slog.Logger

	mu       sync.Mutex
	since    time.Time // the outage's first failure; zero while healthy
	failures int       // failed fetches in this outage, all dispatchers
}

// failed records a failed fetch of what by workerID and logs it when the
// outage's failure count is a power of two.
func (h *storeHealth) failed(workerID, what string, err error, backoff time.Duration) {
	h.mu.Lock()
	if h.since.IsZero() {
		h.since = time.Now()
	}
	h.failures++
	n, since := h.failures, h.since
	h.mu.Unlock()
	if n&(n-1) != 0 {
		return
	}
	h.logger.Warn("error fetching "+what+"; retrying with backoff", "worker_id", workerID, "error", err,
		"attempt", n, "backoff", backoff, "failing_for", time.Since(since).Round(time.Millisecond))
}

// ok records a successful fetch; the first after an outage logs its end.
func (h *storeHealth) ok() {
	h.mu.Lock()
	if h.since.IsZero() {
		h.mu.Unlock()
		return
	}
	since, n := h.since, h.failures
	h.since, h.failures = time.Time{}, 0
	h.mu.Unlock()
	h.logger.Info("store reachable again", "after", time.Since(since).Round(time.Millisecond), "failed_fetches", n)
}

// healthByQueue keeps one storeHealth per queue the dispatchers fetch from
// ("orchestration item", "work item"): a failure of one is not ended by a
// success of the other.
type healthByQueue struct {
	logger *slog.Logger
	mu     sync.Mutex
	queues map[string]*storeHealth
}

// of returns the storeHealth of the dispatchers that fetch what.
func (h *healthByQueue) of(what string) *storeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.queues[what]
	if !ok {
		s = &storeHealth{logger: h.logger}
		h.queues[what] = s
	}
	return s
}
