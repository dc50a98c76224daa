package runtime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// shipAfterPayment is the order the issue describes: it pays, then waits
// a day for "shipped"; a "shipped" raised while it paid is dropped.
func shipAfterPayment(ctx *runtime.OrchestrationContext, _ string) (string, error) {
	if _, err := ctx.ScheduleActivity("Pay", "").Get(); err != nil {
		return "", err
	}
	w, _, err := ctx.Select(ctx.ScheduleWait("shipped"), ctx.ScheduleTimer(24*time.Hour))
	if err != nil {
		return "", err
	}
	if w == 1 {
		return "refunded", nil
	}
	return "shipped", nil
}

func TestAnEventRaisedBeforeItsWaitIsCountedAndMarkedDropped(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Ship", shipAfterPayment))
	release := make(chan struct{})
	mustRegister(t, reg.RegisterActivity("Pay", func(ctx *runtime.ActivityContext, _ string) (string, error) {
		select {
		case <-release:
			return "paid", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	env := runtimetest.New(t, reg, runtimetest.WithOptions(runtime.Options{
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	}))
	inst := env.Start("order-1", "Ship", "")
	has := func(typ duroxide.EventType) bool {
		return slices.ContainsFunc(inst.History(), func(e duroxide.Event) bool { return e.Type() == typ })
	}
	waitFor(t, func() bool { return has(duroxide.EventTypeActivityScheduled) })
	if err := env.Client().RaiseEvent(t.Context(), "order-1", "shipped", "box 7"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return has(duroxide.EventTypeExternalEvent) })
	close(release)
	inst.Wait()
	inst.AssertCompleted("refunded")

	dropped := runtime.DroppedExternalEvents(inst.History())
	if len(dropped) != 1 || dropped[0].Name != "shipped" || dropped[0].Reason != runtime.DroppedNoWaitPending {
		t.Fatalf("dropped %+v, want the shipped event, no wait pending", dropped)
	}
	// The counter is recorded after the turn's commit returns, which the
	// client can see first: wait for it, then require exactly one.
	want := attribute.NewSet(attribute.String("orchestration_name", "Ship"), attribute.String("event_name", "shipped"))
	droppedTotal := func() int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		var got int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "duroxide_external_events_dropped_total" {
					continue
				}
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					if dp.Attributes.Equals(&want) {
						got += dp.Value
					}
				}
			}
		}
		return got
	}
	waitFor(t, func() bool { return droppedTotal() >= 1 })
	if got := droppedTotal(); got != 1 {
		t.Fatalf("duroxide_external_events_dropped_total{Ship,shipped} = %d, want 1", got)
	}
}

// waitFor polls cond for at most 30 s (a guard, not a speed check).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 30 s")
		}
	}
}
