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

// Error returns the failure's display message ("" unless Failed), with the
// note of a poison message whose orchestration or activity is not
// registered ("poison: orchestration X exceeded 11 attempts (max 10):
// orchestration "Y" is not registered in the runtimes that fetched it: ...").
func (s OrchestrationStatus) Error() string {
	if s.Details == nil {
		return ""
	}
	return failureMessage(*s.Details)
}

// IsTerminal reports whether the status is Completed or Failed.
func (s OrchestrationStatus) IsTerminal() bool {
	return s.Kind == StatusCompleted || s.Kind == StatusFailed
}

// OrchestrationFailedError reports a Failed orchestration to typed callers.
type OrchestrationFailedError struct {
	// Instance is the failed orchestration instance.
	Instance string
	// Details is its recorded failure.
	Details duroxide.ErrorDetails
}

// Error returns "orchestration <instance> failed: <display message>", with
// the not-registered note as OrchestrationStatus.Error ("<nil>" for a nil
// e).
func (e *OrchestrationFailedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("orchestration %s failed: %s", e.Instance, failureMessage(e.Details))
}
