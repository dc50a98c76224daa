package runtime

import (
	"fmt"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Options configures a Runtime (duroxide's RuntimeOptions). A zero field
// takes the documented default, so Options{} is a valid configuration.
// Start refuses negative durations (except LongPollTimeout and
// WorkerPrefetchHold, where negative turns the feature off) and a negative
// MaxSessionsPerRuntime.
type Options struct {
	// PollInterval is the minimum duration of one idle polling cycle of a
	// dispatcher: when a fetch returns no work sooner, the dispatcher sleeps
	// for the rest of it. Default: 100ms.
	PollInterval time.Duration
	// LongPollTimeout is how long a fetch may wait for work in a provider
	// that supports long polling (others return at once). Default: 30s.
	// Shutdown interrupts a waiting fetch. A negative value disables long
	// polling (fetches return at once).
	LongPollTimeout time.Duration
	// OrchestrationConcurrency is the number of orchestration dispatcher
	// goroutines (turns processed in parallel). Default: 2, or the
	// provider's number of orchestrator-queue lanes when it is a
	// duroxide.DispatchConcurrency with more (cdb.Config's
	// OrchestrationLanes, default 1); Start refuses a positive value below
	// that number, which would leave lanes unfetched. This is the one
	// default concurrency of the module: providers have lanes, not a
	// concurrency of their own. A negative value starts none: a
	// worker-only runtime (duroxide's 0).
	OrchestrationConcurrency int
	// WorkerConcurrency is the number of worker goroutines (activities
	// executed in parallel). Default: 2, or the provider's number of
	// worker-queue lanes when larger, as for OrchestrationConcurrency. A
	// negative value starts none: an orchestrator-only runtime.
	WorkerConcurrency int
	// OrchestratorLockTimeout is the peek-lock duration of an orchestration
	// turn. Default: 5s.
	OrchestratorLockTimeout time.Duration
	// OrchestratorLockRenewalBuffer: a turn's lock is renewed at
	// (timeout - buffer) when the timeout is at least 15s, and at half the
	// timeout otherwise. Default: 2s.
	OrchestratorLockRenewalBuffer time.Duration
	// WorkerLockTimeout is the peek-lock duration of an activity. Default: 30s.
	WorkerLockTimeout time.Duration
	// WorkerPrefetchHold bounds fetching ahead: while an activity runs, its
	// worker fetches the next work item, so that the fetch's round trip to
	// the store overlaps the activity instead of following it; the fetched
	// item waits, locked, until the activity returns, at most this long,
	// after which it is abandoned for other workers without counting the
	// attempt. A worker whose last activity ran longer than this does not
	// fetch ahead. Default: 250ms; negative turns fetching ahead off (each
	// fetch then follows the previous activity).
	WorkerPrefetchHold time.Duration
	// WorkerLockRenewalBuffer: an activity's lock is renewed at
	// (timeout - buffer) when the timeout is at least 15s, and at half the
	// timeout otherwise. Default: 5s.
	WorkerLockRenewalBuffer time.Duration
	// MaxAttempts is how many fetches of the same message are allowed; the
	// next one fails the orchestration or activity as a poison message.
	// Default: 10.
	MaxAttempts uint32
	// UnregisteredBackoff is the delay before an orchestration or activity
	// that is not registered here is offered again (rolling deployments).
	// Default: 1s base, 60s cap.
	UnregisteredBackoff UnregisteredBackoff
	// OnUnregistered, when set, is called each time this runtime fetches
	// an orchestration or activity that is not registered here, before it
	// abandons the message with UnregisteredBackoff: kind is
	// "orchestration" or "activity", name the handler's name, instance
	// the orchestration instance concerned. It runs on a dispatcher
	// goroutine and must not block. Package runtimetest uses it to fail a
	// test at once with the names closest to a misspelled one; a service
	// can raise an alert. nil means no call.
	OnUnregistered func(kind, name, instance string)
	// OnTurnCommitted, when set, is called after each orchestration turn
	// this runtime committed, with the events the turn appended to the
	// execution's history (a copy), in order. It runs on a dispatcher
	// goroutine and must not block; a turn whose commit failed is not
	// reported. Package runtimetest's listeners (activity scheduled, timer
	// created and fired, event received) are built on it. nil means no
	// call.
	OnTurnCommitted func(instance string, executionID uint64, appended []duroxide.Event)
	// ShutdownGracePeriod is how long the in-flight turns and activities
	// may run to completion when the context given to Start is cancelled
	// (a SIGTERM through signal.NotifyContext, t.Context() at a test's
	// end): the runtime then shuts down as Shutdown does with a context of
	// that timeout, so what has not finished by then is cancelled and
	// abandoned, and another runtime takes it at once instead of after the
	// lock timeout. Default: 5s.
	ShutdownGracePeriod time.Duration
	// ShutdownTimeout is the total deadline of the shutdown that follows
	// the cancellation of the context given to Start: by then the shutdown
	// has returned, whatever still blocks (see ShutdownWithTimeouts).
	// Default: ShutdownGracePeriod + 5s; Start refuses a value below
	// ShutdownGracePeriod.
	ShutdownTimeout time.Duration
	// ActivityCancellationGracePeriod is how long a cancelled activity may
	// take to return before its result is dropped and its worker slot freed
	// (the goroutine itself cannot be killed). Default: 10s.
	ActivityCancellationGracePeriod time.Duration
	// SupportedReplayVersions overrides the range of pinned duroxide
	// versions this runtime replays (the capability filter passed to
	// FetchOrchestrationItem). Default: [0.0.0, duroxide.DuroxideVersion]
	// (0.1.31).
	SupportedReplayVersions *duroxide.SemverRange
	// SessionLockTimeout is how long a claimed session stays owned without
	// a heartbeat. Default: 30s.
	SessionLockTimeout time.Duration
	// SessionLockRenewalBuffer sets the session heartbeat interval with the
	// same rule as WorkerLockRenewalBuffer. Default: 5s.
	SessionLockRenewalBuffer time.Duration
	// SessionIdleTimeout is how long a session stays pinned after its last
	// activity. Default: 5m.
	SessionIdleTimeout time.Duration
	// SessionCleanupInterval is how often orphaned sessions are swept.
	// Default: 5m.
	SessionCleanupInterval time.Duration
	// MaxSessionsPerRuntime caps the distinct sessions this runtime serves
	// at once; at the cap workers fetch only items without a session.
	// Default: 10.
	MaxSessionsPerRuntime int
	// WorkerNodeID is the stable session owner id shared by every worker
	// goroutine (for example a pod name); empty means one ephemeral owner id
	// per worker goroutine, "work-<n>-<runtime id>".
	WorkerNodeID string
	// TagFilter selects the activities this runtime's workers fetch. The
	// zero value is DefaultOnly (untagged activities only);
	// duroxide.TagFilterNone() disables the workers.
	TagFilter duroxide.TagFilter
	// Logger receives the runtime's logs (warnings such as an unregistered
	// orchestration or activity, failed acks, poison messages). nil means
	// slog.Default() as it is when Start is called, so warnings reach the
	// program's log by default; pass slog.New(slog.DiscardHandler) to
	// silence them.
	Logger *slog.Logger
	// MeterProvider receives the runtime's and its client's metrics
	// (duroxide's metrics specification, microsoft/duroxide docs/metrics-specification.md; README's "Metrics" lists them). Default:
	// the global MeterProvider (otel.GetMeterProvider), which records
	// nothing until the application installs an SDK.
	MeterProvider metric.MeterProvider
	// TracerProvider receives the runtime's spans: one per orchestration
	// turn and per activity execution, parented to the span that started
	// the orchestration. Default: the global TracerProvider
	// (otel.GetTracerProvider), which records nothing until the
	// application installs an SDK.
	TracerProvider trace.TracerProvider
	// Now is the clock orchestrations read: the fire time of durable
	// timers (ScheduleTimer, retry backoff), UtcNow, KV update times and
	// the timestamps of the events a turn records. nil means time.Now.
	// Tests set a virtual clock here and the same clock in the provider
	// (memory.MemoryOptions.Now), so that a timer fires when that clock
	// reaches it (package runtimetest's time skipping).
	Now func() time.Time
	// StickyCacheSize bounds the sticky cache, in instances: after a turn
	// that leaves an execution running, the runtime keeps the execution
	// suspended (its orchestration goroutine parked where it awaits, its
	// replay state), so that the instance's next turn on this runtime
	// resumes it with only the new events instead of replaying its history
	// from the first event (a sequence of N activities then costs O(N)
	// instead of O(N²)). A cached execution is resumed only when the
	// fetched history is exactly what it consumed (same execution, length
	// and last events, same KV snapshot, same orchestration version and
	// registry); anything else (another process ran a turn, a lost lock,
	// an abandoned or failed turn, continue-as-new) replays in full, as
	// without the cache. Nondeterminism is detected as in a full replay.
	// Past the bound the least recently used execution is dropped (its
	// goroutine ended); Shutdown drops them all. Default: 1000; negative
	// turns the cache off (every turn replays from the first event).
	StickyCacheSize int
	// StickyCacheBytes bounds the sticky cache by the estimated memory of
	// the executions it keeps: 8 KiB each (goroutine stack, replay state)
	// plus, per event consumed, 96 bytes and its payload strings (inputs,
	// results, event data). Default: 128 MiB; Start refuses a negative
	// value. An execution larger than the bound alone is not kept.
	StickyCacheBytes int64
	// StickyVerify, when set, makes every turn that resumes a cached
	// execution be decided a second time by a full replay of the same
	// fetched item (both on a clock frozen at the turn's start), and calls
	// StickyVerify with the instance and nil when the two decisions (new
	// events, work items, metadata) are the same JSON byte for byte, or an
	// error showing both. The full replay's decision is committed and a
	// cached execution that disagreed is dropped. It doubles the cost of
	// the turns: for tests and for checking orchestration code, not for
	// production. It is called on the dispatcher goroutines, concurrently.
	StickyVerify func(instance string, err error)

	// cleanupHeadroom is how long after the grace deadline the total
	// deadline of Shutdown and ShutdownWithGrace falls; 0 means
	// cleanupHeadroom (the constant, duroxide's CLEANUP_HEADROOM). Only the
	// package's tests change it (export_test.go), so that a test of a
	// shutdown that must give up on blocked code does not wait 5 s.
	cleanupHeadroom time.Duration
}

// UnregisteredBackoff is duroxide's UnregisteredBackoffConfig: attempt n
// (1-based) waits Base * 2^(n-1), with the exponent capped at 6 and the delay
// capped at Max.
type UnregisteredBackoff struct {
	// Base is the delay after the first attempt.
	Base time.Duration
	// Max caps the delay.
	Max time.Duration
}

// Delay returns the backoff for a message fetched attemptCount times.
func (b UnregisteredBackoff) Delay(attemptCount uint32) time.Duration {
	exp := uint32(0)
	if attemptCount > 1 {
		exp = min(attemptCount-1, 6)
	}
	return min(b.Base*time.Duration(uint64(1)<<exp), b.Max)
}

// withDefaults returns o with every zero field set to its default, or an
// error for values that cannot work: a negative duration (other than
// LongPollTimeout) or MaxSessionsPerRuntime, or a SessionIdleTimeout not
// above the worker lock renewal interval.
func (o Options) withDefaults() (Options, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ShutdownGracePeriod, 5*time.Second)
	def(&o.cleanupHeadroom, cleanupHeadroom)
	def(&o.ShutdownTimeout, o.ShutdownGracePeriod+o.cleanupHeadroom)
	def(&o.PollInterval, 100*time.Millisecond)
	def(&o.LongPollTimeout, 30*time.Second)
	o.LongPollTimeout = max(o.LongPollTimeout, 0)
	def(&o.OrchestratorLockTimeout, 5*time.Second)
	def(&o.OrchestratorLockRenewalBuffer, 2*time.Second)
	def(&o.WorkerLockTimeout, 30*time.Second)
	def(&o.WorkerPrefetchHold, 250*time.Millisecond)
	o.WorkerPrefetchHold = max(o.WorkerPrefetchHold, 0)
	def(&o.WorkerLockRenewalBuffer, 5*time.Second)
	def(&o.ActivityCancellationGracePeriod, 10*time.Second)
	def(&o.SessionLockTimeout, 30*time.Second)
	def(&o.SessionLockRenewalBuffer, 5*time.Second)
	def(&o.SessionIdleTimeout, 5*time.Minute)
	def(&o.SessionCleanupInterval, 5*time.Minute)
	def(&o.UnregisteredBackoff.Base, time.Second)
	def(&o.UnregisteredBackoff.Max, time.Minute)
	if o.OrchestrationConcurrency == 0 {
		o.OrchestrationConcurrency = defaultConcurrency
	}
	if o.WorkerConcurrency == 0 {
		o.WorkerConcurrency = defaultConcurrency
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 10
	}
	if o.MaxSessionsPerRuntime == 0 {
		o.MaxSessionsPerRuntime = 10
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.OrchestrationConcurrency = max(o.OrchestrationConcurrency, 0)
	o.WorkerConcurrency = max(o.WorkerConcurrency, 0)
	if o.StickyCacheSize == 0 {
		o.StickyCacheSize = defaultStickyCacheSize
	}
	if o.StickyCacheBytes == 0 {
		o.StickyCacheBytes = defaultStickyCacheBytes
	}
	if o.StickyCacheBytes < 0 {
		return o, fmt.Errorf("runtime: Options.StickyCacheBytes must not be negative, got %d", o.StickyCacheBytes)
	}
	if o.MaxSessionsPerRuntime < 0 {
		return o, fmt.Errorf("runtime: Options.MaxSessionsPerRuntime must not be negative, got %d", o.MaxSessionsPerRuntime)
	}
	// Every duration but LongPollTimeout and WorkerPrefetchHold (where
	// negative means "off") must
	// be positive or zero (the default); a negative interval would, among
	// other things, panic in time.NewTicker on a runtime goroutine.
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"PollInterval", o.PollInterval},
		{"OrchestratorLockTimeout", o.OrchestratorLockTimeout},
		{"OrchestratorLockRenewalBuffer", o.OrchestratorLockRenewalBuffer},
		{"WorkerLockTimeout", o.WorkerLockTimeout},
		{"WorkerLockRenewalBuffer", o.WorkerLockRenewalBuffer},
		{"ActivityCancellationGracePeriod", o.ActivityCancellationGracePeriod},
		{"ShutdownGracePeriod", o.ShutdownGracePeriod},
		{"ShutdownTimeout", o.ShutdownTimeout},
		{"SessionLockTimeout", o.SessionLockTimeout},
		{"SessionLockRenewalBuffer", o.SessionLockRenewalBuffer},
		{"SessionIdleTimeout", o.SessionIdleTimeout},
		{"SessionCleanupInterval", o.SessionCleanupInterval},
		{"UnregisteredBackoff.Base", o.UnregisteredBackoff.Base},
		{"UnregisteredBackoff.Max", o.UnregisteredBackoff.Max},
	} {
		if d.value < 0 {
			return o, fmt.Errorf("runtime: Options.%s must not be negative, got %v", d.name, d.value)
		}
	}
	if o.ShutdownTimeout < o.ShutdownGracePeriod {
		return o, fmt.Errorf("runtime: Options.ShutdownTimeout (%v) must not be shorter than ShutdownGracePeriod (%v)", o.ShutdownTimeout, o.ShutdownGracePeriod)
	}
	// duroxide's invariant: a session must not unpin while one of its
	// activities is still renewing its lock.
	if o.SessionIdleTimeout <= renewalInterval(o.WorkerLockTimeout, o.WorkerLockRenewalBuffer) {
		return o, fmt.Errorf("runtime: SessionIdleTimeout (%v) must be greater than the worker lock renewal interval (%v)",
			o.SessionIdleTimeout, renewalInterval(o.WorkerLockTimeout, o.WorkerLockRenewalBuffer))
	}
	return o, nil
}

