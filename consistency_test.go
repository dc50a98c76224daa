package cdb_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/emulator"
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

// accountRewriter is a transport to the emulator that answers GET / (the
// account document) with account instead of the emulator's.
type accountRewriter struct {
	inner   *http.Client
	account string
}

func (a accountRewriter) Do(req *http.Request) (*http.Response, error) {
	resp, err := a.inner.Do(req)
	if err != nil || req.Method != http.MethodGet || strings.Trim(req.URL.Path, "/") != "" {
		return resp, err
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader([]byte(a.account)))
	resp.ContentLength = int64(len(a.account))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// TestNewRefusesMultiRegionWrites checks that New refuses an account that
// takes writes in two regions (its ETag locks would hold per region only),
// saying what to do, and accepts one write region with several read
// regions.
func TestNewRefusesMultiRegionWrites(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	ep := a.Endpoint()
	loc := func(name string) string { return `{"name":"` + name + `","databaseAccountEndpoint":"` + ep + `"}` }
	open := func(account string) (*cdb.Provider, error) {
		cfg := a.Config()
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: accountRewriter{inner: a.Emulator().HTTPClient(), account: account}}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cdb.New(ctx, cfg)
	}
	_, err := open(`{"writableLocations":[` + loc("West US") + `,` + loc("East US") + `],"readableLocations":[` + loc("West US") + `,` + loc("East US") + `],` +
		`"enableMultipleWriteLocations":true,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`)
	require.Error(t, err)
	assert.True(t, errors.Is(err, cdb.ErrMultiRegionWrites), "%v", err)
	assert.Contains(t, err.Error(), "West US, East US")
	assert.Contains(t, err.Error(), "single write region")

	p, err := open(`{"writableLocations":[` + loc("West US") + `],"readableLocations":[` + loc("West US") + `,` + loc("East US") + `],` +
		`"enableMultipleWriteLocations":false,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`)
	require.NoError(t, err, "one write region, two read regions")
	require.NoError(t, p.Close())
}
