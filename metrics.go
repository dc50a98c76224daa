// Observability: the provider's OpenTelemetry metrics and the HTTP policy
// that records them, AzureTracingProvider, Usage (request and RU counters),
// and the steps of a fetch reported to metrics and to a test's tracer.

package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Metrics: the provider's OpenTelemetry instruments (requests, RU, latency,
// retries, lost races, outbox backlog) and the HTTP policy that records
// them.

// The provider's metrics, beside the runtime's (which follow duroxide's
// metrics specification, microsoft/duroxide docs/metrics-specification.md):
// what its Cosmos DB requests cost and how the provider's own mechanisms
// behave. They go to Config.MeterProvider, the global MeterProvider by
// default (nothing is recorded until the application installs an SDK).
//
//	duroxide_cosmosdb_requests_total             counter   {call, op_kind, status_code}  every answered request (retries included)
//	duroxide_cosmosdb_request_charge_total       counter   {call, op_kind}   request units (x-ms-request-charge) of those answers
//	duroxide_cosmosdb_request_duration_seconds   histogram {call, op_kind}   time to the answer of one request
//	duroxide_cosmosdb_throttled_total            counter   {call, op_kind}   answers with status 429
//	duroxide_cosmosdb_retries_total              counter   {call, reason}    requests the provider sent again (reason: the status code, or "transport")
//	duroxide_cosmosdb_lock_races_lost_total      counter   {queue}           fetches that lost the instance or work-item lock to another dispatcher, or whose held instance state another process had changed (queue: orchestrator, worker)
//	duroxide_cosmosdb_reconciler_deliveries_total counter  (none)            outbox intents delivered by ReconcileOutbox (the reconciler goroutine)
//	duroxide_cosmosdb_outbox_pending             gauge     (none)            outbox intents not yet delivered
//	duroxide_cosmosdb_outbox_oldest_age_seconds  gauge     (none)            age of the oldest of them (0 when none)
//	duroxide_cosmosdb_slots_owned                gauge     {queue}           dispatch slots this process owns (lease providers that implement SlotOwner)
//
// call is the provider method in duroxide's snake_case name
// ("fetch_orchestration_item"; "new" for New's database and container
// creation), or the provider's own machinery ("change_feed",
// "lease_heartbeat", "reconcile_outbox", "close"), or "sdk" for the
// requests the azcosmos SDK makes on its own (its partition key range
// cache's background refresh, op_kind Metadata); op_kind is the Cosmos DB
// operation: ReadItem, CreateItem, UpsertItem, ReplaceItem, PatchItem,
// DeleteItem, Batch, Query, ChangeFeed, ReadFeed or Metadata. The two
// outbox gauges run one cross-partition query per collection (5 s
// timeout). The request metrics count the requests of the client New
// builds; with a ready Config.Client they stay empty, as Usage does.

// Metric names of the provider.
const (
	metricCosmosRequests    = "duroxide_cosmosdb_requests_total"
	metricCosmosCharge      = "duroxide_cosmosdb_request_charge_total"
	metricCosmosDuration    = "duroxide_cosmosdb_request_duration_seconds"
	metricCosmosThrottled   = "duroxide_cosmosdb_throttled_total"
	metricCosmosRetries     = "duroxide_cosmosdb_retries_total"
	metricLockRacesLost     = "duroxide_cosmosdb_lock_races_lost_total"
	metricReconcilerDeliver = "duroxide_cosmosdb_reconciler_deliveries_total"
	metricOutboxPending     = "duroxide_cosmosdb_outbox_pending"
	metricOutboxOldestAge   = "duroxide_cosmosdb_outbox_oldest_age_seconds"
	metricSlotsOwned        = "duroxide_cosmosdb_slots_owned"
)

// bucketsCosmosDuration are the request latency buckets in seconds
// (duroxide's provider operation buckets).
var bucketsCosmosDuration = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5}

// metricsScope is the instrumentation scope of the provider's instruments.
const metricsScope = "github.com/duroxide-go/duroxide-cdb"

// outboxGaugeTimeout bounds the outbox query of one gauge collection.
const outboxGaugeTimeout = 5 * time.Second

