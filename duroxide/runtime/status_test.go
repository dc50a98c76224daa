package runtime_test

import (
	"errors"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

func TestStatusErrIsNilUnlessFailed(t *testing.T) {
	t.Parallel()
	for _, kind := range []runtime.StatusKind{runtime.StatusNotFound, runtime.StatusPending, runtime.StatusRunning, runtime.StatusCompleted} {
		if err := (runtime.OrchestrationStatus{Kind: kind, Output: "x"}).Err(); err != nil {
			t.Errorf("%s: Err() = %v, want nil", kind, err)
		}
	}
}

func TestStatusErrOfAFailureIsAnOrchestrationFailedError(t *testing.T) {
	t.Parallel()
	d := duroxide.ErrorDetails{Application: &duroxide.ApplicationDetails{Kind: duroxide.AppErrorKind{Name: duroxide.AppErrorOrchestrationFailed}, Message: "card declined"}}
	st := runtime.OrchestrationStatus{Kind: runtime.StatusFailed, Details: &d}
	var failed *runtime.OrchestrationFailedError
	if !errors.As(st.Err(), &failed) {
		t.Fatalf("Err() = %#v, want an *OrchestrationFailedError", st.Err())
	}
	if failed.Details.DisplayMessage() != d.DisplayMessage() || st.Err().Error() != d.DisplayMessage() {
		t.Fatalf("Err() = %q with details %+v, want the display message %q", st.Err(), failed.Details, d.DisplayMessage())
	}
}
