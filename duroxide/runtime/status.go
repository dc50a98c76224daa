package runtime

import (
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// StatusKind is the state of an orchestration as the client sees it
// (duroxide's OrchestrationStatus variants).
type StatusKind string

// The orchestration states. StatusPending is a Go addition: duroxide
// reports NotFound until an instance's first turn commits.
const (
	StatusNotFound StatusKind = "NotFound"
	// StatusPending: the instance's start is stored and has not run (no
	// runtime has fetched it yet, or the runtimes that did could not run
	// it; OrchestrationStatus.PendingReason says why when one reported
	// it). Only providers that keep a record of stored starts report it
	// (duroxide.StatusPending; this module's cdb and in-memory providers);
	// with others such an instance is NotFound.
	StatusPending   StatusKind = "Pending"
	StatusRunning   StatusKind = "Running"
	StatusCompleted StatusKind = "Completed"
	StatusFailed    StatusKind = "Failed"
)

// OrchestrationStatus is an instance's state (duroxide's
// OrchestrationStatus). Output is set when Completed, Details when Failed.
type OrchestrationStatus struct {
	// Kind is NotFound, Pending, Running, Completed or Failed.
	Kind StatusKind
	// PendingReason is, when Pending, why the start has not run as the
	// last runtime that abandoned it reported (`orchestration "Procss" is
	// not registered on runtime 3f2a, attempt 3`); "" when no runtime
	// reported one (none has fetched it yet), and for the other kinds.
	PendingReason string
	// Output is the orchestration's result when Completed.
	Output string
	// Details is the failure when Failed, nil otherwise.
	Details *duroxide.ErrorDetails
	// CustomStatus is the last custom status, nil when none.
	CustomStatus *string
	// CustomStatusVersion counts the custom status changes (0: never set).
	CustomStatusVersion uint64
}

// Err returns nil unless the status is Failed, and then the failure as an
// *OrchestrationFailedError (match it with errors.As) whose message is the
// failure's display message with the note of a poison message whose
// orchestration or activity is not registered ("poison: orchestration X
// exceeded 11 attempts (max 10): orchestration "Y" is not registered in the
// runtimes that fetched it: ..."). A status is a value, not an error: ask
// it for its failure. (OrchestrationStatus had an Error method before
// issue 25; Err replaces it.)
func (s OrchestrationStatus) Err() error {
	if s.Kind != StatusFailed {
		return nil
	}
	var d duroxide.ErrorDetails
	if s.Details != nil {
		d = *s.Details
	}
	return &OrchestrationFailedError{Details: d}
}

// IsTerminal reports whether the status is Completed or Failed.
func (s OrchestrationStatus) IsTerminal() bool {
	return s.Kind == StatusCompleted || s.Kind == StatusFailed
}

// OrchestrationFailedError reports a Failed orchestration to typed callers.
type OrchestrationFailedError struct {
	// Instance is the failed orchestration instance ("" when the error
	// came from OrchestrationStatus.Err, which does not know it).
	Instance string
	// Details is its recorded failure.
	Details duroxide.ErrorDetails
}

// Error returns "orchestration <instance> failed: <display message>", with
// the note of a poison message whose orchestration or activity is not
// registered; only the display message (Message) when Instance is empty,
// as from OrchestrationStatus.Err ("<nil>" for a nil e).
func (e *OrchestrationFailedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Instance == "" {
		return e.Message()
	}
	return fmt.Sprintf("orchestration %s failed: %s", e.Instance, e.Message())
}

// Message returns the failure's display message with the not-registered
// note, without the "orchestration ... failed: " prefix of Error.
func (e *OrchestrationFailedError) Message() string {
	if e == nil {
		return ""
	}
	return failureMessage(e.Details)
}
