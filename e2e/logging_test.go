package e2e_test

import (
	"log/slog"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// TestOneLoggerForProviderAndRuntime is README's recipe for one logging
// story: the provider logs through Config.Logger (zap) and the runtime
// through a slog handler over the same zap core (zapslog), so both halves'
// lines reach one sink: here the runtime's start line lands in the
// observer the provider logs to.
func TestOneLoggerForProviderAndRuntime(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := providerConfig()
	cfg.Logger = zap.New(core)
	p := openProvider(t, cfg)

	opts := options()
	opts.Logger = slog.New(zapslog.NewHandler(p.Logger().Core()))
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("Hello", func(*runtime.OrchestrationContext, string) (string, error) { return "hi", nil }))
	s := &sample{t: t, provider: p, client: runtime.NewClient(p)}
	s.ctx = t.Context()
	s.start(reg, opts)
	s.expectOutput("one-logger", "Hello", "", "hi")

	if logs.FilterMessage("duroxide runtime starting").Len() != 1 {
		t.Fatalf("the runtime's lines did not reach the provider's logger: %v", logs.All())
	}
}
