package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// TestAStatusReadAcrossTheFirstTurnsCommitIsNotNotFound checks
// GetOrchestrationStatus when the instance's first turn commits between
// its history read (no start yet: the start is still queued) and its
// metadata read (running, or already finished: not pending): the status
// is the one the history shows once read again, not NotFound (a service
// checking its starts right after a restart, while its runtime runs them,
// saw a started instance as NotFound).
func TestAStatusReadAcrossTheFirstTurnsCommitIsNotNotFound(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewMemoryProvider(memory.MemoryOptions{})
	rt, err := runtime.Start(ctx, mem, statusRegistry(t), statusOptions())
	require.NoError(t, err)
	defer func() { _ = rt.Shutdown(context.Background()) }()
	raw := runtime.NewClient(mem)
	require.NoError(t, raw.StartOrchestration(ctx, "hello", "Hello", "world"))
	want, err := raw.WaitForOrchestration(ctx, "hello", waitTimeout)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusCompleted, want.Kind)

	p := &beforeFirstTurnProvider{Provider: mem, admin: mem}
	p.early.Store(true)
	st, err := runtime.NewClient(p).GetOrchestrationStatus(ctx, "hello")
	require.NoError(t, err)
	require.Equal(t, want, st)
}

// beforeFirstTurnProvider answers its first Read, while early is set, with
// the empty history of an instance whose start has not run yet, as a read
// just before the first turn committed does.
type beforeFirstTurnProvider struct {
	duroxide.Provider
	admin duroxide.ProviderAdmin
	early atomic.Bool
}

func (p *beforeFirstTurnProvider) ManagementCapability() duroxide.ProviderAdmin { return p.admin }

func (p *beforeFirstTurnProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	if p.early.CompareAndSwap(true, false) {
		return nil, nil
	}
	return p.Provider.Read(ctx, instance)
}
