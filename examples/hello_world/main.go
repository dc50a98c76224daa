// Command hello_world runs the smallest durable orchestration: it calls one
// activity and returns its result, then prints the history Cosmos DB holds
// for it.
//
//	go run ./examples/hello_world
//
// It uses COSMOS_ENDPOINT and COSMOS_KEY when set, and the embedded
// emulator otherwise.
package main

import (
	"context"
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	reg := runtime.NewRegistry()
	setup.Must(reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	}))
	setup.Must(reg.RegisterOrchestration("HelloWorld", func(ctx *runtime.OrchestrationContext, name string) (string, error) {
		return ctx.ScheduleActivity("Greet", name).Get()
	}))
	setup.Main("hello_world", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		if err := c.StartOrchestration(ctx, "hello-1", "HelloWorld", "World"); err != nil {
			return err
		}
		out, err := setup.Completed(ctx, c, "hello-1")
		if err != nil {
			return err
		}
		fmt.Printf("orchestration hello-1 completed: %q\n", out)
		history, err := c.ReadExecutionHistory(ctx, "hello-1", 1)
		if err != nil {
			return err
		}
		fmt.Println("its history:")
		for _, ev := range history {
			fmt.Printf("  %d %s\n", ev.EventID, ev.Type())
		}
		return nil
	})
}
