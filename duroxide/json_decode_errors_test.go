package duroxide

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Texts serde_json refuses must be errors here too, and a failed decode
// must leave its target as it was.

// evText builds an event text from common fields and the rest of the object.
func evText(rest string) string { return common("2", "null") + rest }

var badEvents = map[string]string{
	// malformed JSON
	"empty":                "",
	"open brace":           "{",
	"trailing comma":       `{"event_id":1,}`,
	"trailing text":        evText(`"type":"KeyValuesCleared"} x`),
	"two values":           evText(`"type":"KeyValuesCleared"}{}`),
	"bare word":            "nul",
	"single quotes":        `{'event_id':1}`,
	"leading zero":         strings.Replace(evText(`"type":"KeyValuesCleared"}`), `"event_id":2`, `"event_id":02`, 1),
	"invalid escape":       evText(`"type":"ActivityCompleted","result":"\x"}`),
	"short unicode escape": evText(`"type":"ActivityCompleted","result":"\u12"}`),
	"raw control char":     evText("\"type\":\"ActivityCompleted\",\"result\":\"a\x01b\"}"),
	"invalid UTF-8":        evText("\"type\":\"ActivityCompleted\",\"result\":\"a\xffb\"}"),
	"truncated UTF-8":      evText("\"type\":\"ActivityCompleted\",\"result\":\"\xe2\x82\"}"),
	"deep nesting":         evText(`"type":"KeyValuesCleared","x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`),
	// not an object
	"null":   "null",
	"array":  "[]",
	"string": `"ActivityCompleted"`,
	"number": "1",
	// the tag
	"missing type":            evText(`"result":"r"}`),
	"unknown type":            evText(`"type":"Bogus"}`),
	"feature-gated type":      evText(`"type":"ExternalSubscribed2","name":"x","topic":"y"}`),
	"Rust name of queue kind": evText(`"type":"QueueSubscribed","name":"q"}`),
	"type null":               evText(`"type":null}`),
	"type bool":               evText(`"type":true}`),
	"type index too large":    evText(`"type":26}`),
	"type negative index":     evText(`"type":-1}`),
	"type fractional index":   evText(`"type":1.0}`),
	"duplicate type":          evText(`"type":"KeyValuesCleared","type":"KeyValuesCleared"}`),
	"type case":               evText(`"type":"activitycompleted","result":"r"}`),
	// common fields
	"missing event_id":         `{"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"missing instance_id":      `{"event_id":1,"source_event_id":null,"execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"missing execution_id":     `{"event_id":1,"source_event_id":null,"instance_id":"i","timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"missing timestamp_ms":     `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"missing duroxide_version": `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"type":"KeyValuesCleared"}`,
	"duplicate event_id":       `{"event_id":1,"event_id":1,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id string":          `{"event_id":"1","instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id negative":        `{"event_id":-1,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id minus zero":      `{"event_id":-0,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id fraction":        `{"event_id":1.5,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id 1.0":             `{"event_id":1.0,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id exponent":        `{"event_id":1e2,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id overflow":        `{"event_id":18446744073709551616,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"event_id null":            `{"event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"source_event_id string":   `{"event_id":1,"source_event_id":"1","instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"instance_id number":       `{"event_id":1,"instance_id":5,"execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"instance_id null":         `{"event_id":1,"instance_id":null,"execution_id":1,"timestamp_ms":1,"duroxide_version":"0.1.26","type":"KeyValuesCleared"}`,
	"duroxide_version null":    `{"event_id":1,"instance_id":"i","execution_id":1,"timestamp_ms":1,"duroxide_version":null,"type":"KeyValuesCleared"}`,
	// kind fields
	"missing result":              evText(`"type":"ActivityCompleted"}`),
	"missing version":             evText(`"type":"OrchestrationStarted","name":"n","input":"i"}`),
	"missing fire_at_ms":          evText(`"type":"TimerFired"}`),
	"missing details":             evText(`"type":"ActivityFailed"}`),
	"result null":                 evText(`"type":"ActivityCompleted","result":null}`),
	"result number":               evText(`"type":"ActivityCompleted","result":1}`),
	"duplicate result":            evText(`"type":"ActivityCompleted","result":"a","result":"b"}`),
	"status number":               evText(`"type":"CustomStatusUpdated","status":5}`),
	"fire_at_ms bool":             evText(`"type":"TimerCreated","fire_at_ms":true}`),
	"last_updated_at_ms null":     evText(`"type":"KeyValueSet","key":"k","value":"v","last_updated_at_ms":null}`),
	"tag number":                  evText(`"type":"ActivityScheduled","name":"n","input":"i","tag":1}`),
	"parent_id negative":          evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","parent_id":-2}`),
	"carry forward 1-tuple":       evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","carry_forward_events":[["a"]]}`),
	"carry forward 3-tuple":       evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","carry_forward_events":[["a","b","c"]]}`),
	"carry forward number":        evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","carry_forward_events":[[1,"b"]]}`),
	"carry forward object":        evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","carry_forward_events":{"a":"b"}}`),
	"carry forward string":        evText(`"type":"OrchestrationStarted","name":"n","version":"v","input":"i","carry_forward_events":"x"}`),
	"kind fields as array":        evText(`"type":"ActivityCompleted","result":["r"]}`),
	"lone surrogate in result":    evText(`"type":"ActivityCompleted","result":"\ud800"}`),
	"lone surrogate ignored":      evText(`"type":"ActivityCompleted","result":"r","extra":"\udc00"}`),
	"surrogate then non-trail":    evText(`"type":"ActivityCompleted","result":"\ud800\u0041"}`),
	"huge number in ignored":      evText(`"type":"ActivityCompleted","result":"r","extra":1e400}`),
	"lone surrogate ignored deep": evText(`"type":"ActivityCompleted","result":"r","extra":[{"k":"\ud800"}]}`),
	// ErrorDetails inside an event
	"details empty object":          evText(`"type":"ActivityFailed","details":{}}`),
	"details two keys":              evText(`"type":"ActivityFailed","details":{"Infrastructure":{"operation":"o","message":"m","retryable":true},"Poison":{}}}`),
	"details unit form":             evText(`"type":"ActivityFailed","details":"Infrastructure"}`),
	"details unknown":               evText(`"type":"ActivityFailed","details":{"Bogus":{}}}`),
	"details null":                  evText(`"type":"ActivityFailed","details":null}`),
	"details missing retryable":     evText(`"type":"ActivityFailed","details":{"Infrastructure":{"operation":"o","message":"m"}}}`),
	"details retryable string":      evText(`"type":"ActivityFailed","details":{"Infrastructure":{"operation":"o","message":"m","retryable":"true"}}}`),
	"Cancelled unit form":           evText(`"type":"ActivityFailed","details":{"Application":{"kind":"Cancelled","message":"m","retryable":false}}}`),
	"Panicked with payload":         evText(`"type":"ActivityFailed","details":{"Application":{"kind":{"Panicked":{"x":1}},"message":"m","retryable":false}}}`),
	"Panicked with empty array":     evText(`"type":"ActivityFailed","details":{"Application":{"kind":{"Panicked":[]},"message":"m","retryable":false}}}`),
	"unknown app kind":              evText(`"type":"ActivityFailed","details":{"Application":{"kind":"Exploded","message":"m","retryable":false}}}`),
	"Cancelled missing reason":      evText(`"type":"ActivityFailed","details":{"Application":{"kind":{"Cancelled":{}},"message":"m","retryable":false}}}`),
	"unknown config kind":           evText(`"type":"ActivityFailed","details":{"Configuration":{"kind":"Unregistered","resource":"r","message":null}}}`),
	"attempt_count u32 overflow":    evText(`"type":"ActivityFailed","details":{"Poison":{"attempt_count":4294967296,"max_attempts":1,"message_type":{"Orchestration":{"instance":"i","execution_id":1}},"message":""}}}`),
	"poison type unknown":           evText(`"type":"ActivityFailed","details":{"Poison":{"attempt_count":1,"max_attempts":1,"message_type":{"Worker":{}},"message":""}}}`),
	"poison missing activity_id":    evText(`"type":"ActivityFailed","details":{"Poison":{"attempt_count":1,"max_attempts":1,"message_type":{"Activity":{"instance":"i","execution_id":1,"activity_name":"a"}},"message":""}}}`),
	"array form too long":           evText(`"type":"ActivityFailed","details":{"Infrastructure":["o","m",true,1]}}`),
	"array form too short":          evText(`"type":"ActivityFailed","details":{"Infrastructure":["o","m"]}}`),
	"array form missing Option":     evText(`"type":"ActivityFailed","details":{"Configuration":["Nondeterminism","r"]}}`),
	"duplicate field in details":    evText(`"type":"ActivityFailed","details":{"Infrastructure":{"operation":"o","operation":"o","message":"m","retryable":true}}}`),
	"lone surrogate key in details": evText(`"type":"ActivityFailed","details":{"Infrastructure":{"operation":"o","message":"m","retryable":true,"\udc00":1}}}`),
}

func TestEventDecodeErrors(t *testing.T) {
	sentinel := ev(99, nil, ActivityCompleted{Result: "untouched"})
	for name, text := range badEvents {
		t.Run(name, func(t *testing.T) { checkDecodeFails(t, text, sentinel) })
	}
}

var badWorkItems = map[string]string{
	"empty":                          "",
	"unit kind as empty map":         `{"ActivityFailed":{"instance":"i","execution_id":1,"id":2,"details":{"Application":{"kind":{"ActivityFailed":{}},"message":"m","retryable":false}}}}`,
	"null":                           "null",
	"array":                          `[{"CancelInstance":{"instance":"i","reason":"r"}}]`,
	"no key":                         `{}`,
	"two keys":                       `{"CancelInstance":{"instance":"i","reason":"r"},"QueueMessage":{"instance":"i","name":"n","data":"d"}}`,
	"unit form":                      `"CancelInstance"`,
	"unknown variant":                `{"Bogus":{}}`,
	"feature-gated variant":          `{"ExternalRaised2":{"instance":"i","name":"n","topic":"t","data":"d"}}`,
	"payload null":                   `{"CancelInstance":null}`,
	"payload string":                 `{"CancelInstance":"i"}`,
	"missing reason":                 `{"CancelInstance":{"instance":"i"}}`,
	"missing execution_id":           `{"StartOrchestration":{"instance":"i","orchestration":"o","input":""}}`,
	"instance null":                  `{"CancelInstance":{"instance":null,"reason":"r"}}`,
	"carry_forward_events null":      `{"ContinueAsNew":{"instance":"c","orchestration":"o","input":"i","version":null,"carry_forward_events":null}}`,
	"array form too long":            `{"CancelInstance":["i","r","x"]}`,
	"array form too short":           `{"CancelInstance":["i"]}`,
	"array form missing Option":      `{"StartOrchestration":["i","o","in"]}`,
	"duplicate field":                `{"CancelInstance":{"instance":"i","instance":"j","reason":"r"}}`,
	"lone surrogate in instance":     `{"CancelInstance":{"instance":"\ud800","reason":"r"}}`,
	"lone surrogate in ignored key":  `{"CancelInstance":{"instance":"i","reason":"r","\ud800":1}}`,
	"lone surrogate in variant name": `{"Cancel\ud800":{}}`,
	"negative id":                    `{"ActivityCompleted":{"instance":"i","execution_id":1,"id":-2,"result":"r"}}`,
	"fractional id":                  `{"ActivityCompleted":{"instance":"i","execution_id":1,"id":2.5,"result":"r"}}`,
	"id overflow":                    `{"ActivityCompleted":{"instance":"i","execution_id":1,"id":99999999999999999999,"result":"r"}}`,
	"details missing":                `{"ActivityFailed":{"instance":"i","execution_id":1,"id":2}}`,
	"details bad":                    `{"SubOrchFailed":{"parent_instance":"p","parent_execution_id":1,"parent_id":2,"details":{"Application":{"kind":"Nope","message":"m","retryable":false}}}}`,
	"session_id number":              `{"ActivityExecute":{"instance":"i","execution_id":1,"id":1,"name":"n","input":"","session_id":7}}`,
	"truncated":                      `{"CancelInstance":{"instance":"i","reason":"r"}`,
	"event shape":                    evText(`"type":"KeyValuesCleared"}`),
}

func TestWorkItemDecodeErrors(t *testing.T) {
	sentinel := WorkItem{Kind: CancelInstanceItem{Instance: "untouched", Reason: "x"}}
	for name, text := range badWorkItems {
		t.Run(name, func(t *testing.T) { checkDecodeFails(t, text, sentinel) })
	}
}

func TestNestedDecodeErrors(t *testing.T) {
	for _, text := range []string{`"Cancelled"`, `"Bogus"`, `{"Cancelled":{"reason":1}}`, `1`, `null`, `{"Panicked":1}`} {
		checkDecodeFails(t, text, AppErrorKind{Name: "keep"})
	}
	for _, text := range []string{`"Orchestration"`, `{"Orchestration":{"instance":"i"}}`, `{}`} {
		checkDecodeFails(t, text, PoisonMessageType{Orchestration: &PoisonOrchestration{Instance: "keep"}})
	}
	for _, text := range []string{`"nondeterminism"`, `{"Nondeterminism":{}}`, `null`} {
		checkDecodeFails(t, text, ConfigErrorKind("keep"))
	}
	for _, text := range []string{`["a"]`, `["a","b","c"]`, `{"Name":"a","Data":"b"}`, `[null,"b"]`} {
		checkDecodeFails(t, text, NameData{Name: "keep"})
	}
	for _, text := range []string{`{"Infrastructure":{"operation":"o","message":"m"}}`, `{}`, `"Poison"`} {
		checkDecodeFails(t, text, CancelledError("keep"))
	}
}

// TestDecodeErrorMessages checks that errors say what serde would say.
func TestDecodeErrorMessages(t *testing.T) {
	cases := map[string]string{
		evText(`"type":"ActivityCompleted"}`):                                  "missing field `result`",
		evText(`"type":"Bogus"}`):                                              "unknown variant `Bogus`",
		evText(`"type":"ActivityCompleted","result":"a","result":"b"}`):        "duplicate field `result`",
		strings.Replace(evText(`"type":"KeyValuesCleared"}`), "2", "-2", 1):    "invalid value: integer `-2`, expected u64",
		strings.Replace(evText(`"type":"KeyValuesCleared"}`), "2", "\"2\"", 1): `invalid type: string "2", expected u64`,
	}
	for text, want := range cases {
		var e Event
		err := json.Unmarshal([]byte(text), &e)
		mustError(t, err, text)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not contain %q", text, err, want)
		}
	}
}

// TestEncodeRejectsInvalidKinds checks that encoding never panics on a
// missing or pointer kind.
func TestEncodeRejectsInvalidKinds(t *testing.T) {
	var nilStarted *OrchestrationStarted
	for name, e := range map[string]Event{
		"nil kind":         ev(1, nil, nil),
		"pointer kind":     ev(1, nil, &ActivityCompleted{Result: "r"}),
		"nil pointer kind": ev(1, nil, nilStarted),
	} {
		_, err := e.MarshalJSON()
		mustError(t, err, name)
		_, err = json.Marshal(e)
		mustError(t, err, name+" via json.Marshal")
	}
	var nilItem *CancelInstanceItem
	for name, w := range map[string]WorkItem{
		"nil kind":         {},
		"pointer kind":     {Kind: &CancelInstanceItem{Instance: "i"}},
		"nil pointer kind": {Kind: nilItem},
	} {
		_, err := w.MarshalJSON()
		mustError(t, err, name)
	}
}

// TestDecodeIntoNilPointer checks that calling UnmarshalJSON on a nil
// pointer returns json's InvalidUnmarshalError instead of panicking.
func TestDecodeIntoNilPointer(t *testing.T) {
	for name, u := range map[string]json.Unmarshaler{
		"Event":             (*Event)(nil),
		"WorkItem":          (*WorkItem)(nil),
		"ErrorDetails":      (*ErrorDetails)(nil),
		"ConfigErrorKind":   (*ConfigErrorKind)(nil),
		"AppErrorKind":      (*AppErrorKind)(nil),
		"PoisonMessageType": (*PoisonMessageType)(nil),
		"NameData":          (*NameData)(nil),
	} {
		err := u.UnmarshalJSON([]byte(`{"CancelInstance":{"instance":"i","reason":"r"}}`))
		var invalid *json.InvalidUnmarshalError
		if !errors.As(err, &invalid) {
			t.Errorf("%s: want a *json.InvalidUnmarshalError, got %v", name, err)
		}
	}
}
