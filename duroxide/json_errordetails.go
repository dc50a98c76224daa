package duroxide

import "fmt"

// This file is the serde wire format of ErrorDetails and the types nested
// in it (duroxide's lib.rs: ErrorDetails, ConfigErrorKind, AppErrorKind,
// PoisonMessageType), all externally tagged enums with snake_case fields:
//
//	{"Infrastructure":{"operation":"read","message":"timeout","retryable":true}}
//	{"Configuration":{"kind":"Nondeterminism","resource":"A","message":null}}
//	{"Application":{"kind":"ActivityFailed","message":"boom","retryable":false}}
//	{"Application":{"kind":{"Cancelled":{"reason":"stop"}},"message":"","retryable":false}}
//	{"Poison":{"attempt_count":4,"max_attempts":3,"message_type":{"Orchestration":{"instance":"i","execution_id":1}},"message":"{}"}}

// MarshalJSON encodes d as serde encodes duroxide's ErrorDetails: an
// externally tagged object such as
// {"Infrastructure":{"operation":"read","message":"timeout","retryable":true}},
// byte for byte what serde_json writes. It fails unless exactly one field
// of d is set, or when a nested kind is not one duroxide knows.
//
// encoding/json re-escapes '<', '>', '&', U+2028 and U+2029 in what a
// MarshalJSON method returns unless the Encoder has SetEscapeHTML(false);
// call MarshalJSON directly for serde_json's exact bytes.
func (d ErrorDetails) MarshalJSON() ([]byte, error) {
	return marshalValue("ErrorDetails", d, appendErrorDetails)
}

// UnmarshalJSON decodes duroxide's serde form of ErrorDetails. Unknown
// variants, missing fields, wrong JSON types and malformed JSON are errors;
// unknown fields are ignored, as serde does. On error d is unchanged.
func (d *ErrorDetails) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "ErrorDetails", decodeErrorDetails, d)
}

// MarshalJSON encodes the kind as serde does: "Nondeterminism". Any other
// value is an error.
func (k ConfigErrorKind) MarshalJSON() ([]byte, error) {
	return marshalValue("ConfigErrorKind", k, appendConfigErrorKind)
}

// UnmarshalJSON decodes "Nondeterminism" (or serde's equivalent
// {"Nondeterminism":null}); any other value is an error.
func (k *ConfigErrorKind) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "ConfigErrorKind", decodeConfigErrorKind, k)
}

// MarshalJSON encodes the kind as serde does: "ActivityFailed",
// "OrchestrationFailed", "Panicked", or {"Cancelled":{"reason":"..."}}. An
// unknown Name, or a Reason on a kind other than Cancelled, is an error.
func (k AppErrorKind) MarshalJSON() ([]byte, error) {
	return marshalValue("AppErrorKind", k, appendAppErrorKind)
}

// UnmarshalJSON decodes duroxide's serde form of AppErrorKind. On error k is
// unchanged.
func (k *AppErrorKind) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "AppErrorKind", decodeAppErrorKind, k)
}

// MarshalJSON encodes t as serde encodes duroxide's PoisonMessageType, e.g.
// {"Orchestration":{"instance":"i","execution_id":1}}. It fails unless
// exactly one field of t is set.
func (t PoisonMessageType) MarshalJSON() ([]byte, error) {
	return marshalValue("PoisonMessageType", t, appendPoisonMessageType)
}

// UnmarshalJSON decodes duroxide's serde form of PoisonMessageType. On error
// t is unchanged.
func (t *PoisonMessageType) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "PoisonMessageType", decodePoisonMessageType, t)
}

// MarshalJSON encodes the pair as the Rust tuple (String, String) is
// encoded: ["name","data"].
func (nd NameData) MarshalJSON() ([]byte, error) {
	return appendNameData(nil, nd), nil
}

// UnmarshalJSON decodes a two-element array of strings. On error nd is
// unchanged.
func (nd *NameData) UnmarshalJSON(data []byte) error {
	return unmarshalValue(data, parseLazy, "NameData", (*jsonValue).nameData, nd)
}

