// Errors and retries: mapping Cosmos DB answers to duroxide.ProviderError
// (retryable or permanent, DESIGN.md §7.1), ambiguous outcomes, and the
// retry policy (DESIGN.md §7.2).

package cdb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/storehealth"
	"go.uber.org/zap"
)

// Errors: mapping Cosmos DB responses to duroxide.ProviderError (retryable
// or permanent), ambiguous outcomes, cosmos.ErrClosed.

// permanent returns a ProviderError the runtime must not retry.
func permanent(op, msg string) *duroxide.ProviderError {
	return duroxide.NewPermanentError(op, msg)
}

// retryable returns a ProviderError the runtime may retry.
func retryable(op, msg string) *duroxide.ProviderError {
	return duroxide.NewRetryableError(op, msg)
}

// mapError converts an error from the Cosmos DB SDK into a
// *duroxide.ProviderError for operation op, keeping err as its Cause.
// Response errors are classified by status (isRetryableStatus), and their
// message carries the service's status, substatus and message ("Cosmos DB
// returned 400 Bad Request: Operation type 'Patch' is not supported in
// Batch."); transport failures and the end of the caller's context or of
// the retry budget are retryable and name the last failure; a call after
// Close is permanent ("the provider is closed").
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *duroxide.ProviderError
	if errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, cosmos.ErrClosed) {
		return &duroxide.ProviderError{Operation: op, Message: "the provider is closed", Cause: err}
	}
	var se *stoppedError
	if errors.As(err, &se) {
		msg := se.Error()
		if se.budget == 0 {
			msg = "cancelled: " + msg
		}
		if cosmos.IsAmbiguous(err) {
			msg = "outcome unknown: " + msg
		}
		return &duroxide.ProviderError{Operation: op, Message: msg, Retryable: true, Cause: err}
	}
	if nf, ok := missingContainer(err); ok {
		return &duroxide.ProviderError{Operation: op, Message: nf.Error(), Cause: nf}
	}
	if a, ok := cosmos.AnswerOf(err); ok {
		return &duroxide.ProviderError{
			Operation: op,
			Message:   "Cosmos DB returned " + a.String(),
			Retryable: isRetryableStatus(a.Status) || cosmos.SessionNotAvailable(err),
			Cause:     err,
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &duroxide.ProviderError{Operation: op, Message: "cancelled: " + err.Error(), Retryable: true, Cause: err}
	}
	var ae *cosmos.AmbiguousError
	if errors.As(err, &ae) {
		return &duroxide.ProviderError{Operation: op, Message: "outcome unknown: " + cosmos.Describe(ae.Cause), Retryable: true, Cause: err}
	}
	return &duroxide.ProviderError{Operation: op, Message: "Cosmos DB request failed: " + cosmos.Describe(err), Retryable: true, Cause: err}
}

// lockOutcome is what reading back a lock write whose answer was lost
// (an ambiguousError) found: the lock is this fetch's, the write was not
// applied and the work can be locked again at once, someone else holds
// the work (or it is gone), or the read failed too.
type lockOutcome int

const (
	// lockUnknown: the read-back failed; the write may have landed, and
	// if it did the work is fetchable again when that lock expires.
	lockUnknown lockOutcome = iota
	// lockApplied: the document carries this fetch's lock token.
	lockApplied
	// lockNotApplied: the write did not land; the work is still free.
	lockNotApplied
	// lockTaken: another lock holds the work, or it is gone.
	lockTaken
)

// String names the outcome for logs.
func (o lockOutcome) String() string {
	switch o {
	case lockApplied:
		return "applied"
	case lockNotApplied:
		return "not applied"
	case lockTaken:
		return "taken by another fetch, or gone"
	}
	return "unknown"
}

