package duroxide

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ProviderError is the error every Provider and ProviderAdmin method returns
// (duroxide's providers::ProviderError). Operation names the provider method
// that failed (snake_case as in duroxide, e.g. "ack_orchestration_item"),
// Message says what went wrong, and Retryable tells the runtime whether the
// same call may succeed later (a busy database, a lost connection, a 429) or
// never will (a lost lock, a duplicate event, invalid input).
//
// Match it with errors.As:
//
//	var pe *duroxide.ProviderError
//	if errors.As(err, &pe) && pe.Retryable { ... }
//
// Cause, when set, is the underlying error; Unwrap returns it so that
// errors.Is and errors.As see through a ProviderError to the SDK's error.
type ProviderError struct {
	Operation string
	Message   string
	Retryable bool
	Cause     error
}

// NewRetryableError returns a ProviderError the runtime should retry
// (duroxide's ProviderError::retryable).
func NewRetryableError(operation, message string) *ProviderError {
	return &ProviderError{Operation: operation, Message: message, Retryable: true}
}

// NewPermanentError returns a ProviderError the runtime must not retry
// (duroxide's ProviderError::permanent).
func NewPermanentError(operation, message string) *ProviderError {
	return &ProviderError{Operation: operation, Message: message, Retryable: false}
}

// WrapError returns a ProviderError for operation that wraps cause; its
// Message is cause's text. A nil cause gives nil.
func WrapError(operation string, retryable bool, cause error) *ProviderError {
	if cause == nil {
		return nil
	}
	return &ProviderError{Operation: operation, Message: cause.Error(), Retryable: retryable, Cause: cause}
}

// Error formats the error as "operation: message", as duroxide's Display does.
func (e *ProviderError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s: %s", e.Operation, e.Message)
}

// Unwrap returns the underlying cause, or nil (also for a nil e).
func (e *ProviderError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Cause
}

// IsRetryable reports whether the failed call may succeed when tried again.
func (e *ProviderError) IsRetryable() bool { return e != nil && e.Retryable }

// ToInfrastructureError converts the error into the ErrorDetails the runtime
// records when a provider failure ends a turn (duroxide's
// ProviderError::to_infrastructure_error). A nil e gives Infrastructure
// details with the message "<nil>", as Error prints it.
func (e *ProviderError) ToInfrastructureError() ErrorDetails {
	if e == nil {
		return ErrorDetails{Infrastructure: &InfrastructureDetails{Message: "<nil>"}}
	}
	return ErrorDetails{Infrastructure: &InfrastructureDetails{
		Operation: e.Operation, Message: e.Message, Retryable: e.Retryable,
	}}
}

// ErrInstanceExists is the cause of the permanent *ProviderError that
// EnqueueForOrchestrator returns for a StartOrchestrationItem whose instance
// already exists: it has run (whatever its status, until it is deleted) or
// its start is already stored. Nothing is written. Match it with
// errors.Is(err, duroxide.ErrInstanceExists). Detecting it is optional for a
// provider (duroxide's own providers enqueue the start, and the runtime
// drops a start for an instance whose history has already begun); the
// providers of this module detect it at the cost of a normal start.
var ErrInstanceExists = errors.New("instance already exists")

// maxQuotedIDBytes is how much of an instance id QuoteInstanceID shows.
const maxQuotedIDBytes = 64

// QuoteInstanceID formats an instance id for an error text or a log line:
// quoted (strconv.Quote), and cut to its first 64 bytes (at a rune
// boundary) followed by "… (N bytes)" when longer, so that a 2 KB id is not
// echoed whole. The empty id is `""`.
func QuoteInstanceID(id string) string {
	if len(id) <= maxQuotedIDBytes {
		return strconv.Quote(id)
	}
	cut := maxQuotedIDBytes
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(id[:cut]), len(id))
}

// IsRetryable reports whether err is, or wraps, a retryable *ProviderError.
// Errors of any other type are reported as retryable, the conservative
// default duroxide applies to plain string errors (From<String>). A nil
// *ProviderError held in a non-nil error is not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.IsRetryable()
	}
	return true
}
