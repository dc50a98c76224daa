package emulator

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPatchOperations(t *testing.T) {
	e := newEnv(t)
	c := e.container("p", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"d","pk":"p","n":1,"s":"x","arr":[1,2,3],"obj":{"a":1},"gone":true}`), nil)
	require.NoError(t, err)

	var ops azcosmos.PatchOperations
	ops.AppendAdd("/added", "new")
	ops.AppendAdd("/arr/1", 9)   // insert at index
	ops.AppendAdd("/arr/-", 4)   // append
	ops.AppendSet("/obj/b", 2)   // create nested property
	ops.AppendSet("/s", "y")     // overwrite
	ops.AppendReplace("/n", 10)  // must exist
	ops.AppendRemove("/gone")    // must exist
	ops.AppendIncrement("/n", 5) // numeric
	ops.AppendIncrement("/counter", 3)
	resp, err := c.PatchItem(e.ctx, pk, "d", ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	require.NoError(t, err)
	m := decodeMap(t, resp.Value)
	assert.Equal(t, "new", m["added"])
	assert.Equal(t, []any{1.0, 9.0, 2.0, 3.0, 4.0}, m["arr"])
	assert.Equal(t, map[string]any{"a": 1.0, "b": 2.0}, m["obj"])
	assert.Equal(t, "y", m["s"])
	assert.Equal(t, 15.0, m["n"])
	assert.Equal(t, 3.0, m["counter"])
	assert.NotContains(t, m, "gone")

	// Failures are 400 and leave the document untouched.
	before, _ := c.ReadItem(e.ctx, pk, "d", nil)
	for name, build := range map[string]func(*azcosmos.PatchOperations){
		"replace missing":    func(o *azcosmos.PatchOperations) { o.AppendReplace("/missing", 1) },
		"remove missing":     func(o *azcosmos.PatchOperations) { o.AppendRemove("/missing") },
		"incr non-number":    func(o *azcosmos.PatchOperations) { o.AppendIncrement("/s", 1) },
		"missing parent":     func(o *azcosmos.PatchOperations) { o.AppendSet("/no/such/parent", 1) },
		"array out of range": func(o *azcosmos.PatchOperations) { o.AppendAdd("/arr/99", 1) },
		"patch id":           func(o *azcosmos.PatchOperations) { o.AppendSet("/id", "other") },
		"patch pk":           func(o *azcosmos.PatchOperations) { o.AppendSet("/pk", "other") },
		"too many ops": func(o *azcosmos.PatchOperations) {
			for i := 0; i < 11; i++ {
				o.AppendSet("/x", i)
			}
		},
	} {
		var o azcosmos.PatchOperations
		o.AppendSet("/partial", true) // would apply if the patch were not atomic
		build(&o)
		_, err := c.PatchItem(e.ctx, pk, "d", o, nil)
		assert.Equal(t, http.StatusBadRequest, statusOf(err), name)
	}
	after, _ := c.ReadItem(e.ctx, pk, "d", nil)
	assert.Equal(t, before.ETag, after.ETag)

	// Missing document: 404. Stale If-Match: 412.
	var o azcosmos.PatchOperations
	o.AppendSet("/x", 1)
	_, err = c.PatchItem(e.ctx, pk, "nope", o, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	stale := before.ETag
	_, err = c.PatchItem(e.ctx, pk, "d", o, nil)
	require.NoError(t, err)
	_, err = c.PatchItem(e.ctx, pk, "d", o, &azcosmos.ItemOptions{IfMatchEtag: &stale})
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err))
}

func TestPatchCondition(t *testing.T) {
	e := newEnv(t)
	c := e.container("p", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"d","pk":"p","state":"free","v":1}`), nil)
	require.NoError(t, err)

	var ops azcosmos.PatchOperations
	ops.SetCondition("FROM c WHERE c.state = 'free'")
	ops.AppendSet("/state", "taken")
	_, err = c.PatchItem(e.ctx, pk, "d", ops, nil)
	require.NoError(t, err)
	// The same conditional patch now fails its predicate: 412.
	_, err = c.PatchItem(e.ctx, pk, "d", ops, nil)
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err))

	var bad azcosmos.PatchOperations
	bad.SetCondition("FROM c WHERE")
	bad.AppendSet("/v", 2)
	_, err = c.PatchItem(e.ctx, pk, "d", bad, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
}

func TestPatchMove(t *testing.T) {
	// azcosmos has no move operation; the REST API does.
	e := newEnv(t)
	c := e.container("p", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"d","pk":"p","a":{"x":1},"b":2}`), nil)
	require.NoError(t, err)
	status, _, body := e.raw(http.MethodPatch, "dbs/db/colls/p/docs/d",
		[]byte(`{"operations":[{"op":"move","from":"/a/x","path":"/moved"},{"op":"move","from":"/b","path":"/a/y"}]}`),
		map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	require.Equal(t, http.StatusOK, status, string(body))
	m := decodeMap(t, body)
	assert.Equal(t, 1.0, m["moved"])
	assert.Equal(t, map[string]any{"y": 2.0}, m["a"])
	assert.NotContains(t, m, "b")

	status, _, _ = e.raw(http.MethodPatch, "dbs/db/colls/p/docs/d",
		[]byte(`{"operations":[{"op":"move","from":"/nothing","path":"/x"}]}`),
		map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusBadRequest, status)
}
