package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// Client errors read as sentences for people: the call, the instance
// quoted (a long id cut), the reason without duroxide's operation names or
// repeated words; the causes stay reachable through errors.Is/As.
func TestClientErrorTextsNameTheCallTheInstanceAndTheReason(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memory.NewMemoryProvider(memory.MemoryOptions{})
	c := runtime.NewClient(mem)
	failing := runtime.NewClient(&failingReadProvider{Provider: mem, admin: mem})
	long := strings.Repeat("x", 3000)
	status := func(c *runtime.Client, id string) error { _, err := c.GetOrchestrationStatus(ctx, id); return err }
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"start without id", c.StartOrchestration(ctx, "", "Hello", ""), `runtime: start: the instance id is empty`},
		{"start without name", c.StartOrchestration(ctx, "order-1", "", ""), `runtime: start "order-1": the orchestration name is empty`},
		{"raise without id", c.RaiseEvent(ctx, "", "e", ""), `runtime: raise event: the instance id is empty`},
		{"status without id", status(c, ""), `runtime: status: the instance id is empty`},
		{"wait without id", func() error { _, err := c.WaitForOrchestration(ctx, "", time.Second); return err }(), `runtime: wait for orchestration: the instance id is empty`},
		{"delete without id", func() error { _, err := c.DeleteInstance(ctx, "", false); return err }(), `runtime: delete: the instance id is empty`},
		{"delete unknown", func() error { _, err := c.DeleteInstance(ctx, "nope", false); return err }(), `runtime: delete "nope": instance not found`},
		{"status read fails", status(failing, "order-2"), `runtime: status "order-2": storage down`},
		{"long id cut", status(failing, long), `runtime: status "` + strings.Repeat("x", 64) + `"… (3000 bytes): storage down`},
	} {
		require.Error(t, tc.err, tc.name)
		assert.Equal(t, tc.want, tc.err.Error(), tc.name)
	}

	_, err := c.DeleteInstance(ctx, "nope", false)
	assert.True(t, errors.Is(err, runtime.ErrInstanceNotFound), "sentinel lost: %v", err)
	var pe *duroxide.ProviderError
	assert.True(t, errors.As(err, &pe), "provider error lost: %v", err)
}
