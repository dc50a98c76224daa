package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// defaultMemoryLockTimeout is the MemoryFactory's lock timeout when none is
// configured: short, so the lock-expiry tests finish quickly.
const defaultMemoryLockTimeout = time.Second

// MemoryFactory is the Factory of the reference in-memory provider: every
// NewProvider call returns a new, empty MemoryProvider. It implements both
// optional hooks (HistoryCorrupter and AttemptCountReader) and reports
// long polling (LongPollingReporter). The zero value is ready to use.
type MemoryFactory struct {
	// Timeout is the lock timeout the suite uses; zero means 1 s.
	Timeout time.Duration
	// Options configure every provider the factory creates.
	Options memory.MemoryOptions
}

// Compile-time checks of the hooks MemoryFactory offers.
var (
	_ Factory             = MemoryFactory{}
	_ HistoryCorrupter    = MemoryFactory{}
	_ AttemptCountReader  = MemoryFactory{}
	_ LongPollingReporter = MemoryFactory{}
)

// NewProvider returns a fresh, empty MemoryProvider.
func (f MemoryFactory) NewProvider(t testing.TB) duroxide.Provider {
	return memory.NewMemoryProvider(f.Options)
}

// LockTimeout returns Timeout, or 1 s when it is zero.
func (f MemoryFactory) LockTimeout() time.Duration {
	if f.Timeout > 0 {
		return f.Timeout
	}
	return defaultMemoryLockTimeout
}

// ShortPollThreshold returns duroxide's default, 100 ms: the provider is
// in-process.
func (f MemoryFactory) ShortPollThreshold() time.Duration { return 100 * time.Millisecond }

// SupportsLongPolling returns true: fetches wait for work up to their poll
// timeout.
func (f MemoryFactory) SupportsLongPolling() bool { return true }

// CorruptInstanceHistory makes every stored history event of instance
// undecodable; p must be a *MemoryProvider.
func (f MemoryFactory) CorruptInstanceHistory(ctx context.Context, t testing.TB, p duroxide.Provider, instance string) {
	t.Helper()
	memoryProvider(t, p).CorruptHistory(instance)
}

// MaxAttemptCount returns the highest attempt count among instance's
// orchestrator messages; p must be a *MemoryProvider.
func (f MemoryFactory) MaxAttemptCount(ctx context.Context, t testing.TB, p duroxide.Provider, instance string) uint32 {
	t.Helper()
	return memoryProvider(t, p).MaxAttemptCount(instance)
}

func memoryProvider(t testing.TB, p duroxide.Provider) *memory.MemoryProvider {
	t.Helper()
	mp, ok := p.(*memory.MemoryProvider)
	if !ok {
		t.Fatalf("MemoryFactory hook called with a %T, not a *MemoryProvider", p)
	}
	return mp
}
