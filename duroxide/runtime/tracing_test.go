package runtime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// tracedRuntime runs a runtime with an SDK TracerProvider whose spans a
// SpanRecorder keeps, on observedRegistry; its Ok activity starts a span of
// its own ("user work").
func tracedRuntime(t *testing.T) (*env, *runtime.Runtime, *tracetest.SpanRecorder, trace.Tracer) {
	t.Helper()
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	reg := observedRegistry(t, func(ctx *runtime.ActivityContext, in string) (string, error) {
		_, span := tp.Tracer("user").Start(ctx, "user work") // the activity's own span
		span.End()
		return in, nil
	})
	opts := fastOptions()
	opts.TracerProvider = tp
	rt := e.start(reg, opts)
	return e, rt, rec, tp.Tracer("test")
}

// waitSpans waits until at least n spans name of instance have ended (a
// turn's span ends after its ack, which a status wait can see first) and
// returns them in the order they started.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, name, instance string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	require.Eventually(t, func() bool { return len(spansOf(rec, name, instance)) >= n }, waitTimeout, 5*time.Millisecond,
		"%d %s spans of %s never ended", n, name, instance)
	return spansOf(rec, name, instance)
}

// spansOf returns the ended spans named name of instance (by the
// instance_id attribute) in the order they started. Not in the order they
// ended: a turn's span ends after its commit returns, by which time the
// turns that commit made possible may have run and ended theirs (then
// TestUntracedStartJoinsTheFirstTurnsTrace would take the second turn for
// the first: the likely cause of its one failure under load).
// A turn's span starts after its fetch, so no two turns of an instance
// start out of order.
func spansOf(rec *tracetest.SpanRecorder, name, instance string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != name {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == "instance_id" && a.Value.AsString() == instance {
				out = append(out, s)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// attr returns a span's attribute.
func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

func TestSpansParentedToTheStartingSpan(t *testing.T) {
	t.Parallel()
	e, rt, rec, tracer := tracedRuntime(t)
	ctx, start := tracer.Start(e.ctx, "request")
	require.NoError(t, rt.Client().StartOrchestration(ctx, "traced-1", "Parent", "x"))
	start.End()
	st, err := rt.Client().WaitForOrchestration(e.ctx, "traced-1", waitTimeout)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusCompleted, st.Kind)
	root := start.SpanContext()

	turns := waitSpans(t, rec, "duroxide.orchestration.turn", "traced-1", 5)
	require.Len(t, turns, 5, "start, 3 activity results, the child's result")
	activities := waitSpans(t, rec, "duroxide.activity.execute", "traced-1", 3)
	require.Len(t, activities, 3)
	childTurns := waitSpans(t, rec, "duroxide.orchestration.turn", "traced-1-child", 2)
	require.Len(t, childTurns, 2)
	childActivities := waitSpans(t, rec, "duroxide.activity.execute", "traced-1-child", 1)
	require.Len(t, childActivities, 1)
	for _, s := range append(append(append(turns, activities...), childTurns...), childActivities...) {
		assert.Equal(t, root.TraceID(), s.SpanContext().TraceID(), "%s joins the starting span's trace", s.Name())
		assert.Equal(t, root.SpanID(), s.Parent().SpanID(), "%s is parented to the starting span", s.Name())
		assert.Equal(t, codes.Unset, s.Status().Code)
	}
	first := turns[0]
	assert.Equal(t, "Parent", attr(first, "orchestration_name").AsString())
	assert.Equal(t, int64(1), attr(first, "execution_id").AsInt64())
	assert.Contains(t, attr(first, "worker_id").AsString(), "orch-", "duroxide's worker id: orch-<index>-<runtime id>")
	act := activities[0]
	assert.Equal(t, "Ok", attr(act, "activity_name").AsString())
	assert.Positive(t, attr(act, "activity_id").AsInt64())
	assert.NotEmpty(t, attr(act, "worker_id").AsString())

	var user int
	for _, s := range rec.Ended() {
		if s.Name() == "user work" {
			user++
			assert.Equal(t, root.TraceID(), s.SpanContext().TraceID())
			assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
		}
	}
	assert.Equal(t, 4, user, "the activities' own spans nest beneath theirs")

	history, err := e.provider.Read(e.ctx, "traced-1")
	require.NoError(t, err)
	started, ok := history[0].Kind.(duroxide.OrchestrationStarted)
	require.True(t, ok)
	require.NotNil(t, started.TraceContext, "the execution keeps its trace context")
	assert.Contains(t, *started.TraceContext, root.TraceID().String())
}

func TestUntracedStartJoinsTheFirstTurnsTrace(t *testing.T) {
	t.Parallel()
	e, rt, rec, _ := tracedRuntime(t)
	require.NoError(t, rt.Client().StartOrchestration(e.ctx, "untraced-1", "Fails", "x"))
	st, err := rt.Client().WaitForOrchestration(e.ctx, "untraced-1", waitTimeout)
	require.NoError(t, err)
	require.Equal(t, runtime.StatusFailed, st.Kind)

	turns := waitSpans(t, rec, "duroxide.orchestration.turn", "untraced-1", 2)
	require.Len(t, turns, 2)
	first := turns[0]
	assert.False(t, first.Parent().IsValid(), "the first turn starts the trace")
	activities := waitSpans(t, rec, "duroxide.activity.execute", "untraced-1", 1)
	require.Len(t, activities, 1)
	for _, s := range []sdktrace.ReadOnlySpan{turns[1], activities[0]} {
		assert.Equal(t, first.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.Equal(t, first.SpanContext().SpanID(), s.Parent().SpanID())
	}
	assert.Equal(t, codes.Error, activities[0].Status().Code, "the failed activity")
	assert.Equal(t, codes.Error, turns[1].Status().Code, "the turn that failed the orchestration")
}
