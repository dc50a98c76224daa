package runtime_test

import (
	"encoding/json"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

type order struct {
	ID    int `json:"id"`
	Cents int `json:"cents"`
}

type receipt struct {
	OrderID int    `json:"order_id"`
	Code    string `json:"code"`
}

func TestOneCallTypedFormsScheduleWaitAndDecode(t *testing.T) {
	t.Parallel()
	reg := runtime.NewRegistry()
	mustRegister(t, reg.RegisterActivity("Charge", func(_ *runtime.ActivityContext, in string) (string, error) {
		var o order
		if err := json.Unmarshal([]byte(in), &o); err != nil {
			return "", err
		}
		return runtime.Encode(receipt{OrderID: o.ID, Code: "ok"})
	}))
	mustRegister(t, reg.RegisterOrchestration("Child", func(_ *runtime.OrchestrationContext, in string) (string, error) {
		n, err := runtime.Decode[int](in)
		if err != nil {
			return "", err
		}
		return runtime.Encode(n * 2)
	}))
	mustRegister(t, reg.RegisterOrchestration("Order", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
		r, err := runtime.CallActivity[receipt](ctx, "Charge", order{ID: 7, Cents: 500})
		if err != nil {
			return "", err
		}
		r2, err := runtime.CallActivityWithRetry[receipt](ctx, "Charge", order{ID: 8}, runtime.RetryPolicy{MaxAttempts: 2})
		if err != nil {
			return "", err
		}
		doubled, err := runtime.CallSubOrchestration[int](ctx, "Child", 21)
		if err != nil {
			return "", err
		}
		note, err := runtime.WaitForQueue[string](ctx, "notes")
		if err != nil {
			return "", err
		}
		approver, err := runtime.WaitForEvent[string](ctx, "Approve")
		if err != nil {
			return "", err
		}
		return runtime.Encode(map[string]any{"r": r, "r2": r2.OrderID, "d": doubled, "note": note, "by": approver})
	}))
	env := runtimetest.New(t, reg)
	inst := env.Start("order-1", "Order", "")
	inst.EnqueueEvent("notes", "fragile") // before the wait: buffered
	inst.RaiseEvent("Approve", "ann")
	inst.AssertCompleted(`{"by":"ann","d":42,"note":"fragile","r":{"order_id":7,"code":"ok"},"r2":8}`)
}

func TestAStringPayloadThatIsJSONTextDecodesAsJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ payload, want string }{
		{`"quoted"`, "quoted"}, {"null", ""}, {"plain text", "plain text"}, {"42", "42"},
	} {
		got, err := runtime.Decode[string](c.payload)
		if err != nil || got != c.want {
			t.Errorf("Decode[string](%q) = %q, %v; want %q", c.payload, got, err, c.want)
		}
	}
	if n, err := runtime.Decode[int]("42"); err != nil || n != 42 {
		t.Errorf("Decode[int](42) = %d, %v", n, err)
	}
}
