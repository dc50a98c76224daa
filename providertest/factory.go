package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Factory creates the providers the validation suite runs against
// (duroxide's provider_validation::ProviderFactory).
//
// Each call of NewProvider returns a fresh provider whose state is isolated
// from every other provider the factory returned (its own database, its own
// container or its own instance-id namespace), so that tests run in
// parallel. The factory registers the provider's cleanup with t.Cleanup.
// A factory that cannot create a provider fails t with t.Fatal.
type Factory interface {
	// NewProvider returns a fresh, isolated provider for test t.
	NewProvider(t testing.TB) duroxide.Provider
	// LockTimeout is the lock timeout the suite passes to fetches; the
	// lock-expiry tests sleep for about this long, so a short one (such as
	// 1 s) keeps the suite fast. duroxide's default is 5 s.
	LockTimeout() time.Duration
	// ShortPollThreshold is how fast a fetch with a zero poll timeout must
	// return when there is no work (duroxide's default: 100 ms; remote
	// databases need more).
	ShortPollThreshold() time.Duration
}

// HistoryCorrupter is the optional hook duroxide calls
// corrupt_instance_history: it replaces every stored history event of
// instance in provider p with data that cannot be decoded. The
// deserialization-contract tests need it and are skipped, with a message
// naming the hook, when the factory lacks it.
type HistoryCorrupter interface {
	// CorruptInstanceHistory overwrites instance's stored history in p with
	// undecodable data; it fails t when it cannot.
	CorruptInstanceHistory(ctx context.Context, t testing.TB, p duroxide.Provider, instance string)
}

// AttemptCountReader is the optional hook duroxide calls
// get_max_attempt_count: the highest attempt count among instance's
// orchestrator-queue messages in provider p. Tests that need it are skipped,
// with a message naming the hook, when the factory lacks it.
type AttemptCountReader interface {
	// MaxAttemptCount returns the highest attempt count among instance's
	// orchestrator-queue messages in p (0 when it has none); it fails t
	// when it cannot read them.
	MaxAttemptCount(ctx context.Context, t testing.TB, p duroxide.Provider, instance string) uint32
}

// LongPollingReporter is the optional hook telling the suite whether the
// provider long-polls (waits up to the poll timeout for work). duroxide's
// factory has no such method: its long-polling tests are chosen per
// provider (SQLite runs the short-poll ones). A factory without the hook
// is treated as a short-polling provider; the tests that apply only to the
// other kind are then skipped with a message saying so.
type LongPollingReporter interface {
	// SupportsLongPolling reports whether a fetch waits up to its poll
	// timeout for work instead of returning at once.
	SupportsLongPolling() bool
}
