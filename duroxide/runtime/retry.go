package runtime

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// BackoffKind enumerates duroxide's BackoffStrategy variants.
type BackoffKind int

// The backoff strategies.
const (
	// BackoffExponential: Base * Multiplier^(attempt-1), capped at Max
	// (the default: 100ms, x2, 30s).
	BackoffExponential BackoffKind = iota
	// BackoffNone: retry at once.
	BackoffNone
	// BackoffFixed: Base between every attempt.
	BackoffFixed
	// BackoffLinear: Base * attempt, capped at Max.
	BackoffLinear
)

// BackoffStrategy computes the delay between retry attempts (duroxide's
// BackoffStrategy). The zero value is the default exponential backoff.
type BackoffStrategy struct {
	// Kind selects the formula.
	Kind BackoffKind
	// Base is the fixed delay (Fixed), the per-attempt step (Linear) or the
	// first delay (Exponential).
	Base time.Duration
	// Max caps Linear and Exponential delays.
	Max time.Duration
	// Multiplier is the Exponential growth factor per attempt.
	Multiplier float64
}

// DelayForAttempt returns the delay after failed attempt n (1-based).
func (b BackoffStrategy) DelayForAttempt(n uint32) time.Duration {
	switch b.Kind {
	case BackoffNone:
		return 0
	case BackoffFixed:
		return b.Base
	case BackoffLinear:
		return min(b.Base*time.Duration(n), b.Max)
	}
	base, mult, maxd := b.Base, b.Multiplier, b.Max
	if base == 0 && mult == 0 && maxd == 0 {
		base, mult, maxd = 100*time.Millisecond, 2, 30*time.Second
	}
	exp := 0.0
	if n > 1 {
		exp = float64(n - 1)
	}
	d := float64(base) * math.Pow(mult, exp)
	if d >= float64(maxd) || math.IsInf(d, 0) || math.IsNaN(d) {
		return maxd
	}
	return time.Duration(d)
}

// RetryPolicy configures ScheduleActivityWithRetry (duroxide's RetryPolicy).
type RetryPolicy struct {
	// MaxAttempts counts the first attempt too; it must be at least 1.
	MaxAttempts uint32
	// Backoff is the delay between attempts, taken with a durable timer.
	Backoff BackoffStrategy
	// Timeout, when non-zero, races every attempt against a durable timer;
	// a timeout ends the retries with an error ("timeout: activity timed
	// out") and cancels the attempt's activity. Only activity errors are
	// retried.
	Timeout time.Duration
	// NonRetryableErrorTypes lists ApplicationError types that end the
	// retries at once (Temporal's NonRetryableErrorTypes): an attempt
	// whose recorded failure has one of these types (TaskFailedError's
	// ErrorType) is the future's error. A failure the activity marked
	// non-retryable (NonRetryable) ends them whatever this list holds.
	// Both are read from history, so replays stop at the same attempt.
	NonRetryableErrorTypes []string
}

// stopsOn reports whether the recorded failure err ends the retries
// before MaxAttempts.
func (p RetryPolicy) stopsOn(err error) bool {
	var tf *TaskFailedError
	if !errors.As(err, &tf) {
		return false
	}
	return tf.NonRetryable() || (tf.ErrorType() != "" && slices.Contains(p.NonRetryableErrorTypes, tf.ErrorType()))
}

// ErrActivityTimedOut is the error of an attempt that lost its race against
// RetryPolicy.Timeout; its text is duroxide's.
var ErrActivityTimedOut = errors.New("timeout: activity timed out")

// ScheduleActivityWithRetry schedules activity name and retries it until it
// succeeds or policy.MaxAttempts attempts failed, waiting policy.Backoff
// between attempts with durable timers (duroxide's
// schedule_activity_with_retry). It returns a Future like every other
// durable call, so retried activities can be joined and selected; Get
// returns the first successful result, the last attempt's error (the
// first non-retryable one's, see RetryPolicy.NonRetryableErrorTypes),
// ErrActivityTimedOut when an attempt timed out, or an error at once when
// MaxAttempts is 0. The first attempt is scheduled now; each later attempt
// (and its backoff timer) when the future is polled after the previous
// attempt failed. Cancelling the future cancels the running attempt.
func (c *OrchestrationContext) ScheduleActivityWithRetry(name, input string, policy RetryPolicy) *Future {
	return c.ScheduleActivityWithRetryOn(name, input, policy, ActivityOptions{})
}

// ScheduleActivityWithRetryOn is ScheduleActivityWithRetry with every
// attempt scheduled with opts (the same session and tag).
func (c *OrchestrationContext) ScheduleActivityWithRetryOn(name, input string, policy RetryPolicy, opts ActivityOptions) *Future {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &Future{ctx: c}
	if policy.MaxAttempts < 1 {
		f.done, f.result = true, completion{err: fmt.Errorf("runtime: retry policy for %s: MaxAttempts must be at least 1", name)}
		return f
	}
	r := &retryRun{c: c, name: name, input: input, policy: policy, opts: opts}
	r.startAttempt()
	f.check = func(*ctxState) (completion, bool) { return r.step() }
	f.cancel = r.cancel
	c.futures = append(c.futures, f)
	return f
}

// retryRun is the state of one retried activity: the running attempt's
// activity and, with a Timeout, the timer it races, or the backoff timer
// between two attempts. It advances when its future is polled, on the
// orchestration goroutine under ctx.mu, scheduling what duroxide's retry
// loop would schedule at that point.
type retryRun struct {
	c           *OrchestrationContext
	name, input string
	policy      RetryPolicy
	opts        ActivityOptions

	attempt  uint32
	act      *Future // the running attempt
	deadline *Future // its timeout timer, nil without Timeout
	backoff  *Future // the timer before the next attempt, nil otherwise
}

// startAttempt schedules the next attempt (and its timeout timer).
func (r *retryRun) startAttempt() {
	r.attempt++
	r.act = r.c.newFutureLocked(activityAction(r.name, r.input, r.opts), kindActivity, resultCheck)
	r.deadline = nil
	if r.policy.Timeout > 0 {
		r.deadline = r.c.newFutureLocked(r.c.timerAction(r.policy.Timeout), kindTimer, resultCheck)
	}
}

// step advances the retries as far as history allows and reports the
// outcome once there is one.
func (r *retryRun) step() (completion, bool) {
	for {
		if r.backoff != nil {
			if !r.backoff.poll() {
				return completion{}, false
			}
			r.backoff = nil
			r.startAttempt()
		}
		if r.act.poll() {
			if r.deadline != nil {
				r.deadline.cancelLocked()
			}
			res := r.act.result
			if res.err == nil || r.attempt >= r.policy.MaxAttempts || r.policy.stopsOn(res.err) {
				return res, true
			}
			if !r.c.state.replaying {
				r.c.log("WARN", fmt.Sprintf("Activity '%s' attempt %d/%d failed: %v. Retrying...", r.name, r.attempt, r.policy.MaxAttempts, res.err))
			}
			if d := r.policy.Backoff.DelayForAttempt(r.attempt); d > 0 {
				r.backoff = r.c.newFutureLocked(r.c.timerAction(d), kindTimer, resultCheck)
			} else {
				r.startAttempt()
			}
			continue
		}
		if r.deadline != nil && r.deadline.poll() {
			r.act.cancelLocked()
			return completion{err: ErrActivityTimedOut}, true
		}
		return completion{}, false
	}
}

// cancel cancels the running attempt (timers need no cancelling).
func (r *retryRun) cancel() {
	if r.act != nil {
		r.act.cancelLocked()
	}
}
