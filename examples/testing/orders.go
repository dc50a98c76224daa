package main

import (
	"errors"
	"fmt"
	"strings"
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
// apart, none after a declined card (retrying cannot fix it).
var chargeRetry = runtime.RetryPolicy{
	MaxAttempts:            3,
	Backoff:                runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: time.Minute},
	NonRetryableErrorTypes: []string{"CardDeclined"},
}

// orders returns the registry of the order service: the ProcessOrder
// orchestration and its activities, whose bodies stand in for calls to
// other services.
func orders() *runtime.Registry {
	reg := runtime.NewRegistry()
	must(reg.RegisterActivity("Reserve", func(_ *runtime.ActivityContext, id string) (string, error) {
		return "reservation-" + id, nil
	}))
	must(reg.RegisterActivity("ChargeCard", chargeCard))
	must(reg.RegisterActivity("Release", func(_ *runtime.ActivityContext, reservation string) (string, error) {
		return "released " + reservation, nil
	}))
	must(reg.RegisterActivity("Ship", func(_ *runtime.ActivityContext, id string) (string, error) {
		return "tracking-" + id, nil
	}))
	must(runtime.RegisterOrchestrationTyped(reg, "ProcessOrder", processOrder))
	return reg
}

// chargeCard stands in for the card gateway: a card of an order whose id
// ends in 0 is declined, an error no retry can fix (CardDeclined).
func chargeCard(ctx *runtime.ActivityContext, id string) (string, error) {
	if strings.HasSuffix(id, "0") {
		return "", &runtime.ApplicationError{Type: "CardDeclined", Message: "card declined"}
	}
	if ctx.IsCancelled() { // the order no longer wants the charge
		return "", ctx.Err()
	}
	return "receipt-" + id, nil
}

// processOrder reserves the stock, waits for approval of a large order
// (48 hours at most), charges the card (retried, but not when declined)
// and ships; when the order is not approved or the charge fails, it
// releases the stock.
//
// The approval comes through the instance's queue (Client.EnqueueEvent,
// ctx.DequeueEvent), not as an external event: an approver may approve
// while the stock is still being reserved, and an external event raised
// before its wait is dropped, while a queued message is kept until read.
func processOrder(ctx *runtime.OrchestrationContext, o Order) (string, error) {
	reservation, err := runtime.CallActivity[string](ctx, "Reserve", o.ID)
	if err != nil {
		return "", err
	}
	release := func(cause error) (string, error) {
		if _, err := runtime.CallActivity[string](ctx, "Release", reservation); err != nil {
			return "", errors.Join(cause, err)
		}
		return "", cause
	}
	if o.Amount >= approvalLimit {
		winner, who, err := ctx.Select(ctx.DequeueEvent("approval"), ctx.ScheduleTimer(approvalTimeout))
		if err != nil {
			return "", err
		}
		if winner == 1 {
			return release(fmt.Errorf("order %s not approved within %v", o.ID, approvalTimeout))
		}
		ctx.SetCustomStatus("approved by " + who)
	}
	if _, err := runtime.CallActivityWithRetry[string](ctx, "ChargeCard", o.ID, chargeRetry); err != nil {
		return release(fmt.Errorf("charge order %s: %w", o.ID, err))
	}
	return runtime.CallActivity[string](ctx, "Ship", o.ID)
}

// must panics on a registration error: a programming error.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
