package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// With Options.Logger nil, the runtime's warnings reach slog.Default(), as
// Go users expect of a library that logs through log/slog.
func TestNilLoggerWarningsReachSlogDefault(t *testing.T) { // not parallel: replaces slog's default logger
	var out lockedBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	e := newEnv(t)
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Calls", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		return ctx.ScheduleActivity("NotRegistered", "").Get()
	}))
	opts := fastOptions()
	opts.Logger = nil
	e.start(reg, opts)
	if err := e.client.StartOrchestration(e.ctx, "log-1", "Calls", ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	for !strings.Contains(out.String(), "activity not registered") {
		select {
		case <-ctx.Done():
			t.Fatalf("no warning about the unregistered activity reached slog.Default(); got %q", out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
