package duroxide

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a PendingReasonRecorder that remembers the reason it got.
type recorder struct {
	Provider
	reason string
}

func (r *recorder) AbandonOrchestrationItemWithReason(_ context.Context, _ string, _ time.Duration, _ bool, reason string) error {
	r.reason = reason
	return nil
}

// wrapper exposes a recorder through PendingReasonCapable.
type wrapper struct {
	Provider
	r PendingReasonRecorder
}

func (w wrapper) PendingReasonCapability() PendingReasonRecorder { return w.r }

func TestErrInstancePendingIsAlsoErrInstanceExists(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("start: %w", WrapError("enqueue_start", false, ErrInstancePending))
	if !errors.Is(err, ErrInstancePending) || !errors.Is(err, ErrInstanceExists) {
		t.Fatalf("errors.Is: pending %v, exists %v", errors.Is(err, ErrInstancePending), errors.Is(err, ErrInstanceExists))
	}
	if errors.Is(WrapError("enqueue_start", false, ErrInstanceExists), ErrInstancePending) {
		t.Fatal("an instance that exists is not pending")
	}
}

func TestPendingStartMessageQuotesTheIDAndAddsTheReason(t *testing.T) {
	t.Parallel()
	if got, want := PendingStartMessage("a/1", ""), `instance "a/1" is pending: its start is stored and has not run yet`; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	got := PendingStartMessage(strings.Repeat("x", 100), "not registered")
	if !strings.Contains(got, "(100 bytes)") || !strings.HasSuffix(got, "has not run yet (not registered)") {
		t.Fatalf("%q", got)
	}
}

func TestAsPendingReasonRecorderFindsTheProviderOrItsCapability(t *testing.T) {
	t.Parallel()
	direct := &recorder{}
	if r, ok := AsPendingReasonRecorder(direct); !ok || r != PendingReasonRecorder(direct) {
		t.Fatalf("direct: %v %v", r, ok)
	}
	if r, ok := AsPendingReasonRecorder(wrapper{r: direct}); !ok || r != PendingReasonRecorder(direct) {
		t.Fatalf("through the capability: %v %v", r, ok)
	}
	if _, ok := AsPendingReasonRecorder(wrapper{}); ok {
		t.Fatal("a nil capability is no recorder")
	}
	if _, ok := AsPendingReasonRecorder(fakeProvider{}); ok {
		t.Fatal("a provider without it has none")
	}
}

// fakeProvider is a Provider with no optional capability.
type fakeProvider struct{ Provider }
