package stress

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Counting of provider calls during a stress run, and of the storage
// requests each call makes. The harness wraps the provider; each call
// carries a tally in its context, and a storage transport that calls
// AttributeRequest for every request it sends (the cdb-stress binary wraps
// the azcosmos HTTP transport) has its requests added to the method that
// made them. Requests made outside any call (background goroutines such as
// an outbox reconciler) are not attributed.

// OperationStats are the calls of one provider method during a run and the
// requests they made, split by outcome.
type OperationStats struct {
	// Operation is duroxide's name of the method, e.g.
	// "fetch_orchestration_item".
	Operation string
	// Calls counts the successful calls that returned work (a fetch) or
	// succeeded (any other method); Requests the requests they made, and
	// Time the time they took altogether.
	Calls    int64
	Requests int64
	Time     time.Duration
	// EmptyCalls counts the fetches that returned no work; EmptyRequests
	// the requests they made.
	EmptyCalls    int64
	EmptyRequests int64
	// FailedCalls counts the calls that returned an error; FailedRequests
	// the requests they made.
	FailedCalls    int64
	FailedRequests int64
	// RequestCharge, EmptyRequestCharge and FailedRequestCharge are the
	// request units (RU) the requests of the successful, empty and failed
	// calls were charged, when the storage transport reports them
	// (AttributeRequestCharge); 0 otherwise.
	RequestCharge       float64
	EmptyRequestCharge  float64
	FailedRequestCharge float64
}

// RequestChargePerCall returns RequestCharge / Calls in request units, or 0
// when there were no calls.
func (s OperationStats) RequestChargePerCall() float64 {
	if s.Calls == 0 {
		return 0
	}
	return s.RequestCharge / float64(s.Calls)
}

// RequestsPerCall returns Requests / Calls, or 0 when there were no calls.
func (s OperationStats) RequestsPerCall() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.Requests) / float64(s.Calls)
}

// MeanTime returns Time / Calls, the mean duration of a successful call, or
// 0 when there were no calls.
func (s OperationStats) MeanTime() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Time / time.Duration(s.Calls)
}

// The provider methods counted, in duroxide's names.
const (
	OpFetchOrchestrationItem     = "fetch_orchestration_item"
	OpAckOrchestrationItem       = "ack_orchestration_item"
	OpAbandonOrchestrationItem   = "abandon_orchestration_item"
	OpRenewOrchestrationItemLock = "renew_orchestration_item_lock"
	OpRead                       = "read"
	OpReadWithExecution          = "read_with_execution"
	OpAppendWithExecution        = "append_with_execution"
	OpEnqueueForWorker           = "enqueue_for_worker"
	OpFetchWorkItem              = "fetch_work_item"
	OpAckWorkItem                = "ack_work_item"
	OpRenewWorkItemLock          = "renew_work_item_lock"
	OpAbandonWorkItem            = "abandon_work_item"
	OpRenewSessionLock           = "renew_session_lock"
	OpCleanupOrphanedSessions    = "cleanup_orphaned_sessions"
	OpEnqueueForOrchestrator     = "enqueue_for_orchestrator"
	OpGetCustomStatus            = "get_custom_status"
	OpGetKVValue                 = "get_kv_value"
	OpGetKVAllValues             = "get_kv_all_values"
	OpGetInstanceStats           = "get_instance_stats"
	// OpGetInstanceInfo is ProviderAdmin's GetInstanceInfo, which the
	// runtime's client polls for status.
	OpGetInstanceInfo = "get_instance_info"
)

// countedOps lists the methods in the order OperationStats are reported.
var countedOps = [...]string{
	OpFetchOrchestrationItem, OpAckOrchestrationItem, OpAbandonOrchestrationItem, OpRenewOrchestrationItemLock,
	OpFetchWorkItem, OpAckWorkItem, OpAbandonWorkItem, OpRenewWorkItemLock,
	OpEnqueueForOrchestrator, OpEnqueueForWorker, OpRead, OpReadWithExecution, OpAppendWithExecution,
	OpGetCustomStatus, OpGetKVValue, OpGetKVAllValues, OpGetInstanceStats, OpRenewSessionLock, OpCleanupOrphanedSessions,
	OpGetInstanceInfo,
}

// requestTallyKey is the context key of a call's request tally.
type requestTallyKey struct{}

// requestTally counts the requests of one call and their charge.
type requestTally struct {
	requests atomic.Int64
	// microRU is the request charge in millionths of a request unit.
	microRU atomic.Int64
}

