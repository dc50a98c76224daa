package emulator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"
)

// env is a running emulator plus an SDK client connected to it.
type env struct {
	t      testing.TB
	srv    *Server
	client *azcosmos.Client
	ctx    context.Context
}

// newEnv starts an emulator (at Strong consistency unless opts say
// otherwise) and an azcosmos client for it.
func newEnv(t testing.TB, opts ...Options) *env {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Consistency == "" {
		// These tests read their own writes without session tokens:
		// they check the emulator at Strong whatever EnvConsistency says
		// (consistency_test.go checks the weaker levels).
		o.Consistency = ConsistencyStrong
	}
	srv, err := Start(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	client := newClient(t, srv, srv.Key())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, srv: srv, client: client, ctx: ctx}
}

// newClient builds an SDK client for srv signing with key. Retries of
// throttled requests are shortened so fault tests stay fast.
func newClient(t testing.TB, srv *Server, key string) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: srv.HTTPClient(),
			Retry:     policy.RetryOptions{RetryDelay: 5 * time.Millisecond, MaxRetryDelay: 50 * time.Millisecond},
		},
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// container creates database "db" (if needed) and a container partitioned
// by /pk with the given indexing policy (nil = service default).
func (e *env) container(name string, ip *azcosmos.IndexingPolicy) *azcosmos.ContainerClient {
	e.t.Helper()
	return e.containerPK(name, "/pk", ip)
}

func (e *env) containerPK(name, pkPath string, ip *azcosmos.IndexingPolicy) *azcosmos.ContainerClient {
	e.t.Helper()
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	if err != nil && statusOf(err) != http.StatusConflict {
		require.NoError(e.t, err)
	}
	db, err := e.client.NewDatabase("db")
	require.NoError(e.t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     name,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{pkPath}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		IndexingPolicy:         ip,
	}, nil)
	require.NoError(e.t, err)
	c, err := db.NewContainer(name)
	require.NoError(e.t, err)
	return c
}

// statusOf returns the HTTP status of an SDK error, or 0.
func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// substatusOf returns x-ms-substatus of an SDK error, or "".
func substatusOf(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		return re.RawResponse.Header.Get("x-ms-substatus")
	}
	return ""
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func decodeMap(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// queryAll drains a query pager and returns the raw documents and the
// number of pages.
func queryAll(ctx context.Context, c *azcosmos.ContainerClient, q string, pk azcosmos.PartitionKey, o *azcosmos.QueryOptions) ([][]byte, int, error) {
	pager := c.NewQueryItemsPager(q, pk, o)
	var out [][]byte
	pages := 0
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return out, pages, err
		}
		pages++
		out = append(out, resp.Items...)
	}
	return out, pages, nil
}

// queryValues runs a single-partition query and decodes each result.
func (e *env) queryValues(c *azcosmos.ContainerClient, q string, pk string, params ...azcosmos.QueryParameter) []any {
	e.t.Helper()
	items, _, err := queryAll(e.ctx, c, q, azcosmos.NewPartitionKeyString(pk), &azcosmos.QueryOptions{QueryParameters: params})
	require.NoError(e.t, err, q)
	out := make([]any, 0, len(items))
	for _, it := range items {
		var v any
		require.NoError(e.t, json.Unmarshal(it, &v))
		out = append(out, v)
	}
	return out
}

// raw sends a request signed with the server's key, bypassing the SDK, for
// protocol details the SDK does not expose. path is relative ("dbs/db").
func (e *env) raw(method, path string, body []byte, headers map[string]string) (int, http.Header, []byte) {
	e.t.Helper()
	return rawRequest(e.t, e.srv, e.srv.Key(), method, path, body, headers)
}

func rawRequest(t testing.TB, srv *Server, key, method, path string, body []byte, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	return rawRequestSigning(t, srv, key, method, path, "", body, headers)
}

// rawRequestSigning is rawRequest signing link as the resource link
// ("" for the path's own, as for a name-based path).
func rawRequestSigning(t testing.TB, srv *Server, key, method, path, link string, body []byte, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	return rawRequestAt(t, srv, srv.Endpoint(), key, method, path, link, body, headers)
}

// rawRequestAt is rawRequestSigning sent to endpoint (a region's, see
// Server.RegionEndpoint).
func rawRequestAt(t testing.TB, srv *Server, endpoint, key, method, path, link string, body []byte, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, endpoint+path, bytes.NewReader(body))
	require.NoError(t, err)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	segs, ok := splitPath(req.URL.EscapedPath())
	require.True(t, ok)
	resType, pathLink := authResource(segs)
	if link == "" {
		link = pathLink
	}
	keyRaw, err := base64.StdEncoding.DecodeString(key)
	require.NoError(t, err)
	mac := hmac.New(sha256.New, keyRaw)
	mac.Write([]byte(strings.ToLower(method) + "\n" + resType + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"))
	req.Header.Set("Authorization", url.QueryEscape("type=master&ver=1.0&sig="+base64.StdEncoding.EncodeToString(mac.Sum(nil))))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := srv.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// engineStore is a container driven without HTTP, for tests and
// benchmarks of the query engine: documents are partitioned by /pk.
type engineStore struct {
	tb  testing.TB
	s   *Server
	c   *container
	lsn uint64
}

func newEngineStore(tb testing.TB) *engineStore {
	return &engineStore{tb: tb, s: &Server{now: time.Now},
		c: &container{db: &database{}, parts: map[string]*partition{}, pkPaths: [][]string{{"pk"}}}}
}

// write stores body as the next version of prev (a new document when prev
// is nil) and returns the stored version.
func (e *engineStore) write(body []byte, prev *item) *item {
	e.tb.Helper()
	d, resp := e.c.prepareDoc(body)
	if resp != nil {
		e.tb.Fatalf("%s: %s", body, resp.errMsg)
	}
	e.lsn++
	it := e.s.newVersion(e.c, d, e.lsn)
	e.c.commit([]plan{{pkKey: d.pkKey, prev: prev, next: it}}, e.lsn)
	return it
}

// remove deletes the live document it.
func (e *engineStore) remove(it *item) {
	e.lsn++
	e.c.commit([]plan{{pkKey: it.part.key, prev: it}}, e.lsn)
}

// requireSameEvaluation evaluates an expression with its evaluation plan
// and its generic form (the same node without the plan) on every
// document, and requires the same three-valued result.
func requireSameEvaluation(t *testing.T, q *query, params map[string]value, planned, generic expr, docs []*item) {
	t.Helper()
	for _, it := range docs {
		ev := &evaluator{params: params, names: q.aliases}
		row := []value{docValue(it)}
		got, want := ev.eval(planned, row), ev.eval(generic, row)
		require.Equal(t, want.k, got.k, "%s on %s", q.text, it.body)
		require.Equal(t, want.truthy(), got.truthy(), "%s on %s", q.text, it.body)
	}
}
