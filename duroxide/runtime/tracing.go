package runtime

import (
	"context"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The runtime's traces: a span per orchestration turn
// ("duroxide.orchestration.turn") and per activity execution
// ("duroxide.activity.execute"), with duroxide's correlation field names as
// attributes (instance_id, execution_id, orchestration_name,
// orchestration_version, activity_name, activity_id, worker_id; duroxide's
// docs/observability-guide.md), on Options.TracerProvider (the global one
// by default: nothing is recorded until the application installs an SDK).
//
// Every span of an orchestration is parented to the span that started it,
// so one trace shows the whole orchestration across turns and processes:
// Client.StartOrchestration puts the W3C traceparent of the span in its ctx
// on the start message (StartOrchestrationItem.TraceContext); the first
// turn records it on the execution's OrchestrationStarted event, where
// every later turn finds it, and puts it on the activities
// (ActivityExecuteItem), the sub-orchestrations and detached orchestrations
// it starts, and the next execution of a continue-as-new. An orchestration
// started without a span is parented to its first turn's span. The turn's
// and the activity's contexts carry their span, so the provider's requests
// made for them (azcosmos's spans, through azcore's tracing) and the
// activity's own spans nest beneath.

// tracerName is the instrumentation scope of the runtime's spans.
const tracerName = meterName

// Span names.
const (
	spanTurn     = "duroxide.orchestration.turn"
	spanActivity = "duroxide.activity.execute"
)

// runtimeTracing starts the runtime's spans.
type runtimeTracing struct{ tracer trace.Tracer }

// newRuntimeTracing uses tp, or the global TracerProvider when tp is nil.
func newRuntimeTracing(tp trace.TracerProvider) *runtimeTracing {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &runtimeTracing{tracer: tp.Tracer(tracerName)}
}

// formatTraceparent returns sc as a W3C traceparent, nil when sc is not
// valid.
func formatTraceparent(sc trace.SpanContext) *string {
	if !sc.IsValid() {
		return nil
	}
	s := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	return &s
}

// parseTraceparent reads a W3C traceparent written by formatTraceparent
// (or any version-00 traceparent); ok is false for anything else.
func parseTraceparent(s string) (trace.SpanContext, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 4 || parts[0] != "00" {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(parts[1])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parts[2])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, err := strconv.ParseUint(parts[3], 16, 8)
	if err != nil || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags), Remote: true})
	return sc, sc.IsValid()
}

// traceparentOf returns the traceparent of ctx's span, nil when ctx has
// none.
func traceparentOf(ctx context.Context) *string {
	return formatTraceparent(trace.SpanContextFromContext(ctx))
}

// withParent returns ctx with the remote parent tc (a traceparent), or ctx
// unchanged when tc is nil or unreadable.
func withParent(ctx context.Context, tc *string) context.Context {
	if tc == nil {
		return ctx
	}
	if sc, ok := parseTraceparent(*tc); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// orchestrationTraceContext returns the traceparent an orchestration's
// spans are parented to: the one on its execution's OrchestrationStarted
// event, else the one its start or continue-as-new message carries; nil
// when it has none. It scans the history once a turn (processOrchestrationItem
// hands the result to startTurn and propagate), by index: copying each
// event out of the slice would cost more than the scan itself.
func orchestrationTraceContext(item *duroxide.OrchestrationItem) *string {
	for i := range item.History {
		if s, ok := item.History[i].Kind.(duroxide.OrchestrationStarted); ok && s.TraceContext != nil {
			return s.TraceContext
		}
	}
	for _, m := range item.Messages {
		switch k := m.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			if k.TraceContext != nil {
				return k.TraceContext
			}
		case duroxide.ContinueAsNewItem:
			if k.TraceContext != nil {
				return k.TraceContext
			}
		}
	}
	return nil
}

// startTurn starts the span of one orchestration turn beneath the
// orchestration's trace context tc (orchestrationTraceContext); the
// returned context carries it.
func (rt *runtimeTracing) startTurn(ctx context.Context, item *duroxide.OrchestrationItem, tc *string, workerID string) (context.Context, trace.Span) {
	return rt.tracer.Start(withParent(ctx, tc), spanTurn,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("instance_id", item.Instance),
			attribute.Int64("execution_id", int64(item.ExecutionID)),
			attribute.String("orchestration_name", item.OrchestrationName),
			attribute.String("orchestration_version", item.Version),
			attribute.String("worker_id", workerID),
		))
}

// propagate puts the orchestration's trace context tc
// (orchestrationTraceContext; span's own when the orchestration has none
// yet, so its later turns join this trace) on what the turn d commits: the
// execution's OrchestrationStarted event, the activities, the
// orchestrations it starts and the next execution; and marks span failed
// when the turn fails the orchestration.
func propagate(span trace.Span, tc *string, d *turnDecision) {
	if tc == nil {
		tc = formatTraceparent(span.SpanContext())
	}
	if tc == nil {
		return // not recording: nothing to propagate
	}
	for i := range d.ack.historyDelta {
		ev := &d.ack.historyDelta[i]
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			if k.TraceContext == nil {
				k.TraceContext = tc
				ev.Kind = k
			}
		case duroxide.OrchestrationFailed:
			span.SetStatus(codes.Error, k.Details.DisplayMessage())
		}
	}
	for i := range d.ack.workerItems {
		if k, ok := d.ack.workerItems[i].Kind.(duroxide.ActivityExecuteItem); ok && k.TraceContext == nil {
			k.TraceContext = tc
			d.ack.workerItems[i].Kind = k
		}
	}
	for i := range d.ack.orchestratorItems {
		switch k := d.ack.orchestratorItems[i].Kind.(type) {
		case duroxide.StartOrchestrationItem:
			if k.TraceContext == nil {
				k.TraceContext = tc
				d.ack.orchestratorItems[i].Kind = k
			}
		case duroxide.ContinueAsNewItem:
			if k.TraceContext == nil {
				k.TraceContext = tc
				d.ack.orchestratorItems[i].Kind = k
			}
		}
	}
}

// startActivity starts the span of one activity execution beneath the
// trace context its work item carries; the returned context carries it.
func (rt *runtimeTracing) startActivity(ctx context.Context, item duroxide.ActivityExecuteItem, workerID string) (context.Context, trace.Span) {
	return rt.tracer.Start(withParent(ctx, item.TraceContext), spanActivity,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("instance_id", item.Instance),
			attribute.Int64("execution_id", int64(item.ExecutionID)),
			attribute.String("activity_name", item.Name),
			attribute.Int64("activity_id", int64(item.ID)),
			attribute.String("worker_id", workerID),
		))
}

// endActivity ends an activity's span, failed when its completion is a
// failure.
func endActivity(span trace.Span, completion *duroxide.WorkItem) {
	if completion != nil {
		if f, ok := completion.Kind.(duroxide.ActivityFailedItem); ok {
			span.SetStatus(codes.Error, f.Details.DisplayMessage())
		}
	}
	span.End()
}
