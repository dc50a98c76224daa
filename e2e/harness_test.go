package e2e_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// waitTimeout bounds every wait of a sample (duroxide's samples wait 5-30s).
const waitTimeout = 30 * time.Second

// sample is one test's provider, client and runtimes.
type sample struct {
	t        *testing.T
	ctx      context.Context
	provider duroxide.Provider
	client   *runtime.Client
}

func newSample(t *testing.T) *sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p := newProvider(t)
	return &sample{t: t, ctx: ctx, provider: p, client: runtime.NewClient(p)}
}

// options are the runtime options of the samples: duroxide's defaults with
// a 10ms poll interval, as its samples that set one use.
func options() runtime.Options {
	return runtime.Options{PollInterval: 10 * time.Millisecond}
}

// start runs a runtime until the test ends.
func (s *sample) start(reg *runtime.Registry, opts runtime.Options) *runtime.Runtime {
	s.t.Helper()
	rt, err := runtime.Start(s.ctx, s.provider, reg, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

func (s *sample) startOrchestration(instance, name, input string) {
	s.t.Helper()
	if err := s.client.StartOrchestration(s.ctx, instance, name, input); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sample) wait(instance string) runtime.OrchestrationStatus {
	s.t.Helper()
	st, err := s.client.WaitForOrchestration(s.ctx, instance, waitTimeout)
	if err != nil {
		s.t.Fatalf("wait for %s: %v", instance, err)
	}
	return st
}

// completed waits for instance and returns its output, failing the test
// unless it completed.
func (s *sample) completed(instance string) string {
	s.t.Helper()
	st := s.wait(instance)
	if st.Kind != runtime.StatusCompleted {
		s.t.Fatalf("%s: %s: %v", instance, st.Kind, st.Err())
	}
	return st.Output
}

// expectOutput starts orchestration name as instance with input and fails
// the test unless it completes with want.
func (s *sample) expectOutput(instance, name, input, want string) {
	s.t.Helper()
	s.startOrchestration(instance, name, input)
	if got := s.completed(instance); got != want {
		s.t.Fatalf("%s output = %q, want %q", instance, got, want)
	}
}

// failed waits for instance and returns its error details, failing the
// test unless it failed.
func (s *sample) failed(instance string) duroxide.ErrorDetails {
	s.t.Helper()
	st := s.wait(instance)
	if st.Kind != runtime.StatusFailed {
		s.t.Fatalf("%s: want Failed, got %s %q", instance, st.Kind, st.Output)
	}
	return *st.Details
}

func (s *sample) history(instance string) []duroxide.Event {
	s.t.Helper()
	h, err := s.provider.Read(s.ctx, instance)
	if err != nil {
		s.t.Fatal(err)
	}
	return h
}

// waitForHistory polls instance's history until pred holds (duroxide's
// common::wait_for_history) and reports whether it did in time.
func (s *sample) waitForHistory(instance string, timeout time.Duration, pred func([]duroxide.Event) bool) bool {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if pred(s.history(instance)) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// waitForSubscription waits until instance subscribed to the external
// event name (duroxide's common::wait_for_subscription).
func (s *sample) waitForSubscription(instance, name string) {
	s.t.Helper()
	ok := s.waitForHistory(instance, waitTimeout, func(h []duroxide.Event) bool {
		return slices.ContainsFunc(h, func(e duroxide.Event) bool {
			k, ok := e.Kind.(duroxide.ExternalSubscribed)
			return ok && k.Name == name
		})
	})
	if !ok {
		s.t.Fatalf("%s never subscribed to %s", instance, name)
	}
}

func must(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func wantEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// fanOutSum is the fan-out orchestration of the reliability test and the
// fan-out benchmark: it schedules n "Work" activities with inputs 0..n-1,
// joins them and returns the sum of their integer results.
func fanOutSum(ctx *runtime.OrchestrationContext, n int) (int, error) {
	futures := make([]*runtime.Future, 0, n)
	for i := range n {
		f, err := runtime.ScheduleActivityTyped(ctx, "Work", i)
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
	}
	values, err := runtime.JoinTyped[int](ctx, futures...)
	sum := 0
	for _, v := range values {
		sum += v
	}
	return sum, err
}
