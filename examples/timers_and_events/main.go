// Command timers_and_events shows durable timers and external events: an
// approval workflow waits for an "Approval" event, racing it against a
// timeout timer; one instance is approved, the other times out. An event
// raised before the orchestration waits for it is dropped (duroxide's
// rule; `cdb-admin history` marks it "dropped: no wait was pending"), so
// the early-approval workflow takes its approval from the instance's
// queue (EnqueueEvent, DequeueEvent) instead, which keeps a message until
// it is read: it is approved before it even waits. A fourth instance
// reads commands from a persistent queue.
//
//	go run ./examples/timers_and_events
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	reg := runtime.NewRegistry()
	err := errors.Join(
		reg.RegisterOrchestration("Approval", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetCustomStatus("waiting for approval")
			winner, decision, err := ctx.Select(ctx.ScheduleWait("Approval"), ctx.ScheduleTimer(2*time.Second))
			if err != nil {
				return "", err
			}
			if winner == 1 {
				return "timed out: escalated", nil
			}
			return "decision: " + decision, nil
		}),
		reg.RegisterOrchestration("EarlyApproval", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			// Paperwork first: an "Approval" event raised now would be
			// dropped, a queued approval waits for the DequeueEvent.
			if _, err := ctx.ScheduleTimer(200 * time.Millisecond).Get(); err != nil {
				return "", err
			}
			winner, decision, err := ctx.Select(ctx.DequeueEvent("Approval"), ctx.ScheduleTimer(2*time.Second))
			if err != nil {
				return "", err
			}
			if winner == 1 {
				return "timed out: escalated", nil
			}
			return "decision: " + decision, nil
		}),
		reg.RegisterOrchestration("Inbox", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			var got []string
			for {
				cmd, err := ctx.DequeueEvent("commands").Get()
				if err != nil {
					return "", err
				}
				if cmd == "stop" {
					return strings.Join(got, ","), nil
				}
				got = append(got, cmd)
			}
		}),
	)
	setup.Must(err)
	setup.Main("timers_and_events", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		c := r.Client
		names := map[string]string{"approve-me": "Approval", "ignore-me": "Approval", "early": "EarlyApproval", "inbox": "Inbox"}
		for _, id := range []string{"approve-me", "ignore-me", "early", "inbox"} {
			if err := c.StartOrchestration(ctx, id, names[id], ""); err != nil {
				return err
			}
		}
		// Approved at once, during its paperwork: kept in its queue.
		if err := c.EnqueueEvent(ctx, "early", "Approval", "approved early by bob"); err != nil {
			return err
		}
		// Raise the event once the orchestration waits for it (events
		// raised before the subscription exists are dropped).
		st, err := c.WaitForStatusChange(ctx, "approve-me", 0, 10*time.Millisecond, time.Minute)
		if err != nil {
			return err
		}
		fmt.Printf("approve-me says %q; approving\n", *st.CustomStatus)
		if err := c.RaiseEvent(ctx, "approve-me", "Approval", "approved by alice"); err != nil {
			return err
		}
		// Queue messages are kept until the orchestration dequeues them.
		if err := waitStarted(ctx, c, "inbox"); err != nil {
			return err
		}
		for _, cmd := range []string{"build", "test", "deploy", "stop"} {
			if err := c.EnqueueEvent(ctx, "inbox", "commands", cmd); err != nil {
				return err
			}
		}
		for _, id := range []string{"approve-me", "ignore-me", "early", "inbox"} {
			out, err := setup.Completed(ctx, c, id)
			if err != nil {
				return err
			}
			fmt.Printf("%s completed: %q\n", id, out)
		}
		return nil
	})
}

// waitStarted waits until instance has a history.
func waitStarted(ctx context.Context, c *runtime.Client, instance string) error {
	for {
		st, err := c.GetOrchestrationStatus(ctx, instance)
		if err != nil {
			return err
		}
		if st.Kind != runtime.StatusNotFound {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
