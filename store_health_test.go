package cdb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// Outages of the store as a user meets them: a stopped store (every
// connection refused) and a store that refuses what it is sent (400 with
// the service's message); what the provider logs, how long its calls take,
// and what their errors say.

// outageTransport sends requests to the emulator while the store is up;
// while it is down, to a port nothing listens on (a stopped store: the
// connection is refused, as the operating system refuses it); refuse, when
// set, answers the requests it matches in the store's place.
type outageTransport struct {
	emu     *http.Client
	closed  string // host:port nothing listens on
	down    atomic.Bool
	refuse  atomic.Pointer[func(*http.Request) *http.Response]
	stopped http.Client
}

// Do implements policy.Transporter.
func (o *outageTransport) Do(req *http.Request) (*http.Response, error) {
	if f := o.refuse.Load(); f != nil {
		if resp := (*f)(req); resp != nil {
			return resp, nil
		}
	}
	if !o.down.Load() {
		return o.emu.Do(req)
	}
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "http", o.closed, o.closed
	return o.stopped.Do(r)
}

// outage is a provider on a private emulator reached through an
// outageTransport, with its logs observed.
type outage struct {
	p    *cdb.Provider
	tr   *outageTransport
	logs *observer.ObservedLogs
}

func newOutage(t *testing.T, adjust func(*cdb.Config)) *outage {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	tr := &outageTransport{emu: a.Emulator().HTTPClient(), closed: closedPort(t)}
	core, logs := observer.New(zapcore.DebugLevel)
	cfg := a.Config()
	cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: tr}}
	cfg.Logger = zap.New(core)
	cfg.DisableChangeFeedWakeups = true // the test's calls are the only requests
	cfg.Leases = cdb.LeasesInProcess
	if adjust != nil {
		adjust(&cfg)
	}
	return &outage{p: a.NewProvider(t, cfg), tr: tr, logs: logs}
}

// storeLines returns the store health's lines logged so far.
func (o *outage) storeLines() []observer.LoggedEntry {
	return o.logs.FilterLoggerName("cdb.store").All()
}

func field(e observer.LoggedEntry, key string) any { return e.ContextMap()[key] }

// A stopped store: the first failed request is logged at once, at WARN,
// with its cause (connection refused); the call's error keeps the cause;
// nothing says the store is back while it is down, and the first request
// that succeeds afterwards logs "store reachable again" once, with the
// outage's length.
func TestAStoppedStoreIsLoggedAtOnceWithItsCauseAndItsEnd(t *testing.T) {
	t.Parallel()
	o := newOutage(t, func(c *cdb.Config) { c.RetryBudget = 300 * time.Millisecond })
	ctx := context.Background()
	_, err := o.p.GetInstanceInfo(ctx, "before")
	require.Error(t, err) // not found: the store answered
	require.Empty(t, o.storeLines(), "a healthy store logs nothing")

	o.tr.down.Store(true)
	wentDown := time.Now()
	_, err = o.p.GetInstanceInfo(ctx, "during")
	require.Error(t, err)
	lines := o.storeLines()
	require.NotEmpty(t, lines, "the outage's first failure is logged")
	first := lines[0]
	assert.Equal(t, zapcore.WarnLevel, first.Level)
	assert.Contains(t, field(first, "cause"), "connection refused", "the cause is named")
	assert.Less(t, first.Time.Sub(wentDown), time.Second, "logged at the first failed request")
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "the call's error keeps its cause: %v", err)

	// More failures during the outage: logged on a backoff (1st, 2nd,
	// 4th ...), and never "reachable again".
	for range 3 {
		_, _ = o.p.GetInstanceInfo(ctx, "during")
	}
	var failed []int64
	for _, e := range o.storeLines() {
		require.NotEqual(t, "store reachable again", e.Message, "the store is still down")
		failed = append(failed, field(e, "failed_requests").(int64))
	}
	for i, n := range failed {
		assert.Equal(t, int64(1)<<i, n, "the %d-th line is the %d-th failure: %v", i+1, 1<<i, failed)
	}
	time.Sleep(100 * time.Millisecond)

	o.tr.down.Store(false)
	_, err = o.p.GetInstanceInfo(ctx, "after")
	upAfter := time.Since(wentDown)
	var pe *duroxide.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Message, "not found", "the store answers again")
	var back []observer.LoggedEntry
	for _, e := range o.storeLines() {
		if e.Message == "store reachable again" {
			back = append(back, e)
		}
	}
	require.Len(t, back, 1, "the end of the outage is logged once")
	assert.Equal(t, zapcore.InfoLevel, back[0].Level)
	after := field(back[0], "after").(time.Duration)
	assert.GreaterOrEqual(t, after, 100*time.Millisecond, "the outage's length")
	assert.LessOrEqual(t, after, upAfter+time.Millisecond, "rounded to the millisecond")
	assert.Contains(t, field(back[0], "first_cause"), "connection refused")
}

