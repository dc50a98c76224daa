package duroxide

import (
	"encoding/json"
	"strings"
	"testing"
)

// traceparent is a W3C traceparent as the runtime's tracing writes it.
const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestTraceContextIsAnOptionalField checks the compatibility promise of
// the trace_context field this port adds: written only when set, after
// duroxide's own fields (so the Rust runtime's serde, which ignores unknown
// fields, reads the rest unchanged), read back intact, and absent (nil)
// in what duroxide writes.
func TestTraceContextIsAnOptionalField(t *testing.T) {
	t.Parallel()
	tc := StringPtr(traceparent)
	cases := []struct {
		name     string
		value    any
		decode   func([]byte) (any, error)
		duroxide string // the same value as duroxide writes it (no trace_context)
	}{
		{
			name:  "StartOrchestration",
			value: WorkItem{Kind: StartOrchestrationItem{Instance: "i", Orchestration: "O", Input: "in", ExecutionID: 1, TraceContext: tc}},
			decode: func(b []byte) (any, error) {
				var w WorkItem
				err := json.Unmarshal(b, &w)
				return w, err
			},
			duroxide: `{"StartOrchestration":{"instance":"i","orchestration":"O","input":"in","version":null,"parent_instance":null,"parent_id":null,"execution_id":1}}`,
		},
		{
			name:  "ActivityExecute",
			value: WorkItem{Kind: ActivityExecuteItem{Instance: "i", ExecutionID: 1, ID: 2, Name: "A", Input: "in", TraceContext: tc}},
			decode: func(b []byte) (any, error) {
				var w WorkItem
				err := json.Unmarshal(b, &w)
				return w, err
			},
			duroxide: `{"ActivityExecute":{"instance":"i","execution_id":1,"id":2,"name":"A","input":"in"}}`,
		},
		{
			name:  "ContinueAsNew",
			value: WorkItem{Kind: ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "in", CarryForwardEvents: []NameData{}, TraceContext: tc}},
			decode: func(b []byte) (any, error) {
				var w WorkItem
				err := json.Unmarshal(b, &w)
				return w, err
			},
			duroxide: `{"ContinueAsNew":{"instance":"i","orchestration":"O","input":"in","version":null,"carry_forward_events":[]}}`,
		},
		{
			name:  "OrchestrationStarted",
			value: Event{EventID: 1, InstanceID: "i", ExecutionID: 1, TimestampMs: 5, DuroxideVersion: "0.1.26", Kind: OrchestrationStarted{Name: "O", Version: "1.0.0", Input: "in", TraceContext: tc}},
			decode: func(b []byte) (any, error) {
				var e Event
				err := json.Unmarshal(b, &e)
				return e, err
			},
			duroxide: `{"event_id":1,"source_event_id":null,"instance_id":"i","execution_id":1,"timestamp_ms":5,"duroxide_version":"0.1.26","type":"OrchestrationStarted","name":"O","version":"1.0.0","input":"in","parent_instance":null,"parent_id":null}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.value)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSuffix(strings.TrimSuffix(c.duroxide, "}"), "}")
			if !strings.HasPrefix(string(b), want+`,"trace_context":"`+traceparent+`"}`) {
				t.Errorf("with a trace context:\n got %s\nwant duroxide's fields, then trace_context: %s", b, want)
			}
			back, err := c.decode(b)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != string(b) {
				t.Errorf("round trip:\n got %s\nwant %s", again, b)
			}
			plain, err := c.decode([]byte(c.duroxide))
			if err != nil {
				t.Fatalf("duroxide's JSON: %v", err)
			}
			out, _ := json.Marshal(plain)
			if string(out) != c.duroxide {
				t.Errorf("without a trace context the JSON is duroxide's:\n got %s\nwant %s", out, c.duroxide)
			}
		})
	}
}
