package providertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// longPollingCases ports duroxide's src/provider_validation/long_polling.rs; see README.md for
// the table from each Rust test to its Go function.
//
// duroxide chooses these tests per provider: a short-polling provider
// (SQLite) runs the short-poll ones, a long-polling provider the long-poll
// ones, and every provider the upper-bound one. Here the optional
// LongPollingReporter hook tells which kind a factory's providers are
// (short polling without it). On a long-polling provider the short-poll
// tests check the short-poll contract with a zero poll timeout, which a
// long-polling provider must honour by returning at once; on a
// short-polling provider the long-poll tests are skipped, with a message,
// because they do not apply.
var longPollingCases = []Case{
	{"test_short_poll_returns_immediately", ShortPollReturnsImmediately},
	{"test_long_poll_waits_for_timeout", LongPollWaitsForTimeout},
	{"test_fetch_respects_timeout_upper_bound", FetchRespectsTimeoutUpperBound},
	{"test_short_poll_work_item_returns_immediately", ShortPollWorkItemReturnsImmediately},
	{"test_long_poll_work_item_waits_for_timeout", LongPollWorkItemWaitsForTimeout},
}

// longPollTimeout is the poll timeout duroxide's long-polling tests pass.
const longPollTimeout = 500 * time.Millisecond

// shortPollTimeout is the poll timeout to pass when checking that a fetch
// with no work returns at once: duroxide's 500 ms, which a short-polling
// provider ignores, or zero for a long-polling provider.
func shortPollTimeout(f Factory) time.Duration {
	if supportsLongPolling(f) {
		return 0
	}
	return longPollTimeout
}

// requireLongPolling skips t unless f's providers long-poll.
func requireLongPolling(t *testing.T, f Factory) {
	t.Helper()
	if !supportsLongPolling(f) {
		t.Skip("skipped: applies only to long-polling providers; the factory reports short polling (LongPollingReporter absent or false)")
	}
}

// emptyFetch is one fetch on an empty provider: it reports whether the
// fetch returned nothing.
type emptyFetch func(t *testing.T, p duroxide.Provider, pollTimeout time.Duration) (none bool, err error)

// fetchOrchestrationEmpty is the emptyFetch of FetchOrchestrationItem.
func fetchOrchestrationEmpty(t *testing.T, p duroxide.Provider, pollTimeout time.Duration) (bool, error) {
	item, err := p.FetchOrchestrationItem(t.Context(), longLock, pollTimeout, nil)
	return item == nil, err
}

// fetchWorkEmpty is the emptyFetch of FetchWorkItem (default tag filter,
// no session).
func fetchWorkEmpty(t *testing.T, p duroxide.Provider, pollTimeout time.Duration) (bool, error) {
	item, err := p.FetchWorkItem(t.Context(), longLock, pollTimeout, nil, duroxide.TagFilterDefaultOnly())
	return item == nil, err
}

// timeEmptyFetch runs fetch on a fresh provider with pollTimeout, requires
// that it succeeds and returns nothing, and returns how long it took.
func timeEmptyFetch(t *testing.T, f Factory, fetch emptyFetch, pollTimeout time.Duration) time.Duration {
	t.Helper()
	p := f.NewProvider(t)
	start := time.Now()
	none, err := fetch(t, p, pollTimeout)
	elapsed := time.Since(start)
	require.NoError(t, err)
	require.True(t, none, "the queue should be empty")
	return elapsed
}

// requireShortPoll checks that fetch returns nothing within the factory's
// ShortPollThreshold.
func requireShortPoll(t *testing.T, f Factory, fetch emptyFetch) {
	t.Helper()
	threshold := f.ShortPollThreshold()
	elapsed := timeEmptyFetch(t, f, fetch, shortPollTimeout(f))
	require.Less(t, elapsed, threshold, "a short poll should return immediately (elapsed %v, threshold %v)", elapsed, threshold)
}

// requireLongPollWait checks that fetch on a long-polling provider waits
// at least its poll timeout before returning nothing.
func requireLongPollWait(t *testing.T, f Factory, fetch emptyFetch) {
	t.Helper()
	requireLongPolling(t, f)
	elapsed := timeEmptyFetch(t, f, fetch, longPollTimeout)
	require.GreaterOrEqual(t, elapsed, longPollTimeout, "a long poll should wait for the timeout")
}

// ShortPollReturnsImmediately checks that an orchestration fetch with no
// work returns nothing within the factory's ShortPollThreshold (duroxide's
// test_short_poll_returns_immediately).
func ShortPollReturnsImmediately(t *testing.T, f Factory) {
	requireShortPoll(t, f, fetchOrchestrationEmpty)
}

// LongPollWaitsForTimeout checks that a long-polling provider's
// orchestration fetch with no work waits at least the poll timeout
// (duroxide's test_long_poll_waits_for_timeout).
func LongPollWaitsForTimeout(t *testing.T, f Factory) {
	requireLongPollWait(t, f, fetchOrchestrationEmpty)
}

// FetchRespectsTimeoutUpperBound checks that an orchestration fetch with no
// work does not block much beyond its poll timeout, whatever the polling
// kind (duroxide's test_fetch_respects_timeout_upper_bound: 300 ms poll
// timeout, 200 ms tolerance; the tolerance here is the larger of 200 ms and
// the factory's ShortPollThreshold, the latency it declares for one call).
func FetchRespectsTimeoutUpperBound(t *testing.T, f Factory) {
	const pollTimeout = 300 * time.Millisecond
	tolerance := max(200*time.Millisecond, f.ShortPollThreshold())
	elapsed := timeEmptyFetch(t, f, fetchOrchestrationEmpty, pollTimeout)
	require.Less(t, elapsed, pollTimeout+tolerance, "the provider blocked too long")
}

// ShortPollWorkItemReturnsImmediately checks that a worker fetch with no
// work returns nothing within the factory's ShortPollThreshold (duroxide's
// test_short_poll_work_item_returns_immediately).
func ShortPollWorkItemReturnsImmediately(t *testing.T, f Factory) {
	requireShortPoll(t, f, fetchWorkEmpty)
}

// LongPollWorkItemWaitsForTimeout checks that a long-polling provider's
// worker fetch with no work waits at least the poll timeout (duroxide's
// test_long_poll_work_item_waits_for_timeout).
func LongPollWorkItemWaitsForTimeout(t *testing.T, f Factory) {
	requireLongPollWait(t, f, fetchWorkEmpty)
}
