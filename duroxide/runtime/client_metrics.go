package runtime

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// clientMetrics are the four client metrics of duroxide's specification
// (microsoft/duroxide docs/metrics-specification.md, "Client Operations"),
// which duroxide declares but never records; Client records them here.
type clientMetrics struct {
	starts, raised, cancellations metric.Int64Counter
	wait                          metric.Float64Histogram
}

// Metric names and buckets of the client metrics (duroxide's).
const (
	metricClientStarts        = "duroxide_client_orchestration_starts_total"
	metricClientRaised        = "duroxide_client_external_events_raised_total"
	metricClientCancellations = "duroxide_client_cancellations_total"
	metricClientWait          = "duroxide_client_wait_duration_seconds"
)

var bucketsClientWait = []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120}

// newClientMetrics creates the client's instruments on mp (the global
// MeterProvider when nil); an instrument the SDK refuses records nothing.
func newClientMetrics(mp metric.MeterProvider) *clientMetrics {
	in := &instruments{m: meterProvider(mp).Meter(meterName)}
	cm := &clientMetrics{
		starts:        in.counter(metricClientStarts, "Orchestrations started via the client", "{orchestration}"),
		raised:        in.counter(metricClientRaised, "External events raised via the client", "{event}"),
		cancellations: in.counter(metricClientCancellations, "Orchestration cancellations via the client", "{cancellation}"),
		wait:          in.histogram(metricClientWait, "Client wait operation duration (WaitForOrchestration)", "s", bucketsClientWait),
	}
	if in.err != nil {
		slog.Default().Warn("metrics: a client instrument could not be created; it records nothing", "error", in.err)
	}
	return cm
}

// enqueued records a message the client enqueued: a start (by
// orchestration name), a raised event (by event name) or a cancellation.
// A nil receiver records nothing.
func (cm *clientMetrics) enqueued(kind duroxide.WorkItemKind) {
	if cm == nil {
		return
	}
	ctx := context.Background()
	switch k := kind.(type) {
	case duroxide.StartOrchestrationItem:
		cm.starts.Add(ctx, 1, metric.WithAttributes(attribute.String("orchestration_name", k.Orchestration)))
	case duroxide.ExternalRaisedItem:
		cm.raised.Add(ctx, 1, metric.WithAttributes(attribute.String("event_name", k.Name)))
	case duroxide.CancelInstanceItem:
		cm.cancellations.Add(ctx, 1)
	}
}

// waited records one WaitForOrchestration that began at start. A nil
// receiver records nothing.
func (cm *clientMetrics) waited(start time.Time) {
	if cm == nil {
		return
	}
	cm.wait.Record(context.Background(), time.Since(start).Seconds())
}