// AttributeRequest adds one storage request to the provider call whose
// context ctx descends from, and reports whether there was one. A storage
// transport calls it for every request it sends, with the request's
// context (for azcore pipelines, req.Context() of the *http.Request the
// transport receives).
func AttributeRequest(ctx context.Context) bool {
	t, ok := ctx.Value(requestTallyKey{}).(*requestTally)
	if ok {
		t.requests.Add(1)
	}
	return ok
}

// AttributeRequestCharge adds ru request units (Cosmos DB's
// x-ms-request-charge of one response) to the provider call whose context
// ctx descends from, and reports whether there was one; a transport calls
// it with each response's charge, as AttributeRequest with each request.
func AttributeRequestCharge(ctx context.Context, ru float64) bool {
	t, ok := ctx.Value(requestTallyKey{}).(*requestTally)
	if ok {
		t.microRU.Add(int64(ru*1e6 + 0.5))
	}
	return ok
}

// callOutcome classifies a finished call.
type callOutcome int

const (
	outcomeWork callOutcome = iota
	outcomeEmpty
	outcomeFailed
)

// opCounters are the live counts of one method.
type opCounters struct {
	calls, requests, nanos, microRU [3]atomic.Int64 // indexed by callOutcome
}

// callCountingProvider wraps a provider and counts its calls.
type callCountingProvider struct {
	inner duroxide.Provider
	ops   map[string]*opCounters
}

var (
	_ duroxide.Provider          = (*callCountingProvider)(nil)
	_ duroxide.ManagementCapable = (*callCountingProvider)(nil)
)

func newCallCountingProvider(inner duroxide.Provider) *callCountingProvider {
	p := &callCountingProvider{inner: inner, ops: make(map[string]*opCounters, len(countedOps))}
	for _, op := range countedOps {
		p.ops[op] = &opCounters{}
	}
	return p
}

// stats returns the counts of every method that was called.
func (p *callCountingProvider) stats() []OperationStats {
	var out []OperationStats
	for _, op := range countedOps {
		c := p.ops[op]
		s := OperationStats{
			Operation: op,
			Calls:     c.calls[outcomeWork].Load(), Requests: c.requests[outcomeWork].Load(),
			Time:       time.Duration(c.nanos[outcomeWork].Load()),
			EmptyCalls: c.calls[outcomeEmpty].Load(), EmptyRequests: c.requests[outcomeEmpty].Load(),
			FailedCalls: c.calls[outcomeFailed].Load(), FailedRequests: c.requests[outcomeFailed].Load(),
			RequestCharge:       float64(c.microRU[outcomeWork].Load()) / 1e6,
			EmptyRequestCharge:  float64(c.microRU[outcomeEmpty].Load()) / 1e6,
			FailedRequestCharge: float64(c.microRU[outcomeFailed].Load()) / 1e6,
		}
		if s.Calls+s.EmptyCalls+s.FailedCalls > 0 {
			out = append(out, s)
		}
	}
	return out
}

// counted runs call with a request tally in its context and records the
// outcome under op; empty tells whether a successful result carried no work.
func counted[T any](p *callCountingProvider, op string, ctx context.Context, call func(context.Context) (T, error), empty func(T) bool) (T, error) {
	tally := new(requestTally)
	start := time.Now()
	v, err := call(context.WithValue(ctx, requestTallyKey{}, tally))
	elapsed := time.Since(start)
	o := outcomeWork
	switch {
	case err != nil:
		o = outcomeFailed
	case empty != nil && empty(v):
		o = outcomeEmpty
	}
	c := p.ops[op]
	c.calls[o].Add(1)
	c.requests[o].Add(tally.requests.Load())
	c.microRU[o].Add(tally.microRU.Load())
	c.nanos[o].Add(int64(elapsed))
	return v, err
}

// countedErr is counted for a method that returns only an error.
func countedErr(p *callCountingProvider, op string, ctx context.Context, call func(context.Context) error) error {
	_, err := counted(p, op, ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) }, nil)
	return err
}

// ManagementCapability forwards the wrapped provider's admin interface,
// counting its GetInstanceInfo calls (the client's status polling); nil
// when the wrapped provider has none.
func (p *callCountingProvider) ManagementCapability() duroxide.ProviderAdmin {
	admin, ok := duroxide.AsManagementCapability(p.inner)
	if !ok {
		return nil
	}
	a := countingAdmin{ProviderAdmin: admin, p: p}
	if r, ok := admin.(duroxide.InstanceStatusReader); ok {
		return countingStatusAdmin{countingAdmin: a, r: r}
	}
	return a
}

