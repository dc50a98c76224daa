package duroxide

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestProviderErrorConstructors(t *testing.T) {
	r := NewRetryableError("fetch_work_item", "429 too many requests")
	checkEqual(t, &ProviderError{Operation: "fetch_work_item", Message: "429 too many requests", Retryable: true}, r)
	checkEqual(t, "fetch_work_item: 429 too many requests", r.Error())
	checkEqual(t, true, r.IsRetryable())

	p := NewPermanentError("ack_orchestration_item", "lock token expired")
	checkEqual(t, false, p.IsRetryable())
	checkEqual(t, "ack_orchestration_item: lock token expired", p.Error())
	if p.Unwrap() != nil {
		t.Error("a ProviderError without cause unwraps to non-nil")
	}

	var nilErr *ProviderError
	checkEqual(t, "<nil>", nilErr.Error())
	checkEqual(t, false, nilErr.IsRetryable())
	if nilErr.Unwrap() != nil {
		t.Error("a nil ProviderError unwraps to non-nil")
	}
	checkEqual(t, ErrorDetails{Infrastructure: &InfrastructureDetails{Message: "<nil>"}}, nilErr.ToInfrastructureError())
	if WrapError("read", true, nil) != nil {
		t.Error("WrapError(nil) is not nil")
	}
}

func TestProviderErrorWrapAndAs(t *testing.T) {
	cause := context.DeadlineExceeded
	pe := WrapError("read", true, cause)
	checkEqual(t, "read: "+cause.Error(), pe.Error())
	if !errors.Is(pe, context.DeadlineExceeded) {
		t.Error("errors.Is does not see the cause through a ProviderError")
	}

	// A ProviderError wrapped again with %w is still found by errors.As.
	outer := fmt.Errorf("dispatcher: %w", pe)
	var got *ProviderError
	if !errors.As(outer, &got) {
		t.Fatal("errors.As does not find the ProviderError")
	}
	if got != pe {
		t.Error("errors.As found another ProviderError")
	}
	if !errors.Is(outer, context.DeadlineExceeded) {
		t.Error("errors.Is does not see the cause through two layers")
	}

	// errors.As into a cause type behind the ProviderError.
	type sdkError struct{ error }
	sdk := &sdkError{errors.New("503")}
	var target *sdkError
	if !errors.As(fmt.Errorf("x: %w", WrapError("ack_work_item", false, sdk)), &target) || target != sdk {
		t.Error("errors.As does not reach the SDK error behind a ProviderError")
	}
}

func TestIsRetryable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"retryable", NewRetryableError("op", "m"), true},
		{"permanent", NewPermanentError("op", "m"), false},
		{"wrapped retryable", fmt.Errorf("ctx: %w", NewRetryableError("op", "m")), true},
		{"wrapped permanent", fmt.Errorf("ctx: %w", NewPermanentError("op", "m")), false},
		{"plain error is retryable (duroxide's From<String>)", errors.New("boom"), true},
		{"joined with a permanent", errors.Join(errors.New("a"), NewPermanentError("op", "m")), false},
		{"nil *ProviderError in an error", error((*ProviderError)(nil)), false},
		{"wrapped nil *ProviderError", fmt.Errorf("x: %w", (*ProviderError)(nil)), false},
	}
	for _, c := range cases {
		checkEqual(t, c.want, IsRetryable(c.err), c.name)
	}
}

func TestToInfrastructureError(t *testing.T) {
	d := NewRetryableError("read", "timeout").ToInfrastructureError()
	checkEqual(t, ErrorDetails{Infrastructure: &InfrastructureDetails{Operation: "read", Message: "timeout", Retryable: true}}, d)
	checkEqual(t, "infrastructure:read: timeout", d.DisplayMessage())
}

func TestQuoteInstanceIDCutsLongIDsAtARuneBoundary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ id, want string }{
		{"", `""`},
		{"order-1", `"order-1"`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 3000), `"` + strings.Repeat("a", 64) + `"… (3000 bytes)`},
		{strings.Repeat("a", 63) + "é" + "zz", `"` + strings.Repeat("a", 63) + `"… (67 bytes)`},
	} {
		if got := QuoteInstanceID(c.id); got != c.want {
			t.Errorf("QuoteInstanceID(%d bytes) = %s, want %s", len(c.id), got, c.want)
		}
	}
}
