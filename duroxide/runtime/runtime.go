package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Runtime runs orchestrations and activities from a Registry on a provider
// (duroxide's Runtime): OrchestrationConcurrency orchestration dispatcher
// goroutines and WorkerConcurrency worker goroutines, plus the session
// manager. Start it with Start and stop it with Shutdown; cancelling the
// context given to Start stops it abruptly, as a crash would (locks are
// left to expire and the work is redone elsewhere).
type Runtime struct {
	provider duroxide.Provider
	// reasons records why a start was abandoned (nil when the provider
	// cannot): the provider's duroxide.PendingReasonRecorder.
	reasons  duroxide.PendingReasonRecorder
	registry *Registry
	opts     Options
	id       string
	logger   *slog.Logger
	client   *Client

	runCtx    context.Context
	cancelRun context.CancelFunc
	// fetchCtx is runCtx, also cancelled by Shutdown so that long polls
	// end at once.
	fetchCtx    context.Context
	cancelFetch context.CancelFunc
	stopping    chan struct{} // closed when a shutdown is accepted: fetch no more work
	forced      chan struct{} // closed when the shutdown's grace period ends (shutdown.go)
	wg          sync.WaitGroup

	shutdownMu sync.Mutex
	shutdown   *shutdownRequest // the accepted shutdown (shutdown.go); nil until then

	mu       sync.Mutex
	inflight map[*inflightActivity]struct{}

	metrics *runtimeMetrics // metrics.go
	health  healthByQueue   // store_health.go
	tracing *runtimeTracing // tracing.go
	sticky  *stickyCache    // sticky.go; nil when off
}

// errShutdown is the cancellation cause of activities stopped by a
// Shutdown whose deadline passed.
var errShutdown = errors.New("runtime: shutting down")

// Start validates opts, starts the dispatchers on provider and returns the
// running Runtime. A nil provider is ErrNilProvider; the registry may not
// be nil either; invalid opts are an error naming the field (see Options).
// ctx bounds the runtime's life: when it is cancelled the runtime shuts down
// gracefully, as ShutdownWithTimeouts does with Options.ShutdownGracePeriod
// and Options.ShutdownTimeout (it stops fetching, lets in-flight turns and
// activities finish within the grace period, then cancels and abandons the
// rest so that another runtime takes them at once). Shutdown may still be
// called, for example to wait for that; values of ctx reach the provider calls, its cancellation does
// not cut them short.
func Start(ctx context.Context, provider duroxide.Provider, registry *Registry, opts Options) (*Runtime, error) {
	if provider == nil {
		return nil, fmt.Errorf("runtime: Start: %w", ErrNilProvider)
	}
	if registry == nil {
		return nil, errors.New("runtime: Start needs a registry")
	}
	opts, err := opts.followProvider(provider)
	if err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	fetchCtx, cancelFetch := context.WithCancel(runCtx)
	r := &Runtime{
		provider: provider, registry: registry, opts: o, id: newRuntimeID(), logger: o.Logger,
		client: &Client{provider: provider, metrics: newClientMetrics(o.MeterProvider)}, runCtx: runCtx, cancelRun: cancel, fetchCtx: fetchCtx, cancelFetch: cancelFetch,
		stopping: make(chan struct{}), forced: make(chan struct{}), inflight: map[*inflightActivity]struct{}{},
	}
	admin, _ := duroxide.AsManagementCapability(provider)
	r.metrics = newRuntimeMetrics(o.MeterProvider, admin, r.logger)
	r.metrics.observeEagerDispatch(o.MeterProvider, provider)
	r.health = healthByQueue{logger: r.logger, queues: map[string]*storeHealth{}}
	if h, ok := provider.(duroxide.StoreHealthReporter); ok && h.ReportsStoreHealth() {
		r.health.quiet = true
	}
	r.tracing = newRuntimeTracing(o.TracerProvider)
	r.provider = instrumentedProvider{Provider: provider, m: r.metrics}
	r.reasons, _ = duroxide.AsPendingReasonRecorder(provider)
	r.logger.Info("duroxide runtime starting", "duroxide_version", duroxide.DuroxideVersion,
		"provider", provider.Name(), "provider_version", provider.Version(), "runtime_id", r.id)
	r.sticky = newStickyCache(o.StickyCacheSize, o.StickyCacheBytes, r.metrics)
	proc := &turnProcessor{
		registry: registry, maxAttempts: o.MaxAttempts, backoff: o.UnregisteredBackoff, onUnregistered: o.OnUnregistered,
		supported: o.capabilityFilter(), parentExec: r.parentExecutionID, logger: r.logger, now: o.Now, runtimeID: r.id,
		sticky: r.sticky, verify: o.StickyVerify, metrics: r.metrics,
	}
	for i := range o.OrchestrationConcurrency {
		r.spawn(func() { r.orchestrationLoop(fmt.Sprintf("orch-%d-%s", i, r.id), proc) })
	}
	if o.TagFilter.Mode() != duroxide.TagFilterModeNone && o.WorkerConcurrency > 0 {
		tracker := newSessionTracker()
		var owners []string
		for i := range o.WorkerConcurrency {
			workerID := fmt.Sprintf("work-%d-%s", i, r.id)
			owner := workerID
			if o.WorkerNodeID != "" {
				workerID = fmt.Sprintf("work-%d-%s", i, o.WorkerNodeID)
				owner = o.WorkerNodeID
			}
			if len(owners) == 0 || owners[len(owners)-1] != owner {
				owners = append(owners, owner)
			}
			r.spawn(func() { r.workerLoop(workerID, owner, tracker) })
		}
		r.spawn(func() { r.sessionManager(owners) })
	}
	go r.shutdownWhenDone(ctx)
	return r, nil
}

