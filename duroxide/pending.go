package duroxide

import (
	"context"
	"fmt"
	"time"
)

// Pending instances: a Go addition. In duroxide an instance exists once
// the first turn of its start commits; until then a start that no runtime
// has run (none is up, or none registers its orchestration) is invisible:
// get_instance_info says "not found" while the start waits in the queue.
// A provider that keeps a record of the starts it stored (this module's
// cdb and in-memory providers: a client's start through InstanceStarter,
// or any start a fetch has locked) reports such an instance as Pending:
// GetInstanceInfo returns it with Status StatusPending and the
// PendingReason a runtime reported, ListInstancesByStatus(ctx,
// StatusPending) lists it, DeleteInstance and DeleteInstancesAtomic purge
// it (its record and every message queued for it), and a start of it is
// refused with ErrInstancePending. ListInstances, GetSystemMetrics and the
// bulk operations leave pending instances out, as duroxide's providers do.

// StatusPending is the InstanceInfo.Status of an instance whose start is
// stored and has not run: no turn of it has committed yet, and it has no
// execution. See the package's notes on pending instances above.
const StatusPending = "Pending"

// ErrInstancePending is the cause of the permanent *ProviderError an
// InstanceStarter returns for a start whose instance is pending (its start
// is stored and has not run). It wraps ErrInstanceExists
// (errors.Is(err, ErrInstanceExists) is true), since a pending instance
// exists for a start; errors.Is(err, ErrInstancePending) tells the two
// apart. Its text is "instance already exists: it is pending (its start is
// stored and has not run yet)".
var ErrInstancePending = fmt.Errorf("%w: it is pending (its start is stored and has not run yet)", ErrInstanceExists)

// PendingStartMessage is the message of the error that refuses a start of
// the pending instance (with ErrInstancePending as its cause): `instance
// "<id>" is pending: its start is stored and has not run yet`, followed by
// " (<reason>)" when a runtime reported one. The id is quoted and cut as
// QuoteInstanceID does.
func PendingStartMessage(instance, reason string) string {
	msg := "instance " + QuoteInstanceID(instance) + " is pending: its start is stored and has not run yet"
	if reason != "" {
		msg += " (" + reason + ")"
	}
	return msg
}

// PendingReasonRecorder is an optional capability of a Provider: an
// abandon that also records why a pending instance's start did not run,
// so that GetInstanceInfo can report it in InstanceInfo.PendingReason. A
// runtime that abandons a start it cannot run (its orchestration is not
// registered there) calls it instead of AbandonOrchestrationItem; the
// reason is written with the abandon's own write, so it costs no request
// more. It is a Go addition; duroxide's runtime only logs the reason.
type PendingReasonRecorder interface {
	// AbandonOrchestrationItemWithReason is AbandonOrchestrationItem, with
	// the same errors, that also stores reason (a sentence for people,
	// such as `orchestration "Procss" is not registered on runtime 3f2a,
	// attempt 1`) as the instance's pending reason while the instance is
	// pending, replacing the one before; the instance's first committed
	// turn clears it. For an instance that is not pending the reason is
	// ignored.
	AbandonOrchestrationItemWithReason(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error
}

// PendingReasonCapable is implemented by providers that expose a
// PendingReasonRecorder through another value (a wrapper that counts
// calls, for instance), the way ManagementCapable exposes ProviderAdmin.
type PendingReasonCapable interface {
	// PendingReasonCapability returns the recorder, or nil when there is
	// none.
	PendingReasonCapability() PendingReasonRecorder
}

// AsPendingReasonRecorder returns p's PendingReasonRecorder: p's
// PendingReasonCapability() when p implements PendingReasonCapable,
// otherwise p itself when it implements PendingReasonRecorder. ok is false
// when p has none.
func AsPendingReasonRecorder(p Provider) (r PendingReasonRecorder, ok bool) {
	if c, yes := p.(PendingReasonCapable); yes {
		r = c.PendingReasonCapability()
		return r, r != nil
	}
	r, ok = p.(PendingReasonRecorder)
	return r, ok
}
