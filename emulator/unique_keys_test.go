package emulator

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUniqueKeysRefuseDuplicatesWithinALogicalPartition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "u",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}},
	}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("u")
	require.NoError(t, err)
	p := azcosmos.NewPartitionKeyString("p")
	create := func(pk azcosmos.PartitionKey, doc map[string]any) error {
		_, err := c.CreateItem(e.ctx, pk, mustJSON(t, doc), nil)
		return err
	}
	require.NoError(t, create(p, map[string]any{"id": "a", "pk": "p", "email": "x@y"}))
	assert.Equal(t, http.StatusConflict, statusOf(create(p, map[string]any{"id": "b", "pk": "p", "email": "x@y"})), "duplicate key")
	require.NoError(t, create(azcosmos.NewPartitionKeyString("q"), map[string]any{"id": "b", "pk": "q", "email": "x@y"}), "other logical partition")
	// A missing value counts as null: only one item may lack it.
	require.NoError(t, create(p, map[string]any{"id": "c", "pk": "p"}))
	assert.Equal(t, http.StatusConflict, statusOf(create(p, map[string]any{"id": "d", "pk": "p"})))
	// Replacing an item with its own key is fine; taking another's is not.
	_, err = c.ReplaceItem(e.ctx, p, "a", mustJSON(t, map[string]any{"id": "a", "pk": "p", "email": "x@y", "n": 1}), nil)
	require.NoError(t, err)
	_, err = c.ReplaceItem(e.ctx, p, "c", mustJSON(t, map[string]any{"id": "c", "pk": "p", "email": "x@y"}), nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))
	// In a batch the violation fails the batch, nothing applied.
	b := c.NewTransactionalBatch(p)
	b.CreateItem(mustJSON(t, map[string]any{"id": "e", "pk": "p", "email": "e@y"}), nil)
	b.CreateItem(mustJSON(t, map[string]any{"id": "f", "pk": "p", "email": "e@y"}), nil)
	resp, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, resp.Success)
	assert.Equal(t, int32(http.StatusConflict), resp.OperationResults[1].StatusCode)
	_, err = c.ReadItem(e.ctx, p, "e", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}
