package emulator

import (
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResourceIDLinksAddressResources follows the "_self" links the
// service returns, signed with the lower-cased resource id as the Python
// SDK 3.x signs them.
func TestResourceIDLinksAddressResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.container("c", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for _, id := range []string{"a", "b", "c"} {
		_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"`+id+`","pk":"p"}`), nil)
		require.NoError(t, err)
	}
	_, err := c.DeleteItem(e.ctx, pk, "a", nil) // a hole in the rid order
	require.NoError(t, err)
	got, err := c.ReadItem(e.ctx, pk, "b", nil)
	require.NoError(t, err)
	doc := decodeMap(t, got.Value)
	self := doc["_self"].(string) // dbs/<db rid>/colls/<coll rid>/docs/<doc rid>/
	segs := strings.Split(strings.Trim(self, "/"), "/")
	require.Len(t, segs, 6)
	ridReq := func(method, path, signed string, body []byte, h map[string]string) (int, []byte) {
		st, _, b := rawRequestSigning(t, e.srv, e.srv.Key(), method, path, strings.ToLower(signed), body, h)
		return st, b
	}
	pkHeader := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}

	st, body := ridReq(http.MethodGet, self, segs[5], nil, pkHeader)
	require.Equal(t, http.StatusOK, st, "%s", body)
	assert.Equal(t, "b", decodeMap(t, body)["id"])
	st, body = ridReq(http.MethodGet, "dbs/"+segs[1], segs[1], nil, nil)
	require.Equal(t, http.StatusOK, st, "%s", body)
	assert.Equal(t, "db", decodeMap(t, body)["id"])
	st, body = ridReq(http.MethodGet, "dbs/"+segs[1]+"/colls/"+segs[3], segs[3], nil, nil)
	require.Equal(t, http.StatusOK, st, "%s", body)
	assert.Equal(t, "c", decodeMap(t, body)["id"])
	// A feed signs its parent's resource id.
	st, body = ridReq(http.MethodPost, "dbs/"+segs[1]+"/colls/"+segs[3]+"/docs", segs[3], []byte(`{"id":"d","pk":"p"}`), pkHeader)
	require.Equal(t, http.StatusCreated, st, "%s", body)
	st, body = ridReq(http.MethodGet, "dbs/"+segs[1]+"/colls/"+segs[3]+"/docs", segs[3], nil, pkHeader)
	require.Equal(t, http.StatusOK, st, "%s", body)
	assert.Contains(t, string(body), `"_count":3`)
	st, body = ridReq(http.MethodDelete, self, segs[5], nil, pkHeader)
	require.Equal(t, http.StatusNoContent, st, "%s", body)
	st, _ = ridReq(http.MethodGet, self, segs[5], nil, pkHeader)
	assert.Equal(t, http.StatusNotFound, st, "deleted")

	// A resource-id path signed with the path, or naming nothing, is refused.
	st, _ = ridReq(http.MethodGet, "dbs/"+segs[1], "dbs/"+segs[1], nil, nil)
	assert.Equal(t, http.StatusUnauthorized, st)
	st, _ = ridReq(http.MethodGet, "dbs/"+segs[1]+"/colls/AAAAAAAAAAA=", "AAAAAAAAAAA=", nil, nil)
	assert.Equal(t, http.StatusNotFound, st)
}
