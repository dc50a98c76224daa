package cdb_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
)

// isDocRead reports whether req reads a container's documents: a GET
// (point read, read feed, change feed) or a query.
func isDocRead(req *http.Request) bool {
	return strings.Contains(req.URL.Path, "/docs") && (req.Method == http.MethodGet || isQueryRequest(req))
}

// TestReadsCarryTheProcessSessionToken checks that once the provider has
// written, its reads (the fetch's candidate query, its reads of the
// instance) carry the session token of its writes, and that the test hook
// turns that off.
func TestReadsCarryTheProcessSessionToken(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, tr := c.process(t, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var tokens []string
	tr.setHook(func(req *http.Request) {
		if isDocRead(req) {
			mu.Lock()
			tokens = append(tokens, req.Header.Get("x-ms-session-token"))
			mu.Unlock()
		}
	})
	taken := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := tokens
		tokens = nil
		return out
	}
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("sess-1"), 0))
	item, err := fetchInstance(ctx, p, "sess-1")
	require.NoError(t, err)
	require.NotNil(t, item)
	seen := taken()
	require.NotEmpty(t, seen, "the fetch reads")
	for _, tok := range seen {
		assert.Regexp(t, `^\d+:-?\d+#\d+`, tok, "every read after a write carries the session token")
	}

	cdb.DisableSessionTokens(p, true)
	_, err = p.ReadHistory(ctx, "sess-1")
	require.NoError(t, err)
	seen = taken()
	require.NotEmpty(t, seen)
	for _, tok := range seen {
		assert.Empty(t, tok, "the hook turns the tokens off")
	}
}
