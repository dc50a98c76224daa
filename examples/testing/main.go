// Command testing shows how orchestrations are tested (main_test.go holds
// the tests): it runs two orders of the order service on Cosmos DB, then
// replays their histories, as a deployment check would, against the code
// as it is and against a change that renames an activity, and prints what
// the replayer (package runtimetest) reports.
//
//	go run ./examples/testing
//	go test ./examples/testing
//
// It uses COSMOS_ENDPOINT and COSMOS_KEY when set, and the embedded
// emulator otherwise.
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	setup.Main("testing", orders(), setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		if err := runtime.StartOrchestrationTyped(ctx, c, "order-1", "ProcessOrder", Order{ID: "1", Amount: 4_200}); err != nil {
			return err
		}
		if err := runtime.StartOrchestrationTyped(ctx, c, "order-2", "ProcessOrder", Order{ID: "2", Amount: 250_000}); err != nil {
			return err
		}
		// Approved at once, while the order is still reserving its
		// stock: the queue keeps the message until the order reads it.
		if err := c.EnqueueEvent(ctx, "order-2", "approval", "ann"); err != nil {
			return err
		}
		for _, id := range []string{"order-1", "order-2"} {
			out, err := setup.Completed(ctx, c, id)
			if err != nil {
				return err
			}
			fmt.Printf("%s completed: %s\n", id, out)
		}

		histories, err := runtimetest.ReadProvider(ctx, r.Provider, "order-1", "order-2")
		if err != nil {
			return err
		}
		if err := runtimetest.Replay(orders(), histories...); err != nil {
			return fmt.Errorf("the unchanged code does not replay: %w", err)
		}
		fmt.Println("replayed against the code as it is: every history replays")

		err = runtimetest.Replay(renamedCharge(), histories...)
		var nd *runtime.NondeterminismError
		if !errors.As(err, &nd) {
			return fmt.Errorf("the renamed activity went unnoticed: %v", err)
		}
		fmt.Printf("replayed against a change that renames ChargeCard to Charge:\n%v\n", err)
		return nil
	})
}

// renamedCharge is the order service after a change that breaks running
// orders: ChargeCard renamed to Charge.
func renamedCharge() *runtime.Registry {
	reg := runtime.NewRegistry()
	for _, name := range []string{"Reserve", "Charge", "Release", "Ship"} {
		must(reg.RegisterActivity(name, func(*runtime.ActivityContext, string) (string, error) { return "", nil }))
	}
	must(runtime.RegisterOrchestrationTyped(reg, "ProcessOrder", func(ctx *runtime.OrchestrationContext, o Order) (string, error) {
		if _, err := ctx.ScheduleActivity("Reserve", o.ID).Get(); err != nil {
			return "", err
		}
		if o.Amount >= approvalLimit {
			_, who, err := ctx.Select(ctx.DequeueEvent("approval"), ctx.ScheduleTimer(approvalTimeout))
			if err != nil {
				return "", err
			}
			ctx.SetCustomStatus("approved by " + who)
		}
		if _, err := ctx.ScheduleActivity("Charge", o.ID).Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("Ship", o.ID).Get()
	}))
	return reg
}