// A client call during an outage returns within the retry budget when its
// context has no deadline, and within its deadline when it has one; either
// way its error matches context.DeadlineExceeded and carries the store's
// last failure.
func TestCallsDuringAnOutageReturnWithinTheBudgetWithTheCause(t *testing.T) {
	t.Parallel()
	o := newOutage(t, func(c *cdb.Config) { c.RetryBudget = time.Second })
	o.tr.down.Store(true)

	start := time.Now()
	_, err := o.p.GetInstanceInfo(context.Background(), "x")
	took := time.Since(start)
	assert.Less(t, took, 3*time.Second, "a 1 s budget, on a loaded machine")
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "the budget ran out: %v", err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "and the store's last failure is kept: %v", err)
	assert.Contains(t, err.Error(), "retry budget")
	assert.Contains(t, err.Error(), "connection refused")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = o.p.EnqueueForOrchestrator(ctx, startItem("y"), 0)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "the caller's deadline: %v", err)
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "and the store's last failure: %v", err)
	var pe *duroxide.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Retryable)
}

// Ping is one try: against a stopped store it fails as soon as the
// connection is refused, not after the SDK's own retries (4 s in
// azcosmos v1.5.0).
func TestPingOfAStoppedStoreFailsAtOnce(t *testing.T) {
	t.Parallel()
	o := newOutage(t, nil)
	o.tr.down.Store(true)
	start := time.Now()
	err := o.p.Ping(context.Background())
	assert.Less(t, time.Since(start), 2*time.Second, "the SDK's retries (4 s) were not skipped")
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "%v", err)
}

// refusal is a store's answer refusing a request, as Cosmos DB words it.
func refusal(status int, message string) *http.Response {
	body := `{"code":"BadRequest","message":"` + message + `\r\nActivityId: 5f3c, Microsoft.Azure.Documents.Common/2.14.0"}`
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status),
		Header: http.Header{"Content-Type": {"application/json"}, "X-Ms-Substatus": {"0"}},
		Body:   io.NopCloser(bytes.NewBufferString(body)),
	}
}

// A store that refuses an operation (a 400 to every transactional batch,
// as a store without Patch in batches answers): the error and the log
// carry the service's status and message, not only "400 Bad Request".
func TestARefusingStoreIsExplainedInTheErrorAndTheLog(t *testing.T) {
	t.Parallel()
	o := newOutage(t, nil)
	const why = "Operation type 'Patch' is not supported in Batch."
	refuse := func(req *http.Request) *http.Response {
		if req.Header.Get("x-ms-cosmos-is-batch-request") == "" {
			return nil
		}
		resp := refusal(http.StatusBadRequest, why)
		resp.Request = req
		return resp
	}
	o.tr.refuse.Store(&refuse)
	ctx := context.Background()
	require.NoError(t, o.p.EnqueueForOrchestrator(ctx, startItem("refused"), 0))
	_, err := o.p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	var pe *duroxide.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Message, "400 Bad Request")
	assert.Contains(t, pe.Message, why)
	assert.NotContains(t, pe.Message, "ActivityId", "the service's diagnostics are left out")
	var re *azcore.ResponseError
	assert.ErrorAs(t, err, &re, "the service's answer stays reachable")

	lines := o.storeLines()
	require.NotEmpty(t, lines)
	assert.Equal(t, zapcore.WarnLevel, lines[0].Level)
	assert.Contains(t, field(lines[0], "cause"), why)
	assert.Equal(t, "fetch_orchestration_item", field(lines[0], "call"))
}