// shutdownWhenDone shuts the runtime down gracefully when ctx, the context
// given to Start, is cancelled; it returns at once when Shutdown ran first.
// It is not one of the runtime's goroutines (Shutdown waits for those).
func (r *Runtime) shutdownWhenDone(ctx context.Context) {
	select {
	case <-r.stopping:
		return
	case <-ctx.Done():
	}
	grace, total := r.opts.ShutdownGracePeriod, r.opts.ShutdownTimeout
	r.logger.Info("runtime context cancelled; shutting down", "runtime_id", r.id, "grace_period", grace, "total_timeout", total, "cause", context.Cause(ctx))
	outcome, err := r.ShutdownWithTimeouts(grace, total)
	if err != nil || outcome != ShutdownDrained {
		r.logger.Warn("shutdown after the runtime context was cancelled did not finish in the grace period; in-flight work was abandoned",
			"runtime_id", r.id, "outcome", outcome, "error", err)
	}
}

func (r *Runtime) spawn(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// Client returns a Client on the runtime's provider.
func (r *Runtime) Client() *Client { return r.client }

// ID returns the runtime's random id (part of its worker ids).
func (r *Runtime) ID() string { return r.id }

func (r *Runtime) isStopping() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return r.runCtx.Err() != nil
	}
}

// idle waits d, or less when the runtime stops.
func (r *Runtime) idle(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.stopping:
	case <-r.runCtx.Done():
	}
}

// pollLoop is the loop of a dispatcher goroutine: fetch, then process what
// was fetched, until the runtime stops. A failed fetch backs off; an empty
// one waits out the rest of the poll interval.
func pollLoop[T any](r *Runtime, workerID, what string, fetch func() (*T, error), process func(*T)) {
	consecutiveErrors := 0
	health := r.health.of(what)
	for !r.isStopping() {
		start := time.Now()
		item, err := fetch()
		if err != nil {
			if r.fetchCtx.Err() != nil {
				return
			}
			consecutiveErrors++
			backoff := fetchBackoff(consecutiveErrors)
			health.failed(workerID, what, err, backoff)
			r.idle(backoff)
			continue
		}
		consecutiveErrors = 0
		health.ok()
		if item == nil {
			r.idle(r.opts.PollInterval - time.Since(start))
			continue
		}
		process(item)
	}
}

// every calls tick every interval until ctx ends or tick returns false.
func every(ctx context.Context, interval time.Duration, tick func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !tick() {
				return
			}
		}
	}
}

// fetchBackoff is the wait after the consecutive-th failed fetch in a row:
// 100 ms doubling to 3 s, for every kind of error. duroxide waits a flat
// 100 ms after a permanent error, which during a permanent outage (a
// deleted container) is ten fetches a second per dispatcher.
func fetchBackoff(consecutive int) time.Duration {
	return min(100*time.Millisecond*time.Duration(uint64(1)<<min(consecutive-1, 5)), 3*time.Second)
}

// parentExecutionID returns the parent's execution that scheduled child as
// parentID: the execution of the parent's latest history when it holds that
// SubOrchestrationScheduled, 0 (which no execution has, so the parent drops
// the message) when the parent has moved on, and duroxide's fallback 1 when
// the parent's history cannot be read.
func (r *Runtime) parentExecutionID(parent string, parentID uint64, child string) uint64 {
	hist, err := r.provider.Read(r.runCtx, parent)
	if err != nil || len(hist) == 0 {
		return duroxide.InitialExecutionID
	}
	for _, ev := range hist {
		if s, ok := ev.Kind.(duroxide.SubOrchestrationScheduled); ok && ev.EventID == parentID && childInstanceID(parent, s.Instance) == child {
			return ev.ExecutionID
		}
	}
	return 0
}

func newRuntimeID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
