package runtimetest

// The test environment: the user's registry running on a provider of its
// own for one test.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// DefaultWaitTimeout bounds Instance.Wait and the waits of the
// environment's helpers unless WithWaitTimeout says otherwise: a guard
// against a test that would hang, not a speed check.
const DefaultWaitTimeout = time.Minute

// defaultPollInterval is the runtime's poll interval in an environment
// whose options leave it unset: a test need not wait 100 ms per idle poll.
const defaultPollInterval = 5 * time.Millisecond

// Option configures New: WithProvider, WithOptions, WithWaitTimeout.
type Option struct{ apply func(*envConfig) }

type envConfig struct {
	provider    duroxide.Provider
	options     runtime.Options
	waitTimeout time.Duration
	clock       *Clock
	realTime    bool
}

// WithProvider runs the environment on p instead of a fresh in-memory
// provider (a cdbtest provider, say). The environment does not close p.
// Its timers run in real time unless WithClock gives the clock p reads.
func WithProvider(p duroxide.Provider) Option {
	return Option{func(c *envConfig) { c.provider = p }}
}

// WithOptions sets the runtime's options (runtime.Options). Fields left
// zero keep the runtime's defaults, except PollInterval (5 ms unless set)
// and Logger (log output is discarded unless set).
func WithOptions(o runtime.Options) Option {
	return Option{func(c *envConfig) { c.options = o }}
}

// WithClock makes c the environment's clock, with time skipping: the
// runtime reads it, and so must the provider given to WithProvider (built
// with c.Now as its clock). Without WithProvider it is the in-memory
// provider's clock.
func WithClock(c *Clock) Option {
	return Option{func(cfg *envConfig) { cfg.clock = c }}
}

// WithRealTime turns time skipping off: the environment's timers wait
// their delay in real time.
func WithRealTime() Option {
	return Option{func(c *envConfig) { c.realTime = true }}
}

// WithWaitTimeout bounds every wait of the environment (Instance.Wait,
// RaiseEvent's wait for a subscription) at d instead of DefaultWaitTimeout.
func WithWaitTimeout(d time.Duration) Option {
	return Option{func(c *envConfig) { c.waitTimeout = d }}
}

// Env runs a registry's orchestrations for one test: a runtime on a
// provider of its own (a fresh in-memory provider unless WithProvider),
// with the registry's activities replaceable by mocks and every activity
// call recorded. New starts it and t.Cleanup stops it; environments of
// parallel tests are independent. Its methods are safe for concurrent use
// and report failures through the test (t.Fatal or t.Error).
//
// On the in-memory provider (or with WithClock) the environment skips
// time: its Clock runs at real speed, and whenever every instance waits
// only for durable timers (or for events the test has not sent), with no
// activity running or queued and nothing the test sent unprocessed, it
// jumps to the next timer, so a one-day timer fires at once. It skips
// only while the test waits (Instance.Wait, Env.Run, RaiseEvent's wait
// for the subscription), never over a subscription RaiseEvent is about to
// answer, so an event the test raises always beats a timer. Signals that
// activities send themselves are not tracked: one that a turn is
// processing when the check runs can lose its race against a timer.
type Env struct {
	t           testing.TB
	provider    duroxide.Provider
	registry    *runtime.Registry
	client      *runtime.Client
	waitTimeout time.Duration
	clock       *Clock // nil: real time

	mu         sync.Mutex
	registered map[string]runtime.ActivityFunc // the user's activities
	mocks      map[string]*ActivityMock
	counts     map[string]int
	calls      []ActivityCall
	started    int
	startedIDs []string          // instances the test started (time skipping waits for their first turn)
	sending    int               // signals the test sent that are not yet in history
	waiting    int               // test goroutines in Wait or RaiseEvent: time skips only then
	awaited    map[[2]string]int // (instance, event) RaiseEvent waits to raise

	expectations map[string][]*Expectation // by kind and name (expectKey)
	callbacks    []*delayedCallback        // pending, in registration order
	// In real time (no clock): the delayed callbacks' timers, and those
	// not yet returned (stopped timers are taken off). callbacksStopped:
	// the test ended, no callback is registered or started any more.
	realTimers       []*time.Timer
	realCallbacks    sync.WaitGroup
	callbacksStopped bool
	listeners        []Listeners
	scheduled        map[activityKey]string // activity names by schedule, for ActivityCompleted listeners
	start            time.Time              // the environment's clock at New
	// ctx is cancelled, with the problem as its cause, when a name is
	// neither registered nor mocked: every wait of the test stops then.
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopped bool // an unregistered name was reported
}

