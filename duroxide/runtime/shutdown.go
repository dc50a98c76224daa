package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Shutdown with two deadlines (duroxide main's src/runtime/shutdown.rs):
// the grace deadline, until which in-flight turns and activities may
// finish and be acked, and the total deadline, by which every Shutdown call
// returns whatever happens. At the grace deadline what is still running is
// forced: running activities are cancelled and their work items abandoned
// (ignoring the attempt), and a turn whose commit the forced stop cut short
// is abandoned, so that another runtime takes the work at once instead of
// after its lock timeout. The first accepted shutdown fixes both deadlines;
// later calls observe it and return by its total deadline.

// ShutdownOutcome is how a shutdown ended (duroxide's ShutdownOutcome).
type ShutdownOutcome int

const (
	// ShutdownDrained: every in-flight turn and activity finished within
	// the grace period.
	ShutdownDrained ShutdownOutcome = iota + 1
	// ShutdownForced: the grace period ended first; what was still
	// running was cancelled and abandoned for another runtime.
	ShutdownForced
)

// String returns "drained" or "forced".
func (o ShutdownOutcome) String() string {
	switch o {
	case ShutdownDrained:
		return "drained"
	case ShutdownForced:
		return "forced"
	}
	return fmt.Sprintf("ShutdownOutcome(%d)", int(o))
}

var (
	// ErrShutdownTimedOut is returned when the total deadline passed before
	// every goroutine of the runtime ended: something blocks outside its
	// context (orchestration code blocking on anything but its futures, a
	// provider call). The shutdown goes on; WaitForShutdown reports its
	// outcome once it ends.
	ErrShutdownTimedOut = errors.New("runtime: shutdown did not complete by its total deadline")
	// ErrInvalidShutdownTimeouts is returned for a negative grace period or
	// a total timeout shorter than the grace period; nothing is stopped.
	ErrInvalidShutdownTimeouts = errors.New("runtime: shutdown total timeout must not be shorter than the grace period, and neither may be negative")
	// ErrShutdownNotRequested is WaitForShutdown's error when no shutdown
	// was requested.
	ErrShutdownNotRequested = errors.New("runtime: no shutdown was requested")
)

// cleanupHeadroom is how long after the grace deadline the total deadline
// falls when none is given (duroxide's CLEANUP_HEADROOM).
const cleanupHeadroom = 5 * time.Second

// forceSettle is how long a forced shutdown lets cancelled activities
// abandon their work items before it cancels the runtime's context.
const forceSettle = time.Second

// shutdownRequest is the accepted shutdown. Its channels are closed by the
// goroutine acceptShutdown starts for it; outcome is written before done
// is closed.
type shutdownRequest struct {
	grace   chan struct{} // closed at the grace deadline
	total   chan struct{} // closed at the total deadline
	done    chan struct{} // closed once every goroutine of the runtime ended
	outcome ShutdownOutcome
}

// deadlines starts the goroutine that closes req.grace when graceDue
// fires and req.total totalAfter later (or at totalDue, when not nil);
// it ends with the shutdown.
func (req *shutdownRequest) deadlines(graceDue <-chan struct{}, totalAfter time.Duration, totalDue <-chan time.Time) {
	go func() {
		select {
		case <-graceDue:
			close(req.grace)
		case <-req.done:
			return
		}
		if totalDue == nil {
			t := time.NewTimer(totalAfter)
			defer t.Stop()
			totalDue = t.C
		}
		select {
		case <-totalDue:
			close(req.total)
		case <-req.done:
		}
	}()
}

// ShutdownWithTimeouts stops the runtime: it fetches no more work, lets
// in-flight turns and activities finish and be acked until grace has
// passed, then forces the rest (cancels and abandons it for another
// runtime), and returns by total whatever happens: ShutdownDrained or
// ShutdownForced once every goroutine of the runtime ended, or
// ErrShutdownTimedOut at total. total must not be shorter than grace (else
// ErrInvalidShutdownTimeouts, and nothing stops). When a shutdown was
// already accepted (by any Shutdown method, or the cancellation of Start's
// context), its deadlines hold and this call only waits for it, up to its
// total deadline. A nil Runtime returns ShutdownDrained.
func (r *Runtime) ShutdownWithTimeouts(grace, total time.Duration) (ShutdownOutcome, error) {
	if r == nil {
		return ShutdownDrained, nil
	}
	if grace < 0 || total < grace {
		return 0, fmt.Errorf("%w: grace %v, total %v", ErrInvalidShutdownTimeouts, grace, total)
	}
	req, _ := r.acceptShutdown(func(req *shutdownRequest) {
		graceTimer := time.NewTimer(grace)
		totalTimer := time.NewTimer(total)
		graceDue := make(chan struct{})
		go func() {
			defer graceTimer.Stop()
			select {
			case <-graceTimer.C:
				close(graceDue)
			case <-req.done:
				totalTimer.Stop()
			}
		}()
		req.deadlines(graceDue, 0, totalTimer.C)
	})
	return req.wait()
}

// ShutdownWithGrace is ShutdownWithTimeouts with a total deadline 5 s after
// the grace deadline (duroxide's shutdown_with_grace).
func (r *Runtime) ShutdownWithGrace(grace time.Duration) (ShutdownOutcome, error) {
	headroom := r.opts.cleanupHeadroom
	if grace < 0 || grace > time.Duration(1<<63-1)-headroom {
		return 0, fmt.Errorf("%w: grace %v", ErrInvalidShutdownTimeouts, grace)
	}
	return r.ShutdownWithTimeouts(grace, grace+headroom)
}

// WaitForShutdown waits until the accepted shutdown ends and returns its
// outcome, however long it takes, or ctx's error when ctx ends first. It
// returns ErrShutdownNotRequested when no shutdown was requested.
func (r *Runtime) WaitForShutdown(ctx context.Context) (ShutdownOutcome, error) {
	r.shutdownMu.Lock()
	req := r.shutdown
	r.shutdownMu.Unlock()
	if req == nil {
		return 0, ErrShutdownNotRequested
	}
	select {
	case <-req.done:
		return req.outcome, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Shutdown stops the runtime as ShutdownWithTimeouts does, with ctx for
// the grace deadline: in-flight turns and activities finish and are acked
// until ctx is done; then what still runs is cancelled and abandoned so
// that another runtime takes it at once, and Shutdown returns ctx's error
// once everything stopped. The total deadline is 5 s after ctx is done: a
// goroutine blocked in code that ignores its context cannot be stopped, and
// Shutdown then returns an error wrapping ErrShutdownTimedOut and ctx's
// error, leaving that goroutine to end when the code returns. When a
// shutdown was already accepted its deadlines hold, and Shutdown returns
// nil once it ended (drained or forced). It is safe to call more than
// once, and on a nil Runtime (a failed Start), where it does nothing.
func (r *Runtime) Shutdown(ctx context.Context) error {
	if r == nil {
		return nil
	}
	req, accepted := r.acceptShutdown(func(req *shutdownRequest) {
		req.deadlines(ctx.Done(), r.opts.cleanupHeadroom, nil)
	})
	outcome, err := req.wait()
	switch {
	case errors.Is(err, ErrShutdownTimedOut):
		if ctx.Err() != nil {
			return fmt.Errorf("runtime: Shutdown: dispatcher goroutines still running (blocked outside their context): %w: %w", err, ctx.Err())
		}
		return fmt.Errorf("runtime: Shutdown: dispatcher goroutines still running (blocked outside their context): %w", err)
	case outcome == ShutdownForced && accepted:
		return ctx.Err()
	}
	return nil
}

// acceptShutdown returns the accepted shutdown request, accepting a new
// one when there is none (accepted is then true): it stops fetching at
// once, has setDeadlines start the request's deadline goroutine, and
// starts the coordinator.
func (r *Runtime) acceptShutdown(setDeadlines func(*shutdownRequest)) (req *shutdownRequest, accepted bool) {
	r.shutdownMu.Lock()
	defer r.shutdownMu.Unlock()
	if r.shutdown != nil {
		return r.shutdown, false
	}
	req = &shutdownRequest{grace: make(chan struct{}), total: make(chan struct{}), done: make(chan struct{})}
	r.shutdown = req
	close(r.stopping)
	r.cancelFetch()
	setDeadlines(req)
	go r.coordinateShutdown(req)
	return req, true
}

// wait returns the request's outcome once it ended, or
// ErrShutdownTimedOut at its total deadline.
func (req *shutdownRequest) wait() (ShutdownOutcome, error) {
	select {
	case <-req.done:
		return req.outcome, nil
	case <-req.total:
		select {
		case <-req.done:
			return req.outcome, nil
		default:
			return 0, ErrShutdownTimedOut
		}
	}
}

// coordinateShutdown drives the accepted shutdown req to its end: it waits
// for the runtime's goroutines until the grace deadline; past it, it
// forces (cancels the running activities, marks the runtime forced so that
// turns cut short are abandoned, and after forceSettle cancels the
// runtime's context). At the total deadline (or once everything ended) it
// closes the sticky cache and the metrics; it publishes the outcome once
// every goroutine ended, however late.
func (r *Runtime) coordinateShutdown(req *shutdownRequest) {
	ended := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(ended)
	}()
	outcome := ShutdownDrained
	select {
	case <-ended:
	case <-req.grace:
		outcome = ShutdownForced
		r.logger.Warn("shutdown grace period ended; cancelling and abandoning in-flight work", "runtime_id", r.id)
		close(r.forced)
		r.mu.Lock()
		for a := range r.inflight {
			a.cancel(errShutdown)
		}
		r.mu.Unlock()
		settle := time.NewTimer(forceSettle)
		select {
		case <-ended:
		case <-settle.C:
		case <-req.total:
		}
		settle.Stop()
	}
	r.cancelRun()
	select {
	case <-ended:
	case <-req.total:
	}
	// The suspended executions end with the runtime, whatever the path;
	// a turn still running puts its execution into the closed cache,
	// which ends it at once.
	r.sticky.close()
	r.metrics.close()
	select {
	case <-ended:
	default:
		r.logger.Error("runtime goroutines still running at the shutdown's total deadline: orchestration, activity or provider code is blocking outside its context",
			"runtime_id", r.id)
		<-ended
	}
	req.outcome = outcome
	close(req.done)
}

// isForced reports whether a shutdown's grace period has ended.
func (r *Runtime) isForced() bool {
	select {
	case <-r.forced:
		return true
	default:
		return false
	}
}
