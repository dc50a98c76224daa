package runtime

import (
	"context"
	"errors"
	"strings"

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
// Provider calls per poll: not created yet (first poll) or running by its
// metadata, GetInstanceInfo; Completed, GetInstanceInfo and
// GetCustomStatus, or GetInstanceStatus alone when admin is a
// duroxide.InstanceStatusReader (which reads both at once); otherwise
// GetInstanceInfo (when admin is set) and Read, plus GetCustomStatus once
// terminal.
//
// On the first poll of a wait (first), an instance the metadata does not
// know is taken as not started, without reading its history: a wait
// usually begins right after the start. Later polls read the history then,
// for the rare instance whose history exists before its metadata (an
// in-memory provider's first turn that failed to commit and was failed
// instead).
func pollTerminal(ctx context.Context, p duroxide.Provider, admin duroxide.ProviderAdmin, instance string, first bool) (OrchestrationStatus, bool, error) {
	if admin != nil {
		info, cs, withCustom, err := instanceStatus(ctx, admin, instance)
		if first && instanceNotFound(err) {
			// No instance yet (the start is not processed yet).
			return OrchestrationStatus{Kind: StatusNotFound}, false, nil
		}
		if err == nil {
			switch info.Status {
			case duroxide.StatusRunning, duroxide.StatusContinuedAsNew, duroxide.StatusPending:
				// The history shows Running: no terminal event in the
				// current execution (or the one that continued as new);
				// or it has not started yet (Pending). What a caller whose
				// wait times out gets as the last status seen.
				st := OrchestrationStatus{Kind: StatusRunning}
				if info.Status == duroxide.StatusPending {
					st = OrchestrationStatus{Kind: StatusPending, PendingReason: info.PendingReason}
				}
				if withCustom {
					setCustomStatus(cs, &st)
				}
				return st, false, nil
			case duroxide.StatusCompleted:
				// The metadata's output is the OrchestrationCompleted
				// event's output (computeMetadata), committed with it.
				if info.Output != nil {
					st := OrchestrationStatus{Kind: StatusCompleted, Output: *info.Output}
					if withCustom {
						setCustomStatus(cs, &st)
					} else {
						addCustomStatus(ctx, p, instance, &st)
					}
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

// instanceStatus reads instance's metadata, and its custom status too
// (withCustom) when admin is a duroxide.InstanceStatusReader, which reads
// both at once.
func instanceStatus(ctx context.Context, admin duroxide.ProviderAdmin, instance string) (info duroxide.InstanceInfo, cs *duroxide.CustomStatus, withCustom bool, err error) {
	if r, ok := admin.(duroxide.InstanceStatusReader); ok {
		info, cs, err = r.GetInstanceStatus(ctx, instance)
		return info, cs, true, err
	}
	info, err = admin.GetInstanceInfo(ctx, instance)
	return info, nil, false, err
}

// instanceNotFound reports whether err is a provider's answer that the
// instance does not exist: a permanent duroxide.ProviderError worded as
// duroxide's providers word it ("Instance <id> not found").
func instanceNotFound(err error) bool {
	var pe *duroxide.ProviderError
	return errors.As(err, &pe) && !pe.Retryable && strings.HasPrefix(pe.Message, "Instance ") && strings.HasSuffix(pe.Message, " not found")
}

// knownRunning reports whether instance's metadata shows it running (or
// between continue-as-new executions), so that its history would show it
// Running too, or pending (not started, so without custom status); false
// when admin is nil or the metadata cannot tell.
func knownRunning(ctx context.Context, admin duroxide.ProviderAdmin, instance string) bool {
	if admin == nil {
		return false
	}
	info, err := admin.GetInstanceInfo(ctx, instance)
	return err == nil && (info.Status == duroxide.StatusRunning || info.Status == duroxide.StatusContinuedAsNew || info.Status == duroxide.StatusPending)
}