// providerMetrics are the provider's instruments.
type providerMetrics struct {
	requests, throttled, retries    metric.Int64Counter
	charge                          metric.Float64Counter
	duration                        metric.Float64Histogram
	lockRacesLost, reconcilerDelive metric.Int64Counter
	registration                    metric.Registration
	meter                           metric.Meter
}

// newProviderMetrics creates the provider's instruments on mp (the global
// MeterProvider when nil); registerGauges adds the gauges. An instrument
// the SDK refuses is logged and records nothing.
func newProviderMetrics(mp metric.MeterProvider, p *Provider) *providerMetrics {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(metricsScope)
	var errs []error
	counter := func(name, desc, unit string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = append(errs, err)
		return c
	}
	pm := &providerMetrics{
		requests:         counter(metricCosmosRequests, "Cosmos DB requests answered", "{request}"),
		throttled:        counter(metricCosmosThrottled, "Cosmos DB answers with status 429 (request rate too large)", "{request}"),
		retries:          counter(metricCosmosRetries, "Cosmos DB requests the provider sent again", "{request}"),
		lockRacesLost:    counter(metricLockRacesLost, "Fetches that lost a lock to another dispatcher", "{race}"),
		reconcilerDelive: counter(metricReconcilerDeliver, "Outbox intents delivered by the reconciler", "{intent}"),
	}
	var err error
	pm.charge, err = m.Float64Counter(metricCosmosCharge, metric.WithDescription("Request units charged for Cosmos DB requests (x-ms-request-charge)"), metric.WithUnit("{RU}"))
	errs = append(errs, err)
	pm.duration, err = m.Float64Histogram(metricCosmosDuration, metric.WithDescription("Time to the answer of one Cosmos DB request"),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(bucketsCosmosDuration...))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		p.log.Warn("metrics: an instrument could not be created; it records nothing", zap.Error(err))
	}
	pm.meter = m
	return pm
}

// registerGauges registers the callback of the gauges (the outbox backlog
// and the slots owned), which asks p; New calls it once p is complete.
func (pm *providerMetrics) registerGauges(p *Provider) {
	m := pm.meter
	var errs []error
	pending, err := m.Int64ObservableGauge(metricOutboxPending, metric.WithDescription("Outbox intents not yet delivered"), metric.WithUnit("{intent}"))
	errs = append(errs, err)
	oldest, err := m.Float64ObservableGauge(metricOutboxOldestAge, metric.WithDescription("Age of the oldest undelivered outbox intent"), metric.WithUnit("s"))
	errs = append(errs, err)
	slots, err := m.Int64ObservableGauge(metricSlotsOwned, metric.WithDescription("Dispatch slots this process owns"), metric.WithUnit("{slot}"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		p.log.Warn("metrics: a gauge could not be created; the gauges record nothing", zap.Error(err))
		return
	}
	pm.registration, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for queue, leases := range map[string]LeaseProvider{"orchestrator": p.orchLeases, "worker": p.workerLeases} {
			if so, ok := leases.(SlotOwner); ok {
				o.ObserveInt64(slots, int64(so.OwnedSlots()), metric.WithAttributes(attribute.String("queue", queue)))
			}
		}
		n, age, err := p.outboxBacklog(ctx)
		if err != nil {
			p.log.Debug("metrics: outbox backlog unavailable", zap.Error(err))
			return nil
		}
		o.ObserveInt64(pending, int64(n))
		o.ObserveFloat64(oldest, age.Seconds())
		return nil
	}, pending, oldest, slots)
	if err != nil {
		p.log.Warn("metrics: the gauges could not be registered", zap.Error(err))
	}
}

// close unregisters the gauges' callback.
func (pm *providerMetrics) close() {
	if pm.registration != nil {
		_ = pm.registration.Unregister()
	}
}

