// Command continue_as_new runs an eternal orchestration that keeps its
// history short: each execution processes one batch, then continues as new
// with the next batch number, carrying its custom status forward; after
// five batches it completes. The executions are listed at the end.
//
//	go run ./examples/continue_as_new
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

const batches = 5

func main() {
	reg := runtime.NewRegistry()
	err := errors.Join(
		reg.RegisterActivity("ProcessBatch", func(_ *runtime.ActivityContext, n string) (string, error) {
			return "batch " + n + " done", nil
		}),
		reg.RegisterOrchestration("Eternal", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			n, err := strconv.Atoi(in)
			if err != nil {
				return "", fmt.Errorf("bad batch number %q: %w", in, err)
			}
			res, err := ctx.ScheduleActivity("ProcessBatch", in).Get()
			if err != nil {
				return "", err
			}
			done, _ := ctx.CustomStatus() // carried over from the previous execution
			ctx.SetCustomStatus(done + "#")
			if n+1 < batches {
				return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
			}
			status, _ := ctx.CustomStatus()
			return fmt.Sprintf("%s; progress %s", res, status), nil
		}),
	)
	setup.Must(err)
	setup.Main("continue_as_new", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		if err := c.StartOrchestration(ctx, "eternal-1", "Eternal", "0"); err != nil {
			return err
		}
		out, err := setup.Completed(ctx, c, "eternal-1")
		if err != nil {
			return err
		}
		fmt.Printf("eternal-1 completed: %q\n", out)
		execs, err := c.ListExecutions(ctx, "eternal-1")
		if err != nil {
			return err
		}
		for _, id := range execs {
			info, err := c.GetExecutionInfo(ctx, "eternal-1", id)
			if err != nil {
				return err
			}
			output := ""
			if info.Output != nil {
				output = *info.Output
			}
			fmt.Printf("  execution %d: %s (%d events) output %q\n", id, info.Status, info.EventCount, output)
		}
		if len(execs) != batches {
			return fmt.Errorf("%d executions, want %d", len(execs), batches)
		}
		return nil
	})
}
