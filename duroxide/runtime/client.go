package runtime

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/metric"
	"strconv"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Client starts, signals, cancels and observes orchestrations through a
// provider (duroxide's Client). It needs no running Runtime: it only
// enqueues messages and reads state.
//
// Errors: a call that fails reads "runtime: <operation> <instance>:
// <reason>" and wraps what caused it, so errors.Is finds the sentinels
// documented on each method (ErrInstanceNotFound, ErrInstanceExists,
// ErrTimeout, ...) and errors.As the provider's *duroxide.ProviderError
// (with its Retryable flag). An empty instance id is refused before the
// provider is called; a client without a provider fails every call with
// ErrNilProvider (errors.Is). The management calls (ListAllInstances,
// ListInstancesByStatus, ListExecutions, GetInstanceInfo, GetExecutionInfo,
// GetInstanceTree, GetSystemMetrics, GetQueueDepths, ReadExecutionHistory,
// DeleteInstance, DeleteInstanceBulk, PruneExecutions, PruneExecutionsBulk)
// need a provider that implements duroxide.ProviderAdmin and return
// ErrManagementNotAvailable otherwise (HasManagementCapability says which).
type Client struct {
	provider duroxide.Provider
	metrics  *clientMetrics // client_metrics.go
}

// NewClient returns a client on provider. A client on a nil provider (and
// a nil *Client) returns ErrNilProvider from every call that needs one.
// Its metrics go to the global MeterProvider (WithMeterProvider changes
// that).
func NewClient(provider duroxide.Provider) *Client {
	return &Client{provider: provider, metrics: newClientMetrics(nil)}
}

// WithMeterProvider returns a client on c's provider whose metrics (the
// client metrics of duroxide's specification: starts, raised events,
// cancellations, wait duration) go to mp; nil means the global
// MeterProvider.
func (c *Client) WithMeterProvider(mp metric.MeterProvider) *Client {
	var p duroxide.Provider
	if c != nil {
		p = c.provider
	}
	return &Client{provider: p, metrics: newClientMetrics(mp)}
}

// ErrNilProvider is returned by Start and by every Client call when the
// provider is nil.
var ErrNilProvider = errors.New("runtime: nil duroxide.Provider")

// prov returns the client's provider, or ErrNilProvider.
func (c *Client) prov() (duroxide.Provider, error) {
	if c == nil || c.provider == nil {
		return nil, ErrNilProvider
	}
	return c.provider, nil
}

// ErrTimeout is returned by the Wait* methods when their timeout elapsed
// first (duroxide's ClientError::Timeout).
var ErrTimeout = errors.New("runtime: operation timed out")

// Polling of the Wait* methods: 5ms doubling up to 100ms, as in duroxide.
// With a provider that is a duroxide.StatusWatcher, WaitForOrchestration
// and WaitForStatusChange wake on the provider's acks in this process and
// poll only for other processes' changes: from watchedPollDelay doubling up
// to maxWatchedPollDelay. When the watcher also sees other processes'
// changes (duroxide.AllProcessesStatusWatcher), they check only every
// safetyPollDelay in case a notification was lost.
const (
	initialPollDelay    = 5 * time.Millisecond
	maxPollDelay        = 100 * time.Millisecond
	watchedPollDelay    = 100 * time.Millisecond
	maxWatchedPollDelay = time.Second
	safetyPollDelay     = 5 * time.Second
)

// watchedDelays returns the first and largest poll delay of a wait with
// the status watch of p.
func watchedDelays(p duroxide.Provider) (first, most time.Duration) {
	if w, ok := duroxide.AsStatusWatcher(p); ok {
		if all, ok := w.(duroxide.AllProcessesStatusWatcher); ok && all.WatchesAllProcesses() {
			return safetyPollDelay, safetyPollDelay
		}
	}
	return watchedPollDelay, maxWatchedPollDelay
}

