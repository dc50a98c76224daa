package cdb

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

func responseError(code int, header http.Header) error {
	if header == nil {
		header = http.Header{}
	}
	return &azcore.ResponseError{StatusCode: code, RawResponse: &http.Response{StatusCode: code, Header: header}}
}

// TestMapErrorTable checks DESIGN.md §7.1: Cosmos DB status to
// ProviderError retryability.
func TestMapErrorTable(t *testing.T) {
	table := map[int]bool{
		409: true, 429: true, 408: true, 503: true, 412: true, 449: true, 500: true, 410: true,
		404: false, 400: false, 413: false, 401: false, 403: false,
	}
	for code, retry := range table {
		err := mapError("some_op", responseError(code, nil))
		var pe *duroxide.ProviderError
		require.True(t, errors.As(err, &pe), "status %d", code)
		assert.Equal(t, retry, pe.Retryable, "status %d", code)
		assert.Equal(t, "some_op", pe.Operation)
		assert.True(t, cosmos.IsStatus(pe, code), "the SDK error stays reachable through Unwrap")
	}
	var pe *duroxide.ProviderError
	require.True(t, errors.As(mapError("op", io.ErrUnexpectedEOF), &pe))
	assert.True(t, pe.Retryable, "transport failures are retryable")
	require.True(t, errors.As(mapError("op", context.DeadlineExceeded), &pe))
	assert.True(t, pe.Retryable)
	assert.NoError(t, mapError("op", nil))
	orig := permanent("x", "y")
	assert.Same(t, orig, mapError("op", orig), "a ProviderError passes through")
}

// TestRetryAfterHeader checks that x-ms-retry-after-ms is read.
func TestRetryAfterHeader(t *testing.T) {
	h := http.Header{}
	h.Set("x-ms-retry-after-ms", "1250")
	assert.Equal(t, 1250*time.Millisecond, retryAfter(responseError(429, h)))
	assert.Equal(t, time.Duration(0), retryAfter(responseError(429, nil)))
	h.Set("x-ms-retry-after-ms", "junk")
	assert.Equal(t, time.Duration(0), retryAfter(responseError(429, h)))
}

// TestRetrierKinds checks which failures are retried for each request
// kind, and that a lost answer to a write is reported as ambiguous.
func TestRetrierKinds(t *testing.T) {
	r := retrier{attempts: 4, base: time.Millisecond, maxDelay: time.Millisecond}
	failThenOK := func(errs ...error) (func(context.Context) error, *int) {
		calls := 0
		return func(context.Context) error {
			calls++
			if calls <= len(errs) {
				return errs[calls-1]
			}
			return nil
		}, &calls
	}
	// 429 and 503 are refused before anything is applied: retried for all.
	for _, kind := range []requestKind{readRequest, idempotentWrite, write} {
		fn, calls := failThenOK(responseError(429, nil), responseError(503, nil))
		require.NoError(t, r.do(context.Background(), kind, fn))
		assert.Equal(t, 3, *calls)
	}
	// A dropped connection or a 408 is retried for reads and idempotent
	// writes, and ambiguous for writes.
	for _, e := range []error{io.ErrUnexpectedEOF, responseError(408, nil), responseError(500, nil)} {
		fn, calls := failThenOK(e)
		require.NoError(t, r.do(context.Background(), idempotentWrite, fn))
		assert.Equal(t, 2, *calls)
		fn, calls = failThenOK(e)
		err := r.do(context.Background(), write, fn)
		assert.True(t, cosmos.IsAmbiguous(err), "%v", err)
		assert.Equal(t, 1, *calls)
	}
	// Permanent and semantic answers are returned at once.
	for _, code := range []int{400, 404, 409, 412, 413} {
		fn, calls := failThenOK(responseError(code, nil))
		err := r.do(context.Background(), readRequest, fn)
		assert.True(t, cosmos.IsStatus(err, code))
		assert.Equal(t, 1, *calls)
	}
	// Retries run out.
	fn, calls := failThenOK(responseError(503, nil), responseError(503, nil), responseError(503, nil), responseError(503, nil), responseError(503, nil))
	err := r.do(context.Background(), readRequest, fn)
	assert.True(t, cosmos.IsStatus(err, 503))
	assert.Equal(t, 4, *calls)
}

// TestRetrierHonoursRetryAfter checks that a 429's x-ms-retry-after-ms
// replaces the backoff.
func TestRetrierHonoursRetryAfter(t *testing.T) {
	h := http.Header{}
	h.Set("x-ms-retry-after-ms", "30")
	r := retrier{attempts: 3, base: time.Hour, maxDelay: time.Hour}
	calls := 0
	start := time.Now()
	err := r.do(context.Background(), readRequest, func(context.Context) error {
		calls++
		if calls == 1 {
			return responseError(429, h)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
	assert.Less(t, time.Since(start), time.Hour, "the hour-long backoff was replaced by the server's 30 ms")
}

// TestRetrierStopsOnCancel checks that a cancelled context ends the waits.
func TestRetrierStopsOnCancel(t *testing.T) {
	r := retrier{attempts: 5, base: time.Hour, maxDelay: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := r.do(ctx, readRequest, func(context.Context) error {
		calls++
		cancel()
		return responseError(503, nil)
	})
	assert.True(t, cosmos.IsStatus(err, 503))
	assert.Equal(t, 1, calls)
}