// logLockReadBack logs the read-back of a lock write whose answer was lost
// (what: "work item lock", "session claim", ...): Info when the read told
// what happened (the fetch goes on with the lock, or the work goes back to
// the candidate pool), Warn when it did not (a lock that landed then holds
// the work until it expires, at worst lockedUntil).
func (p *Provider) logLockReadBack(what, instance, id string, o lockOutcome, lockedUntil int64, cause, readErr error) {
	fields := []zap.Field{zap.String("instance", instance), zap.String("id", id), zap.String("outcome", o.String()), zap.NamedError("cause", cause)}
	switch o {
	case lockApplied:
		p.log.Info("a lock write's answer was lost; read back, it was applied: the fetch goes on with the lock", append(fields, zap.String("write", what))...)
	case lockNotApplied:
		p.log.Info("a lock write's answer was lost; read back, it was not applied: the work goes back to the candidate pool", append(fields, zap.String("write", what))...)
	case lockTaken:
		p.log.Info("a lock write's answer was lost; read back, another fetch holds the work or it is gone", append(fields, zap.String("write", what))...)
	default:
		p.log.Warn("a lock write's answer was lost and reading it back failed: if it landed, the work is fetchable again when that lock expires",
			append(fields, zap.String("write", what), zap.Time("lockExpiresBy", time.UnixMilli(lockedUntil)), zap.Error(readErr))...)
	}
}

// ErrContainerNotFound is what every call of a Provider wraps (matched
// with errors.Is, inside a permanent *duroxide.ProviderError) when Cosmos
// DB answers that the provider's database or container does not exist (404
// with substatus 1003): someone deleted it, or the store was restarted
// empty. The provider does not recreate it (New creates it when it is
// missing at start-up): a container that disappears while in use is an
// operator's event that recreating it silently would hide. Recreate it (or
// restart the service, whose New creates it) and the same Provider works
// again at once. The error's text names the container, the database and
// the endpoint.
var ErrContainerNotFound = errors.New("container not found")

// containerNotFoundError is the cause of a ProviderError for a missing
// database or container: which one, where, and the service's response.
type containerNotFoundError struct {
	database, container, endpoint string
	cause                         error
}

func (e *containerNotFoundError) Error() string {
	return fmt.Sprintf("container %q in database %q not found at %s: deleted? Recreate it, or restart the service so that cdb.New creates it",
		e.container, e.database, e.endpoint)
}

// Unwrap returns ErrContainerNotFound and the service's response error.
func (e *containerNotFoundError) Unwrap() []error { return []error{ErrContainerNotFound, e.cause} }

// missingContainer reports whether err is Cosmos DB's answer that the
// request's database or container does not exist (404, substatus 1003),
// and names them from the request's path (/dbs/<db>/colls/<coll>/...).
func missingContainer(err error) (*containerNotFoundError, bool) {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || re.RawResponse == nil || re.RawResponse.Request == nil {
		return nil, false
	}
	u := re.RawResponse.Request.URL
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	// An item's owner is missing (substatus 1003), or the request read the
	// database or container itself (/dbs/<db>[/colls/<coll>]).
	if re.RawResponse.Header.Get("x-ms-substatus") != "1003" && len(parts) > 4 {
		return nil, false
	}
	nf := &containerNotFoundError{cause: err}
	nf.endpoint = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}).String()
	for i := 0; i+1 < len(parts); i += 2 {
		name, _ := url.PathUnescape(parts[i+1])
		switch parts[i] {
		case "dbs":
			nf.database = name
		case "colls":
			nf.container = name
		}
	}
	return nf, true
}

// Retry policy: which Cosmos DB answers are retried, for which kind of
// request, with what backoff (the retrier).

