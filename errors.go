// Errors: mapping Cosmos DB responses to duroxide.ProviderError (retryable
// or permanent), ambiguous outcomes, cosmos.ErrClosed.

package cdb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

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
// Response errors are classified by status (isRetryableStatus); transport
// failures and deadline or cancellation of the context are retryable; a
// call after Close is permanent ("the provider is closed").
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
	if nf, ok := missingContainer(err); ok {
		return &duroxide.ProviderError{Operation: op, Message: nf.Error(), Cause: nf}
	}
	if code, ok := cosmos.StatusCode(err); ok {
		return &duroxide.ProviderError{
			Operation: op,
			Message:   fmt.Sprintf("Cosmos DB returned %d %s", code, http.StatusText(code)),
			Retryable: isRetryableStatus(code),
			Cause:     err,
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &duroxide.ProviderError{Operation: op, Message: "cancelled: " + err.Error(), Retryable: true, Cause: err}
	}
	var ae *cosmos.AmbiguousError
	if errors.As(err, &ae) {
		return &duroxide.ProviderError{Operation: op, Message: "outcome unknown: " + ae.Cause.Error(), Retryable: true, Cause: err}
	}
	return &duroxide.ProviderError{Operation: op, Message: "Cosmos DB request failed: " + err.Error(), Retryable: true, Cause: err}
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
