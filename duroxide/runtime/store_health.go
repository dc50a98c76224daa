package runtime

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// storeHealth is what the dispatchers of one runtime know of their
// provider's reachability, so that an outage reads as a few log lines
// instead of one per failed fetch of every dispatcher: the first failure
// is logged, then the 2nd, 4th, 8th... of the outage (across all
// dispatchers: about one line per backoff step), and the first success
// after it logs once how long the store was unreachable. On a provider
// that logs its store's outages itself (duroxide.StoreHealthReporter)
// these lines are Debug: the provider's are the true ones.
type storeHealth struct {
	logger *slog.Logger
	// quiet logs retryable failures and the recovery at Debug: the
	// provider reports its store's health itself.
	quiet bool

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
	level := slog.LevelWarn
	if h.quiet && retryable(err) {
		level = slog.LevelDebug
	}
	h.logger.Log(context.Background(), level, "error fetching "+what+"; retrying with backoff", "worker_id", workerID, "error", err,
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
	level := slog.LevelInfo
	if h.quiet {
		level = slog.LevelDebug
	}
	h.logger.Log(context.Background(), level, "store reachable again", "after", time.Since(since).Round(time.Millisecond), "failed_fetches", n)
}

// healthByQueue keeps one storeHealth per queue the dispatchers fetch from
// ("orchestration item", "work item"): a failure of one is not ended by a
// success of the other.
type healthByQueue struct {
	logger *slog.Logger
	// quiet: the provider reports its store's health itself
	// (duroxide.StoreHealthReporter); see storeHealth.
	quiet  bool
	mu     sync.Mutex
	queues map[string]*storeHealth
}

// of returns the storeHealth of the dispatchers that fetch what.
func (h *healthByQueue) of(what string) *storeHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.queues[what]
	if !ok {
		s = &storeHealth{logger: h.logger, quiet: h.quiet}
		h.queues[what] = s
	}
	return s
}

// retryable reports whether err is a retryable *duroxide.ProviderError
// (a permanent one is logged at Warn even when the provider reports its
// store's health: it may not be the store's).
func retryable(err error) bool {
	var pe *duroxide.ProviderError
	return errors.As(err, &pe) && pe.Retryable
}
