package emulator

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMissingScriptsAndUsersAreNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.container("c", nil)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "dbs/db/colls/c/sprocs/missing"},
		{http.MethodPost, "dbs/db/colls/c/sprocs/missing"}, // execute
		{http.MethodDelete, "dbs/db/colls/c/sprocs/missing"},
		{http.MethodGet, "dbs/db/colls/c/triggers/missing"},
		{http.MethodGet, "dbs/db/colls/c/udfs/missing"},
		{http.MethodGet, "dbs/db/users/missing"},
		{http.MethodGet, "dbs/db/users/missing/permissions/p"},
	} {
		status, h, body := e.raw(tc.method, tc.path, []byte(`[]`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
		assert.Equal(t, http.StatusNotFound, status, "%s %s: %s", tc.method, tc.path, body)
		assert.Contains(t, string(body), `"code":"NotFound"`, tc.path)
		assert.Empty(t, h.Get("x-ms-substatus"), "a missing script is not a missing container: %s", tc.path)
	}
	// Under a missing container: the owner is missing (substatus 1003).
	status, h, _ := e.raw(http.MethodGet, "dbs/db/colls/nope/sprocs/sp", nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "1003", h.Get("x-ms-substatus"))

	status, _, body := e.raw(http.MethodGet, "dbs/db/users", nil, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.Contains(t, string(body), `"Users":[]`)
	status, _, body = e.raw(http.MethodPost, "dbs/db/users", []byte(`{"id":"u"}`), nil)
	assert.Equal(t, http.StatusNotImplemented, status, "%s", body)
}

func TestScriptsAreStoredButNotExecuted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.container("c", nil)
	status, h, body := e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(`{"id":"sp","body":"function () {}"}`), nil)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	created := decodeMap(t, body)
	assert.Equal(t, "sp", created["id"])
	assert.Equal(t, "function () {}", created["body"])
	assert.Equal(t, h.Get("etag"), created["_etag"])
	assert.NotEmpty(t, created["_rid"])

	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(`{"id":"sp","body":"function () {}"}`), nil)
	assert.Equal(t, http.StatusConflict, status)
	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(`{"id":"nobody"}`), nil)
	assert.Equal(t, http.StatusBadRequest, status)

	status, _, body = e.raw(http.MethodGet, "dbs/db/colls/c/sprocs/sp", nil, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, created["_etag"], decodeMap(t, body)["_etag"])

	status, _, body = e.raw(http.MethodPut, "dbs/db/colls/c/sprocs/sp", []byte(`{"id":"sp","body":"function () { return 1; }"}`), nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.NotEqual(t, created["_etag"], decodeMap(t, body)["_etag"])

	status, _, body = e.raw(http.MethodGet, "dbs/db/colls/c/sprocs", nil, nil)
	require.Equal(t, http.StatusOK, status)
	var feed struct {
		StoredProcedures []map[string]any
		Count            int `json:"_count"`
	}
	require.NoError(t, json.Unmarshal(body, &feed), "%s", body)
	require.Len(t, feed.StoredProcedures, 1)
	assert.Equal(t, "function () { return 1; }", feed.StoredProcedures[0]["body"])

	// Executing one that exists is the one refusal: the emulator runs no
	// JavaScript.
	status, _, body = e.raw(http.MethodPost, "dbs/db/colls/c/sprocs/sp", []byte(`[]`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusNotImplemented, status)
	assert.Contains(t, string(body), "execution of stored procedures")

	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/triggers", []byte(`{"id":"tr","body":"function () {}","triggerType":"Pre","triggerOperation":"All"}`), nil)
	assert.Equal(t, http.StatusCreated, status)
	status, _, body = e.raw(http.MethodGet, "dbs/db/colls/c/triggers/tr", nil, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "Pre", decodeMap(t, body)["triggerType"])

	status, _, _ = e.raw(http.MethodDelete, "dbs/db/colls/c/sprocs/sp", nil, nil)
	assert.Equal(t, http.StatusNoContent, status)
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/c/sprocs/sp", nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
}

func TestWritesNamingTriggersAreNotApplied(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.container("c", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p"}`), &azcosmos.ItemOptions{PreTriggers: []string{"missing"}})
	assert.Equal(t, http.StatusNotFound, statusOf(err), "a trigger that does not exist")
	status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/triggers", []byte(`{"id":"tr","body":"function () {}","triggerType":"Post","triggerOperation":"All"}`), nil)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	_, err = c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p"}`), &azcosmos.ItemOptions{PostTriggers: []string{"tr"}})
	assert.Equal(t, http.StatusNotImplemented, statusOf(err), "running a trigger")
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err), "the write was not applied")
	_, err = c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
}
