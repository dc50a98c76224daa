package duroxide

import "testing"

// TestErrorDetailsBehaviour compares Category, IsRetryable and
// DisplayMessage with duroxide's ErrorDetails::category, is_retryable and
// display_message (src/lib.rs); each want is that Rust function's format
// string filled in by hand.
func TestErrorDetailsBehaviour(t *testing.T) {
	cases := []struct {
		name      string
		details   ErrorDetails
		category  string
		retryable bool
		display   string
	}{
		{
			name:      "infrastructure retryable",
			details:   ErrorDetails{Infrastructure: &InfrastructureDetails{Operation: "read", Message: "timeout", Retryable: true}},
			category:  "infrastructure",
			retryable: true,
			display:   "infrastructure:read: timeout", // format!("infrastructure:{operation}: {message}")
		},
		{
			name:     "infrastructure permanent",
			details:  (&ProviderError{Operation: "ack_orchestration_item", Message: "lock lost"}).ToInfrastructureError(),
			category: "infrastructure",
			display:  "infrastructure:ack_orchestration_item: lock lost",
		},
		{
			name:     "configuration with message",
			details:  NondeterminismError("ProcessOrder", "expected ActivityScheduled"),
			category: "configuration",
			display:  "nondeterministic: expected ActivityScheduled", // format!("nondeterministic: {m}")
		},
		{
			name:     "configuration without message",
			details:  ErrorDetails{Configuration: &ConfigurationDetails{Kind: ConfigErrorNondeterminism, Resource: "ProcessOrder"}},
			category: "configuration",
			display:  "nondeterministic in ProcessOrder", // format!("nondeterministic in {resource}")
		},
		{
			name:     "application activity failed",
			details:  ApplicationError(AppErrorActivityFailed, "card declined"),
			category: "application",
			display:  "card declined", // _ => message.clone()
		},
		{
			name:      "application retryable",
			details:   ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorOrchestrationFailed}, Message: "busy", Retryable: true}},
			category:  "application",
			retryable: true,
			display:   "busy",
		},
		{
			name:     "application panicked",
			details:  ApplicationError(AppErrorPanicked, "nil map"),
			category: "application",
			display:  "orchestration panicked: nil map", // format!("orchestration panicked: {message}")
		},
		{
			name:     "application cancelled",
			details:  CancelledError("user request"),
			category: "application",
			display:  "canceled: user request", // format!("canceled: {reason}")
		},
		{
			name: "poison orchestration",
			details: ErrorDetails{Poison: &PoisonDetails{AttemptCount: 11, MaxAttempts: 10,
				MessageType: PoisonMessageType{Orchestration: &PoisonOrchestration{Instance: "order-1", ExecutionID: 1}}}},
			category: "poison",
			display:  "poison: orchestration order-1 exceeded 11 attempts (max 10)",
		},
		{
			name: "poison activity",
			details: ErrorDetails{Poison: &PoisonDetails{AttemptCount: 4, MaxAttempts: 3,
				MessageType: PoisonMessageType{Activity: &PoisonActivity{Instance: "order-1", ExecutionID: 1, ActivityName: "Charge", ActivityID: 5}}}},
			category: "poison",
			display:  "poison: activity Charge#5 exceeded 4 attempts (max 3)",
		},
		{
			name: "poison failed deserialization",
			details: ErrorDetails{Poison: &PoisonDetails{AttemptCount: 4, MaxAttempts: 3,
				MessageType: PoisonMessageType{FailedDeserialization: &PoisonFailedDeserialization{Instance: "order-1", ExecutionID: 2, Error: "unknown variant `X`"}}}},
			category: "poison",
			display:  "poison: orchestration order-1 history deserialization failed after 4 attempts (max 3): unknown variant `X`",
		},
		{
			name: "zero value",
		},
	}
	for _, c := range cases {
		checkEqual(t, c.category, c.details.Category(), c.name+" Category")
		checkEqual(t, c.retryable, c.details.IsRetryable(), c.name+" IsRetryable")
		checkEqual(t, c.display, c.details.DisplayMessage(), c.name+" DisplayMessage")
	}
}

func TestErrorDetailsConstructors(t *testing.T) {
	checkEqual(t, ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorActivityFailed}, Message: "m"}},
		ApplicationError(AppErrorActivityFailed, "m"))
	checkEqual(t, ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorCancelled, Reason: "r"}}},
		CancelledError("r"))
	checkEqual(t, ErrorDetails{Configuration: &ConfigurationDetails{Kind: ConfigErrorNondeterminism, Resource: "res", Message: StringPtr("msg")}},
		NondeterminismError("res", "msg"))
}
