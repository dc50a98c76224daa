package cdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/storehealth"
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

// With a ready Config.Client (no health policy in its pipeline) the
// retrier reports each try to the store health: a transport failure or a
// refusal (503) is a failure, any other answer (a missing document) ends
// the outage; a try cut by its caller's context reports nothing.
func TestTheRetrierReportsEachTryOfAReadyClient(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	r := retrier{attempts: 4, base: time.Millisecond, maxDelay: time.Millisecond, health: storehealth.New(zap.New(core)), reportTries: true}
	req, err := http.NewRequest(http.MethodGet, "https://acct.documents.azure.com/dbs/d/colls/c/docs/x", nil)
	require.NoError(t, err)
	answer := func(code int) error {
		return &azcore.ResponseError{StatusCode: code, RawResponse: &http.Response{StatusCode: code, Header: http.Header{}, Request: req}}
	}
	tries := []error{fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED), answer(http.StatusServiceUnavailable), answer(http.StatusNotFound)}
	calls := 0
	err = r.do(context.Background(), readRequest, func(context.Context) error {
		calls++
		return tries[calls-1]
	})
	require.True(t, cosmos.IsStatus(err, http.StatusNotFound))
	failed := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, failed, 2, "the 1st and 2nd failures")
	assert.Contains(t, failed[0].ContextMap()["cause"], "connection refused")
	assert.Contains(t, failed[1].ContextMap()["cause"], "503 Service Unavailable")
	assert.Equal(t, 1, logs.FilterMessage("store reachable again").Len(), "the 404 is the store's answer")

	ctx, cancel := context.WithCancel(context.Background())
	_ = r.do(ctx, readRequest, func(context.Context) error {
		cancel()
		return context.Canceled
	})
	assert.Len(t, logs.FilterLevelExact(zapcore.WarnLevel).All(), 2, "a cancelled try says nothing of the store")
}

// A write refused before it was sent (connection refused) is sent again:
// it cannot have been applied. A dropped connection stays ambiguous.
func TestAWriteThatWasNeverSentIsRetried(t *testing.T) {
	t.Parallel()
	r := retrier{attempts: 3, base: time.Millisecond, maxDelay: time.Millisecond}
	calls := 0
	err := r.do(context.Background(), write, func(context.Context) error {
		calls++
		if calls == 1 {
			return fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
	err = r.do(context.Background(), write, func(context.Context) error { return io.ErrUnexpectedEOF })
	assert.True(t, cosmos.IsAmbiguous(err))
}