// appendErrorDetails appends d's serde JSON to b.
func appendErrorDetails(b []byte, d ErrorDetails) ([]byte, error) {
	if n := countSet(d.Infrastructure != nil, d.Configuration != nil, d.Application != nil, d.Poison != nil); n != 1 {
		return nil, fmt.Errorf("ErrorDetails must have exactly one variant set, has %d", n)
	}
	var err error
	switch {
	case d.Infrastructure != nil:
		x := d.Infrastructure
		o := beginObject(appendExternallyTagged(b, "Infrastructure"))
		o.str("operation", x.Operation)
		o.str("message", x.Message)
		o.boolean("retryable", x.Retryable)
		b = o.end()
	case d.Configuration != nil:
		x := d.Configuration
		o := beginObject(appendExternallyTagged(b, "Configuration"))
		o.key("kind")
		if o.b, err = appendConfigErrorKind(o.b, x.Kind); err != nil {
			return nil, err
		}
		o.str("resource", x.Resource)
		o.strOrNull("message", x.Message)
		b = o.end()
	case d.Application != nil:
		x := d.Application
		o := beginObject(appendExternallyTagged(b, "Application"))
		o.key("kind")
		if o.b, err = appendAppErrorKind(o.b, x.Kind); err != nil {
			return nil, err
		}
		o.str("message", x.Message)
		o.boolean("retryable", x.Retryable)
		b = o.end()
	default:
		x := d.Poison
		o := beginObject(appendExternallyTagged(b, "Poison"))
		o.u64("attempt_count", uint64(x.AttemptCount))
		o.u64("max_attempts", uint64(x.MaxAttempts))
		o.key("message_type")
		if o.b, err = appendPoisonMessageType(o.b, x.MessageType); err != nil {
			return nil, err
		}
		o.str("message", x.Message)
		b = o.end()
	}
	return append(b, '}'), nil
}

// appendConfigErrorKind appends "Nondeterminism".
func appendConfigErrorKind(b []byte, k ConfigErrorKind) ([]byte, error) {
	if k != ConfigErrorNondeterminism {
		return nil, fmt.Errorf("unknown ConfigErrorKind %q", string(k))
	}
	return appendJSONString(b, string(k)), nil
}

// appendAppErrorKind appends a unit kind as a string and Cancelled as
// {"Cancelled":{"reason":"..."}}.
func appendAppErrorKind(b []byte, k AppErrorKind) ([]byte, error) {
	switch k.Name {
	case AppErrorActivityFailed, AppErrorOrchestrationFailed, AppErrorPanicked:
		if k.Reason != "" {
			return nil, fmt.Errorf("AppErrorKind %s has no reason, got %q", k.Name, k.Reason)
		}
		return appendJSONString(b, k.Name), nil
	case AppErrorCancelled:
		o := beginObject(appendExternallyTagged(b, AppErrorCancelled))
		o.str("reason", k.Reason)
		return append(o.end(), '}'), nil
	}
	return nil, fmt.Errorf("unknown AppErrorKind %q", k.Name)
}

// appendPoisonMessageType appends t's serde JSON.
func appendPoisonMessageType(b []byte, t PoisonMessageType) ([]byte, error) {
	if n := countSet(t.Orchestration != nil, t.Activity != nil, t.FailedDeserialization != nil); n != 1 {
		return nil, fmt.Errorf("PoisonMessageType must have exactly one variant set, has %d", n)
	}
	switch {
	case t.Orchestration != nil:
		x := t.Orchestration
		o := beginObject(appendExternallyTagged(b, "Orchestration"))
		o.str("instance", x.Instance)
		o.u64("execution_id", x.ExecutionID)
		b = o.end()
	case t.Activity != nil:
		x := t.Activity
		o := beginObject(appendExternallyTagged(b, "Activity"))
		o.str("instance", x.Instance)
		o.u64("execution_id", x.ExecutionID)
		o.str("activity_name", x.ActivityName)
		o.u64("activity_id", x.ActivityID)
		b = o.end()
	default:
		x := t.FailedDeserialization
		o := beginObject(appendExternallyTagged(b, "FailedDeserialization"))
		o.str("instance", x.Instance)
		o.u64("execution_id", x.ExecutionID)
		o.str("error", x.Error)
		b = o.end()
	}
	return append(b, '}'), nil
}

// decodeErrorDetails reads an ErrorDetails.
func decodeErrorDetails(v *jsonValue) (ErrorDetails, error) {
	return decodeErrorDetailsFrom(v, false)
}

// decodeErrorDetailsFrom reads an ErrorDetails; content is set inside an
// Event (see unitVariantFrom).
func decodeErrorDetailsFrom(v *jsonValue, content bool) (ErrorDetails, error) {
	const what = "ErrorDetails"
	tag, payload, err := enumVariant(what, v)
	if err != nil {
		return ErrorDetails{}, err
	}
	var d ErrorDetails
	var f *structFields
	switch tag {
	case "Infrastructure":
		f = structVariant(what+"::Infrastructure", payload, "operation", "message", "retryable")
		d.Infrastructure = &InfrastructureDetails{
			Operation: f.str("operation"),
			Message:   f.str("message"),
			Retryable: f.boolean("retryable"),
		}
	case "Configuration":
		f = structVariant(what+"::Configuration", payload, "kind", "resource", "message")
		x := &ConfigurationDetails{}
		if kv := f.required("kind"); kv != nil {
			x.Kind, err = decodeConfigErrorKindFrom(kv, content)
			f.check("kind", err)
		}
		x.Resource = f.str("resource")
		x.Message = f.optStr("message", false)
		d.Configuration = x
	case "Application":
		f = structVariant(what+"::Application", payload, "kind", "message", "retryable")
		x := &ApplicationDetails{}
		if kv := f.required("kind"); kv != nil {
			x.Kind, err = decodeAppErrorKindFrom(kv, content)
			f.check("kind", err)
		}
		x.Message = f.str("message")
		x.Retryable = f.boolean("retryable")
		d.Application = x
	case "Poison":
		f = structVariant(what+"::Poison", payload, "attempt_count", "max_attempts", "message_type", "message")
		x := &PoisonDetails{AttemptCount: f.u32("attempt_count"), MaxAttempts: f.u32("max_attempts")}
		if mv := f.required("message_type"); mv != nil {
			x.MessageType, err = decodePoisonMessageType(mv)
			f.check("message_type", err)
		}
		x.Message = f.str("message")
		d.Poison = x
	default:
		return ErrorDetails{}, unknownVariant(what, tag, "Infrastructure", "Configuration", "Application", "Poison")
	}
	if f.err != nil {
		return ErrorDetails{}, f.err
	}
	return d, nil
}

