package runtime

import (
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// StatusKind is the state of an orchestration as the client sees it
// (duroxide's OrchestrationStatus variants).
type StatusKind string

// The orchestration states.
const (
	StatusNotFound  StatusKind = "NotFound"
	StatusRunning   StatusKind = "Running"
	StatusCompleted StatusKind = "Completed"
	StatusFailed    StatusKind = "Failed"
)

// OrchestrationStatus is an instance's state (duroxide's
// OrchestrationStatus). Output is set when Completed, Details when Failed.
type OrchestrationStatus struct {
	// Kind is NotFound, Running, Completed or Failed.
	Kind StatusKind
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
