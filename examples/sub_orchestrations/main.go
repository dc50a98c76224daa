// Command sub_orchestrations composes orchestrations: a parent runs two
// children in parallel (one with a generated instance id, one with an
// explicit id), chains a third, and starts a detached one.
//
//	go run ./examples/sub_orchestrations
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	reg := runtime.NewRegistry()
	err := errors.Join(
		reg.RegisterActivity("Upper", func(_ *runtime.ActivityContext, s string) (string, error) { return strings.ToUpper(s), nil }),
		reg.RegisterOrchestration("Shout", func(ctx *runtime.OrchestrationContext, s string) (string, error) {
			return ctx.ScheduleActivity("Upper", s).Get()
		}),
		reg.RegisterOrchestration("Exclaim", func(ctx *runtime.OrchestrationContext, s string) (string, error) {
			loud, err := ctx.ScheduleSubOrchestration("Shout", s).Get()
			return loud + "!", err
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			ctx.ScheduleOrchestration("Shout", "detached-"+ctx.InstanceID(), "fire and forget")
			results := ctx.Join(
				ctx.ScheduleSubOrchestration("Shout", in+" one"),
				ctx.ScheduleSubOrchestrationWithID("Exclaim", "exclaim-child", in+" two"),
			)
			var parts []string
			for _, r := range results {
				if r.Err != nil {
					return "", r.Err
				}
				parts = append(parts, r.Value)
			}
			return strings.Join(parts, " | "), nil
		}),
	)
	setup.Must(err)
	setup.Main("sub_orchestrations", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		if err := c.StartOrchestration(ctx, "parent-1", "Parent", "child"); err != nil {
			return err
		}
		out, err := setup.Completed(ctx, c, "parent-1")
		if err != nil {
			return err
		}
		fmt.Printf("parent-1 completed: %q\n", out)
		for _, id := range []string{"parent-1::sub::3", "exclaim-child", "detached-parent-1"} {
			child, err := setup.Completed(ctx, c, id)
			if err != nil {
				return err
			}
			fmt.Printf("  %s completed: %q\n", id, child)
		}
		tree, err := c.GetInstanceTree(ctx, "parent-1")
		if err != nil {
			return err
		}
		fmt.Printf("instance tree of parent-1: %v\n", tree.AllIDs)
		return nil
	})
}
