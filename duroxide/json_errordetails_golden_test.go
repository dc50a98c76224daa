package duroxide

import (
	"encoding/json"
	"testing"
)

// The golden texts below are what serde_json::to_string writes for
// duroxide 0.1.26's ErrorDetails and the enums nested in it (src/lib.rs),
// derived by hand from the derives: plain externally tagged enums with
// snake_case fields, unit variants as bare strings, Option<String>
// message written as null when None.

// goldenErrorDetails covers every ErrorDetails variant, every AppErrorKind
// and every PoisonMessageType.
var goldenErrorDetails = []struct {
	name    string
	json    string
	details ErrorDetails
}{
	{
		name:    "Infrastructure",
		json:    `{"Infrastructure":{"operation":"ack_orchestration_item","message":"lock expired","retryable":false}}`,
		details: ErrorDetails{Infrastructure: &InfrastructureDetails{Operation: "ack_orchestration_item", Message: "lock expired"}},
	},
	{
		name:    "Configuration/message",
		json:    `{"Configuration":{"kind":"Nondeterminism","resource":"ProcessOrder","message":"expected ActivityScheduled"}}`,
		details: NondeterminismError("ProcessOrder", "expected ActivityScheduled"),
	},
	{
		name:    "Configuration/no-message",
		json:    `{"Configuration":{"kind":"Nondeterminism","resource":"ProcessOrder","message":null}}`,
		details: ErrorDetails{Configuration: &ConfigurationDetails{Kind: ConfigErrorNondeterminism, Resource: "ProcessOrder"}},
	},
	{
		name:    "Application/ActivityFailed",
		json:    `{"Application":{"kind":"ActivityFailed","message":"boom","retryable":true}}`,
		details: ErrorDetails{Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorActivityFailed}, Message: "boom", Retryable: true}},
	},
	{
		name:    "Application/OrchestrationFailed",
		json:    `{"Application":{"kind":"OrchestrationFailed","message":"bad input","retryable":false}}`,
		details: ApplicationError(AppErrorOrchestrationFailed, "bad input"),
	},
	{
		name:    "Application/Panicked",
		json:    `{"Application":{"kind":"Panicked","message":"nil map","retryable":false}}`,
		details: ApplicationError(AppErrorPanicked, "nil map"),
	},
	{
		name:    "Application/Cancelled",
		json:    `{"Application":{"kind":{"Cancelled":{"reason":"user request"}},"message":"","retryable":false}}`,
		details: CancelledError("user request"),
	},
	{
		name: "Poison/Orchestration",
		json: `{"Poison":{"attempt_count":11,"max_attempts":10,"message_type":{"Orchestration":{"instance":"order-123","execution_id":1}},"message":"[]"}}`,
		details: ErrorDetails{Poison: &PoisonDetails{
			AttemptCount: 11, MaxAttempts: 10, Message: "[]",
			MessageType: PoisonMessageType{Orchestration: &PoisonOrchestration{Instance: "order-123", ExecutionID: 1}},
		}},
	},
	{
		name: "Poison/Activity",
		json: `{"Poison":{"attempt_count":4,"max_attempts":3,"message_type":{"Activity":{"instance":"order-123","execution_id":2,"activity_name":"Charge","activity_id":5}},"message":"{\"ActivityExecute\":{}}"}}`,
		details: ErrorDetails{Poison: &PoisonDetails{
			AttemptCount: 4, MaxAttempts: 3, Message: `{"ActivityExecute":{}}`,
			MessageType: PoisonMessageType{Activity: &PoisonActivity{Instance: "order-123", ExecutionID: 2, ActivityName: "Charge", ActivityID: 5}},
		}},
	},
	{
		name: "Poison/FailedDeserialization",
		json: `{"Poison":{"attempt_count":4294967295,"max_attempts":0,"message_type":{"FailedDeserialization":{"instance":"order-123","execution_id":18446744073709551615,"error":"unknown variant"}},"message":""}}`,
		details: ErrorDetails{Poison: &PoisonDetails{
			AttemptCount: 4294967295,
			MessageType:  PoisonMessageType{FailedDeserialization: &PoisonFailedDeserialization{Instance: "order-123", ExecutionID: 18446744073709551615, Error: "unknown variant"}},
		}},
	},
}