// New starts an environment running reg for test t. reg is not modified:
// the environment runs a copy (runtime.Registry.Clone) whose activities
// the mocks replace. It stops the test (t.Fatal) when the runtime cannot
// start.
func New(t testing.TB, reg *runtime.Registry, opts ...Option) *Env {
	t.Helper()
	cfg := envConfig{waitTimeout: DefaultWaitTimeout}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&cfg)
		}
	}
	if cfg.clock == nil && cfg.provider == nil && !cfg.realTime {
		cfg.clock = NewClock()
	}
	if cfg.realTime {
		cfg.clock = nil
	}
	if cfg.provider == nil {
		var now func() time.Time
		if cfg.clock != nil {
			now = cfg.clock.Now
		}
		cfg.provider = memory.NewMemoryProvider(memory.MemoryOptions{Now: now})
	}
	if cfg.clock != nil {
		cfg.options.Now = cfg.clock.Now
		if cfg.options.LongPollTimeout == 0 {
			// A long poll sleeps in real time until the next timer it
			// knows of; after a jump it would sleep on.
			cfg.options.LongPollTimeout = -1
		}
	}
	if cfg.options.PollInterval == 0 {
		cfg.options.PollInterval = defaultPollInterval
	}
	if cfg.options.Logger == nil {
		cfg.options.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Env{
		t: t, provider: cfg.provider, client: runtime.NewClient(cfg.provider), waitTimeout: cfg.waitTimeout, clock: cfg.clock,
		registered: map[string]runtime.ActivityFunc{}, mocks: map[string]*ActivityMock{}, counts: map[string]int{},
		awaited: map[[2]string]int{}, expectations: map[string][]*Expectation{}, scheduled: map[activityKey]string{},
		start: time.Now(),
	}
	if e.clock != nil {
		e.start = e.clock.Now()
	}
	e.ctx, e.cancel = context.WithCancelCause(t.Context())
	e.registry = reg.CloneWith(runtime.CloneOptions{
		WrapActivity: func(name string, fn runtime.ActivityFunc) runtime.ActivityFunc {
			e.registered[name] = fn
			return e.activity(name)
		},
		WrapOrchestration: func(name, _ string, fn runtime.OrchestrationFunc) runtime.OrchestrationFunc {
			return e.orchestration(name, fn)
		},
	})
	userUnregistered, userCommitted := cfg.options.OnUnregistered, cfg.options.OnTurnCommitted
	cfg.options.OnUnregistered = func(kind, name, instance string) {
		if userUnregistered != nil {
			userUnregistered(kind, name, instance)
		}
		e.unregistered(kind, name, instance)
	}
	cfg.options.OnTurnCommitted = func(instance string, executionID uint64, appended []duroxide.Event) {
		if userCommitted != nil {
			userCommitted(instance, executionID, appended)
		}
		e.turnCommitted(instance, appended)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := runtime.Start(ctx, cfg.provider, e.registry, cfg.options)
	if err != nil {
		cancel()
		t.Fatalf("runtimetest: start the runtime: %v", err)
	}
	skipped := make(chan struct{})
	if e.clock != nil {
		go func() {
			defer close(skipped)
			e.skipTime(ctx)
		}()
	} else {
		close(skipped)
	}
	t.Cleanup(func() {
		e.cancel(nil)
		callbacksRan := e.stopCallbacks()
		shutdown, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		if err := rt.Shutdown(shutdown); err != nil {
			t.Errorf("runtimetest: shut the runtime down: %v", err)
		}
		cancel()
		// The time-skipping goroutine and the delayed callbacks report
		// through t: they must be done before the test is.
		for _, ended := range []<-chan struct{}{skipped, callbacksRan} {
			select {
			case <-ended:
			case <-shutdown.Done():
			}
		}
	})
	return e
}

// Provider returns the environment's provider, for reads a test makes
// itself.
func (e *Env) Provider() duroxide.Provider { return e.provider }

// Client returns a client on the environment's provider.
func (e *Env) Client() *runtime.Client { return e.client }

// Clock returns the environment's virtual clock, or nil when it runs in
// real time (WithRealTime, or WithProvider without WithClock).
func (e *Env) Clock() *Clock { return e.clock }

// Registry returns the registry the environment runs: the copy of New's
// registry with the mocks in place.
func (e *Env) Registry() *runtime.Registry { return e.registry }

// Start starts orchestration (its latest registered version) as instance
// with input, and returns its handle without waiting. It stops the test
// when the start fails.
//
// An orchestration that is neither registered nor mocked stops the test
// at once, naming the registered orchestrations closest to the name (a
// misspelling); so does, as soon as the runtime fetches it, an activity or
// sub-orchestration the code calls that is neither (Env's
// unregistered-name check).
func (e *Env) Start(instance, orchestration, input string) *Instance {
	e.t.Helper()
	if !slices.Contains(e.registry.OrchestrationNames(), orchestration) {
		e.t.Fatalf("%v", e.notRegistered("orchestration", orchestration, instance))
	}
	e.mu.Lock()
	e.startedIDs = append(e.startedIDs, instance)
	e.mu.Unlock()
	if err := e.client.StartOrchestration(e.t.Context(), instance, orchestration, input); err != nil {
		e.t.Fatalf("runtimetest: start %s as %q: %v", orchestration, instance, err)
	}
	return &Instance{env: e, ID: instance}
}

// Run starts orchestration with input as a new instance (named
// "<orchestration>-<n>", n counting the environment's runs from 1) and
// waits until it completes or fails (Instance.Wait).
func (e *Env) Run(orchestration, input string) *Instance {
	e.t.Helper()
	e.mu.Lock()
	e.started++
	id := fmt.Sprintf("%s-%d", orchestration, e.started)
	e.mu.Unlock()
	inst := e.Start(id, orchestration, input)
	inst.Wait()
	return inst
}

// Instance returns the handle of an instance the environment runs (a
// sub-orchestration's, say), without checking that it exists.
func (e *Env) Instance(id string) *Instance { return &Instance{env: e, ID: id} }

// history returns every execution's events of instance, in order.
func (e *Env) history(instance string) ([]Execution, error) {
	hs, err := ReadProvider(e.t.Context(), e.provider, instance)
	if err != nil {
		return nil, err
	}
	return hs[0].Executions, nil
}

// describe prints an instance's history for a failure message.
func (e *Env) describe(instance string) string {
	execs, err := e.history(instance)
	if err != nil {
		return fmt.Sprintf("(history of %q unreadable: %v)", instance, err)
	}
	var b strings.Builder
	for _, x := range execs {
		fmt.Fprintf(&b, "history of %q, execution %d:\n%s", instance, x.ExecutionID, FormatHistory(x.Events, -1))
	}
	return b.String()
}
