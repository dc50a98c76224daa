package session

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAccount answers as a Cosmos DB gateway would, just enough for
// azcosmos, and records what each request carried.
type fakeAccount struct {
	mu sync.Mutex
	// seen is "METHOD path session-token" per request.
	seen []string
	// lsn is the token the next document response carries.
	lsn     string
	account string
}

func (f *fakeAccount) Do(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("x-ms-session-token"))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	body := "{}"
	status := http.StatusOK
	switch {
	case r.URL.Path == "/" || r.URL.Path == "":
		body = f.account
	case strings.Contains(r.URL.Path, "/docs"):
		h.Set("x-ms-session-token", f.lsn)
		body = `{"id":"a","instanceId":"a","Documents":[],"_count":0}`
		if r.Method == http.MethodPost && r.Header.Get("x-ms-documentdb-query") == "" {
			status = http.StatusCreated
		}
	case r.Method == http.MethodDelete:
		status = http.StatusNoContent
		body = ""
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func (f *fakeAccount) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.seen
	f.seen = nil
	return out
}

const singleRegion = `{"writableLocations":[{"name":"West","databaseAccountEndpoint":"https://acct.example/"}],` +
	`"readableLocations":[{"name":"West","databaseAccountEndpoint":"https://acct.example/"}],` +
	`"enableMultipleWriteLocations":false,"userConsistencyPolicy":{"defaultConsistencyLevel":"Session"}}`

func newFakeClient(t *testing.T, f *fakeAccount, p *Policy) *azcosmos.ContainerClient {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential("a2V5")
	require.NoError(t, err)
	opts := &azcosmos.ClientOptions{}
	opts.Transport = f
	opts.PerCallPolicies = []policy.Policy{p}
	opts.Retry = policy.RetryOptions{MaxRetries: -1}
	client, err := azcosmos.NewClientWithKey("https://acct.example/", cred, opts)
	require.NoError(t, err)
	cc, err := client.NewContainer("d", "c")
	require.NoError(t, err)
	return cc
}

// TestPolicySendsTheSessionOnReads checks, through azcosmos with a fake
// transport, that a write's token is sent on the next point read and
// query, never on writes, and that the account document azcosmos reads
// first is kept.
func TestPolicySendsTheSessionOnReads(t *testing.T) {
	t.Parallel()
	f := &fakeAccount{lsn: "0:1#5", account: singleRegion}
	p := NewPolicy()
	cc := newFakeClient(t, f, p)
	ctx := context.Background()
	pk := azcosmos.NewPartitionKeyString("a")

	_, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","instanceId":"a"}`), nil)
	require.NoError(t, err)
	seen := f.take()
	require.NotEmpty(t, seen)
	assert.Equal(t, "GET / ", seen[0], "azcosmos reads the account first, without a token")
	assert.Equal(t, "POST /dbs/d/colls/c/docs ", seen[len(seen)-1], "a write carries no token")
	require.NotNil(t, p.Account())
	assert.False(t, p.Account().MultiRegionWrites())
	assert.Equal(t, "Session", p.Account().Consistency.DefaultConsistencyLevel)

	f.lsn = "0:1#6"
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /dbs/d/colls/c/docs/a 0:1#5"}, f.take(), "the read carries the write's token")

	pager := cc.NewQueryItemsPager("SELECT * FROM c", pk, nil)
	_, err = pager.NextPage(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"POST /dbs/d/colls/c/docs 0:1#6"}, f.take(), "a query carries the newest token")

	own := "0:1#1"
	_, err = cc.ReadItem(ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &own})
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /dbs/d/colls/c/docs/a 0:1#1"}, f.take(), "a caller's own token is kept")

	p.SetDisabled(true)
	_, err = cc.ReadItem(ctx, pk, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /dbs/d/colls/c/docs/a "}, f.take(), "disabled: no token")
	p.SetDisabled(false)

	_, err = cc.Delete(ctx, nil)
	require.NoError(t, err)
	f.take()
	assert.Empty(t, p.Tokens().Header("dbs/d/colls/c"), "a deleted container's tokens are forgotten")
}

// TestAccountMultiRegionWrites checks which accounts take writes in
// several regions.
func TestAccountMultiRegionWrites(t *testing.T) {
	t.Parallel()
	a, ok := ParseAccount([]byte(singleRegion))
	require.True(t, ok)
	assert.False(t, a.MultiRegionWrites())
	two := `{"writableLocations":[{"name":"West"},{"name":"East"}],"readableLocations":[{"name":"West"},{"name":"East"}],"enableMultipleWriteLocations":true}`
	a, ok = ParseAccount([]byte(two))
	require.True(t, ok)
	assert.True(t, a.MultiRegionWrites())
	assert.Equal(t, "East", a.WritableLocations[1].Name)
	_, ok = ParseAccount([]byte(`{"id":"not an account"}`))
	assert.False(t, ok)
	_, ok = ParseAccount([]byte(`not json`))
	assert.False(t, ok)
}
