package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Order is ProcessOrder's input.
type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"` // in cents
}

// approvalLimit is the amount (in cents) from which an order waits for a
// person's approval, and approvalTimeout how long it waits.
const (
	approvalLimit   = 100_000
	approvalTimeout = 48 * time.Hour
)

// chargeRetry is the retry policy of ChargeCard: three attempts a minute
// apart.
var chargeRetry = runtime.RetryPolicy{
	MaxAttempts: 3,
	Backoff:     runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: time.Minute},
}

// orders returns the registry of the order service: the ProcessOrder
// orchestration and its activities, whose bodies stand in for calls to
// other services.
func orders() *runtime.Registry {
	reg := runtime.NewRegistry()
	must(reg.RegisterActivity("Reserve", func(_ *runtime.ActivityContext, id string) (string, error) {
		return "reservation-" + id, nil
	}))
	must(reg.RegisterActivity("ChargeCard", func(_ *runtime.ActivityContext, id string) (string, error) {
		return "receipt-" + id, nil
	}))
	must(reg.RegisterActivity("Release", func(_ *runtime.ActivityContext, reservation string) (string, error) {
		return "released " + reservation, nil
	}))
	must(reg.RegisterActivity("Ship", func(_ *runtime.ActivityContext, id string) (string, error) {
		return "tracking-" + id, nil
	}))
	must(runtime.RegisterOrchestrationTyped(reg, "ProcessOrder", processOrder))
	return reg
}

// processOrder reserves the stock, waits for approval of a large order
// (48 hours at most), charges the card (retried) and ships; when the
// order is not approved or the charge fails, it releases the stock.
func processOrder(ctx *runtime.OrchestrationContext, o Order) (string, error) {
	reservation, err := ctx.ScheduleActivity("Reserve", o.ID).Get()
	if err != nil {
		return "", err
	}
	release := func(cause error) (string, error) {
		if _, err := ctx.ScheduleActivity("Release", reservation).Get(); err != nil {
			return "", errors.Join(cause, err)
		}
		return "", cause
	}
	if o.Amount >= approvalLimit {
		winner, who, err := ctx.Select(ctx.ScheduleWait("approval"), ctx.ScheduleTimer(approvalTimeout))
		if err != nil {
			return "", err
		}
		if winner == 1 {
			return release(fmt.Errorf("order %s not approved within %v", o.ID, approvalTimeout))
		}
		ctx.SetCustomStatus("approved by " + who)
	}
	if _, err := ctx.ScheduleActivityWithRetry("ChargeCard", o.ID, chargeRetry).Get(); err != nil {
		return release(fmt.Errorf("charge order %s: %w", o.ID, err))
	}
	return ctx.ScheduleActivity("Ship", o.ID).Get()
}

// must panics on a registration error: a programming error.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
