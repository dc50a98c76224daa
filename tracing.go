// Tracing: AzureTracingProvider adapts OpenTelemetry to azcore tracing so
// azcosmos's spans nest beneath the runtime's.

package cdb

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// AzureTracingProvider adapts an OpenTelemetry TracerProvider to azcore's
// tracing abstraction (azcore/tracing), so that the azcosmos SDK's own spans
// (one per Cosmos DB operation, with its request charge and status code)
// are recorded in the application's traces, beneath the span in the
// operation's context: the runtime's turn and activity spans
// (as duroxide/runtime's spans do). New sets it as ClientOptions.TracingProvider
// when Config.TracerProvider is set and ClientOptions names none; a nil tp
// is the zero Provider, which traces nothing. It is the adapter the Azure
// SDK's separate azotel module provides, without the extra dependency.
func AzureTracingProvider(tp trace.TracerProvider) tracing.Provider {
	if tp == nil {
		return tracing.Provider{}
	}
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		t := tp.Tracer(name, trace.WithInstrumentationVersion(version))
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			var opts []trace.SpanStartOption
			if o != nil {
				opts = append(opts, trace.WithSpanKind(trace.SpanKind(o.Kind)), trace.WithAttributes(otelAttributes(o.Attributes)...))
			}
			ctx, span := t.Start(ctx, spanName, opts...)
			return ctx, azureSpan(span)
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			return azureSpan(trace.SpanFromContext(ctx))
		}})
	}, nil)
}

// azureSpan wraps an OpenTelemetry span as an azcore span.
func azureSpan(span trace.Span) tracing.Span {
	return tracing.NewSpan(tracing.SpanImpl{
		End:           func() { span.End() },
		SetAttributes: func(a ...tracing.Attribute) { span.SetAttributes(otelAttributes(a)...) },
		AddEvent: func(name string, a ...tracing.Attribute) {
			span.AddEvent(name, trace.WithAttributes(otelAttributes(a)...))
		},
		SetStatus: func(s tracing.SpanStatus, desc string) {
			switch s {
			case tracing.SpanStatusError:
				span.SetStatus(codes.Error, desc)
			case tracing.SpanStatusOK:
				span.SetStatus(codes.Ok, desc)
			}
		},
	})
}

// otelAttributes converts azcore attributes (values of any type) to
// OpenTelemetry attributes.
func otelAttributes(in []tracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(in))
	for _, a := range in {
		switch v := a.Value.(type) {
		case string:
			out = append(out, attribute.String(a.Key, v))
		case int:
			out = append(out, attribute.Int(a.Key, v))
		case int32:
			out = append(out, attribute.Int64(a.Key, int64(v)))
		case int64:
			out = append(out, attribute.Int64(a.Key, v))
		case float32:
			out = append(out, attribute.Float64(a.Key, float64(v)))
		case float64:
			out = append(out, attribute.Float64(a.Key, v))
		case bool:
			out = append(out, attribute.Bool(a.Key, v))
		default:
			out = append(out, attribute.String(a.Key, fmt.Sprint(v)))
		}
	}
	return out
}
