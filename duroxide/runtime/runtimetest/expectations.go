package runtimetest

// Mock expectations (Temporal's OnActivity and OnWorkflow with testify's
// call counts): what a call of an activity or orchestration with a given
// input returns, how many such calls the test expects, and
// AssertExpectations to check them.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Matcher selects the inputs an Expectation answers: Anything, Equals,
// JSONEquals or MatchedBy.
type Matcher struct {
	desc  string
	match func(input string) bool
}

// String describes the matcher, for failure messages.
func (m Matcher) String() string { return m.desc }

// Matches reports whether input is one the matcher selects (every input
// for the zero Matcher).
func (m Matcher) Matches(input string) bool { return m.match == nil || m.match(input) }

// Anything matches every input (testify's mock.Anything).
func Anything() Matcher { return Matcher{desc: "anything"} }

// Equals matches exactly input.
func Equals(input string) Matcher {
	return Matcher{desc: fmt.Sprintf("%q", input), match: func(s string) bool { return s == input }}
}

// JSONEquals matches an input that holds the same value as v once both
// are read with runtime's codec (runtime.Encode, runtime.Decode): field
// order and spacing do not matter. A v that cannot be encoded matches
// nothing.
func JSONEquals(v any) Matcher {
	want, err := runtime.Encode(v)
	if err != nil {
		return Matcher{desc: fmt.Sprintf("JSON of %#v (unencodable: %v)", v, err), match: func(string) bool { return false }}
	}
	wantV, _ := runtime.Decode[any](want)
	return Matcher{desc: "JSON " + want, match: func(s string) bool {
		got, err := runtime.Decode[any](s)
		return err == nil && reflect.DeepEqual(got, wantV)
	}}
}

// MatchedBy matches the inputs f accepts (testify's mock.MatchedBy); desc
// names them in failure messages.
func MatchedBy(desc string, f func(input string) bool) Matcher {
	return Matcher{desc: desc, match: f}
}

// Expectation is what OnActivity and OnOrchestration return: the answer to
// the calls of a name whose input its Matcher selects, and how many such
// calls are expected. Without Times, Once or Never, at least one call is
// expected (Maybe makes it optional). Its setters return it, to chain;
// they must be called before the calls they govern. Safe for concurrent
// use.
type Expectation struct {
	env   *Env
	kind  string // "activity" or "orchestration"
	name  string
	input Matcher

	// Guarded by env.mu.
	times    int // expected calls when limited
	limited  bool
	optional bool
	calls    int
	fn       func(input string) (string, error)
}

func expectKey(kind, name string) string { return kind + "\x00" + name }

// OnActivity expects calls of activity name with an input m selects.
// From now on the calls of name go through the environment's
// expectations for it, first registered first: a call none of them
// accepts fails the test (t.Errorf) and the activity (non-retryable). name
// need not be registered.
func (e *Env) OnActivity(name string, m Matcher) *Expectation {
	e.t.Helper()
	e.mu.Lock()
	_, known := e.registered[name]
	_, mocked := e.mocks[name]
	e.mu.Unlock()
	if !known && !mocked {
		// Registered through the environment so that the registry's
		// name lists and the runtime know it.
		if err := e.registry.RegisterActivity(name, e.activity(name)); err != nil && !errors.Is(err, runtime.ErrDuplicateRegistration) {
			e.t.Fatalf("runtimetest: expect activity %q: %v", name, err)
		}
	}
	return e.expect("activity", name, m)
}

// OnOrchestration expects calls of orchestration name, started as a
// sub-orchestration (or by the test), with an input m selects (Temporal's
// OnWorkflow): the mock's answer becomes the child's output or failure at
// its first turn, and the registered orchestration, if any, does not run.
// A call none of the name's expectations accepts fails the test
// (t.Errorf) and the child. Calls are counted when the child runs, not
// when its turns replay. name need not be registered.
func (e *Env) OnOrchestration(name string, m Matcher) *Expectation {
	e.t.Helper()
	err := e.registry.RegisterOrchestration(name, e.orchestration(name, nil))
	if err != nil && !errors.Is(err, runtime.ErrDuplicateRegistration) {
		e.t.Fatalf("runtimetest: expect orchestration %q: %v", name, err)
	}
	return e.expect("orchestration", name, m)
}

func (e *Env) expect(kind, name string, m Matcher) *Expectation {
	x := &Expectation{env: e, kind: kind, name: name, input: m}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := expectKey(kind, name)
	e.expectations[k] = append(e.expectations[k], x)
	return x
}

// Returns makes the matching calls return result.
func (x *Expectation) Returns(result string) *Expectation {
	return x.Runs(func(string) (string, error) { return result, nil })
}

// ReturnsValue makes the matching calls return v encoded by
// runtime.Encode; it stops the test when v cannot be encoded.
func (x *Expectation) ReturnsValue(v any) *Expectation {
	x.env.t.Helper()
	s, err := runtime.Encode(v)
	if err != nil {
		x.env.t.Fatalf("runtimetest: %s %q ReturnsValue: %v", x.kind, x.name, err)
	}
	return x.Returns(s)
}

