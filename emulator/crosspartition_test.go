package emulator

import (
	"net/http"
	"sort"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCrossPartitionQueries(t *testing.T) {
	e := newEnv(t)
	c := e.container("x", nil)
	seedQueryDocs(t, e, c)
	all := azcosmos.NewPartitionKey()

	// Simple filters and projections work across partitions.
	items, _, err := queryAll(e.ctx, c, "SELECT VALUE c.id FROM c WHERE c.type = 'a'", all, nil)
	require.NoError(t, err)
	var ids []string
	for _, it := range items {
		ids = append(ids, string(it))
	}
	sort.Strings(ids)
	assert.Equal(t, []string{`"1"`, `"2"`, `"7"`}, ids)

	items, _, err = queryAll(e.ctx, c, "SELECT c.id, c.pk FROM c WHERE c.n > 6", all, nil)
	require.NoError(t, err)
	assert.Len(t, items, 2)

	// Paging across partitions.
	items, pages, err := queryAll(e.ctx, c, "SELECT * FROM c", all, &azcosmos.QueryOptions{PageSizeHint: 3})
	require.NoError(t, err)
	assert.Len(t, items, 8)
	assert.Equal(t, 3, pages)

	// What the gateway cannot serve without a query plan: 400, substatus 1004.
	for _, q := range []string{
		"SELECT * FROM c ORDER BY c.n",
		"SELECT TOP 1 * FROM c",
		"SELECT * FROM c OFFSET 1 LIMIT 1",
		"SELECT DISTINCT c.type FROM c",
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT MAX(c.n) AS m FROM c",
		"SELECT c.type FROM c GROUP BY c.type",
	} {
		_, _, err := queryAll(e.ctx, c, q, all, nil)
		assert.Equal(t, http.StatusBadRequest, statusOf(err), q)
		assert.Equal(t, "1004", substatusOf(err), q)
		// The same query within one partition is fine.
		_, _, err = queryAll(e.ctx, c, q, azcosmos.NewPartitionKeyString("p"), nil)
		assert.NoError(t, err, q)
	}

	// A filter that pins the partition key makes the query single-partition
	// for the gateway, so plan-needing features are served.
	items, _, err = queryAll(e.ctx, c, "SELECT VALUE c.id FROM c WHERE c.pk = 'q' ORDER BY c.n DESC", all, nil)
	require.NoError(t, err)
	assert.Equal(t, `"8","7"`, string(joinItems(items)))
	items, _, err = queryAll(e.ctx, c, "SELECT VALUE COUNT(1) FROM c WHERE c.type = 'a' AND c.pk = @pk", all,
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@pk", Value: "p"}}})
	require.NoError(t, err)
	assert.Equal(t, `2`, string(joinItems(items)))
	_, _, err = queryAll(e.ctx, c, "SELECT VALUE COUNT(1) FROM c WHERE c.pk = 'p' OR c.pk = 'q'", all, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "an OR does not pin one partition")

	// Like the gateway, a full cross-partition page always carries a
	// continuation, so the last page may be empty.
	items, pages, err = queryAll(e.ctx, c, "SELECT * FROM c", all, &azcosmos.QueryOptions{PageSizeHint: 4})
	require.NoError(t, err)
	assert.Len(t, items, 8)
	assert.Equal(t, 3, pages)

	// Query metrics are returned, index metrics on request.
	pager := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKeyString("p"), &azcosmos.QueryOptions{PopulateIndexMetrics: true})
	page, err := pager.NextPage(e.ctx)
	require.NoError(t, err)
	require.NotNil(t, page.QueryMetrics)
	assert.Contains(t, *page.QueryMetrics, "retrievedDocumentCount=6")
	assert.NotNil(t, page.IndexMetrics)

	// Cross-partition queries must be enabled.
	disabled := false
	_, _, err = queryAll(e.ctx, c, "SELECT * FROM c", all, &azcosmos.QueryOptions{EnableCrossPartitionQuery: &disabled})
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
}

func TestReadManyItems(t *testing.T) {
	e := newEnv(t)
	c := e.container("x", nil)
	seedQueryDocs(t, e, c)
	resp, err := c.ReadManyItems(e.ctx, []azcosmos.ItemIdentity{
		{ID: "1", PartitionKey: azcosmos.NewPartitionKeyString("p")},
		{ID: "7", PartitionKey: azcosmos.NewPartitionKeyString("q")},
		{ID: "missing", PartitionKey: azcosmos.NewPartitionKeyString("q")},
	}, nil)
	require.NoError(t, err)
	assert.Len(t, resp.Items, 2)
}

func TestOrderByNeedsIndexes(t *testing.T) {
	e := newEnv(t)
	pk := azcosmos.NewPartitionKeyString("p")
	// The provider's kind of policy: selective included paths, everything
	// else excluded, composite indexes for multi-field sorts.
	ip := &azcosmos.IndexingPolicy{
		IndexingMode:  azcosmos.IndexingModeConsistent,
		Automatic:     true,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/type/?"}, {Path: "/n/?"}, {Path: "/s/?"}},
		ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}},
		CompositeIndexes: [][]azcosmos.CompositeIndex{{
			{Path: "/type", Order: azcosmos.CompositeIndexAscending},
			{Path: "/n", Order: azcosmos.CompositeIndexDescending},
		}},
	}
	c := e.container("idx", ip)
	seedQueryDocs(t, e, c)

	ok := []string{
		"SELECT * FROM c ORDER BY c.n",
		"SELECT * FROM c ORDER BY c.s DESC",
		"SELECT * FROM c ORDER BY c.id",
		"SELECT * FROM c ORDER BY c._ts",
		"SELECT * FROM c ORDER BY c.type ASC, c.n DESC",
		"SELECT * FROM c ORDER BY c.type DESC, c.n ASC", // all directions inverted
		"SELECT * FROM c WHERE c.nested.v > 1",          // filters on unindexed paths scan
	}
	for _, q := range ok {
		_, _, err := queryAll(e.ctx, c, q, pk, nil)
		assert.NoError(t, err, q)
	}
	bad := []string{
		"SELECT * FROM c ORDER BY c.nested.v",           // excluded path
		"SELECT * FROM c ORDER BY c.type, c.n",          // direction mismatch with the composite
		"SELECT * FROM c ORDER BY c.n DESC, c.type ASC", // order of paths differs
		"SELECT * FROM c ORDER BY c.type, c.s",          // no composite at all
	}
	for _, q := range bad {
		_, _, err := queryAll(e.ctx, c, q, pk, nil)
		assert.Equal(t, http.StatusBadRequest, statusOf(err), q)
	}

	items, _, err := queryAll(e.ctx, c, "SELECT VALUE c.id FROM c WHERE IS_NUMBER(c.n) ORDER BY c.type ASC, c.n DESC", pk, nil)
	require.NoError(t, err)
	assert.Equal(t, `["2","1","3","5"]`, "["+string(joinItems(items))+"]")

	// With the default policy, a multi-field ORDER BY still needs a composite.
	d := e.container("default", nil)
	_, _, err = queryAll(e.ctx, d, "SELECT * FROM c ORDER BY c.a, c.b", pk, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
	_, _, err = queryAll(e.ctx, d, "SELECT * FROM c ORDER BY c.a", pk, nil)
	assert.NoError(t, err)
}
