package runtime

import (
	"errors"
	"fmt"
	"math"
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
}

// ErrActivityTimedOut is the error of an attempt that lost its race against
// RetryPolicy.Timeout; its text is duroxide's.
var ErrActivityTimedOut = errors.New("timeout: activity timed out")

// ScheduleActivityWithRetry runs activity name until it succeeds or
// policy.MaxAttempts attempts failed, waiting policy.Backoff between
// attempts with durable timers (duroxide's schedule_activity_with_retry).
// It returns the last attempt's error, ErrActivityTimedOut when an attempt
// timed out, or an error when MaxAttempts is 0.
func (c *OrchestrationContext) ScheduleActivityWithRetry(name, input string, policy RetryPolicy) (string, error) {
	return c.ScheduleActivityWithRetryOn(name, input, policy, ActivityOptions{})
}

// ScheduleActivityWithRetryOn is ScheduleActivityWithRetry with every
// attempt scheduled with opts (the same session and tag).
func (c *OrchestrationContext) ScheduleActivityWithRetryOn(name, input string, policy RetryPolicy, opts ActivityOptions) (string, error) {
	if policy.MaxAttempts < 1 {
		return "", fmt.Errorf("runtime: retry policy for %s: MaxAttempts must be at least 1", name)
	}
	var lastErr error
	for attempt := uint32(1); attempt <= policy.MaxAttempts; attempt++ {
		act := c.ScheduleActivityWith(name, input, opts)
		var res string
		var err error
		if policy.Timeout > 0 {
			deadline := c.ScheduleTimer(policy.Timeout)
			var winner int
			winner, res, err = c.Select(act, deadline)
			if winner == 1 {
				return "", ErrActivityTimedOut
			}
		} else {
			res, err = act.Get()
		}
		if err == nil {
			return res, nil
		}
		lastErr = err
		if attempt < policy.MaxAttempts {
			c.TraceWarn(fmt.Sprintf("Activity '%s' attempt %d/%d failed: %v. Retrying...", name, attempt, policy.MaxAttempts, err))
			if d := policy.Backoff.DelayForAttempt(attempt); d > 0 {
				if _, err := c.ScheduleTimer(d).Get(); err != nil {
					return "", err
				}
			}
		}
	}
	return "", lastErr
}
