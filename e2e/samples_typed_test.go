package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Typed samples of duroxide's tests/e2e_samples.rs.

type addReq struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addRes struct {
	Sum int `json:"sum"`
}

type ack struct {
	OK bool `json:"ok"`
}

func addActivity(_ *runtime.ActivityContext, req addReq) (addRes, error) {
	return addRes{Sum: req.A + req.B}, nil
}

// sample_typed_activity_and_orchestration_fs.
func TestSampleTypedActivityAndOrchestration(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		runtime.RegisterActivityTyped(reg, "Add", addActivity),
		runtime.RegisterOrchestrationTyped(reg, "Adder", func(ctx *runtime.OrchestrationContext, req addReq) (addRes, error) {
			f, err := runtime.ScheduleActivityTyped(ctx, "Add", req)
			if err != nil {
				return addRes{}, err
			}
			return runtime.Await[addRes](f)
		}))
	s.start(reg, options())
	must(t, runtime.StartOrchestrationTyped(s.ctx, s.client, "inst-typed-add", "Adder", addReq{A: 2, B: 3}))
	got, err := runtime.WaitForOrchestrationTyped[addRes](s.ctx, s.client, "inst-typed-add", waitTimeout)
	must(t, err)
	wantEqual(t, "result", got, addRes{Sum: 5})
}

// sample_typed_event_fs: a typed external event; the orchestration's input
// is the unit value (null).
func TestSampleTypedEvent(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t, runtime.RegisterOrchestrationTyped(reg, "WaitAck", func(ctx *runtime.OrchestrationContext, _ *struct{}) (string, error) {
		a, err := runtime.Await[ack](ctx.ScheduleWait("Ready"))
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(a)
		return string(b), err
	}))
	s.start(reg, options())
	must(t, runtime.StartOrchestrationTyped[*struct{}](s.ctx, s.client, "inst-typed-ack", "WaitAck", nil))
	s.waitForSubscription("inst-typed-ack", "Ready")
	payload, _ := json.Marshal(ack{OK: true})
	must(t, s.client.RaiseEvent(s.ctx, "inst-typed-ack", "Ready", string(payload)))
	got, err := runtime.WaitForOrchestrationTyped[string](s.ctx, s.client, "inst-typed-ack", waitTimeout)
	must(t, err)
	wantEqual(t, "result", got, `{"ok":true}`)
}

// mixedRace races a typed activity against a string one (duroxide's
// select2 of two async blocks) and formats the winner.
func mixedRace(ctx *runtime.OrchestrationContext, req addReq, word string) (string, error) {
	typed, err := runtime.ScheduleActivityTyped(ctx, "Add", req)
	if err != nil {
		return "", err
	}
	winner, out, err := ctx.Select(typed, ctx.ScheduleActivity("Upper", word))
	if err != nil {
		return "", err
	}
	if winner == 0 {
		res, err := runtime.Decode[addRes](out)
		return fmt.Sprintf("sum=%d", res.Sum), err
	}
	return "up=" + out, nil
}

func mixedRegistry(t *testing.T) *runtime.Registry {
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Upper", func(_ *runtime.ActivityContext, in string) (string, error) {
			return strings.ToUpper(in), nil
		}),
		runtime.RegisterActivityTyped(reg, "Add", addActivity))
	return reg
}

// sample_mixed_string_and_typed_typed_orch_fs.
func TestSampleMixedStringAndTypedTypedOrchestration(t *testing.T) {
	s := newSample(t)
	reg := mixedRegistry(t)
	must(t, runtime.RegisterOrchestrationTyped(reg, "MixedTypedOrch", func(ctx *runtime.OrchestrationContext, req addReq) (string, error) {
		return mixedRace(ctx, req, "hello")
	}))
	s.start(reg, options())
	must(t, runtime.StartOrchestrationTyped(s.ctx, s.client, "inst-mixed-typed", "MixedTypedOrch", addReq{A: 1, B: 2}))
	got, err := runtime.WaitForOrchestrationTyped[string](s.ctx, s.client, "inst-mixed-typed", waitTimeout)
	must(t, err)
	if got != "sum=3" && got != "up=HELLO" {
		t.Fatalf("result = %q", got)
	}
}

// sample_mixed_string_and_typed_string_orch_fs.
func TestSampleMixedStringAndTypedStringOrchestration(t *testing.T) {
	s := newSample(t)
	reg := mixedRegistry(t)
	must(t, reg.RegisterOrchestration("MixedStringOrch", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		return mixedRace(ctx, addReq{A: 5, B: 7}, "race")
	}))
	s.start(reg, options())
	s.startOrchestration("inst-mixed-string", "MixedStringOrch", "")
	if got := s.completed("inst-mixed-string"); got != "sum=12" && got != "up=RACE" {
		t.Fatalf("result = %q", got)
	}
}