// decodeConfigErrorKind reads a ConfigErrorKind.
func decodeConfigErrorKind(v *jsonValue) (ConfigErrorKind, error) {
	return decodeConfigErrorKindFrom(v, false)
}

// decodeConfigErrorKindFrom reads a ConfigErrorKind; content is set inside
// an Event (see unitVariantFrom).
func decodeConfigErrorKindFrom(v *jsonValue, content bool) (ConfigErrorKind, error) {
	const what = "ConfigErrorKind"
	tag, payload, err := enumVariant(what, v)
	if err != nil {
		return "", err
	}
	if tag != string(ConfigErrorNondeterminism) {
		return "", unknownVariant(what, tag, string(ConfigErrorNondeterminism))
	}
	if err := unitVariantFrom(what+"::"+tag, payload, content); err != nil {
		return "", err
	}
	return ConfigErrorNondeterminism, nil
}

// decodeAppErrorKind reads an AppErrorKind.
func decodeAppErrorKind(v *jsonValue) (AppErrorKind, error) {
	return decodeAppErrorKindFrom(v, false)
}

// decodeAppErrorKindFrom reads an AppErrorKind; content is set inside an
// Event (see unitVariantFrom).
func decodeAppErrorKindFrom(v *jsonValue, content bool) (AppErrorKind, error) {
	const what = "AppErrorKind"
	tag, payload, err := enumVariant(what, v)
	if err != nil {
		return AppErrorKind{}, err
	}
	switch tag {
	case AppErrorActivityFailed, AppErrorOrchestrationFailed, AppErrorPanicked:
		if err := unitVariantFrom(what+"::"+tag, payload, content); err != nil {
			return AppErrorKind{}, err
		}
		return AppErrorKind{Name: tag}, nil
	case AppErrorCancelled:
		f := structVariant(what+"::Cancelled", payload, "reason")
		k := AppErrorKind{Name: AppErrorCancelled, Reason: f.str("reason")}
		if f.err != nil {
			return AppErrorKind{}, f.err
		}
		return k, nil
	}
	return AppErrorKind{}, unknownVariant(what, tag, AppErrorActivityFailed, AppErrorOrchestrationFailed, AppErrorPanicked, AppErrorCancelled)
}

// decodePoisonMessageType reads a PoisonMessageType.
func decodePoisonMessageType(v *jsonValue) (PoisonMessageType, error) {
	const what = "PoisonMessageType"
	tag, payload, err := enumVariant(what, v)
	if err != nil {
		return PoisonMessageType{}, err
	}
	var t PoisonMessageType
	var f *structFields
	switch tag {
	case "Orchestration":
		f = structVariant(what+"::Orchestration", payload, "instance", "execution_id")
		t.Orchestration = &PoisonOrchestration{Instance: f.str("instance"), ExecutionID: f.u64("execution_id")}
	case "Activity":
		f = structVariant(what+"::Activity", payload, "instance", "execution_id", "activity_name", "activity_id")
		t.Activity = &PoisonActivity{
			Instance:     f.str("instance"),
			ExecutionID:  f.u64("execution_id"),
			ActivityName: f.str("activity_name"),
			ActivityID:   f.u64("activity_id"),
		}
	case "FailedDeserialization":
		f = structVariant(what+"::FailedDeserialization", payload, "instance", "execution_id", "error")
		t.FailedDeserialization = &PoisonFailedDeserialization{
			Instance:    f.str("instance"),
			ExecutionID: f.u64("execution_id"),
			Error:       f.str("error"),
		}
	default:
		return PoisonMessageType{}, unknownVariant(what, tag, "Orchestration", "Activity", "FailedDeserialization")
	}
	if f.err != nil {
		return PoisonMessageType{}, f.err
	}
	return t, nil
}
