package runtime

import (
	"errors"
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Future is the pending result of a durable call (duroxide's DurableFuture):
// an activity, timer, external event, queue message or sub-orchestration.
// Get blocks the orchestration until the result is in history; Join and
// Select wait on several at once. A Future belongs to the turn that created
// it and must only be used by its orchestration.
type Future struct {
	ctx   *OrchestrationContext
	token uint64
	kind  scheduleKind
	// check looks for the result; it is called under ctx.mu.
	check func(s *ctxState) (completion, bool)
	// cancel, when set, cancels a composite future's pending parts instead
	// of the future's own token; it is called under ctx.mu.
	cancel func()

	done      bool // the result was observed (duroxide: completed)
	cancelled bool // dropped unresolved
	result    completion
}

// TaskFailedError is the error a Future returns when its activity or
// sub-orchestration failed. Error returns duroxide's display message, which
// is what Rust orchestration code sees, plus the not-registered note of a
// poison message (a Go addition).
type TaskFailedError struct {
	// Details is the failure recorded in history.
	Details duroxide.ErrorDetails
}

// Error returns the failure's display message ("<nil>" for a nil e), with
// the not-registered note of a poisoned activity whose handler is not
// registered, as OrchestrationStatus.Error.
func (e *TaskFailedError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return failureMessage(e.Details)
}

// poll checks for the result once; it must be called with ctx.mu held.
func (f *Future) poll() bool {
	if f.done {
		return true
	}
	if f.cancelled {
		return false
	}
	if c, ok := f.check(f.ctx.state); ok {
		f.done, f.result = true, c
	}
	return f.done
}

// errNilFuture is what Get, Join and Select report for a nil *Future (for
// instance the one a typed Schedule* helper returns beside its error).
var errNilFuture = errors.New("runtime: nil *Future (was the error of the call that should have returned it ignored?)")

// ErrCanceled is the error of Get (and Join, Await) on a future that was
// cancelled before its result was observed: the loser of a Select, or a
// future passed to Cancel. Match it with errors.Is. Temporal returns a
// CanceledError in the same place; duroxide cannot await a dropped future
// at all. The cancellation is decided by the orchestration's own code
// (Select's order, Cancel calls), so a replay returns it at the same point.
var ErrCanceled = errors.New("runtime: future canceled")

// Get blocks until the result is available and returns it: an activity's or
// sub-orchestration's output (or a *TaskFailedError), an event's data, a
// queue message, or "" for a timer. Get on a cancelled future (a Select
// loser, or one passed to Cancel) returns an error matching ErrCanceled at
// once, without waiting; Get on a nil Future returns an error at once.
func (f *Future) Get() (string, error) {
	if f == nil {
		return "", errNilFuture
	}
	f.ctx.waitUntil(f.settled)
	return f.outcome()
}

// settled reports, under ctx.mu, whether the future has an outcome: its
// result, or its cancellation.
func (f *Future) settled() bool { return f.poll() || f.cancelled }

// outcome is the settled future's value and error (ErrCanceled when it was
// cancelled unresolved).
func (f *Future) outcome() (string, error) {
	if !f.done && f.cancelled {
		return "", fmt.Errorf("%w (a Select loser or a cancelled call: its result is never delivered)", ErrCanceled)
	}
	return f.result.value, f.result.err
}

// IsReady reports, without blocking, whether the result is available
// (false for a nil Future).
func (f *Future) IsReady() bool {
	if f == nil {
		return false
	}
	f.ctx.mu.Lock()
	defer f.ctx.mu.Unlock()
	return f.poll()
}

// Cancel drops the future (duroxide's drop of an unresolved DurableFuture):
// unless its result was already observed, the scheduled work is cancelled
// at the end of the turn. A queue or event wait of an execution stamped
// 0.1.31 or newer (duroxide main's race cancellation, the runtime's own
// executions) also stops matching messages at once, so the next one goes
// to the next wait; under the legacy rules it matches until the turn ends.
// It is a no-op on a completed future, on timers and on a nil Future.
func (f *Future) Cancel() {
	if f == nil {
		return
	}
	f.ctx.mu.Lock()
	defer f.ctx.mu.Unlock()
	f.cancelLocked()
}

func (f *Future) cancelLocked() {
	if f.done || f.cancelled {
		return
	}
	f.cancelled = true
	if f.cancel != nil {
		f.cancel()
		return
	}
	f.ctx.state.markCancelled(f.token, f.kind)
}

// Result is one outcome of Join.
type Result struct {
	// Value is the future's value (see Future.Get).
	Value string
	// Err is the future's error, a *TaskFailedError for a failed activity
	// or sub-orchestration.
	Err error
}