// outboxBacklog counts the undelivered outbox intents and the age of the
// oldest: one cross-partition query.
func (p *Provider) outboxBacklog(ctx context.Context) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, outboxGaugeTimeout)
	defer cancel()
	raws, err := p.query(cosmos.WithCall(ctx, "metrics"), nil, "SELECT c.createdAt FROM c WHERE c.type = 'outbox_intent'", nil, queryOpts{})
	if err != nil {
		return 0, 0, err
	}
	oldest := int64(-1)
	for _, raw := range raws {
		var row struct {
			CreatedAt int64 `json:"createdAt"`
		}
		if json.Unmarshal(raw, &row) == nil && (oldest < 0 || row.CreatedAt < oldest) {
			oldest = row.CreatedAt
		}
	}
	var age time.Duration
	if oldest >= 0 {
		age = max(time.Duration(p.nowMs()-oldest)*time.Millisecond, 0)
	}
	return len(raws), age, nil
}

// request records one answered Cosmos DB request of req that took elapsed.
func (pm *providerMetrics) request(req *http.Request, resp *http.Response, elapsed time.Duration) {
	ctx := req.Context()
	call, kind := attribute.String("call", cosmos.CallOf(ctx)), attribute.String("op_kind", opKind(req))
	pm.requests.Add(ctx, 1, metric.WithAttributes(call, kind, attribute.String("status_code", strconv.Itoa(resp.StatusCode))))
	labels := metric.WithAttributes(call, kind)
	if ru := requestCharge(resp); ru > 0 {
		pm.charge.Add(ctx, ru, labels)
	}
	pm.duration.Record(ctx, elapsed.Seconds(), labels)
	if resp.StatusCode == http.StatusTooManyRequests {
		pm.throttled.Add(ctx, 1, labels)
	}
}

// retried records that the provider sends a request of ctx's call again
// after err.
func (pm *providerMetrics) retried(ctx context.Context, err error) {
	reason := "transport"
	if code, ok := cosmos.StatusCode(err); ok {
		reason = strconv.Itoa(code)
	}
	pm.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("call", cosmos.CallOf(ctx)), attribute.String("reason", reason)))
}

// lostRace counts a lock race of queue ("orchestrator" or "worker") this
// process lost (fetchtrace.LostRace).
func (pm *providerMetrics) lostRace(queue string) {
	pm.lockRacesLost.Add(context.Background(), 1, metric.WithAttributes(attribute.String("queue", queue)))
}

// delivered counts outbox intents the reconciler delivered.
func (pm *providerMetrics) delivered(n int) {
	if n > 0 {
		pm.reconcilerDelive.Add(context.Background(), int64(n))
	}
}

// opKind names the Cosmos DB operation of a gateway request, as the
// emulator's operation kinds do: by method, path and headers.
func opKind(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	n := len(segs)
	switch {
	case n == 5 && segs[4] == "docs":
		h := req.Header
		switch {
		case req.Method == http.MethodPost && strings.EqualFold(h.Get("x-ms-cosmos-is-batch-request"), "true"):
			return "Batch"
		case req.Method == http.MethodPost && (strings.EqualFold(h.Get("x-ms-documentdb-isquery"), "true") ||
			strings.HasPrefix(h.Get("Content-Type"), "application/query+json")):
			return "Query"
		case req.Method == http.MethodPost && strings.EqualFold(h.Get("x-ms-documentdb-is-upsert"), "true"):
			return "UpsertItem"
		case req.Method == http.MethodPost:
			return "CreateItem"
		case req.Method == http.MethodGet && h.Get("A-IM") != "":
			return "ChangeFeed"
		case req.Method == http.MethodGet:
			return "ReadFeed"
		}
	case n == 6 && segs[4] == "docs":
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			return "ReadItem"
		case http.MethodPut:
			return "ReplaceItem"
		case http.MethodPatch:
			return "PatchItem"
		case http.MethodDelete:
			return "DeleteItem"
		}
	}
	return "Metadata"
}

// requestPolicy is the azcore pipeline policy New installs among the
// client's per-retry policies: it sees every attempt's answer and counts
// it into the provider's Usage and metrics.
type requestPolicy struct {
	usage   *usageCounters
	metrics *providerMetrics
}

// Do sends the request and records its answer.
func (rp requestPolicy) Do(req *policy.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := req.Next()
	if resp != nil {
		rp.usage.record(req.Raw(), resp)
		rp.metrics.request(req.Raw(), resp, time.Since(start))
	}
	return resp, err
}

