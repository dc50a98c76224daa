package runtimetest

// Activity mocks, and the record of every activity call.

import (
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// ActivityCall is one call of an activity in an environment, mocked or
// not.
type ActivityCall struct {
	// Name is the activity's name.
	Name string
	// Instance and ExecutionID are the orchestration that scheduled it.
	Instance    string
	ExecutionID uint64
	// ActivityID is the id of its ActivityScheduled event.
	ActivityID uint64
	// Input is what the activity received.
	Input string
	// Attempt numbers the calls of this activity in the environment, from
	// 1: a retry policy's third attempt is 3 when one instance calls the
	// activity (a redelivery after a lost lock counts too).
	Attempt int
	// Result and Err are what the activity returned.
	Result string
	Err    error
	// Duration is how long the call took.
	Duration time.Duration
}

// errNoBehaviour is the error of a mocked activity with nothing to run:
// no behaviour set, and no registered function.
var errNoBehaviour = errors.New("runtimetest: the mocked activity has no behaviour and no registered function")

// ActivityMock replaces an activity of an environment (Env.MockActivity).
// Its setters return the mock, to chain: FailsFirst, then Returns, Fails
// or Runs. With no behaviour set the registered activity runs, so a mock
// can only record, or only fail the first calls. Safe for concurrent use.
type ActivityMock struct {
	env  *Env
	name string

	// Guarded by env.mu.
	fn        runtime.ActivityFunc
	failFirst int
	failErr   error
}

// MockActivity returns the mock of activity name, creating it: from now
// on the environment's calls of name go through it. name need not be
// registered (a mock can stand in for an activity the registry leaves to
// another service). It stops the test for a name the registry refuses
// (empty, or in duroxide's reserved "__duroxide_syscall:" namespace).
func (e *Env) MockActivity(name string) *ActivityMock {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.mocks[name]; m != nil {
		return m
	}
	if _, ok := e.registered[name]; !ok {
		if err := e.registry.RegisterActivity(name, e.activity(name)); err != nil {
			e.t.Fatalf("runtimetest: mock activity %q: %v", name, err)
		}
	}
	m := &ActivityMock{env: e, name: name}
	e.mocks[name] = m
	return m
}

// Returns makes every call (past FailsFirst's) return result.
func (m *ActivityMock) Returns(result string) *ActivityMock {
	return m.Runs(func(*runtime.ActivityContext, string) (string, error) { return result, nil })
}

// Fails makes every call (past FailsFirst's) fail with err: the
// orchestration's Get returns a *runtime.TaskFailedError whose message is
// err's.
func (m *ActivityMock) Fails(err error) *ActivityMock {
	return m.Runs(func(*runtime.ActivityContext, string) (string, error) { return "", err })
}

// Runs makes every call (past FailsFirst's) run fn instead of the
// registered activity.
func (m *ActivityMock) Runs(fn runtime.ActivityFunc) *ActivityMock {
	m.env.mu.Lock()
	defer m.env.mu.Unlock()
	m.fn = fn
	return m
}

// FailsFirst makes the first n calls of the activity in the environment
// (Attempt 1 to n) fail with err; later calls run the mock's other
// behaviour, or the registered activity. It exercises retry policies.
func (m *ActivityMock) FailsFirst(n int, err error) *ActivityMock {
	m.env.mu.Lock()
	defer m.env.mu.Unlock()
	m.failFirst, m.failErr = n, err
	return m
}

// Calls returns the calls of the mocked activity so far, in the order
// they ended.
func (m *ActivityMock) Calls() []ActivityCall { return m.env.ActivityCalls(m.name) }

// ActivityCalls returns the calls of the activities named (of every
// activity when none is named) so far, in the order they ended.
func (e *Env) ActivityCalls(names ...string) []ActivityCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ActivityCall
	for _, c := range e.calls {
		if len(names) == 0 || contains(names, c.Name) {
			out = append(out, c)
		}
	}
	return out
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// activity is the function the environment's registry runs for name: the
// mock's behaviour or the registered function, with the call recorded.
func (e *Env) activity(name string) runtime.ActivityFunc {
	return func(ctx *runtime.ActivityContext, input string) (string, error) {
		expected, hasExpectations := e.answer("activity", name, input, true)
		e.mu.Lock()
		e.counts[name]++
		attempt := e.counts[name]
		fn := e.registered[name]
		var failErr error
		if hasExpectations {
			fn = func(_ *runtime.ActivityContext, in string) (string, error) { return expected(in) }
		} else if m := e.mocks[name]; m != nil {
			if attempt <= m.failFirst {
				failErr = m.failErr
				if failErr == nil {
					failErr = fmt.Errorf("runtimetest: %s attempt %d fails (FailsFirst)", name, attempt)
				}
			}
			if m.fn != nil {
				fn = m.fn
			}
		}
		e.mu.Unlock()

		start := time.Now()
		var out string
		var err error
		switch {
		case failErr != nil:
			err = failErr
		case fn == nil:
			err = fmt.Errorf("%w: %s", errNoBehaviour, name)
		default:
			out, err = fn(ctx, input)
		}
		call := ActivityCall{
			Name: name, Instance: ctx.InstanceID(), ExecutionID: ctx.ExecutionID(), ActivityID: ctx.ActivityID(),
			Input: input, Attempt: attempt, Result: out, Err: err, Duration: time.Since(start),
		}
		e.mu.Lock()
		e.calls = append(e.calls, call)
		e.mu.Unlock()
		return out, err
	}
}