// capabilityFilter returns the filter passed to FetchOrchestrationItem.
func (o Options) capabilityFilter() duroxide.DispatcherCapabilityFilter {
	if o.SupportedReplayVersions != nil {
		return duroxide.DispatcherCapabilityFilter{SupportedDuroxideVersions: []duroxide.SemverRange{*o.SupportedReplayVersions}}
	}
	return duroxide.DefaultCapabilityFilter()
}

// renewalInterval is duroxide's calculate_renewal_interval: timeout - buffer
// (at least 1s) for timeouts of 15s or more, half the timeout below that
// (duroxide rounds that half up to whole seconds; here it is kept exact so
// that short test timeouts renew in time).
func renewalInterval(timeout, buffer time.Duration) time.Duration {
	if timeout >= 15*time.Second {
		return max(timeout-min(buffer, timeout), time.Second)
	}
	return max(timeout/2, time.Millisecond)
}

// defaultConcurrency is the default number of orchestration dispatchers and
// of workers.
const defaultConcurrency = 2

// followProvider applies the provider's lanes (duroxide.DispatchConcurrency)
// to the concurrencies: a zero one becomes the larger of the default and
// the lanes; a positive one below the lanes is an error naming both fields.
func (o Options) followProvider(p duroxide.Provider) (Options, error) {
	dc, ok := p.(duroxide.DispatchConcurrency)
	if !ok {
		return o, nil
	}
	orch, work := dc.DispatchConcurrency()
	for _, c := range []struct {
		field string
		value *int
		lanes int
	}{{"OrchestrationConcurrency", &o.OrchestrationConcurrency, orch}, {"WorkerConcurrency", &o.WorkerConcurrency, work}} {
		switch {
		case *c.value == 0:
			*c.value = max(defaultConcurrency, c.lanes)
		case *c.value > 0 && *c.value < c.lanes:
			return o, fmt.Errorf("runtime: Options.%s is %d but the provider splits its queue into %d lanes (its DispatchConcurrency; "+
				"cdb.Config's OrchestrationLanes and WorkerLanes): each dispatcher fetches one lane, so run at least %d, "+
				"or leave it at 0 to follow the provider",
				c.field, *c.value, c.lanes, c.lanes)
		}
	}
	return o, nil
}