// statusWatch returns a watch of instance's status when p is a
// duroxide.StatusWatcher, nil otherwise.
func statusWatch(p duroxide.Provider, instance string) func() (<-chan struct{}, func()) {
	w, ok := duroxide.AsStatusWatcher(p)
	if !ok {
		return nil
	}
	return func() (<-chan struct{}, func()) { return w.WatchStatus(instance) }
}

// enqueue puts kind on its instance's orchestrator queue; an empty instance
// id is refused before the provider sees it.
func (c *Client) enqueue(ctx context.Context, op string, kind duroxide.WorkItemKind) error {
	if err := checkInstance(op, kind.TargetInstance()); err != nil {
		return err
	}
	p, err := c.prov()
	if err != nil {
		return clientErr(op, kind.TargetInstance(), err)
	}
	if err := p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: kind}, 0); err != nil {
		return clientErr(op, kind.TargetInstance(), err)
	}
	c.metrics.enqueued(kind)
	return nil
}

// StartOrchestration starts instance running orchestration name (the
// version the registry's policy picks) with input. It enqueues one start
// message (one provider request) and returns once it is stored.
//
// A start never changes what an existing instance runs. When the provider
// is a duroxide.InstanceStarter (this module's cdb and in-memory providers
// are), a start for an instance that exists (it has run and was not
// deleted, or its start is already stored) returns an error matching
// errors.Is(err, ErrInstanceExists), at no extra request; when the instance
// is pending (its start is stored and has not run) the error also matches
// ErrInstancePending and says so, with the reason a runtime reported
// (`instance "x" is pending: its start is stored and has not run yet
// (orchestration "Procss" is not registered on runtime 3f2a, attempt 3)`). With another
// provider the start is stored and the runtime drops it with a warning when
// it finds the instance's history already begun, as duroxide does.
//
// Refused before the provider is called: an empty instance id or
// orchestration name, and a root id with the sub-orchestration marker
// (ErrReservedInstanceID).
func (c *Client) StartOrchestration(ctx context.Context, instance, name, input string) error {
	return c.start(ctx, instance, name, nil, input)
}

// StartOrchestrationVersioned starts instance running version of name
// (a version as registered, such as "1.2.0") instead of the one the
// registry's policy picks, with StartOrchestration's requests and errors.
func (c *Client) StartOrchestrationVersioned(ctx context.Context, instance, name, version, input string) error {
	return c.start(ctx, instance, name, &version, input)
}

func (c *Client) start(ctx context.Context, instance, name string, version *string, input string) error {
	if err := checkInstance("start", instance); err != nil {
		return err
	}
	if name == "" {
		return &clientError{op: "start", instance: instance, kind: errEmptyName}
	}
	if reservedChildID(instance) {
		return &clientError{op: "start", instance: instance, kind: ErrReservedInstanceID}
	}
	start := duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: name, Input: input, Version: version, ExecutionID: duroxide.InitialExecutionID,
		TraceContext: traceparentOf(ctx), // tracing.go: the orchestration's spans join ctx's trace
	}
	p, err := c.prov()
	if err != nil {
		return clientErr("start", instance, err)
	}
	s, ok := duroxide.AsInstanceStarter(p)
	if !ok {
		return c.enqueue(ctx, "start", start)
	}
	if err := s.EnqueueStart(ctx, start); err != nil {
		return clientErr("start", instance, err)
	}
	c.metrics.enqueued(start)
	return nil
}

// RaiseEvent raises the external event name with data; an orchestration
// waiting on ScheduleWait(name) receives it (an event with no waiting
// subscription is dropped). It enqueues one orchestrator message (one
// provider request); the error is the provider's, wrapped.
func (c *Client) RaiseEvent(ctx context.Context, instance, name, data string) error {
	return c.enqueue(ctx, "raise event", duroxide.ExternalRaisedItem{Instance: instance, Name: name, Data: data})
}

// EnqueueEvent puts data on the persistent queue name of instance, where it
// waits for DequeueEvent (a provider drops it when the instance was never
// started). It enqueues one orchestrator message (one provider request);
// the error is the provider's, wrapped.
func (c *Client) EnqueueEvent(ctx context.Context, instance, queue, data string) error {
	return c.enqueue(ctx, "enqueue event", duroxide.QueueMessageItem{Instance: instance, Name: queue, Data: data})
}

