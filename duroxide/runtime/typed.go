package runtime

import (
	"context"
	"time"
)

// Typed counterparts of the string APIs (duroxide's *_typed methods): values
// are encoded with Encode and decoded with Decode, duroxide's JSON codec.
// The Call* and WaitFor* forms schedule, wait and decode in one call; the
// Schedule*Typed forms return the Future, for Join and Select.
//
// A note on the codec: a string payload that is itself JSON text decodes
// as JSON, as duroxide's typed codec does. Decode[string] of the stored
// payload "\"quoted\"" returns quoted, of "null" returns "", and
// Decode[int] of "42" returns 42 whether the payload was written by
// Encode(42) or as the string "42". Pass structured values (a struct, a
// map) rather than JSON text in strings when the difference matters.

// CallActivity schedules activity name with input encoded by Encode,
// waits for it and decodes its result into Out: the one-call form of
// ScheduleActivityTyped then Await (Temporal's ExecuteActivity(...).Get).
// Out is given, In is inferred: runtime.CallActivity[Receipt](ctx,
// "Charge", order). The error is Encode's (nothing is scheduled then),
// the activity's failure (a *TaskFailedError), or Decode's.
func CallActivity[Out, In any](c *OrchestrationContext, name string, input In) (Out, error) {
	f, err := ScheduleActivityTyped(c, name, input)
	if err != nil {
		var zero Out
		return zero, err
	}
	return Await[Out](f)
}

// CallActivityWithRetry is CallActivity with c.ScheduleActivityWithRetry's
// policy.
func CallActivityWithRetry[Out, In any](c *OrchestrationContext, name string, input In, policy RetryPolicy) (Out, error) {
	s, err := Encode(input)
	if err != nil {
		var zero Out
		return zero, err
	}
	return Await[Out](c.ScheduleActivityWithRetry(name, s, policy))
}

// CallSubOrchestration starts child orchestration name with input encoded
// by Encode (generated instance id), waits for it and decodes its output
// into Out (Temporal's ExecuteChildWorkflow(...).Get). The error is
// Encode's (nothing is scheduled then), the child's failure (a
// *TaskFailedError), or Decode's.
func CallSubOrchestration[Out, In any](c *OrchestrationContext, name string, input In) (Out, error) {
	f, err := ScheduleSubOrchestrationTyped(c, name, input)
	if err != nil {
		var zero Out
		return zero, err
	}
	return Await[Out](f)
}

// WaitForEvent subscribes to the external event name, waits for it and
// decodes its data into T (ScheduleWait then Await). An event raised
// before the subscription is dropped (duroxide's rule): for events that
// may come early use DequeueEvent (WaitForQueue) and Client.EnqueueEvent.
func WaitForEvent[T any](c *OrchestrationContext, name string) (T, error) {
	return Await[T](c.ScheduleWait(name))
}

// WaitForQueue takes the next message of the persistent queue name and
// decodes it into T (DequeueEvent then Await). Messages enqueued before
// the call are buffered, so none is lost to timing.
func WaitForQueue[T any](c *OrchestrationContext, queue string) (T, error) {
	return Await[T](c.DequeueEvent(queue))
}

// ScheduleActivityTyped schedules activity name with input encoded by
// Encode; read the result with Await. The error is Encode's, and nothing is
// scheduled then.
func ScheduleActivityTyped[In any](c *OrchestrationContext, name string, input In) (*Future, error) {
	s, err := Encode(input)
	if err != nil {
		return nil, err
	}
	return c.ScheduleActivity(name, s), nil
}

// ScheduleSubOrchestrationTyped starts child orchestration name with input
// encoded by Encode (generated instance id); read the result with Await.
// The error is Encode's, and nothing is scheduled then.
func ScheduleSubOrchestrationTyped[In any](c *OrchestrationContext, name string, input In) (*Future, error) {
	s, err := Encode(input)
	if err != nil {
		return nil, err
	}
	return c.ScheduleSubOrchestration(name, s), nil
}

// ContinueAsNewTyped continues as new with input encoded by Encode; like
// ContinueAsNew it does not return unless the encoding fails.
func ContinueAsNewTyped[In any](c *OrchestrationContext, input In) error {
	s, err := Encode(input)
	if err != nil {
		return err
	}
	return c.ContinueAsNew(s)
}

// Await waits for f and decodes its value into T with Decode (the typed
// counterpart of Get). The error is Get's (the failure of the activity or
// sub-orchestration, a *TaskFailedError) or Decode's.
func Await[T any](f *Future) (T, error) {
	s, err := f.Get()
	if err != nil {
		var zero T
		return zero, err
	}
	return Decode[T](s)
}

// JoinTyped waits for all futures, as OrchestrationContext.Join, and
// decodes their values into T in order (duroxide's join of typed futures):
// the values of a fan-out in one call. The error is the first failure in
// the futures' order (a *TaskFailedError for a failed activity or
// sub-orchestration, a nil future's error) or the first value that does
// not decode; every future is still waited for, as Join does.
func JoinTyped[T any](c *OrchestrationContext, futures ...*Future) ([]T, error) {
	results := c.Join(futures...)
	out := make([]T, len(results))
	for i, r := range results {
		if r.Err != nil {
			return nil, r.Err
		}
		v, err := Decode[T](r.Value)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// StartOrchestrationTyped starts instance with input encoded by Encode.
// The error is Encode's (nothing is sent then) or
// Client.StartOrchestration's.
func StartOrchestrationTyped[In any](ctx context.Context, c *Client, instance, name string, input In) error {
	s, err := Encode(input)
	if err != nil {
		return err
	}
	return c.StartOrchestration(ctx, instance, name, s)
}

// RaiseEventTyped raises event name with data encoded by Encode. The
// error is Encode's (nothing is sent then) or Client.RaiseEvent's.
func RaiseEventTyped[T any](ctx context.Context, c *Client, instance, name string, data T) error {
	s, err := Encode(data)
	if err != nil {
		return err
	}
	return c.RaiseEvent(ctx, instance, name, s)
}

// EnqueueEventTyped enqueues data, encoded by Encode, on queue. The error
// is Encode's (nothing is sent then) or Client.EnqueueEvent's.
func EnqueueEventTyped[T any](ctx context.Context, c *Client, instance, queue string, data T) error {
	s, err := Encode(data)
	if err != nil {
		return err
	}
	return c.EnqueueEvent(ctx, instance, queue, s)
}

// WaitForOrchestrationTyped waits like WaitForOrchestration and decodes a
// Completed output into Out; a Failed orchestration is returned as an error
// (*OrchestrationFailedError).
func WaitForOrchestrationTyped[Out any](ctx context.Context, c *Client, instance string, timeout time.Duration) (Out, error) {
	var zero Out
	st, err := c.WaitForOrchestration(ctx, instance, timeout)
	if err != nil {
		return zero, err
	}
	if st.Kind == StatusFailed {
		return zero, &OrchestrationFailedError{Instance: instance, Details: *st.Details}
	}
	return Decode[Out](st.Output)
}
