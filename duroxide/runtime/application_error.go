package runtime

import (
	"errors"
	"strings"
)

// ApplicationError is an activity error with a type and a retry verdict
// (Temporal's ApplicationError): return one, or wrap an error with
// NonRetryable, to stop ScheduleActivityWithRetry on an error that
// retrying cannot fix, such as a declined card.
//
// Histories hold no such fields (duroxide records an activity failure as
// Application/ActivityFailed with a message, and the Rust runtime must
// read what this one writes), so the worker records the type and the
// verdict as a tag in front of the failure's message (the text of the
// error the activity returned, which may wrap the ApplicationError):
//
//	[type=CardDeclined non-retryable] card declined
//
// The orchestration reads them back from history (TaskFailedError's
// ErrorType and NonRetryable), so a replay decides to stop retrying
// exactly as the first run did, whatever the activity's code does today.
// A plain error is recorded as before, with its message alone.
type ApplicationError struct {
	// Type names the kind of failure, matched against
	// RetryPolicy.NonRetryableErrorTypes; empty means none. It must not
	// contain spaces or "]": such a type is recorded but does not read
	// back.
	Type string
	// Message is the failure's text.
	Message string
	// NonRetryable stops every retry policy at this failure.
	NonRetryable bool
	// Cause is the error behind it, for errors.Is/As inside the activity;
	// it is not recorded.
	Cause error
}

// Error returns Message.
func (e *ApplicationError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return e.Message
}

// tag is the tag the worker records in front of the failure's message
// ("" when neither Type nor NonRetryable is set).
func (e *ApplicationError) tag() string {
	var tags []string
	if e.Type != "" {
		tags = append(tags, "type="+e.Type)
	}
	if e.NonRetryable {
		tags = append(tags, nonRetryableTag)
	}
	if len(tags) == 0 {
		return ""
	}
	return "[" + strings.Join(tags, " ") + "]"
}

// activityFailureMessage is the message the worker records for an
// activity's error: err's text, behind the tag of the first
// ApplicationError in its chain.
func activityFailureMessage(err error) string {
	var app *ApplicationError
	if errors.As(err, &app) && app != nil {
		if tag := app.tag(); tag != "" {
			return tag + " " + err.Error()
		}
	}
	return err.Error()
}

// Unwrap returns Cause.
func (e *ApplicationError) Unwrap() error { return e.Cause }

// nonRetryableTag is the tag of a non-retryable failure's message.
const nonRetryableTag = "non-retryable"

// NonRetryable wraps err (an activity's error) so that no retry policy
// retries it: ScheduleActivityWithRetry's future fails with it at once. A
// nil err returns nil.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	var app *ApplicationError
	if errors.As(err, &app) {
		c := *app
		c.NonRetryable = true
		return &c
	}
	return &ApplicationError{Message: err.Error(), NonRetryable: true, Cause: err}
}

// parseFailureTag reads the tag ApplicationError.Error writes in front of
// a recorded message: ok is false when msg has none.
func parseFailureTag(msg string) (errType string, nonRetryable, ok bool) {
	if !strings.HasPrefix(msg, "[") {
		return "", false, false
	}
	inner, _, found := strings.Cut(msg[1:], "] ")
	if !found || inner == "" {
		return "", false, false
	}
	for _, tag := range strings.Split(inner, " ") {
		switch {
		case tag == nonRetryableTag:
			nonRetryable = true
		case strings.HasPrefix(tag, "type=") && len(tag) > len("type=") && errType == "":
			errType = tag[len("type="):]
		default:
			return "", false, false
		}
	}
	return errType, nonRetryable, true
}

// ErrorType returns the Type of the ApplicationError the activity
// returned, as recorded in history ("" when it returned another error, or
// for a sub-orchestration's failure without a tag).
func (e *TaskFailedError) ErrorType() string {
	if e == nil || e.Details.Application == nil {
		return ""
	}
	t, _, _ := parseFailureTag(e.Details.Application.Message)
	return t
}

// NonRetryable reports whether the activity marked the failure
// non-retryable (NonRetryable, or an ApplicationError with NonRetryable),
// as recorded in history.
func (e *TaskFailedError) NonRetryable() bool {
	if e == nil || e.Details.Application == nil {
		return false
	}
	_, nr, _ := parseFailureTag(e.Details.Application.Message)
	return nr
}