// Fails makes the matching calls fail with err (wrap it with
// runtime.NonRetryable to stop retry policies).
func (x *Expectation) Fails(err error) *Expectation {
	return x.Runs(func(string) (string, error) { return "", err })
}

// Runs makes the matching calls run fn on their input.
func (x *Expectation) Runs(fn func(input string) (string, error)) *Expectation {
	x.env.mu.Lock()
	defer x.env.mu.Unlock()
	x.fn = fn
	return x
}

// Times expects exactly n matching calls; later ones go to the next
// expectation that accepts them, or fail as unexpected.
func (x *Expectation) Times(n int) *Expectation {
	x.env.mu.Lock()
	defer x.env.mu.Unlock()
	x.times, x.limited = max(n, 0), true
	return x
}

// Once is Times(1).
func (x *Expectation) Once() *Expectation { return x.Times(1) }

// Never expects no matching call: one fails the test at once and the
// call.
func (x *Expectation) Never() *Expectation { return x.Times(0) }

// Maybe makes the expectation optional: AssertExpectations does not
// require a call (a Times count still bounds them).
func (x *Expectation) Maybe() *Expectation {
	x.env.mu.Lock()
	defer x.env.mu.Unlock()
	x.optional = true
	return x
}

// Calls returns how many calls the expectation answered.
func (x *Expectation) Calls() int {
	x.env.mu.Lock()
	defer x.env.mu.Unlock()
	return x.calls
}

// String describes the expectation and its calls so far, as
// AssertExpectations reports it.
func (x *Expectation) String() string {
	x.env.mu.Lock()
	defer x.env.mu.Unlock()
	return x.describe()
}

// describe is String for a caller that holds env.mu.
func (x *Expectation) describe() string {
	want := "at least once"
	switch {
	case x.limited:
		want = fmt.Sprintf("%d time(s)", x.times)
	case x.optional:
		want = "any number of times"
	}
	return fmt.Sprintf("%s %q with input %s, expected %s, called %d time(s)", x.kind, x.name, x.input, want, x.calls)
}

// AssertExpectations checks every expectation of the environment: the
// number of calls Times set, or at least one call (unless Maybe); each one
// unmet fails the test (t.Errorf), naming the name, the matcher and the
// calls.
func (e *Env) AssertExpectations() {
	e.t.Helper()
	e.mu.Lock()
	var unmet []string
	for _, list := range e.expectations {
		for _, x := range list {
			if (x.limited && x.calls != x.times) || (!x.limited && !x.optional && x.calls == 0) {
				unmet = append(unmet, x.describe())
			}
		}
	}
	e.mu.Unlock()
	for _, u := range unmet {
		e.t.Errorf("runtimetest: unmet expectation: %s", u)
	}
}

// answer finds the expectation of kind and name that takes a call with
// input and counts the call; has is false when the name has no
// expectations (the call goes to the mock or the registered function).
// With expectations but none taking the call, fn fails it and the test.
// A call that is not counted (a replay) changes no count and reports
// nothing.
func (e *Env) answer(kind, name, input string, count bool) (fn func(string) (string, error), has bool) {
	e.mu.Lock()
	list := e.expectations[expectKey(kind, name)]
	if len(list) == 0 {
		e.mu.Unlock()
		return nil, false
	}
	for _, x := range list {
		if !x.input.Matches(input) {
			continue
		}
		if count && x.limited && x.calls >= x.times {
			continue
		}
		if count {
			x.calls++
		}
		fn := x.fn
		e.mu.Unlock()
		if fn == nil {
			fn = func(string) (string, error) {
				return "", fmt.Errorf("runtimetest: %s %q: the expectation sets no answer (Returns, Fails, Runs)", kind, name)
			}
		}
		return fn, true
	}
	descs := make([]string, len(list))
	for i, x := range list {
		descs[i] = "  " + x.describe()
	}
	e.mu.Unlock()
	err := fmt.Errorf("runtimetest: unexpected call of %s %q with input %q; its expectations:\n%s", kind, name, input, strings.Join(descs, "\n"))
	if count {
		e.t.Errorf("%v", err)
	}
	return func(string) (string, error) { return "", runtime.NonRetryable(err) }, true
}

// orchestration is the function the environment's registry runs for
// orchestration name: an expectation's answer when the name has
// expectations, fn (the registered function) otherwise. A replayed turn
// is answered without being counted again.
func (e *Env) orchestration(name string, fn runtime.OrchestrationFunc) runtime.OrchestrationFunc {
	return func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		if answer, has := e.answer("orchestration", name, input, !ctx.IsReplaying()); has {
			return answer(input)
		}
		if fn == nil {
			return "", fmt.Errorf("runtimetest: orchestration %q has no expectations and no registered function", name)
		}
		return fn(ctx, input)
	}
}