// CancelInstance asks instance to stop: it fails with "canceled: <reason>",
// its in-flight activities are cancelled and its children cancelled in turn.
func (c *Client) CancelInstance(ctx context.Context, instance, reason string) error {
	return c.enqueue(ctx, "cancel", duroxide.CancelInstanceItem{Instance: instance, Reason: reason})
}

// GetOrchestrationStatus reads instance's status from its latest
// execution's history: Completed or Failed from the terminal event, Running
// once started (including between continue-as-new executions). A history
// with no start is Pending when the provider's ProviderAdmin reports the
// instance as duroxide.StatusPending (its start is stored and has not run,
// with the reason a runtime reported in PendingReason: one GetInstanceInfo
// more, in that case only), NotFound otherwise; when the provider reports
// it running or finished instead (its first turn committed after the
// history read), the history is read again (one Read more). The custom
// status comes from GetCustomStatus; an error there leaves it unset, as in
// duroxide.
func (c *Client) GetOrchestrationStatus(ctx context.Context, instance string) (OrchestrationStatus, error) {
	if err := checkInstance("status", instance); err != nil {
		return OrchestrationStatus{}, err
	}
	p, err := c.prov()
	if err != nil {
		return OrchestrationStatus{}, clientErr("status", instance, err)
	}
	st, err := readStatus(ctx, p, instance)
	if err != nil {
		return OrchestrationStatus{}, err
	}
	if st.Kind == StatusNotFound {
		pending, started := pendingStatus(ctx, p, instance)
		if !started {
			return pending, nil
		}
		// The first turn committed between the two reads: the history
		// shows it now.
		if st, err = readStatus(ctx, p, instance); err != nil || st.Kind == StatusNotFound {
			return st, err
		}
	}
	addCustomStatus(ctx, p, instance, &st)
	return st, nil
}

// pendingStatus is the status of an instance whose history has no start:
// Pending, with its reason, when the provider's admin reports it pending,
// NotFound otherwise (no admin, or an error: as duroxide reads it).
// started reports that the admin knows the instance in another state
// (running, or finished): its first turn committed after its history was
// read, and the history is to be read again.
func pendingStatus(ctx context.Context, p duroxide.Provider, instance string) (st OrchestrationStatus, started bool) {
	admin, ok := duroxide.AsManagementCapability(p)
	if !ok {
		return OrchestrationStatus{Kind: StatusNotFound}, false
	}
	info, err := admin.GetInstanceInfo(ctx, instance)
	switch {
	case err != nil || info.Status == "":
		return OrchestrationStatus{Kind: StatusNotFound}, false
	case info.Status != duroxide.StatusPending:
		return OrchestrationStatus{Kind: StatusNotFound}, true
	}
	return OrchestrationStatus{Kind: StatusPending, PendingReason: info.PendingReason}, false
}

// readStatus reads instance's history and returns the status it shows,
// without the custom status.
func readStatus(ctx context.Context, p duroxide.Provider, instance string) (OrchestrationStatus, error) {
	hist, err := p.Read(ctx, instance)
	if err != nil {
		return OrchestrationStatus{}, clientErr("status", instance, err)
	}
	return statusFromHistory(hist), nil
}

// statusFromHistory is the status a latest execution's history shows
// (duroxide's get_orchestration_status): its terminal event, else Running
// once it has an OrchestrationStarted, else NotFound.
func statusFromHistory(hist []duroxide.Event) OrchestrationStatus {
	for i := len(hist) - 1; i >= 0; i-- {
		switch k := hist[i].Kind.(type) {
		case duroxide.OrchestrationCompleted:
			return OrchestrationStatus{Kind: StatusCompleted, Output: k.Output}
		case duroxide.OrchestrationFailed:
			d := k.Details
			return OrchestrationStatus{Kind: StatusFailed, Details: &d}
		}
	}
	for _, ev := range hist {
		if _, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			return OrchestrationStatus{Kind: StatusRunning}
		}
	}
	return OrchestrationStatus{Kind: StatusNotFound}
}

