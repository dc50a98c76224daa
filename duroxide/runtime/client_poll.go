package runtime

import (
	"context"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Status polling through the instance metadata. duroxide's client reads the
// whole history and the custom status on every poll of
// wait_for_orchestration; with a provider that has ProviderAdmin, the Go
// client reads GetInstanceInfo instead (the current execution's status and
// output, which the provider commits with the history in the same ack) and
// reads the history only when the metadata cannot give the status
// GetOrchestrationStatus would: for a Failed instance (the structured
// ErrorDetails are in the terminal event only), when the metadata is
// missing or unknown (an instance whose first turn has not been acked yet),
// and without ProviderAdmin. The status returned is always the one
// GetOrchestrationStatus returns; the polling schedule is unchanged.

// pollTerminal is one poll of WaitForOrchestration: done is true once
// instance is Completed or Failed, with GetOrchestrationStatus's status.
// admin may be nil.
//
// Provider calls per poll: running by its metadata, GetInstanceInfo;
// Completed, GetInstanceInfo and GetCustomStatus; otherwise
// GetInstanceInfo (when admin is set) and Read, plus GetCustomStatus once
// terminal.
func pollTerminal(ctx context.Context, p duroxide.Provider, admin duroxide.ProviderAdmin, instance string) (OrchestrationStatus, bool, error) {
	if admin != nil {
		if info, err := admin.GetInstanceInfo(ctx, instance); err == nil {
			switch info.Status {
			case duroxide.StatusRunning, duroxide.StatusContinuedAsNew:
				// The history shows Running: no terminal event in the
				// current execution (or the one that continued as new).
				return OrchestrationStatus{}, false, nil
			case duroxide.StatusCompleted:
				// The metadata's output is the OrchestrationCompleted
				// event's output (computeMetadata), committed with it.
				if info.Output != nil {
					st := OrchestrationStatus{Kind: StatusCompleted, Output: *info.Output}
					addCustomStatus(ctx, p, instance, &st)
					return st, true, nil
				}
			}
		}
		// An error (an instance not created yet is one), a Failed status
		// or a status this client does not know: the history decides, and
		// its read returns the errors GetOrchestrationStatus would.
	}
	st, err := readStatus(ctx, p, instance)
	if err != nil || !st.IsTerminal() {
		return st, false, err
	}
	addCustomStatus(ctx, p, instance, &st)
	return st, true, nil
}

// knownRunning reports whether instance's metadata shows it running (or
// between continue-as-new executions), so that its history would show it
// Running too; false when admin is nil or the metadata cannot tell.
func knownRunning(ctx context.Context, admin duroxide.ProviderAdmin, instance string) bool {
	if admin == nil {
		return false
	}
	info, err := admin.GetInstanceInfo(ctx, instance)
	return err == nil && (info.Status == duroxide.StatusRunning || info.Status == duroxide.StatusContinuedAsNew)
}
