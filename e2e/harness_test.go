package e2e_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync/atomic"
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
	// verified counts the turns resumed from the sticky cache and
	// checked against a full replay.
	verified atomic.Int64
}

// newSample returns t's sample on a fresh container, and makes t parallel:
// every sample has its container, client and runtimes of its own.
func newSample(t *testing.T) *sample {
	t.Helper()
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	p := newProvider(t)
	s := &sample{t: t, ctx: ctx, provider: p, client: runtime.NewClient(p)}
	t.Cleanup(func() {
		if n := s.verified.Load(); n > 0 {
			t.Logf("sticky cache: %d resumed turns decided the same as a full replay", n)
		}
	})
	return s
}

// options are the runtime options of the samples: duroxide's defaults with
// a 10ms poll interval, as its samples that set one use; the sticky cache
// is off when DUROXIDE_STICKY is "off".
func options() runtime.Options {
	o := runtime.Options{PollInterval: 10 * time.Millisecond}
	if os.Getenv(stickyEnv) == "off" {
		o.StickyCacheSize = -1
	}
	return o
}

// stickyEnv names the environment variable that turns the sticky cache off
// in the e2e tests ("off"); README's "Sticky executions" says how the
// suites run both ways.
const stickyEnv = "DUROXIDE_STICKY"

// stickyOff reports whether t runs with the sticky cache off: under
// DUROXIDE_STICKY=off, or in the "off" half of
// TestEverySampleDecidesTheSameWithTheStickyCacheOnAndOff.
func stickyOff(t testing.TB) bool {
	return os.Getenv(stickyEnv) == "off" || strings.Contains(t.Name(), onAndOffTest+"/off/")
}

// start runs a runtime until the test ends. With the sticky cache on,
// every turn that resumes a cached execution is decided a second time by
// a full replay (Options.StickyVerify) and the test fails unless both
// decisions are the same JSON byte for byte.
func (s *sample) start(reg *runtime.Registry, opts runtime.Options) *runtime.Runtime {
	s.t.Helper()
	switch {
	case stickyOff(s.t):
		opts.StickyCacheSize = -1
	case opts.StickyCacheSize >= 0 && opts.StickyVerify == nil:
		t := s.t
		opts.StickyVerify = func(instance string, err error) {
			if err != nil {
				t.Errorf("sticky cache: %v", err)
			}
			s.verified.Add(1)
		}
	}
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

// startRuntime starts a runtime on p until the test ends (shut down within
// 10 s at cleanup): one replica of a service, for the tests that run
// several on one container.
func startRuntime(ctx context.Context, t *testing.T, p duroxide.Provider, reg *runtime.Registry, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.Start(ctx, p, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = rt.Shutdown(sctx)
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
