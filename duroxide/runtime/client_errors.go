package runtime

import (
	"errors"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// errEmptyInstance is the reason of a Client call given an empty instance
// id; the provider is not called.
var errEmptyInstance = errors.New("the instance id is empty")

// errEmptyName is the reason of a start given no orchestration name.
var errEmptyName = errors.New("the orchestration name is empty")

// ErrReservedInstanceID is what StartOrchestration returns (wrapped) for a
// root instance id that begins with "sub::" or contains "::sub::": those
// are the ids the runtime gives sub-orchestrations ("<parent>::sub::<event
// id>"), and a root start on one could collide with a child (duroxide
// 0.1.30). The provider is not called.
var ErrReservedInstanceID = errors.New(`instance ids that begin with "sub::" or contain "::sub::" are reserved for sub-orchestrations`)

// ErrReservedChildID is the error (wrapped, naming the id) of the future
// ScheduleSubOrchestrationWithID and ScheduleSubOrchestrationWith return
// for an explicit child id that begins with "sub::": the runtime reads that
// prefix as "generated, add the parent's id", so the id would be silently
// rewritten. Nothing is scheduled or recorded for the call. "::sub::"
// inside an explicit id is allowed (the runtime itself makes grandchildren
// "<root>::sub::2::sub::2"). duroxide main's
// tests/instance_id_validation_tests.rs.
var ErrReservedChildID = errors.New(`explicit sub-orchestration ids may not begin with the reserved marker "sub::"`)

// reservedChildID reports whether instance has the shape of a generated
// sub-orchestration id.
func reservedChildID(instance string) bool {
	return strings.HasPrefix(instance, duroxide.SubOrchAutoPrefix) || strings.Contains(instance, "::"+duroxide.SubOrchAutoPrefix)
}

// clientError is the error of a Client call: what the caller asked (op, on
// instance) and why it failed, in words for people: "runtime: <op>
// <instance>: <reason>", the instance id quoted and cut to its first 64
// bytes (duroxide.QuoteInstanceID), the reason the sentinel's text when
// there is one (ErrInstanceNotFound ...), else a provider failure's message
// without duroxide's operation name, else the cause's text. Unwrap returns
// the sentinel and the cause, so errors.Is and errors.As see both (and
// through the cause the *duroxide.ProviderError and what it wraps).
type clientError struct {
	op       string
	instance string
	kind     error // a sentinel such as ErrInstanceNotFound, or nil
	cause    error
}

// clientErr wraps cause, the failure of op on instance.
func clientErr(op, instance string, cause error) error {
	return &clientError{op: op, instance: instance, cause: cause}
}

// checkInstance refuses an empty instance id before the provider is called.
func checkInstance(op, instance string) error {
	if instance == "" {
		return &clientError{op: op, kind: errEmptyInstance}
	}
	return nil
}

func (e *clientError) Error() string {
	var b strings.Builder
	b.WriteString("runtime: ")
	b.WriteString(e.op)
	if e.instance != "" {
		b.WriteString(" ")
		b.WriteString(duroxide.QuoteInstanceID(e.instance))
	}
	b.WriteString(": ")
	var pe *duroxide.ProviderError
	switch {
	case e.kind != nil:
		b.WriteString(e.kind.Error())
	case errors.As(e.cause, &pe) && pe.Message != "":
		b.WriteString(pe.Message)
	case e.cause != nil:
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause, whichever are set.
func (e *clientError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.kind, e.cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