// Tracing: AzureTracingProvider adapts OpenTelemetry to azcore tracing so
// azcosmos's spans nest beneath the runtime's.

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

// Usage: request and RU counters of a provider (Provider.Usage).

// Usage is what the provider's Cosmos DB requests have cost since New: every
// response is counted, its request charge (the x-ms-request-charge header
// Cosmos DB puts on every answer, successful or not; see "Find the request
// unit charge" in the Azure Cosmos DB documentation) added up.
type Usage struct {
	// Requests is the number of requests that got an answer (any status).
	Requests int64
	// RequestCharge is the sum of their request charges, in request units
	// (RU), what a serverless account bills and a provisioned one
	// subtracts from its RU/s.
	RequestCharge float64
	// Throttled is the number of answers with status 429 (request rate too
	// large); the provider retried them.
	Throttled int64
	// LockRacesLost is the number of fetches that lost an instance or
	// work-item lock to another dispatcher (of this or another process);
	// the same count as the metric duroxide_cosmosdb_lock_races_lost_total.
	LockRacesLost int64
	// ByCall splits Requests by the provider call they belong to: the
	// call label of duroxide_cosmosdb_requests_total (duroxide's
	// snake_case method names such as fetch_orchestration_item, and
	// lease_heartbeat, change_feed, reconcile_outbox, new, close; "sdk"
	// for requests the SDK makes on its own). A fresh map; nil before the
	// first answer.
	ByCall map[string]int64
}

// Usage returns the provider's Cosmos DB usage since New, retries and
// failed requests included. It counts the requests of the client New
// builds (from Endpoint and Key or Credential, with ClientOptions); with a
// ready Config.Client it stays zero.
func (p *Provider) Usage() Usage {
	return Usage{
		Requests:      p.usage.requests.Load(),
		RequestCharge: float64(p.usage.microRU.Load()) / 1e6,
		Throttled:     p.usage.throttled.Load(),
		LockRacesLost: p.usage.lockRacesLost.Load(),
		ByCall:        p.usage.byCallCounts(),
	}
}

// usageCounters are the live counts behind Usage.
type usageCounters struct {
	requests  atomic.Int64
	microRU   atomic.Int64 // millionths of a request unit
	throttled atomic.Int64
	// lockRacesLost counts lost lock races (fetchtrace.LostRace).
	lockRacesLost atomic.Int64
	// byCall counts answers by provider call (string to *atomic.Int64).
	byCall sync.Map
}

// record counts one answer to req.
func (u *usageCounters) record(req *http.Request, resp *http.Response) {
	u.requests.Add(1)
	call := cosmos.CallOf(req.Context())
	n, ok := u.byCall.Load(call)
	if !ok {
		n, _ = u.byCall.LoadOrStore(call, new(atomic.Int64))
	}
	n.(*atomic.Int64).Add(1)
	if ru := requestCharge(resp); ru > 0 {
		u.microRU.Add(int64(math.Round(ru * 1e6)))
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		u.throttled.Add(1)
	}
}

// byCallCounts returns a copy of the answers by provider call, nil when
// there is none.
func (u *usageCounters) byCallCounts() map[string]int64 {
	var out map[string]int64
	u.byCall.Range(func(k, v any) bool {
		if out == nil {
			out = map[string]int64{}
		}
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// requestCharge reads a response's x-ms-request-charge, 0 when absent or
// malformed.
func requestCharge(resp *http.Response) float64 {
	ru, err := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64)
	if err != nil || ru < 0 || math.IsNaN(ru) || math.IsInf(ru, 0) {
		return 0
	}
	return ru
}

// traceFetch reports ev to the fetch tracer, if one is set.
func (p *Provider) traceFetch(ev fetchtrace.Event) {
	if queue, lost := fetchtrace.LostRace(ev); lost {
		if p.metrics != nil {
			p.metrics.lostRace(queue)
		}
		p.usage.lockRacesLost.Add(1)
	}
	if p.fetchTracer != nil {
		p.fetchTracer(ev)
	}
}
