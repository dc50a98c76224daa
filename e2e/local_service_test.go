package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// runLocalService is README's "Run your service locally" as a program's
// run function: cfg as cdb.ConfigFromEnv returns it, and with no endpoint
// the embedded emulator, started in the process and keeping its data in
// dataDir across runs; then the provider, a runtime, and serve.
func runLocalService(ctx context.Context, cfg cdb.Config, dataDir string, serve func(context.Context, *runtime.Client) error) error {
	if cfg.Endpoint == "" {
		srv, err := emulator.Start(emulator.Options{DataDir: dataDir})
		if err != nil {
			return err
		}
		defer srv.Close()
		cfg.Endpoint, cfg.Key, cfg.HTTPClient = srv.Endpoint(), srv.Key(), srv.HTTPClient()
	}
	p, err := cdb.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	reg := runtime.NewRegistry()
	if err := reg.RegisterActivity("Ship", func(_ *runtime.ActivityContext, order string) (string, error) {
		return order + " shipped", nil
	}); err != nil {
		return err
	}
	if err := reg.RegisterOrchestration("Order", func(ctx *runtime.OrchestrationContext, order string) (string, error) {
		return ctx.ScheduleActivity("Ship", order).Get()
	}); err != nil {
		return err
	}
	rt, err := runtime.Start(ctx, p, reg, runtime.Options{PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer rt.Shutdown(context.Background())
	return serve(ctx, runtime.NewClient(p))
}

// TestServiceRunsLocallyOnTheEmbeddedEmulator runs the recipe twice on one
// data directory, as a developer restarts a service: the first run
// completes an order, the second, a new process's worth of emulator,
// provider and runtime, still finds it completed.
func TestServiceRunsLocallyOnTheEmbeddedEmulator(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	must(t, runLocalService(ctx, cdb.Config{}, dir, func(ctx context.Context, c *runtime.Client) error {
		if err := c.StartOrchestration(ctx, "order-1", "Order", "order-1"); err != nil {
			return err
		}
		st, err := c.WaitForOrchestration(ctx, "order-1", 30*time.Second)
		if err != nil {
			return err
		}
		if st.Output != "order-1 shipped" {
			return fmt.Errorf("first run: %+v", st)
		}
		return nil
	}))
	must(t, runLocalService(ctx, cdb.Config{}, dir, func(ctx context.Context, c *runtime.Client) error {
		st, err := c.GetOrchestrationStatus(ctx, "order-1")
		if err != nil {
			return err
		}
		if st.Kind != runtime.StatusCompleted || st.Output != "order-1 shipped" {
			return fmt.Errorf("after the restart: %+v", st)
		}
		return nil
	}))
}
