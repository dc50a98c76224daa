// Command sessions pins activities to a worker with a session: every
// activity scheduled on session "cart-42" runs on the worker that claimed
// the session, so it can keep state in memory between calls. Two runtimes
// (two "nodes") compete for the work; the session's activities all land on
// one of them.
//
//	go run ./examples/sessions
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

// carts is the in-memory state each node keeps per session.
type carts struct {
	mu    sync.Mutex
	items map[string][]string
}

func registry(node string, c *carts) *runtime.Registry {
	reg := runtime.NewRegistry()
	err := errors.Join(
		reg.RegisterActivity("AddItem", func(ctx *runtime.ActivityContext, item string) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.items[ctx.SessionID()] = append(c.items[ctx.SessionID()], item)
			return fmt.Sprintf("%s added %s", node, item), nil
		}),
		reg.RegisterActivity("Checkout", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return fmt.Sprintf("%s checked out [%s]", node, strings.Join(c.items[ctx.SessionID()], " ")), nil
		}),
		reg.RegisterOrchestration("Shopping", func(ctx *runtime.OrchestrationContext, session string) (string, error) {
			for _, item := range []string{"apples", "bread", "coffee"} {
				if _, err := ctx.ScheduleActivityOnSession("AddItem", item, session).Get(); err != nil {
					return "", err
				}
			}
			return ctx.ScheduleActivityOnSession("Checkout", "", session).Get()
		}),
	)
	setup.Must(err)
	return reg
}

func main() {
	nodeA := &carts{items: map[string][]string{}}
	nodeB := &carts{items: map[string][]string{}}
	optsA := setup.Options()
	optsA.WorkerNodeID = "node-a"
	setup.Main("sessions", registry("node-a", nodeA), optsA, func(ctx context.Context, r setup.Run) error {
		c := r.Client
		// A second runtime, a worker-only node, on the same provider.
		opts := setup.Options()
		opts.OrchestrationConcurrency = -1
		opts.WorkerNodeID = "node-b"
		rtB, err := runtime.Start(ctx, r.Provider, registry("node-b", nodeB), opts)
		if err != nil {
			return err
		}
		defer func() { _ = rtB.Shutdown(context.WithoutCancel(ctx)) }()

		if err := c.StartOrchestration(ctx, "shopping-1", "Shopping", "cart-42"); err != nil {
			return err
		}
		out, err := setup.Completed(ctx, c, "shopping-1")
		if err != nil {
			return err
		}
		fmt.Printf("shopping-1 completed: %q\n", out)
		if !strings.Contains(out, "[apples bread coffee]") {
			return fmt.Errorf("the session's activities did not share one worker: %q", out)
		}
		return nil
	})
}