// The default logger shows warnings and the store health's Info lines
// (the end of an outage), nothing else at Info.
func TestTheDefaultLoggerShowsTheEndOfAnOutage(t *testing.T) {
	t.Parallel()
	l := cdb.DefaultLogger()
	assert.NotNil(t, l.Named("cdb.store").Check(zapcore.InfoLevel, "store reachable again"))
	assert.Nil(t, l.Named("cdb").Check(zapcore.InfoLevel, "outbox delivery deferred"))
	assert.NotNil(t, l.Named("cdb").Check(zapcore.WarnLevel, "lease heartbeat failed"))
	assert.Nil(t, l.Named("cdb.store").Check(zapcore.DebugLevel, "x"))
}

// A key that is not an account key is refused before anything is
// contacted, naming the setting and what is expected.
func TestABadKeyNamesTheSettingAndWhatIsExpected(t *testing.T) {
	t.Parallel()
	_, err := cdb.New(context.Background(), cdb.Config{Endpoint: "https://" + closedPort(t) + "/", Key: "not-a-key!"})
	require.Error(t, err)
	for _, want := range []string{"Config.Key", "base64", "primary or secondary key"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.False(t, strings.Contains(err.Error(), "connection refused"), "nothing was contacted: %v", err)
}

// The default logger writes through slog.Default()'s handler, as the
// runtime does, so both come out in one format (not parallel: it swaps
// the process's default logger for the test).
func TestTheDefaultLoggerWritesThroughSlogDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	cdb.DefaultLogger().Named("cdb").Warn("lease heartbeat failed", zap.Int("attempt", 2))
	slog.Default().Warn("runtime says", "instance", "order-1")
	out := buf.String()
	assert.Regexp(t, `level=WARN msg="lease heartbeat failed" logger=cdb attempt=2\n`, out)
	assert.Regexp(t, `level=WARN msg="runtime says" instance=order-1\n`, out, "the runtime's lines, the same format")
}

// Each way a store refuses to serve is a failure of the store health,
// logged with the service's status, substatus and message; the answers
// about what a request asked for (a missing document, a conflict, a
// failed precondition, throttling) are not.
func TestTheStoresRefusalsAreOutagesAndItsAnswersAreNot(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status    int
		substatus string
		message   string
		outage    bool
	}{
		{http.StatusUnauthorized, "0", "The input authorization token can't serve the request.", true},
		{http.StatusForbidden, "5301", "Request blocked by Auth: the principal lacks the data-plane role.", true},
		{http.StatusNotFound, "1003", "Owner resource does not exist", true},
		{http.StatusServiceUnavailable, "21008", "Service is currently unavailable.", true},
		{http.StatusNotFound, "0", "Entity with the specified id does not exist in the system.", false},
		{http.StatusTooManyRequests, "3200", "Request rate is large.", false},
	}
	for _, c := range cases {
		o := newOutage(t, func(cfg *cdb.Config) { cfg.RetryBudget = 200 * time.Millisecond })
		refuse := func(req *http.Request) *http.Response {
			if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/docs/") {
				return nil
			}
			resp := refusal(c.status, c.message)
			resp.Header.Set("X-Ms-Substatus", c.substatus)
			resp.Request = req
			return resp
		}
		o.tr.refuse.Store(&refuse)
		_, _ = o.p.GetInstanceInfo(context.Background(), "asked")
		lines := o.storeLines()
		if !c.outage {
			assert.Empty(t, lines, "%d/%s is an answer, not an outage", c.status, c.substatus)
			continue
		}
		if assert.NotEmpty(t, lines, "%d/%s is an outage", c.status, c.substatus) {
			cause := field(lines[0], "cause").(string)
			want := fmt.Sprintf("%d %s (substatus %s): %s", c.status, http.StatusText(c.status), c.substatus, c.message)
			if c.substatus == "0" {
				want = fmt.Sprintf("%d %s: %s", c.status, http.StatusText(c.status), c.message)
			}
			assert.Contains(t, cause, want)
		}
	}
}
