// Command fan_out_fan_in schedules ten activities at once, waits for all of
// them (Join) and sums their results.
//
//	go run ./examples/fan_out_fan_in
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	reg := runtime.NewRegistry()
	err := runtime.RegisterActivityTyped(reg, "Square", func(ctx *runtime.ActivityContext, n int) (int, error) {
		fmt.Printf("  activity Square(%d) on worker %s\n", n, ctx.WorkerID())
		return n * n, nil
	})
	if err == nil {
		err = runtime.RegisterOrchestrationTyped(reg, "SumOfSquares", func(ctx *runtime.OrchestrationContext, n int) (int, error) {
			futures := make([]*runtime.Future, 0, n)
			for i := 1; i <= n; i++ {
				f, err := runtime.ScheduleActivityTyped(ctx, "Square", i)
				if err != nil {
					return 0, err
				}
				futures = append(futures, f)
			}
			squares, err := runtime.JoinTyped[int](ctx, futures...)
			sum := 0
			for _, v := range squares {
				sum += v
			}
			return sum, err
		})
	}
	setup.Must(err)
	setup.Main("fan_out_fan_in", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		if err := runtime.StartOrchestrationTyped(ctx, c, "fan-1", "SumOfSquares", 10); err != nil {
			return err
		}
		sum, err := runtime.WaitForOrchestrationTyped[int](ctx, c, "fan-1", time.Minute)
		if err != nil {
			return err
		}
		fmt.Printf("sum of the squares of 1..10 = %d\n", sum)
		if sum != 385 {
			return fmt.Errorf("wrong sum %d", sum)
		}
		return nil
	})
}
