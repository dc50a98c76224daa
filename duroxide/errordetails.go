package duroxide

import "fmt"

// ErrorDetails is the structured error of a failed orchestration, activity or
// sub-orchestration (duroxide's ErrorDetails). Exactly one of its fields is
// set; on the wire it is an externally tagged object such as
// {"Application":{"kind":"ActivityFailed","message":"boom","retryable":false}}.
//
// The categories follow duroxide: Infrastructure (provider failures, data
// corruption) and Configuration (unregistered code, nondeterminism) abort a
// turn and never reach user code; Application errors are the only ones
// orchestration code sees; Poison marks a message that exceeded its maximum
// fetch attempts.
type ErrorDetails struct {
	Infrastructure *InfrastructureDetails // "Infrastructure" variant
	Configuration  *ConfigurationDetails  // "Configuration" variant
	Application    *ApplicationDetails    // "Application" variant
	Poison         *PoisonDetails         // "Poison" variant
}

// InfrastructureDetails is ErrorDetails::Infrastructure: a provider operation
// failed.
type InfrastructureDetails struct {
	Operation string // "operation": the provider method, e.g. "read"
	Message   string // "message"
	Retryable bool   // "retryable"
}

// ConfigurationDetails is ErrorDetails::Configuration: a deployment problem
// such as nondeterminism. Message is nil (null on the wire) when absent.
type ConfigurationDetails struct {
	Kind     ConfigErrorKind // "kind"
	Resource string          // "resource": the orchestration or activity concerned
	Message  *string         // "message": null when nil
}

// ApplicationDetails is ErrorDetails::Application: a business-logic failure.
type ApplicationDetails struct {
	Kind      AppErrorKind // "kind"
	Message   string       // "message"
	Retryable bool         // "retryable"
}

// PoisonDetails is ErrorDetails::Poison: a message was fetched AttemptCount
// times, more than MaxAttempts. Message is the poisoned message as JSON.
type PoisonDetails struct {
	AttemptCount uint32            // "attempt_count"
	MaxAttempts  uint32            // "max_attempts"
	MessageType  PoisonMessageType // "message_type"
	Message      string            // "message": the poisoned message as JSON
}

// ConfigErrorKind is duroxide's ConfigErrorKind, a string on the wire.
type ConfigErrorKind string

// ConfigErrorNondeterminism is duroxide's only ConfigErrorKind: the orchestration
// code no longer matches its history.
const ConfigErrorNondeterminism ConfigErrorKind = "Nondeterminism"

// AppErrorKind is duroxide's AppErrorKind: Name is one of the AppErrorKind*
// constants; Reason is set only for AppErrorCancelled. On the wire the unit
// kinds are strings ("ActivityFailed") and Cancelled is
// {"Cancelled":{"reason":"..."}}.
type AppErrorKind struct {
	Name   string // one of the AppErrorKind* constants
	Reason string // "reason" of Cancelled; empty otherwise
}

// The names of duroxide's application error kinds.
const (
	AppErrorActivityFailed      = "ActivityFailed"
	AppErrorOrchestrationFailed = "OrchestrationFailed"
	AppErrorPanicked            = "Panicked"
	AppErrorCancelled           = "Cancelled"
)

// PoisonMessageType identifies what was poisoned (duroxide's
// PoisonMessageType); exactly one field is set, externally tagged on the wire.
type PoisonMessageType struct {
	Orchestration         *PoisonOrchestration         // "Orchestration" variant
	Activity              *PoisonActivity              // "Activity" variant
	FailedDeserialization *PoisonFailedDeserialization // "FailedDeserialization" variant
}

// PoisonOrchestration is PoisonMessageType::Orchestration: an orchestration
// work-item batch.
type PoisonOrchestration struct {
	Instance    string // "instance"
	ExecutionID uint64 // "execution_id"
}

