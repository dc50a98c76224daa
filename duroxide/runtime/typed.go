package runtime

import (
	"context"
	"time"
)

// Typed counterparts of the string APIs (duroxide's *_typed methods): values
// are encoded with Encode and decoded with Decode, duroxide's JSON codec.

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
