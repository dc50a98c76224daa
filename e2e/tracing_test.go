package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// TestTraceAcrossProcesses runs the orchestrations and the activities in
// two "processes" (two providers on one container, one runtime with only
// orchestration dispatchers, one with only workers), so the trace context
// can only travel through Cosmos DB: every turn and activity span must
// still be parented to the span that started the orchestration, and the
// azcosmos SDK's spans of the turns' commits must nest beneath them.
func TestTraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg := providerConfig()
	cfg.TracerProvider = tp
	orchestrations := openProvider(t, cfg)
	workers := openProvider(t, cfg)

	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterActivity("Step", func(_ *runtime.ActivityContext, in string) (string, error) { return in + "!", nil }))
	require.NoError(t, reg.RegisterOrchestration("TwoSteps", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		a, err := ctx.ScheduleActivity("Step", in).Get()
		if err != nil {
			return "", err
		}
		return ctx.ScheduleActivity("Step", a).Get()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	start := func(p duroxide.Provider, orch, work int) *runtime.Runtime {
		opts := options()
		opts.OrchestrationConcurrency, opts.WorkerConcurrency, opts.TracerProvider = orch, work, tp
		rt, err := runtime.Start(ctx, p, reg, opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rt.Shutdown(context.Background()) })
		return rt
	}
	rt := start(orchestrations, 1, -1)
	start(workers, -1, 1)

	reqCtx, request := tp.Tracer("test").Start(ctx, "request")
	require.NoError(t, rt.Client().StartOrchestration(reqCtx, "across-1", "TwoSteps", "go"))
	request.End()
	st, err := rt.Client().WaitForOrchestration(ctx, "across-1", waitTimeout)
	require.NoError(t, err)
	require.Equal(t, "go!!", st.Output)

	// The last turn's span ends after its commit returns, which may be just
	// after the client sees the orchestration completed, and an activity's
	// after its ack returns, which the next turn may outrun: wait for them.
	ended := func(name string) int {
		n := 0
		for _, s := range rec.Ended() {
			if s.Name() == name {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool {
		return ended("duroxide.orchestration.turn") >= 3 && ended("duroxide.activity.execute") >= 2
	}, waitTimeout, 10*time.Millisecond, "the three turns' and two activities' spans end")

	root := request.SpanContext()
	counts := map[string]int{}
	spanIDs := map[string]bool{}
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "duroxide.orchestration.turn", "duroxide.activity.execute":
			counts[s.Name()]++
			spanIDs[s.SpanContext().SpanID().String()] = true
			assert.Equal(t, root.TraceID(), s.SpanContext().TraceID(), s.Name())
			assert.Equal(t, root.SpanID(), s.Parent().SpanID(), "%s is parented to the starting span", s.Name())
		}
	}
	assert.Equal(t, map[string]int{"duroxide.orchestration.turn": 3, "duroxide.activity.execute": 2}, counts)
	var sdkBeneath int
	for _, s := range rec.Ended() {
		if spanIDs[s.Parent().SpanID().String()] {
			sdkBeneath++
			assert.Equal(t, root.TraceID(), s.SpanContext().TraceID())
		}
	}
	assert.GreaterOrEqual(t, sdkBeneath, 5, "each turn's and activity's commit is an azcosmos span beneath it")
}
