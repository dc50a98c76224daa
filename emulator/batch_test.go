package emulator

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatchAllOperationKinds(t *testing.T) {
	e := newEnv(t)
	c := e.container("b", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for _, id := range []string{"r", "rep", "del", "pat", "up"} {
		_, err := c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": id, "pk": "p", "n": 1}), nil)
		require.NoError(t, err)
	}
	repRead, err := c.ReadItem(e.ctx, pk, "rep", nil)
	require.NoError(t, err)
	etag := repRead.ETag

	b := c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": "new", "pk": "p"}), nil)
	b.ReadItem("r", nil)
	b.ReplaceItem("rep", mustJSON(t, map[string]any{"id": "rep", "pk": "p", "n": 2}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &etag})
	b.DeleteItem("del", nil)
	var ops azcosmos.PatchOperations
	ops.AppendIncrement("/n", 5)
	ops.AppendSet("/tag", "x")
	b.PatchItem("pat", ops, nil)
	b.UpsertItem(mustJSON(t, map[string]any{"id": "up", "pk": "p", "n": 9}), nil)
	b.UpsertItem(mustJSON(t, map[string]any{"id": "up2", "pk": "p"}), nil)

	resp, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	require.Len(t, resp.OperationResults, 7)
	want := []int32{201, 200, 200, 204, 200, 200, 201}
	for i, r := range resp.OperationResults {
		assert.Equal(t, want[i], r.StatusCode, "op %d", i)
	}
	// A batch with a read gets bodies (the SDK then asks for content).
	assert.Equal(t, "r", decodeMap(t, resp.OperationResults[1].ResourceBody)["id"])
	assert.Equal(t, "new", decodeMap(t, resp.OperationResults[0].ResourceBody)["id"])
	assert.NotEmpty(t, resp.OperationResults[0].ETag)
	assert.NotEmpty(t, resp.SessionToken)

	got, err := c.ReadItem(e.ctx, pk, "pat", nil)
	require.NoError(t, err)
	m := decodeMap(t, got.Value)
	assert.Equal(t, float64(6), m["n"])
	assert.Equal(t, "x", m["tag"])
	_, err = c.ReadItem(e.ctx, pk, "del", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	got, err = c.ReadItem(e.ctx, pk, "rep", nil)
	require.NoError(t, err)
	assert.Equal(t, float64(2), decodeMap(t, got.Value)["n"])
	assert.Equal(t, resp.OperationResults[2].ETag, got.ETag)

	// Without reads, write results are minimal unless content is asked for.
	b1 := c.NewTransactionalBatch(pk)
	b1.CreateItem(mustJSON(t, map[string]any{"id": "minimal", "pk": "p"}), nil)
	resp1, err := c.ExecuteTransactionalBatch(e.ctx, b1, nil)
	require.NoError(t, err)
	assert.Empty(t, resp1.OperationResults[0].ResourceBody)
	assert.NotEmpty(t, resp1.OperationResults[0].ETag)
	b2 := c.NewTransactionalBatch(pk)
	b2.CreateItem(mustJSON(t, map[string]any{"id": "withbody", "pk": "p"}), nil)
	resp2, err := c.ExecuteTransactionalBatch(e.ctx, b2, &azcosmos.TransactionalBatchOptions{EnableContentResponseOnWrite: true})
	require.NoError(t, err)
	assert.Equal(t, "withbody", decodeMap(t, resp2.OperationResults[0].ResourceBody)["id"])
}

func TestBatchIsAtomic(t *testing.T) {
	e := newEnv(t)
	c := e.container("b", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": "exists", "pk": "p", "n": 1}), nil)
	require.NoError(t, err)
	before, err := c.ReadItem(e.ctx, pk, "exists", nil)
	require.NoError(t, err)

	b := c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": "a", "pk": "p"}), nil)
	b.ReplaceItem("exists", mustJSON(t, map[string]any{"id": "exists", "pk": "p", "n": 2}), nil)
	b.CreateItem(mustJSON(t, map[string]any{"id": "exists", "pk": "p"}), nil) // 409
	b.CreateItem(mustJSON(t, map[string]any{"id": "c", "pk": "p"}), nil)
	resp, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, resp.Success)
	assert.Equal(t, http.StatusMultiStatus, resp.RawResponse.StatusCode)
	codes := []int32{}
	for _, r := range resp.OperationResults {
		codes = append(codes, r.StatusCode)
	}
	assert.Equal(t, []int32{424, 424, 409, 424}, codes)

	// Nothing was applied.
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	after, err := c.ReadItem(e.ctx, pk, "exists", nil)
	require.NoError(t, err)
	assert.Equal(t, before.ETag, after.ETag)

	// Stale If-Match inside a batch: 412 for that op.
	stale := azcore.ETag(`"00000000-0000-0000-0000-000000000000"`)
	b = c.NewTransactionalBatch(pk)
	b.DeleteItem("exists", nil)
	b.ReplaceItem("exists", mustJSON(t, map[string]any{"id": "exists", "pk": "p"}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, resp.Success)
	// The replace sees the delete before it: 404, not 412.
	assert.Equal(t, int32(424), resp.OperationResults[0].StatusCode)
	assert.Equal(t, int32(404), resp.OperationResults[1].StatusCode)

	b = c.NewTransactionalBatch(pk)
	b.ReplaceItem("exists", mustJSON(t, map[string]any{"id": "exists", "pk": "p"}), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &stale})
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(412), resp.OperationResults[0].StatusCode)

	// Delete of a missing document fails the batch (as the service does).
	b = c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": "z", "pk": "p"}), nil)
	b.DeleteItem("missing", nil)
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.Equal(t, []int32{424, 404}, []int32{resp.OperationResults[0].StatusCode, resp.OperationResults[1].StatusCode})
	_, err = c.ReadItem(e.ctx, pk, "z", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	// Operations see earlier operations of the same batch.
	b = c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": "seq", "pk": "p", "n": 1}), nil)
	var ops azcosmos.PatchOperations
	ops.AppendIncrement("/n", 1)
	b.PatchItem("seq", ops, nil)
	b.ReadItem("seq", nil)
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	require.True(t, resp.Success)
	assert.Equal(t, float64(2), decodeMap(t, resp.OperationResults[2].ResourceBody)["n"])
}

func TestBatchLimits(t *testing.T) {
	e := newEnv(t)
	c := e.container("b", nil)
	pk := azcosmos.NewPartitionKeyString("p")

	b := c.NewTransactionalBatch(pk)
	for i := 0; i < 100; i++ {
		b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": "p"}), nil)
	}
	resp, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.True(t, resp.Success, "100 operations are allowed")

	b = c.NewTransactionalBatch(pk)
	for i := 0; i < 101; i++ {
		b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint("x", i), "pk": "p"}), nil)
	}
	_, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "101 operations are refused")
	_, err = c.ReadItem(e.ctx, pk, "x0", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	b = c.NewTransactionalBatch(pk)
	blob := strings.Repeat("y", 700*1024)
	for i := 0; i < 3; i++ {
		b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint("big", i), "pk": "p", "blob": blob}), nil)
	}
	_, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, statusOf(err), "over 2 MB is refused")

	// A document of another partition inside the batch.
	b = c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": "ok", "pk": "p"}), nil)
	b.CreateItem(mustJSON(t, map[string]any{"id": "wrong", "pk": "q"}), nil)
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, resp.Success)
	assert.Equal(t, int32(400), resp.OperationResults[1].StatusCode)
	assert.Equal(t, int32(424), resp.OperationResults[0].StatusCode)

	// Invalid id inside a batch (over 1,023 bytes).
	b = c.NewTransactionalBatch(pk)
	b.CreateItem(mustJSON(t, map[string]any{"id": strings.Repeat("x", 1024), "pk": "p"}), nil)
	resp, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(400), resp.OperationResults[0].StatusCode)
}
