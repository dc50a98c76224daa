package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

func TestCallOfIsSdkUnlessMarked(t *testing.T) {
	t.Parallel()
	if got := CallOf(context.Background()); got != "sdk" {
		t.Fatalf("CallOf(unmarked) = %q, want sdk", got)
	}
	if got := CallOf(WithCall(context.Background(), "ack_work_item")); got != "ack_work_item" {
		t.Fatalf("CallOf(marked) = %q, want ack_work_item", got)
	}
}

func TestStatusIsReadThroughWrapping(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("replace: %w", &azcore.ResponseError{StatusCode: http.StatusPreconditionFailed})
	if code, ok := StatusCode(err); !ok || code != http.StatusPreconditionFailed {
		t.Fatalf("StatusCode = %d, %v; want 412, true", code, ok)
	}
	if !IsStatus(err, http.StatusPreconditionFailed) || IsStatus(err, http.StatusNotFound) {
		t.Fatal("IsStatus does not match the wrapped status alone")
	}
	if _, ok := StatusCode(errors.New("connection refused")); ok {
		t.Fatal("a transport failure has a status")
	}
}

func TestAmbiguousErrorKeepsItsCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("connection reset")
	err := fmt.Errorf("batch: %w", &AmbiguousError{Cause: cause})
	if !IsAmbiguous(err) || !errors.Is(err, cause) {
		t.Fatalf("IsAmbiguous %v, errors.Is(cause) %v; want both", IsAmbiguous(err), errors.Is(err, cause))
	}
	if IsAmbiguous(cause) {
		t.Fatal("a plain error is ambiguous")
	}
}