// PoisonActivity is PoisonMessageType::Activity: an activity execution.
type PoisonActivity struct {
	Instance     string // "instance"
	ExecutionID  uint64 // "execution_id"
	ActivityName string // "activity_name"
	ActivityID   uint64 // "activity_id": the ActivityScheduled event id
}

// PoisonFailedDeserialization is PoisonMessageType::FailedDeserialization:
// an instance whose history could not be decoded.
type PoisonFailedDeserialization struct {
	Instance    string // "instance"
	ExecutionID uint64 // "execution_id"
	Error       string // "error": the decoding error
}

// ApplicationError returns Application details of kind ActivityFailed (or
// another kind name) with message; retryable is false.
func ApplicationError(kind, message string) ErrorDetails {
	return ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: kind}, Message: message}}
}

// CancelledError returns the Application details of a cancelled
// orchestration (empty message, as duroxide's runtime writes them),
// displayed as "canceled: <reason>".
func CancelledError(reason string) ErrorDetails {
	return ErrorDetails{Application: &ApplicationDetails{
		Kind: AppErrorKind{Name: AppErrorCancelled, Reason: reason},
	}}
}

// NondeterminismError returns Configuration details of kind Nondeterminism.
func NondeterminismError(resource, message string) ErrorDetails {
	return ErrorDetails{Configuration: &ConfigurationDetails{
		Kind: ConfigErrorNondeterminism, Resource: resource, Message: &message,
	}}
}

// Category returns "infrastructure", "configuration", "application" or
// "poison" for metrics and logs (duroxide's ErrorDetails::category), or ""
// for the zero value.
func (d ErrorDetails) Category() string {
	switch {
	case d.Infrastructure != nil:
		return "infrastructure"
	case d.Configuration != nil:
		return "configuration"
	case d.Application != nil:
		return "application"
	case d.Poison != nil:
		return "poison"
	}
	return ""
}

// IsRetryable reports whether the failure may succeed on retry: the flag of
// Infrastructure and Application details; never for Configuration or Poison.
func (d ErrorDetails) IsRetryable() bool {
	switch {
	case d.Infrastructure != nil:
		return d.Infrastructure.Retryable
	case d.Application != nil:
		return d.Application.Retryable
	}
	return false
}

// DisplayMessage returns the message duroxide shows for the failure
// (ErrorDetails::display_message), e.g. "canceled: user request" or
// "infrastructure:read: timeout".
func (d ErrorDetails) DisplayMessage() string {
	switch {
	case d.Infrastructure != nil:
		return fmt.Sprintf("infrastructure:%s: %s", d.Infrastructure.Operation, d.Infrastructure.Message)
	case d.Configuration != nil:
		if d.Configuration.Message != nil {
			return "nondeterministic: " + *d.Configuration.Message
		}
		return "nondeterministic in " + d.Configuration.Resource
	case d.Application != nil:
		switch d.Application.Kind.Name {
		case AppErrorCancelled:
			return "canceled: " + d.Application.Kind.Reason
		case AppErrorPanicked:
			return "orchestration panicked: " + d.Application.Message
		}
		return d.Application.Message
	case d.Poison != nil:
		p := d.Poison
		switch mt := p.MessageType; {
		case mt.Orchestration != nil:
			return fmt.Sprintf("poison: orchestration %s exceeded %d attempts (max %d)", mt.Orchestration.Instance, p.AttemptCount, p.MaxAttempts)
		case mt.Activity != nil:
			return fmt.Sprintf("poison: activity %s#%d exceeded %d attempts (max %d)", mt.Activity.ActivityName, mt.Activity.ActivityID, p.AttemptCount, p.MaxAttempts)
		case mt.FailedDeserialization != nil:
			return fmt.Sprintf("poison: orchestration %s history deserialization failed after %d attempts (max %d): %s", mt.FailedDeserialization.Instance, p.AttemptCount, p.MaxAttempts, mt.FailedDeserialization.Error)
		}
	}
	return ""
}
