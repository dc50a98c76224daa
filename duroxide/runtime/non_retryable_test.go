package runtime_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// chargeWithRetry charges with five attempts, stopping on CardDeclined.
func chargeWithRetry(ctx *runtime.OrchestrationContext, _ string) (string, error) {
	_, err := ctx.ScheduleActivityWithRetry("Charge", "", runtime.RetryPolicy{
		MaxAttempts: 5, Backoff: runtime.BackoffStrategy{Kind: runtime.BackoffFixed, Base: time.Second},
		NonRetryableErrorTypes: []string{"CardDeclined"},
	}).Get()
	var tf *runtime.TaskFailedError
	if errors.As(err, &tf) {
		return fmt.Sprintf("failed type=%q non-retryable=%v: %s", tf.ErrorType(), tf.NonRetryable(), err), nil
	}
	return "charged", err
}

func chargeRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterOrchestration("Charge", chargeWithRetry))
	mustRegister(t, reg.RegisterActivity("Charge", func(*runtime.ActivityContext, string) (string, error) { return "ok", nil }))
	return reg
}

func TestRetriesStopAtAnErrorTheActivityMarkedNonRetryable(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, chargeRegistry(t))
	env.MockActivity("Charge").Fails(fmt.Errorf("charge: %w", runtime.NonRetryable(errors.New("card expired"))))
	inst := env.Run("Charge", "")
	inst.AssertCompleted(`failed type="" non-retryable=true: [non-retryable] charge: card expired`)
	inst.AssertActivityNames("Charge")
}

func TestRetriesStopAtAnErrorTypeThePolicyNames(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, chargeRegistry(t))
	env.MockActivity("Charge").Fails(&runtime.ApplicationError{Type: "CardDeclined", Message: "card declined"})
	inst := env.Run("Charge", "")
	inst.AssertCompleted(`failed type="CardDeclined" non-retryable=false: [type=CardDeclined] card declined`)
	inst.AssertActivityNames("Charge")
}

func TestRetriesGoOnForErrorTypesThePolicyDoesNotName(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, chargeRegistry(t))
	env.MockActivity("Charge").Fails(&runtime.ApplicationError{Type: "GatewayBusy", Message: "busy"})
	inst := env.Run("Charge", "")
	inst.AssertCompleted(`failed type="GatewayBusy" non-retryable=false: [type=GatewayBusy] busy`)
	inst.AssertActivityNames("Charge", "Charge", "Charge", "Charge", "Charge")
}

func TestTheNonRetryableVerdictIsReadFromHistoryOnReplay(t *testing.T) {
	t.Parallel()
	// Recorded while the activity said non-retryable; the activity's code
	// now retries everything, but the replay must stop where the first
	// run stopped (the decision is in the ActivityFailed event).
	env := runtimetest.New(t, chargeRegistry(t))
	env.MockActivity("Charge").Fails(runtime.NonRetryable(errors.New("card expired")))
	inst := env.Run("Charge", "")
	h := runtimetest.History{InstanceID: inst.ID, Executions: []runtimetest.Execution{{ExecutionID: 1, Events: inst.History()}}}
	if err := runtimetest.Replay(chargeRegistry(t), h); err != nil {
		t.Fatalf("replay: %v", err)
	}
	// A plain error whose text merely looks like a tag in the middle is
	// retried.
	env2 := runtimetest.New(t, chargeRegistry(t))
	env2.MockActivity("Charge").Fails(errors.New("gateway said [non-retryable] x"))
	if got := len(env2.Run("Charge", "").Activities()); got != 5 {
		t.Fatalf("attempts = %d, want 5", got)
	}
	if !strings.Contains(inst.Status().Output, "non-retryable=true") {
		t.Fatalf("output %q", inst.Status().Output)
	}
}
