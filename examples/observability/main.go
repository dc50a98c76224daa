// Command observability runs a small workload with the OpenTelemetry SDK
// installed and its stdout exporters, so that you see what the runtime and
// the Cosmos DB provider record: the trace of one orchestration (a span per
// turn and per activity, all beneath the span that started it) and the
// metrics (duroxide's, and the provider's Cosmos DB requests, request units
// and latency).
//
//	go run ./examples/observability
//
// It installs the SDK as the global TracerProvider and MeterProvider, which
// both the runtime and the provider use by default; the spans go to the
// SDK's stdout exporter, and the metrics, read with a ManualReader, are
// printed one data point a line. In an application you would export both
// to a collector (OTLP) or Prometheus instead. It uses COSMOS_ENDPOINT and
// COSMOS_KEY when set, and the embedded emulator otherwise.
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/examples/internal/setup"
)

func main() {
	traces, err := stdouttrace.New(stdouttrace.WithPrettyPrint())
	setup.Must(err)
	// Spans are batched and printed together once the order is done.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traces))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	}()

	reg := runtime.NewRegistry()
	setup.Must(reg.RegisterActivity("Reserve", func(_ *runtime.ActivityContext, item string) (string, error) {
		return "reserved " + item, nil
	}))
	setup.Must(reg.RegisterActivity("Charge", func(_ *runtime.ActivityContext, item string) (string, error) {
		return "charged for " + item, nil
	}))
	setup.Must(reg.RegisterActivity("Label", func(_ *runtime.ActivityContext, item string) (string, error) {
		return "label for " + item, nil
	}))
	setup.Must(reg.RegisterOrchestration("Ship", func(ctx *runtime.OrchestrationContext, item string) (string, error) {
		return ctx.ScheduleActivity("Label", item).Get()
	}))
	setup.Must(reg.RegisterOrchestration("Checkout", func(ctx *runtime.OrchestrationContext, item string) (string, error) {
		if _, err := ctx.ScheduleActivity("Reserve", item).Get(); err != nil {
			return "", err
		}
		if _, err := ctx.ScheduleActivity("Charge", item).Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleSubOrchestrationWithID("Ship", ctx.InstanceID()+"-ship", item).Get()
	}))
	setup.Main("observability", reg, setup.Options(), func(ctx context.Context, r setup.Run) error {
		// The request that starts the order: the orchestration's spans
		// are parented to this one, in its trace.
		reqCtx, request := otel.Tracer("example").Start(ctx, "POST /orders")
		err := r.Client.StartOrchestration(reqCtx, "order-1", "Checkout", "book")
		request.End()
		if err != nil {
			return err
		}
		out, err := setup.Completed(ctx, r.Client, "order-1")
		if err != nil {
			return err
		}
		fmt.Printf("order-1 completed: %q (trace %s)\n", out, request.SpanContext().TraceID())
		usage := r.Provider.Usage()
		fmt.Printf("Cosmos DB so far: %d requests, %.1f RU\n", usage.Requests, usage.RequestCharge)
		fmt.Println("\n=== the trace of order-1 (stdouttrace) ===")
		if err := tp.ForceFlush(ctx); err != nil {
			return err
		}
		fmt.Println("\n=== metrics ===")
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			return err
		}
		printMetrics(rm)
		return nil
	})
}

// printMetrics prints every data point, one a line: counters and gauges
// with their value, histograms with their count and sum.
func printMetrics(rm metricdata.ResourceMetrics) {
	labels := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s%s %d\n", m.Name, labels(dp.Attributes), dp.Value)
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s%s %.2f\n", m.Name, labels(dp.Attributes), dp.Value)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s%s %d\n", m.Name, labels(dp.Attributes), dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s%s %.3f\n", m.Name, labels(dp.Attributes), dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s%s count=%d sum=%.4f %s\n", m.Name, labels(dp.Attributes), dp.Count, dp.Sum, m.Unit)
				}
			}
		}
	}
}
