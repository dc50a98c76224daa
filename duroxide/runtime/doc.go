// Package runtime is a compact Go runtime for duroxide orchestrations: a
// registry of orchestrations and activities, the replay engine, the
// orchestration and worker dispatchers, and a Client. It runs on any
// duroxide.Provider and follows duroxide's execution model
// (microsoft/duroxide 0.1.30: src/runtime/, src/client/,
// docs/execution-model.md): history written here is the history the Rust
// runtime writes, event for event, so either runtime can replay it.
//
// # Orchestrations are plain Go
//
// An orchestration is a function
//
//	func(ctx *runtime.OrchestrationContext, input string) (string, error)
//
// Durable calls on ctx (ScheduleActivity, ScheduleTimer, ScheduleWait,
// DequeueEvent, ScheduleSubOrchestration, ...) record an action and return a
// *Future; Future.Get, OrchestrationContext.Join and
// OrchestrationContext.Select block the orchestration until the result is in
// history. Each turn the engine re-runs the function from the start against
// the execution's history (duroxide's replay model): recorded calls resolve at
// once from history, and the first call that has no result yet suspends the
// function until a later turn. Nothing but the history is needed to resume,
// so an orchestration survives any process restart. (A runtime keeps the
// executions it runs suspended between turns and resumes one with only the
// new events when its history is exactly what it consumed, which spares the
// replay; see Options.StickyCacheSize.)
//
// Orchestration code must be deterministic: the same history must lead to the
// same calls in the same order. Take time, randomness and I/O from the context
// (UtcNow, NewGUID, activities), never from the process. When the code no
// longer matches its history the orchestration fails with duroxide's
// Configuration/Nondeterminism error.
//
// The function runs on a goroutine of its own that the engine resumes one
// step at a time (duroxide polls its futures once per history event; the Go
// runtime resumes the goroutine at the same points). Orchestration code must
// not start goroutines that call the context, nor block on anything but the
// context.
//
// # Cancellation of unobserved work
//
// duroxide cancels scheduled work whose future is dropped without completing:
// the loser of a select, an explicitly dropped future, or a future still
// pending when the orchestration function returns. Go has no drop, so the
// runtime applies the same rule at the same points: Select cancels its losers,
// Future.Cancel cancels explicitly, and every future not yet observed when the
// function returns is cancelled then. An activity gets ActivityCancelRequested
// and its worker-queue entry is removed in the ack (lock stealing); a
// sub-orchestration gets SubOrchestrationCancelRequested and a CancelInstance
// message; a wait gets ExternalSubscribedCancelled or
// ExternalSubscribedPersistentCancelled; a timer needs nothing. Get on a
// cancelled future returns an error matching ErrCanceled at once (duroxide
// cannot await a dropped future; Temporal returns a CanceledError).
//
// # Running
//
//	reg := runtime.NewRegistry()
//	_ = reg.RegisterActivity("Greet", greet)
//	_ = reg.RegisterOrchestration("Hello", hello)
//	rt, err := runtime.Start(ctx, provider, reg, runtime.Options{})
//	defer rt.Shutdown(context.Background())
//	client := runtime.NewClient(provider)
//	_ = client.StartOrchestration(ctx, "inst-1", "Hello", "world")
//	status, err := client.WaitForOrchestration(ctx, "inst-1", 10*time.Second)
//
// # Metrics and traces
//
// The runtime records every metric of duroxide's metrics specification
// (microsoft/duroxide docs/metrics-specification.md: orchestration
// lifecycle, activities, poison messages, sub-orchestrations, provider
// operations, client operations, dispatchers, the active-orchestration and
// queue-depth gauges) with duroxide's names, labels and histogram buckets on
// Options.MeterProvider, and a span per orchestration turn and per activity
// execution on Options.TracerProvider, parented to the span in the context
// given to Client.StartOrchestration. Both default to OpenTelemetry's
// global providers, which record nothing until the application installs an
// SDK.
package runtime