// StatusWatchCapability forwards the wrapped provider's
// duroxide.StatusWatcher (nil when it has none), so that the client's
// waits wake on its acks as they would without the wrapper.
func (p *callCountingProvider) StatusWatchCapability() duroxide.StatusWatcher {
	w, _ := duroxide.AsStatusWatcher(p.inner)
	return w
}

// countingAdmin is the wrapped provider's ProviderAdmin with its
// GetInstanceInfo calls counted; the other methods are forwarded as they
// are.
type countingAdmin struct {
	duroxide.ProviderAdmin
	p *callCountingProvider
}

func (a countingAdmin) GetInstanceInfo(ctx context.Context, instance string) (duroxide.InstanceInfo, error) {
	return counted(a.p, OpGetInstanceInfo, ctx, func(ctx context.Context) (duroxide.InstanceInfo, error) {
		return a.ProviderAdmin.GetInstanceInfo(ctx, instance)
	}, nil)
}

// countingStatusAdmin is countingAdmin for an admin that is also a
// duroxide.InstanceStatusReader, whose GetInstanceStatus calls count as
// GetInstanceInfo calls (the client's status polling).
type countingStatusAdmin struct {
	countingAdmin
	r duroxide.InstanceStatusReader
}

func (a countingStatusAdmin) GetInstanceStatus(ctx context.Context, instance string) (duroxide.InstanceInfo, *duroxide.CustomStatus, error) {
	type answer struct {
		info duroxide.InstanceInfo
		cs   *duroxide.CustomStatus
	}
	v, err := counted(a.p, OpGetInstanceInfo, ctx, func(ctx context.Context) (answer, error) {
		info, cs, err := a.r.GetInstanceStatus(ctx, instance)
		return answer{info, cs}, err
	}, nil)
	return v.info, v.cs, err
}

// The duroxide.Provider methods: each forwards to the wrapped provider
// through counted or countedErr.

func (p *callCountingProvider) Name() string    { return p.inner.Name() }
func (p *callCountingProvider) Version() string { return p.inner.Version() }

func (p *callCountingProvider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	return counted(p, OpFetchOrchestrationItem, ctx, func(ctx context.Context) (*duroxide.OrchestrationItem, error) {
		return p.inner.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	}, func(it *duroxide.OrchestrationItem) bool { return it == nil })
}

func (p *callCountingProvider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelledActivities []duroxide.ScheduledActivityIdentifier) error {
	return countedErr(p, OpAckOrchestrationItem, ctx, func(ctx context.Context) error {
		return p.inner.AckOrchestrationItem(ctx, lockToken, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelledActivities)
	})
}

func (p *callCountingProvider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return countedErr(p, OpAbandonOrchestrationItem, ctx, func(ctx context.Context) error {
		return p.inner.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	})
}

func (p *callCountingProvider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return countedErr(p, OpRenewOrchestrationItemLock, ctx, func(ctx context.Context) error {
		return p.inner.RenewOrchestrationItemLock(ctx, lockToken, extendFor)
	})
}

func (p *callCountingProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	return counted(p, OpRead, ctx, func(ctx context.Context) ([]duroxide.Event, error) {
		return p.inner.Read(ctx, instance)
	}, nil)
}

func (p *callCountingProvider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	return counted(p, OpReadWithExecution, ctx, func(ctx context.Context) ([]duroxide.Event, error) {
		return p.inner.ReadWithExecution(ctx, instance, executionID)
	}, nil)
}

func (p *callCountingProvider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	return countedErr(p, OpAppendWithExecution, ctx, func(ctx context.Context) error {
		return p.inner.AppendWithExecution(ctx, instance, executionID, events)
	})
}

func (p *callCountingProvider) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	return countedErr(p, OpEnqueueForWorker, ctx, func(ctx context.Context) error {
		return p.inner.EnqueueForWorker(ctx, item)
	})
}

func (p *callCountingProvider) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tagFilter duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	return counted(p, OpFetchWorkItem, ctx, func(ctx context.Context) (*duroxide.LockedWorkItem, error) {
		return p.inner.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tagFilter)
	}, func(it *duroxide.LockedWorkItem) bool { return it == nil })
}

