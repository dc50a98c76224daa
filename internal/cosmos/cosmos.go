// Package cosmos holds the low-level pieces of talking to Cosmos DB that
// the provider (package cdb) and its machinery under internal/ share: the
// provider call a request belongs to (for metrics and usage), reading the
// status of an answer, the error of a write whose outcome is unknown, and
// the error of a request made after the provider closed. It holds no
// client and sends nothing.
package cosmos

import (
	"context"
	"errors"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// callKey is the context key of the provider method a request belongs to.
type callKey struct{}

// WithCall returns ctx marked as belonging to provider method call (the
// label of the request metrics and of Usage).
func WithCall(ctx context.Context, call string) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// CallOf returns the provider method ctx belongs to, "sdk" when none (a
// request the SDK makes on a context of its own).
func CallOf(ctx context.Context) string {
	if c, ok := ctx.Value(callKey{}).(string); ok {
		return c
	}
	return "sdk"
}

// StatusCode returns the HTTP status of a Cosmos DB error response, and
// false when err is not one (a transport failure, a cancelled context, or a
// client-side error).
func StatusCode(err error) (int, bool) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, true
	}
	return 0, false
}

// IsStatus reports whether err is a Cosmos DB response with status code.
// A 404 with substatus 1002 (ReadSessionNotAvailable) is not a 404 here:
// it says no replica has caught up with the read's session token yet, not
// that the item is missing (SessionNotAvailable).
func IsStatus(err error, code int) bool {
	c, ok := StatusCode(err)
	return ok && c == code && (code != http.StatusNotFound || !SessionNotAvailable(err))
}

// SessionNotAvailable reports whether err is Cosmos DB's 404 with
// substatus 1002 (ReadSessionNotAvailable): the replicas that could serve
// the read have not yet applied the writes of its session token. It heals
// by retrying (azcosmos retries it once, at the primary).
func SessionNotAvailable(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.RawResponse != nil &&
		re.RawResponse.Header.Get("x-ms-substatus") == "1002"
}

// AmbiguousError marks a write whose outcome is unknown: the request may or
// may not have been applied (a dropped connection, a 408, a 500). Callers
// that can verify the outcome do so (verify-after-ambiguity); others make
// the write idempotent.
type AmbiguousError struct {
	// Cause is the answer (or transport failure) that left the outcome
	// unknown.
	Cause error
}

// Error says that the outcome is unknown, and why.
func (e *AmbiguousError) Error() string { return "ambiguous outcome: " + e.Cause.Error() }

// Unwrap returns Cause.
func (e *AmbiguousError) Unwrap() error { return e.Cause }

// IsAmbiguous reports whether err is (or wraps) an *AmbiguousError.
func IsAmbiguous(err error) bool {
	var ae *AmbiguousError
	return errors.As(err, &ae)
}

// ErrClosed is the error of a request made after the provider's Close;
// the provider maps it to a permanent ProviderError ("the provider is
// closed").
var ErrClosed = errors.New("the provider is closed")
