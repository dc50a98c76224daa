package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// The order service's tests: each runs the real registry in a test
// environment of its own (in-memory provider, virtual clock), with the
// activities that call other services mocked where the test is about
// their failures.

func TestSmallOrderIsChargedAndShipped(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	order := env.Run("ProcessOrder", `{"id":"7","amount":4200}`)
	order.AssertCompleted("tracking-7")
	order.AssertActivities(
		runtimetest.Call{Name: "Reserve", Input: "7"},
		runtimetest.Call{Name: "ChargeCard", Input: "7"},
		runtimetest.Call{Name: "Ship", Input: "7"},
	)
	order.AssertTimers() // no approval needed
}

func TestChargeIsRetriedAMinuteApartOnAGatewayError(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	charge := env.MockActivity("ChargeCard").FailsFirst(2, errors.New("gateway busy"))
	order := env.Run("ProcessOrder", `{"id":"7","amount":4200}`)
	order.AssertCompleted("tracking-7")
	order.AssertActivityNames("Reserve", "ChargeCard", "ChargeCard", "ChargeCard", "Ship")
	order.AssertTimers(time.Minute, time.Minute) // the retry policy's backoff
	calls := charge.Calls()
	if len(calls) != 3 || calls[0].Err == nil || calls[1].Err == nil || calls[2].Err != nil || calls[2].Attempt != 3 {
		t.Fatalf("ChargeCard calls: %+v", calls)
	}
}

func TestDeclinedCardIsNotRetriedAndReleasesTheStock(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	env.OnActivity("ChargeCard", runtimetest.Equals("7")).
		Fails(&runtime.ApplicationError{Type: "CardDeclined", Message: "card declined"}).Once()
	env.OnActivity("Release", runtimetest.Equals("reservation-7")).Returns("released").Once()
	env.OnActivity("Ship", runtimetest.Anything()).Never()
	order := env.Run("ProcessOrder", `{"id":"7","amount":4200}`)
	order.AssertFailed("card declined")
	order.AssertActivityNames("Reserve", "ChargeCard", "Release") // one attempt: CardDeclined is not retried
	env.AssertExpectations()
}

func TestChargeCardAloneDeclinesAndStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := runtimetest.NewActivityContext(t, runtime.ActivityInfo{ActivityName: "ChargeCard", InstanceID: "order-1"})
	if out, err := chargeCard(ctx, "1"); err != nil || out != "receipt-1" {
		t.Fatalf("%q, %v", out, err)
	}
	var declined *runtime.ApplicationError
	if _, err := chargeCard(ctx, "10"); !errors.As(err, &declined) || declined.Type != "CardDeclined" {
		t.Fatalf("order 10: %v, want a CardDeclined ApplicationError", err)
	}
	cancel()
	if _, err := chargeCard(ctx, "1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestLargeOrderShipsOnceApproved(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	order := env.Start("order-9", "ProcessOrder", `{"id":"9","amount":250000}`)
	order.EnqueueEvent("approval", "ann") // kept until the order reads it, however early
	order.Wait()
	order.AssertCompleted("tracking-9")
	if st := order.Status(); st.CustomStatus == nil || *st.CustomStatus != "approved by ann" {
		t.Fatalf("custom status %v", st.CustomStatus)
	}
}

func TestLargeOrderApprovedAtHourThreeIsChargedThen(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	var mu sync.Mutex
	var charged []time.Time // virtual times of the charges
	env.Listen(runtimetest.Listeners{ActivityScheduled: func(_, name, _ string) {
		if name == "ChargeCard" {
			mu.Lock()
			charged = append(charged, env.Clock().Now())
			mu.Unlock()
		}
	}})
	start := env.Clock().Now()
	order := env.Start("order-9", "ProcessOrder", `{"id":"9","amount":250000}`)
	order.EnqueueEventAt(3*time.Hour, "approval", "bob")
	order.Wait()
	order.AssertCompleted("tracking-9")
	mu.Lock()
	defer mu.Unlock()
	if len(charged) != 1 || charged[0].Sub(start) < 3*time.Hour || charged[0].Sub(start) > 4*time.Hour {
		t.Fatalf("charged at %v after the start, want once, at hour 3", charged)
	}
}

func TestLargeOrderIsReleasedWhenNobodyApprovesItInTwoDays(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders())
	order := env.Run("ProcessOrder", `{"id":"9","amount":250000}`) // 48 hours, skipped
	order.AssertFailed("order 9 not approved within 48h0m0s")
	order.AssertActivityNames("Reserve", "Release")
	order.AssertTimers(approvalTimeout)
	if _, skipped := env.Clock().Skipped(); skipped < approvalTimeout-time.Minute {
		t.Fatalf("skipped %v", skipped)
	}
}

// TestRecordedOrdersStillReplay replays the histories in testdata (orders
// recorded with the code as it was, in cdb-admin export's format) against
// the code as it is: a change that would break them fails here, naming
// the event. Regenerate them with -update.
func TestRecordedOrdersStillReplay(t *testing.T) {
	t.Parallel()
	runtimetest.ReplayDir(t, orders(), filepath.Join("testdata", "histories"))
}

var update = flag.Bool("update", false, "record testdata/histories again")

// TestRecordHistories writes testdata/histories with -update: a small
// order whose first charge fails and is retried, one approved and one that
// timed out, as the replay test expects them.
func TestRecordHistories(t *testing.T) {
	if !*update {
		t.Skip("run with -update to record testdata/histories")
	}
	dir := filepath.Join("testdata", "histories")
	must(os.MkdirAll(dir, 0o755))
	env := runtimetest.New(t, orders())
	env.MockActivity("ChargeCard").FailsFirst(1, errors.New("gateway busy"))
	for _, o := range []struct{ id, input string }{
		{"order-small", `{"id":"1","amount":4200}`}, // its first charge fails and is retried
		{"order-approved", `{"id":"2","amount":250000}`},
		{"order-timed-out", `{"id":"3","amount":250000}`},
	} {
		id, input := o.id, o.input
		order := env.Start(id, "ProcessOrder", input)
		if id == "order-approved" {
			order.EnqueueEvent("approval", "ann")
		}
		if st := order.Wait(); st.Kind == runtime.StatusNotFound {
			t.Fatalf("%s: %+v", id, st)
		}
	}
	histories, err := runtimetest.ReadProvider(t.Context(), env.Provider())
	must(err)
	for _, h := range histories {
		must(h.WriteFile(filepath.Join(dir, h.InstanceID+".json")))
	}
}

// TestTheOrderTimesOutOnCosmosDBToo runs the same environment on the
// Cosmos DB provider (the embedded emulator, or COSMOS_ENDPOINT): the
// provider reads the environment's clock, so time skips there as well.
func TestTheOrderTimesOutOnCosmosDBToo(t *testing.T) {
	t.Parallel()
	clock := runtimetest.NewClock()
	p := cdbtest.NewProvider(t, cdbtest.WithConfig(func(c *cdb.Config) { c.Now = clock.Now }))
	env := runtimetest.New(t, orders(), runtimetest.WithProvider(p), runtimetest.WithClock(clock))
	order := env.Run("ProcessOrder", `{"id":"9","amount":250000}`)
	order.AssertFailed("order 9 not approved within 48h0m0s")
	order.AssertActivityNames("Reserve", "Release")
	if jumps, _ := clock.Skipped(); jumps != 1 {
		t.Fatalf("%d jumps", jumps)
	}
}