// retryAfter returns the delay a 429 (or other throttled) response asks
// for in its x-ms-retry-after-ms header, or zero.
func retryAfter(err error) time.Duration {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return 0
	}
	h := re.RawResponse.Header.Get("x-ms-retry-after-ms")
	if h == "" {
		return 0
	}
	ms, perr := strconv.ParseFloat(h, 64)
	if perr != nil || ms < 0 {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// isRetryableStatus reports whether a Cosmos DB status is transient, per the
// mapping of DESIGN.md §7.1 (409, 412, 408, 429, 503 retryable;
// 400, 404, 413 permanent), extended to the statuses that table does not list:
// 449 (retry with) and the other 5xx are transient, every other 4xx is not.
func isRetryableStatus(code int) bool {
	switch code {
	case http.StatusConflict, http.StatusPreconditionFailed, http.StatusRequestTimeout,
		http.StatusTooManyRequests, http.StatusServiceUnavailable, 449, http.StatusGone:
		return true
	}
	return code >= 500
}

// requestKind says how a request may be retried.
type requestKind int

// retrier runs Cosmos DB requests with retries: exponential backoff from
// base, doubling to at most maxDelay, honouring x-ms-retry-after-ms, for at
// most attempts tries, and, when budget is set and the caller's context has
// no deadline, for at most budget in all.
type retrier struct {
	attempts int
	base     time.Duration
	maxDelay time.Duration
	// budget bounds a request's tries and waits when the caller's context
	// has no deadline (Config.RetryBudget); zero: no bound but attempts.
	budget time.Duration
	// closed, when set, is closed by Provider.Close: no request is sent
	// after that, the call fails with cosmos.ErrClosed instead.
	closed <-chan struct{}
	// onRetry, when set, is told of every request about to be sent again
	// (metrics.go counts them).
	onRetry func(ctx context.Context, err error)
	// health, when set, is the provider's store health: a request stopped
	// by its deadline names the outage's last failure when it saw none
	// itself (a context deadline that hid a refused connection).
	health *storehealth.Tracker
	// reportTries, with health, reports every try's outcome to it: for a
	// ready Config.Client, whose pipeline has no health policy
	// (store_health.go).
	reportTries bool
}

// withClosed returns r stopping at closed.
func (r retrier) withClosed(closed <-chan struct{}) retrier {
	r.closed = closed
	return r
}

// notApplied reports whether a failed request certainly did not change
// anything: throttling (429), retry-with (449) and service unavailable
// (503) are refused before the write is applied.
func notApplied(code int) bool {
	return code == http.StatusTooManyRequests || code == 449 || code == http.StatusServiceUnavailable
}

// notSent reports whether a request that got no answer certainly never
// reached the store: the connection was refused, the host name did not
// resolve, the network was unreachable, the TLS handshake failed. A write
// that failed so is safe to send again.
func notSent(err error) bool {
	switch cosmos.TransportKind(err) {
	case "connection refused", "host name not found (DNS)", "network unreachable", "TLS certificate not trusted", "TLS handshake failed":
		return true
	}
	return false
}

// errRetryBudget is the cause of the context of a request whose retry
// budget ran out.
var errRetryBudget = errors.New("retry budget spent")

// do runs fn until it succeeds, fails permanently, or runs out of tries or
// budget, and returns fn's last error unmapped (callers inspect status
// codes) or, for a write whose outcome is unknown, an *cosmos.AmbiguousError;
// after the provider was closed it sends nothing and returns
// cosmos.ErrClosed. When the caller's context ends, or the budget, the
// error is a *stoppedError: errors.Is finds the context's error
// (context.DeadlineExceeded, context.Canceled) and errors.As the last
// failure (the store's answer, or the transport error).
func (r retrier) do(ctx context.Context, kind requestKind, fn func(context.Context) error) error {
	caller := ctx
	if _, has := ctx.Deadline(); !has && r.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.budget, errRetryBudget)
		defer cancel()
	}
	var err, last error // last: the last failure that was not the context's end
	stopped := func(inFlight bool) error {
		if last == nil && r.health != nil {
			last = r.health.LastCause()
		}
		se := &stoppedError{ctxErr: ctx.Err(), last: last}
		if caller.Err() != nil {
			se.ctxErr = caller.Err()
			return se
		}
		se.budget = r.budget
		if inFlight && kind == write && !notSent(last) {
			// The budget cut a write the store may have applied.
			return &cosmos.AmbiguousError{Cause: se}
		}
		return se
	}
	for attempt := 0; attempt < r.attempts; attempt++ {
		select {
		case <-r.closed:
			return cosmos.ErrClosed
		default:
		}
		sent := time.Now()
		err = fn(ctx)
		if r.reportTries && r.health != nil {
			r.report(ctx, sent, err)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			if !errors.Is(err, ctx.Err()) {
				last = err
			}
			return stopped(true)
		}
		last = err
		code, isResp := cosmos.StatusCode(err)
		switch {
		case isResp && (notApplied(code) || cosmos.SessionNotAvailable(err)):
			// safe to retry for every kind (a read whose session no
			// replica has reached yet changed nothing)
		case isResp && !isRetryableStatus(code):
			return err
		case isResp && (code == http.StatusConflict || code == http.StatusPreconditionFailed):
			// semantic answers: the caller decides
			return err
		case kind == write && !notSent(err):
			return &cosmos.AmbiguousError{Cause: err}
		}
		if attempt == r.attempts-1 {
			break
		}
		delay := r.base << attempt
		if delay > r.maxDelay || delay <= 0 {
			delay = r.maxDelay
		}
		if ra := retryAfter(err); ra > 0 {
			delay = ra
		}
		if r.onRetry != nil {
			r.onRetry(ctx, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return stopped(false)
		case <-t.C:
		}
	}
	return err
}

