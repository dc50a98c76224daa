package cdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestCallsAfterClose closes a provider and checks that no goroutine
// it started remains, and that calls made after Close fail with a clear
// error instead of hanging or panicking.
func TestCallsAfterClose(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	baseline := goroutines()
	p, _ := c.process(t, func(cfg *cdb.Config) {
		cfg.DisableReconciler = false
		cfg.ReconcilerInterval = 10 * time.Millisecond
	})
	startAndAckFirst(t, p, "closing")
	polling := make(chan error, 1)
	go func() {
		_, err := p.FetchOrchestrationItem(ctx, longLock, time.Hour, nil)
		polling <- err
	}()
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	select {
	case <-polling:
	case <-time.After(30 * time.Second):
		t.Fatal("a long-polling fetch outlived Close")
	}
	requireGoroutinesBack(t, baseline)

	calls := map[string]func() error{
		"EnqueueForOrchestrator": func() error { return p.EnqueueForOrchestrator(ctx, raised("closing", "e", "d"), 0) },
		"FetchOrchestrationItem": func() error { _, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil); return err },
		"FetchWorkItem": func() error {
			_, err := p.FetchWorkItem(ctx, longLock, 0, nil, duroxide.TagFilterDefaultOnly())
			return err
		},
		"Read":            func() error { _, err := p.Read(ctx, "closing"); return err },
		"ReconcileOutbox": func() error { _, err := p.ReconcileOutbox(ctx); return err },
		"ListInstances":   func() error { _, err := p.ListInstances(ctx); return err },
	}
	for what, fn := range calls {
		var err error
		require.NotPanics(t, func() { err = fn() }, what)
		var pe *duroxide.ProviderError
		require.True(t, errors.As(err, &pe), "%s after Close: %v", what, err)
		assert.False(t, pe.Retryable, "%s after Close is not worth retrying", what)
		assert.Contains(t, pe.Message, "closed", what)
	}
}
