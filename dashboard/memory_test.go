package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// The dashboard works on any ProviderAdmin: here the in-memory reference
// provider, which has no health page.
func TestDashboardWorksOnTheInMemoryProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := memory.NewMemoryProvider(memory.MemoryOptions{})
	rt, err := runtime.Start(ctx, p, registry(), runtime.Options{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	client := runtime.NewClient(p)
	require.NoError(t, client.StartOrchestration(ctx, parentID, "Parent", "mem"))
	require.NoError(t, client.StartOrchestration(ctx, waitID, "Waiter", ""))
	_, err = client.WaitForOrchestration(ctx, parentID, time.Minute)
	require.NoError(t, err)
	_, err = client.WaitForStatusChange(ctx, waitID, 0, 5*time.Millisecond, time.Minute)
	require.NoError(t, err)
	require.NoError(t, rt.Shutdown(ctx))

	s := newSite(t, dashboard.Options{Admin: p})
	code, body := s.get("/dash/")
	require.Equal(t, http.StatusOK, code)
	assert.ElementsMatch(t, []string{parentID, childID, leafID, waitID}, rowIDs(t, body))
	assert.NotContains(t, body, "Health &amp; cost")
	code, body = s.get(instancePath(childID))
	require.Equal(t, http.StatusOK, code)
	links := idsLinked(t, body)
	assert.Contains(t, links, parentID)
	assert.Contains(t, links, leafID)
	_, body = s.get(instancePath(waitID))
	assert.Contains(t, body, "waiting for &lt;b&gt;approval&lt;/b&gt; &amp;", "the custom status")
	assert.Contains(t, body, "<td>stage</td>", "the KV store, through the Client made from the provider")
	code, _ = s.get("/dash/health")
	assert.Equal(t, http.StatusNotFound, code)
}