// addCustomStatus sets st's custom status and version from the provider
// (best effort: an error leaves them unset, as in duroxide).
func addCustomStatus(ctx context.Context, p duroxide.Provider, instance string, st *OrchestrationStatus) {
	if cs, err := p.GetCustomStatus(ctx, instance, 0); err == nil {
		setCustomStatus(cs, st)
	}
}

// setCustomStatus sets st's custom status and version from cs (nil: never
// set, st unchanged).
func setCustomStatus(cs *duroxide.CustomStatus, st *OrchestrationStatus) {
	if cs != nil {
		st.CustomStatus, st.CustomStatusVersion = cs.Status, cs.Version
	}
}

// WaitForOrchestration polls until instance is Completed or Failed and
// returns that status, the one GetOrchestrationStatus returns. After
// timeout it returns the last status it saw (Running, Pending with its
// reason, or NotFound; the custom status when the provider reads it with
// the metadata) and an error matching errors.Is(err, ErrTimeout); when ctx
// ends first, that status and ctx's error. With a provider that has ProviderAdmin, a
// poll reads the instance metadata instead of the whole history, and the
// history only once the metadata says the instance finished. With a provider that is a duroxide.StatusWatcher, it
// checks once, then again only when the provider's watch fires (an ack in
// this process that changed the status) or, for other processes' changes,
// on a backoff of 100ms doubling to 1s.
func (c *Client) WaitForOrchestration(ctx context.Context, instance string, timeout time.Duration) (OrchestrationStatus, error) {
	if err := checkInstance("wait for orchestration", instance); err != nil {
		return OrchestrationStatus{}, err
	}
	p, err := c.prov()
	if err != nil {
		return OrchestrationStatus{}, clientErr("wait for orchestration", instance, err)
	}
	admin, _ := duroxide.AsManagementCapability(p)
	defer c.metrics.waited(time.Now())
	first, most := watchedDelays(p)
	checks := 0
	return pollUntil(ctx, timeout, statusWatch(p, instance), first, most, func() (OrchestrationStatus, bool, error) {
		checks++
		return pollTerminal(ctx, p, admin, instance, checks == 1)
	})
}

// WaitForStatusChange waits until instance's custom status version exceeds
// lastSeenVersion, or it reaches a terminal state, and returns its status
// (GetOrchestrationStatus's); it checks every pollInterval and returns
// ErrTimeout after timeout. With a provider that has ProviderAdmin, a check
// that finds the custom status unchanged and the instance running by its
// metadata reads no history. With a provider that is a
// duroxide.StatusWatcher, it checks again when the provider's watch fires
// (an ack in this process that changed the status) and otherwise on a
// backoff from pollInterval doubling to 1s (or pollInterval if larger).
// After timeout it returns the last status it read (at least Running) and
// an error matching errors.Is(err, ErrTimeout).
func (c *Client) WaitForStatusChange(ctx context.Context, instance string, lastSeenVersion uint64, pollInterval, timeout time.Duration) (OrchestrationStatus, error) {
	if err := checkInstance("wait for status change", instance); err != nil {
		return OrchestrationStatus{}, err
	}
	p, err := c.prov()
	if err != nil {
		return OrchestrationStatus{}, clientErr("wait for status change", instance, err)
	}
	admin, _ := duroxide.AsManagementCapability(p)
	if pollInterval <= 0 {
		pollInterval = maxPollDelay
	}
	watch := statusWatch(p, instance)
	_, most := watchedDelays(p)
	delay := pollInterval
	deadline := time.Now().Add(timeout)
	var last OrchestrationStatus // what a timeout returns
	for time.Now().Before(deadline) {
		changed, stop := takeWatch(watch)
		cs, err := p.GetCustomStatus(ctx, instance, lastSeenVersion)
		if err != nil {
			stop()
			return OrchestrationStatus{}, clientErr("wait for status change", instance, err)
		}
		if cs == nil && last.Kind == "" {
			last = OrchestrationStatus{Kind: StatusRunning}
		}
		if cs != nil || !knownRunning(ctx, admin, instance) {
			st, err := c.GetOrchestrationStatus(ctx, instance)
			if err != nil {
				stop()
				return OrchestrationStatus{}, err
			}
			if cs != nil && st.CustomStatusVersion < cs.Version {
				// The status read came from a replica older than the
				// custom status read (another process wrote it, or a
				// provider without session tokens): what was seen stays
				// seen.
				setCustomStatus(cs, &st)
			}
			if cs != nil || st.IsTerminal() {
				stop()
				return st, nil
			}
			last = st
		}
		err = waitCtx(ctx, min(delay, time.Until(deadline)), changed)
		stop()
		if err != nil {
			return last, err
		}
		if watch != nil {
			delay = max(min(delay*2, most), pollInterval)
		}
	}
	return last, ErrTimeout
}

