// Retry policy: which Cosmos DB answers are retried, for which kind of
// request, with what backoff (the retrier).

package cdb

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

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
// most attempts tries.
type retrier struct {
	attempts int
	base     time.Duration
	maxDelay time.Duration
	// closed, when set, is closed by Provider.Close: no request is sent
	// after that, the call fails with cosmos.ErrClosed instead.
	closed <-chan struct{}
	// onRetry, when set, is told of every request about to be sent again
	// (metrics.go counts them).
	onRetry func(ctx context.Context, err error)
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

// do runs fn until it succeeds, fails permanently, or runs out of tries,
// and returns fn's last error unmapped (callers inspect status codes) or,
// for a write whose outcome is unknown, an *cosmos.AmbiguousError; after the
// provider was closed it sends nothing and returns cosmos.ErrClosed.
func (r retrier) do(ctx context.Context, kind requestKind, fn func(context.Context) error) error {
	var err error
	for attempt := 0; attempt < r.attempts; attempt++ {
		select {
		case <-r.closed:
			return cosmos.ErrClosed
		default:
		}
		err = fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		code, isResp := cosmos.StatusCode(err)
		switch {
		case isResp && notApplied(code):
			// safe to retry for every kind
		case isResp && !isRetryableStatus(code):
			return err
		case isResp && (code == http.StatusConflict || code == http.StatusPreconditionFailed):
			// semantic answers: the caller decides
			return err
		case kind == write:
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
			return err
		case <-t.C:
		}
	}
	return err
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