func TestErrorDetailsGolden(t *testing.T) {
	for _, g := range goldenErrorDetails {
		t.Run(g.name, func(t *testing.T) {
			checkEncode(t, g.details, g.json)
			checkDecode(t, g.json, g.details)
		})
	}
}

// TestNestedKindsGolden checks the nested enums on their own.
func TestNestedKindsGolden(t *testing.T) {
	appKinds := map[string]AppErrorKind{
		`"ActivityFailed"`:                {Name: AppErrorActivityFailed},
		`"OrchestrationFailed"`:           {Name: AppErrorOrchestrationFailed},
		`"Panicked"`:                      {Name: AppErrorPanicked},
		`{"Cancelled":{"reason":"a\"b"}}`: {Name: AppErrorCancelled, Reason: `a"b`},
	}
	for text, kind := range appKinds {
		t.Run(text, func(t *testing.T) {
			checkEncode(t, kind, text)
			checkDecode(t, text, kind)
		})
	}

	poison := map[string]PoisonMessageType{
		`{"Orchestration":{"instance":"i","execution_id":1}}`:                                   {Orchestration: &PoisonOrchestration{Instance: "i", ExecutionID: 1}},
		`{"Activity":{"instance":"i","execution_id":1,"activity_name":"A","activity_id":2}}`:    {Activity: &PoisonActivity{Instance: "i", ExecutionID: 1, ActivityName: "A", ActivityID: 2}},
		`{"FailedDeserialization":{"instance":"i","execution_id":1,"error":"unknown variant"}}`: {FailedDeserialization: &PoisonFailedDeserialization{Instance: "i", ExecutionID: 1, Error: "unknown variant"}},
	}
	for text, pt := range poison {
		t.Run(text, func(t *testing.T) {
			checkEncode(t, pt, text)
			checkDecode(t, text, pt)
		})
	}

	checkEncode(t, ConfigErrorNondeterminism, `"Nondeterminism"`)
	checkDecode(t, `"Nondeterminism"`, ConfigErrorNondeterminism)

	checkEncode(t, NameData{Name: "a", Data: "1"}, `["a","1"]`)
	checkDecode(t, `["a","1"]`, NameData{Name: "a", Data: "1"})
	// Inside a slice, through encoding/json's own slice handling.
	list := []NameData{{Name: "a", Data: "1"}, {Name: "b", Data: ""}}
	got, err := json.Marshal(list)
	mustNoError(t, err)
	checkEqual(t, `[["a","1"],["b",""]]`, string(got))
	var back []NameData
	mustNoError(t, json.Unmarshal(got, &back))
	checkEqual(t, list, back)
}

// TestErrorDetailsEncodeRejectsInvalid checks that values Rust cannot hold
// are refused instead of written.
func TestErrorDetailsEncodeRejectsInvalid(t *testing.T) {
	bad := map[string]ErrorDetails{
		"zero value":        {},
		"two variants":      {Infrastructure: &InfrastructureDetails{}, Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorPanicked}}},
		"unknown app kind":  ApplicationError("Exploded", "x"),
		"empty app kind":    {Application: &ApplicationDetails{}},
		"reason on unit":    {Application: &ApplicationDetails{Kind: AppErrorKind{Name: AppErrorPanicked, Reason: "r"}}},
		"unknown config":    {Configuration: &ConfigurationDetails{Kind: "Unregistered"}},
		"empty poison type": {Poison: &PoisonDetails{}},
		"two poison types": {Poison: &PoisonDetails{MessageType: PoisonMessageType{
			Orchestration: &PoisonOrchestration{}, Activity: &PoisonActivity{},
		}}},
	}
	for name, d := range bad {
		_, err := d.MarshalJSON()
		mustError(t, err, name)
		_, err = json.Marshal(OrchestrationFailed{Details: d}.Details)
		mustError(t, err, name+" via json.Marshal")
		_, err = ev(3, nil, ActivityFailed{Details: d}).MarshalJSON()
		mustError(t, err, name+" inside an Event")
		_, err = WorkItem{Kind: SubOrchFailedItem{Details: d}}.MarshalJSON()
		mustError(t, err, name+" inside a WorkItem")
	}
}
