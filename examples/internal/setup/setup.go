// Package setup connects the examples to Cosmos DB the way README's "Run
// your service locally" does: the account named by COSMOS_ENDPOINT and
// COSMOS_KEY when they are set (cdb.ConfigFromEnv), otherwise the embedded
// emulator started in the process, so that every example runs with no
// setup.
package setup

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// Env is a provider on a fresh container plus what to close at the end.
type Env struct {
	// Provider is the Cosmos DB provider on the run's container.
	Provider *cdb.Provider
	// Where describes the account for the example's output.
	Where string
	emu   *emulator.Server // nil on an account
}

// Open connects to the account (or starts the embedded emulator) and
// creates a container for this run (named after the example, with a
// random suffix so that runs never collide). On an account the container
// is deleted by Close.
func Open(ctx context.Context, example string) (*Env, error) {
	cfg := cdb.ConfigFromEnv()
	e := &Env{Where: "Cosmos DB account " + cfg.Endpoint}
	if cfg.Endpoint == "" {
		srv, err := emulator.Start(emulator.Options{})
		if err != nil {
			return nil, fmt.Errorf("start the embedded Cosmos DB emulator: %w", err)
		}
		e.emu, e.Where = srv, "the embedded Cosmos DB emulator at "+srv.Endpoint()
		cfg.Endpoint, cfg.Key, cfg.HTTPClient = srv.Endpoint(), srv.Key(), srv.HTTPClient()
	}
	cfg.Container = example + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	p, err := cdb.New(ctx, cfg)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("open the Cosmos DB provider: %w", err)
	}
	e.Provider = p
	return e, nil
}

// Close closes the provider, deletes the run's container on an account
// and stops the emulator.
func (e *Env) Close() {
	if e.Provider != nil {
		if e.emu == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = e.Provider.Container().Delete(ctx, nil)
		}
		_ = e.Provider.Close()
	}
	if e.emu != nil {
		_ = e.emu.Close()
	}
}

// Options are the runtime options of the examples: quick polling, so that
// each example finishes in about a second.
func Options() runtime.Options {
	return runtime.Options{PollInterval: 10 * time.Millisecond}
}

// Run is what an example's body receives.
type Run struct {
	// Provider is the Cosmos DB provider, for starting more runtimes.
	Provider *cdb.Provider
	// Client starts and observes orchestrations.
	Client *runtime.Client
}

// Main runs an example: it opens the environment, starts a runtime with reg
// and opts, calls run, shuts everything down, and exits 1 on any error (0
// otherwise).
func Main(example string, reg *runtime.Registry, opts runtime.Options, run func(ctx context.Context, r Run) error) {
	if err := mainErr(example, reg, opts, run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", example, err)
		os.Exit(1)
	}
}

func mainErr(example string, reg *runtime.Registry, opts runtime.Options, run func(ctx context.Context, r Run) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := Open(ctx, example)
	if err != nil {
		return err
	}
	defer env.Close()
	fmt.Printf("%s: running on %s\n", example, env.Where)
	rt, err := runtime.Start(ctx, env.Provider, reg, opts)
	if err != nil {
		return err
	}
	runErr := run(ctx, Run{Provider: env.Provider, Client: runtime.NewClient(env.Provider)})
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelShutdown()
	if err := rt.Shutdown(shutdownCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("shutdown: %w", err)
	}
	return runErr
}

// Must exits the example with err's message when err is not nil (for
// registration errors in main).
func Must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Completed waits for instance and returns its output, or an error when it
// failed or did not finish within a minute.
func Completed(ctx context.Context, c *runtime.Client, instance string) (string, error) {
	st, err := c.WaitForOrchestration(ctx, instance, time.Minute)
	if err != nil {
		return "", fmt.Errorf("wait for %s: %w", instance, err)
	}
	if st.Kind != runtime.StatusCompleted {
		return "", fmt.Errorf("%s %s: %s", instance, st.Kind, st.Err())
	}
	return st.Output, nil
}
