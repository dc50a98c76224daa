package cdb_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestSDKSpansNestBeneathTheCallersSpan checks Config.TracerProvider: the
// azcosmos SDK's span of each Cosmos DB operation is recorded, parented to
// the span in the provider call's context, with the request charge.
func TestSDKSpansNestBeneathTheCallersSpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	p := newProvider(t, func(c *cdbConfig) { c.DisableReconciler = true; c.TracerProvider = tp })

	ctx, parent := tp.Tracer("test").Start(context.Background(), "turn")
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("traced-enqueue"), 0))
	parent.End()

	var beneath []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			beneath = append(beneath, s)
		}
	}
	require.Len(t, beneath, 1, "one Cosmos DB operation: the create")
	sdkSpan := beneath[0]
	assert.Equal(t, parent.SpanContext().TraceID(), sdkSpan.SpanContext().TraceID())
	var charge bool
	for _, a := range sdkSpan.Attributes() {
		if a.Key == "db.cosmosdb.request_charge" {
			charge = a.Value.AsFloat64() > 0
		}
	}
	assert.True(t, charge, "the SDK records the request charge on its span: %v", sdkSpan.Attributes())
}
