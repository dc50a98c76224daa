// Command hello_world runs the smallest durable orchestration: it calls one
// activity and returns its result, then prints the history Cosmos DB holds
// for it.
//
//	go run ./examples/hello_world
//
// It is also the recipe of README's "Run your service locally": the
// account COSMOS_ENDPOINT and COSMOS_KEY name when they are set
// (cdb.ConfigFromEnv), otherwise the embedded emulator, started in this
// process, with nothing to install.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello_world:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg := cdb.ConfigFromEnv()
	where := "Cosmos DB account " + cfg.Endpoint
	if cfg.Endpoint == "" {
		// No account configured: the embedded emulator, in this process
		// (emulator.Options{DataDir: ...} would keep its data across runs).
		srv, err := emulator.Start(emulator.Options{})
		if err != nil {
			return err
		}
		defer srv.Close()
		cfg.Endpoint, cfg.Key, cfg.HTTPClient = srv.Endpoint(), srv.Key(), srv.HTTPClient()
		where = "the embedded Cosmos DB emulator at " + srv.Endpoint()
	}
	p, err := cdb.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Println("hello_world: running on", where)

	reg := runtime.NewRegistry()
	if err := reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	}); err != nil {
		return err
	}
	if err := reg.RegisterOrchestration("HelloWorld", func(ctx *runtime.OrchestrationContext, name string) (string, error) {
		return ctx.ScheduleActivity("Greet", name).Get()
	}); err != nil {
		return err
	}
	rt, err := runtime.Start(ctx, p, reg, runtime.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	defer rt.Shutdown(context.Background())

	// A fresh instance id each run: on an account, the container (and
	// the instances of earlier runs) stays.
	instance := "hello-" + time.Now().UTC().Format("20060102-150405.000")
	client := runtime.NewClient(p)
	if err := client.StartOrchestration(ctx, instance, "HelloWorld", "World"); err != nil {
		return err
	}
	st, err := client.WaitForOrchestration(ctx, instance, time.Minute)
	if err != nil {
		return err
	}
	if st.Kind != runtime.StatusCompleted {
		return fmt.Errorf("%s %s: %v", instance, st.Kind, st.Err())
	}
	fmt.Printf("orchestration %s completed: %q\n", instance, st.Output)
	history, err := client.ReadExecutionHistory(ctx, instance, 1)
	if err != nil {
		return err
	}
	fmt.Println("its history:")
	for _, ev := range history {
		fmt.Printf("  %d %s\n", ev.EventID, ev.Type())
	}
	return nil
}
