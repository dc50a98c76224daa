package emulator

import (
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartAndClose(t *testing.T) {
	srv, err := Start(Options{})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:"))
	assert.True(t, strings.HasSuffix(srv.Endpoint(), "/"))
	assert.Equal(t, WellKnownKey, srv.Key())
	assert.Nil(t, srv.CertificatePEM())
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "Close is idempotent")
	_, err = srv.HTTPClient().Get(srv.Endpoint())
	assert.Error(t, err, "nothing listens after Close")

	_, err = Start(Options{Addr: "256.0.0.1:0"})
	assert.Error(t, err)
}

func TestReset(t *testing.T) {
	e := newEnv(t)
	c := e.container("c", nil)
	_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	e.srv.Reset()
	_, err = c.ReadItem(e.ctx, azcosmos.NewPartitionKeyString("p"), "a", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	c = e.container("c", nil) // the database and container can be created again
	_, err = c.ReadItem(e.ctx, azcosmos.NewPartitionKeyString("p"), "a", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

func TestTLS(t *testing.T) {
	e := newEnv(t, Options{TLS: true})
	assert.True(t, strings.HasPrefix(e.srv.Endpoint(), "https://127.0.0.1:"))
	assert.Contains(t, string(e.srv.CertificatePEM()), "BEGIN CERTIFICATE")
	c := e.container("tls", nil)
	_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	_, err = c.ReadItem(e.ctx, azcosmos.NewPartitionKeyString("p"), "a", nil)
	require.NoError(t, err)

	// The default HTTP client does not trust the self-signed certificate.
	_, err = http.Get(e.srv.Endpoint())
	assert.Error(t, err)
}

func TestUnknownPathsAndMethods(t *testing.T) {
	e := newEnv(t)
	e.container("c", nil)
	status, _, body := e.raw(http.MethodGet, "dbs/db/colls/c/attachments", nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, string(body), `"code":"NotFound"`)
	status, _, _ = e.raw(http.MethodPut, "dbs", nil, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	status, _, _ = e.raw(http.MethodPost, "dbs", []byte(`not json`), nil)
	assert.Equal(t, http.StatusBadRequest, status)
	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"`),
		map[string]string{"x-ms-documentdb-isquery": "True", "Content-Type": "application/query+json", "x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusBadRequest, status)
	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/docs", []byte(`[]`),
		map[string]string{"x-ms-cosmos-is-batch-request": "True", "x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusBadRequest, status)
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/c/docs/x", nil,
		map[string]string{"x-ms-documentdb-partitionkey": `["p",`})
	assert.Equal(t, http.StatusBadRequest, status)
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/c/docs/x", nil,
		map[string]string{"x-ms-documentdb-partitionkey": `["a","b"]`})
	assert.Equal(t, http.StatusBadRequest, status, "more components than the definition")
}