func (p *callCountingProvider) AckWorkItem(ctx context.Context, lockToken string, completion *duroxide.WorkItem) error {
	return countedErr(p, OpAckWorkItem, ctx, func(ctx context.Context) error {
		return p.inner.AckWorkItem(ctx, lockToken, completion)
	})
}

func (p *callCountingProvider) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) (duroxide.ExecutionState, error) {
	return counted(p, OpRenewWorkItemLock, ctx, func(ctx context.Context) (duroxide.ExecutionState, error) {
		return p.inner.RenewWorkItemLock(ctx, lockToken, extendFor)
	}, nil)
}

func (p *callCountingProvider) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return countedErr(p, OpAbandonWorkItem, ctx, func(ctx context.Context) error {
		return p.inner.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	})
}

func (p *callCountingProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	return counted(p, OpRenewSessionLock, ctx, func(ctx context.Context) (int, error) {
		return p.inner.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
	}, nil)
}

func (p *callCountingProvider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	return counted(p, OpCleanupOrphanedSessions, ctx, func(ctx context.Context) (int, error) {
		return p.inner.CleanupOrphanedSessions(ctx, idleTimeout)
	}, nil)
}

func (p *callCountingProvider) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	return countedErr(p, OpEnqueueForOrchestrator, ctx, func(ctx context.Context) error {
		return p.inner.EnqueueForOrchestrator(ctx, item, delay)
	})
}

// InstanceStartCapability forwards the wrapped provider's
// duroxide.InstanceStarter (nil when it has none), its starts counted as
// enqueue_for_orchestrator calls, so that the client refuses duplicate
// starts as it would without the wrapper.
func (p *callCountingProvider) InstanceStartCapability() duroxide.InstanceStarter {
	s, ok := duroxide.AsInstanceStarter(p.inner)
	if !ok {
		return nil
	}
	return countingStarter{p, s}
}

// countingStarter is a wrapped provider's InstanceStarter with its calls
// counted.
type countingStarter struct {
	p     *callCountingProvider
	inner duroxide.InstanceStarter
}

func (s countingStarter) EnqueueStart(ctx context.Context, start duroxide.StartOrchestrationItem) error {
	return countedErr(s.p, OpEnqueueForOrchestrator, ctx, func(ctx context.Context) error {
		return s.inner.EnqueueStart(ctx, start)
	})
}

// PendingReasonCapability forwards the wrapped provider's
// duroxide.PendingReasonRecorder (nil when it has none), its calls counted
// as abandon_orchestration_item calls, so that the runtime records why it
// abandoned a start as it would without the wrapper.
func (p *callCountingProvider) PendingReasonCapability() duroxide.PendingReasonRecorder {
	r, ok := duroxide.AsPendingReasonRecorder(p.inner)
	if !ok {
		return nil
	}
	return countingRecorder{p, r}
}

// countingRecorder is a wrapped provider's PendingReasonRecorder with its
// calls counted.
type countingRecorder struct {
	p     *callCountingProvider
	inner duroxide.PendingReasonRecorder
}

func (r countingRecorder) AbandonOrchestrationItemWithReason(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	return countedErr(r.p, OpAbandonOrchestrationItem, ctx, func(ctx context.Context) error {
		return r.inner.AbandonOrchestrationItemWithReason(ctx, lockToken, delay, ignoreAttempt, reason)
	})
}

func (p *callCountingProvider) GetCustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	return counted(p, OpGetCustomStatus, ctx, func(ctx context.Context) (*duroxide.CustomStatus, error) {
		return p.inner.GetCustomStatus(ctx, instance, lastSeenVersion)
	}, nil)
}

func (p *callCountingProvider) GetKVValue(ctx context.Context, instance, key string) (string, bool, error) {
	type kv struct {
		v  string
		ok bool
	}
	r, err := counted(p, OpGetKVValue, ctx, func(ctx context.Context) (kv, error) {
		v, ok, err := p.inner.GetKVValue(ctx, instance, key)
		return kv{v, ok}, err
	}, nil)
	return r.v, r.ok, err
}

func (p *callCountingProvider) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	return counted(p, OpGetKVAllValues, ctx, func(ctx context.Context) (map[string]string, error) {
		return p.inner.GetKVAllValues(ctx, instance)
	}, nil)
}

func (p *callCountingProvider) GetInstanceStats(ctx context.Context, instance string) (*duroxide.SystemStats, error) {
	return counted(p, OpGetInstanceStats, ctx, func(ctx context.Context) (*duroxide.SystemStats, error) {
		return p.inner.GetInstanceStats(ctx, instance)
	}, nil)
}