// report tells the store health of one try's outcome (reportTries).
func (r retrier) report(ctx context.Context, sent time.Time, err error) {
	switch {
	case err == nil:
		r.health.Succeeded(sent)
	case errors.Is(err, cosmos.ErrClosed), ctx.Err() != nil:
	case storeRefusedError(err):
		r.health.Failed(cosmos.CallOf(ctx), err)
	default:
		if _, isResp := cosmos.StatusCode(err); isResp {
			r.health.Succeeded(sent) // an answer the store served (404, 409, 412 ...)
		} else {
			r.health.Failed(cosmos.CallOf(ctx), err)
		}
	}
}

// stoppedError is the error of a request stopped by its caller's context
// or by the retry budget: the context's error and the last failure, both
// visible to errors.Is and errors.As.
type stoppedError struct {
	ctxErr error
	// budget is the retry budget that ran out; zero when the caller's
	// context ended.
	budget time.Duration
	// last is the request's last failure (or the outage's, from the store
	// health), nil when none is known.
	last error
}

func (e *stoppedError) Error() string {
	var b strings.Builder
	if e.budget > 0 {
		fmt.Fprintf(&b, "no answer within the retry budget of %s (Config.RetryBudget)", e.budget)
	} else {
		b.WriteString(e.ctxErr.Error())
	}
	if e.last != nil {
		b.WriteString("; last error: " + cosmos.Describe(e.last))
	}
	return b.String()
}

// Unwrap returns the context's error and the last failure.
func (e *stoppedError) Unwrap() []error {
	if e.last == nil {
		return []error{e.ctxErr}
	}
	return []error{e.ctxErr, e.last}
}

const (
	// readRequest: reads and queries; every transient failure is retried.
	readRequest requestKind = iota
	// idempotentWrite: a write whose repetition is harmless (an upsert, a
	// create whose 409 the caller treats as success, a delete whose 404
	// the caller ignores); every transient failure is retried.
	idempotentWrite
	// write: a write that must not be applied twice; it is retried only
	// after answers that prove it was not applied (429, 449, 503), and an
	// answer that leaves its outcome unknown (a dropped connection, 408,
	// 500, 502, 504) is returned as an ambiguousError for the caller to
	// verify.
	write
)

// defaultRetrier retries up to 8 times, from 20 ms to 2 s.
var defaultRetrier = retrier{attempts: 9, base: 20 * time.Millisecond, maxDelay: 2 * time.Second}