// GetKVValue reads key of instance's KV store; ok is false when the key
// or the instance is absent. One provider read; the error is the
// provider's, wrapped (see Client).
func (c *Client) GetKVValue(ctx context.Context, instance, key string) (value string, ok bool, err error) {
	if err := checkInstance("get kv value", instance); err != nil {
		return "", false, err
	}
	p, err := c.prov()
	if err == nil {
		value, ok, err = p.GetKVValue(ctx, instance, key)
	}
	if err != nil {
		return "", false, clientErr("get kv value "+strconv.Quote(key)+" of", instance, err)
	}
	return value, ok, nil
}

// GetKVAllValues reads instance's whole KV store, key to value (empty for
// an unknown instance or an empty store). The error is the provider's,
// wrapped (see Client).
func (c *Client) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	if err := checkInstance("get kv values", instance); err != nil {
		return nil, err
	}
	p, err := c.prov()
	if err != nil {
		return nil, clientErr("get kv values", instance, err)
	}
	m, err := p.GetKVAllValues(ctx, instance)
	if err != nil {
		return nil, clientErr("get kv values", instance, err)
	}
	return m, nil
}

// WaitForKVValue polls until key exists in instance's KV store and returns
// it; ErrTimeout after timeout.
func (c *Client) WaitForKVValue(ctx context.Context, instance, key string, timeout time.Duration) (string, error) {
	return pollUntil(ctx, timeout, nil, 0, 0, func() (string, bool, error) {
		return c.GetKVValue(ctx, instance, key)
	})
}

// pollUntil calls check with duroxide's backoff (5ms doubling to 100ms)
// until it reports done, fails, the timeout elapses (ErrTimeout) or ctx
// ends; on a timeout or ctx's end it returns the last value check gave. With a watch (see statusWatch), check runs again when the watch
// fires, and otherwise on a backoff from watchedFirst doubling to
// watchedMost (see watchedDelays).
func pollUntil[T any](ctx context.Context, timeout time.Duration, watch func() (<-chan struct{}, func()), watchedFirst, watchedMost time.Duration, check func() (T, bool, error)) (T, error) {
	deadline := time.Now().Add(timeout)
	delay, maxDelay := initialPollDelay, maxPollDelay
	if watch != nil {
		delay, maxDelay = watchedFirst, watchedMost
	}
	for {
		changed, stop := takeWatch(watch)
		v, done, err := check()
		if err != nil || done {
			stop()
			return v, err
		}
		if !time.Now().Before(deadline) {
			stop()
			return v, ErrTimeout
		}
		err = waitCtx(ctx, min(delay, time.Until(deadline)), changed)
		stop()
		if err != nil {
			return v, err
		}
		delay = min(delay*2, maxDelay)
	}
}

// takeWatch takes watch's channel, or a nil channel (never ready) and a
// no-op stop when watch is nil.
func takeWatch(watch func() (<-chan struct{}, func())) (<-chan struct{}, func()) {
	if watch == nil {
		return nil, func() {}
	}
	return watch()
}

// waitCtx waits d, until changed closes, or until ctx ends (returning
// ctx's error).
func waitCtx(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-changed:
		return nil
	}
}
