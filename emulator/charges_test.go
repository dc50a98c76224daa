package emulator

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected charges below are worked out by hand from the rules in
// charges.go (and README "Request charges"); the header carries two
// decimals.

// insert is the model's charge of creating a document of 1 KB + extraKB
// with indexed indexed values: 5.5 RU, 5×9/99 RU per further KB, 0.31 RU
// per indexed value.
func insert(extraKB float64, indexed int) float64 {
	return 5.5 + extraKB*5*9.0/99 + 0.31*float64(indexed)
}

// docOfSize returns {"id":id,"pk":pk,"data":"xxx…"} of exactly size bytes.
func docOfSize(t *testing.T, id, pk string, size int) []byte {
	t.Helper()
	head := `{"id":"` + id + `","pk":"` + pk + `","data":"`
	n := size - len(head) - len(`"}`)
	require.GreaterOrEqual(t, n, 0)
	return []byte(head + strings.Repeat("x", n) + `"}`)
}

func TestPointOperationCharges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.container("charges", nil)
	pk := azcosmos.NewPartitionKeyString("p")

	small := []byte(`{"id":"s","pk":"p","n":1}`) // 3 indexed values, under 1 KB
	created, err := c.CreateItem(e.ctx, pk, small, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 3), created.RequestCharge, 0.005, "a 1 KB insert with 3 indexed values")

	read, err := c.ReadItem(e.ctx, pk, "s", nil)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, read.RequestCharge, 0.005, "a 1 KB point read")

	replaced, err := c.ReplaceItem(e.ctx, pk, "s", []byte(`{"id":"s","pk":"p","n":2}`), nil)
	require.NoError(t, err)
	assert.InDelta(t, 2*insert(0, 3), replaced.RequestCharge, 0.005, "a replace costs twice the insert")

	upserted, err := c.UpsertItem(e.ctx, pk, []byte(`{"id":"s","pk":"p","n":3}`), nil)
	require.NoError(t, err)
	assert.InDelta(t, 2*insert(0, 3), upserted.RequestCharge, 0.005, "an upsert that replaces")

	patched, err := c.PatchItem(e.ctx, pk, "s", func() azcosmos.PatchOperations {
		var p azcosmos.PatchOperations
		p.AppendSet("/n", 4)
		return p
	}(), nil)
	require.NoError(t, err)
	assert.InDelta(t, 2*insert(0, 3), patched.RequestCharge, 0.005, "a patch is charged as a replace")

	deleted, err := c.DeleteItem(e.ctx, pk, "s", nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 3), deleted.RequestCharge, 0.005, "a delete as the insert of what it removes")

	// 10 KB: the insert grows 5 * 9/99 RU per KB past the first, the read
	// 9/99 RU per KB (1 KB 1 RU, 100 KB 10 RU).
	big, err := c.CreateItem(e.ctx, pk, docOfSize(t, "big", "p", 10*1024), nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(9, 3), big.RequestCharge, 0.006)
	bigRead, err := c.ReadItem(e.ctx, pk, "big", nil)
	require.NoError(t, err)
	assert.InDelta(t, 1+9*9.0/99, bigRead.RequestCharge, 0.006)
	hundred, err := c.UpsertItem(e.ctx, pk, docOfSize(t, "h", "p", 100*1024), nil)
	require.NoError(t, err)
	hundredRead, err := c.ReadItem(e.ctx, pk, "h", nil)
	require.NoError(t, err)
	assert.InDelta(t, 10.0, hundredRead.RequestCharge, 0.005, "a 100 KB point read is 10 RU")
	assert.InDelta(t, insert(99, 3), hundred.RequestCharge, 0.006)

	_, err = c.ReadItem(e.ctx, pk, "absent", nil)
	var re *azcore.ResponseError
	require.True(t, errors.As(err, &re))
	charge, perr := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-request-charge"), 64)
	require.NoError(t, perr)
	assert.InDelta(t, 1.0, charge, 0.005, "a refused request")
}

func TestWriteChargeCountsIndexedValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pk := azcosmos.NewPartitionKeyString("p")
	wide := []byte(`{"id":"w","pk":"p","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`)
	nested := []byte(`{"id":"n","pk":"p","o":{"x":1,"y":[1,2,3]},"big":{"skip":[1,2,3,4,5,6,7,8]}}`)

	everything := e.container("index-all", nil)
	r, err := everything.CreateItem(e.ctx, pk, wide, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 12), r.RequestCharge, 0.005, "12 indexed values")
	r, err = everything.CreateItem(e.ctx, pk, nested, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 14), r.RequestCharge, 0.005, "nested values and array elements count: id, pk, o.x, 3 of o.y, 8 of big.skip")

	selective := e.container("index-some", &azcosmos.IndexingPolicy{
		Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/a/?"}, {Path: "/o/*"}},
		ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}},
	})
	r, err = selective.CreateItem(e.ctx, pk, wide, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 2), r.RequestCharge, 0.005, "only id and a are indexed")
	r, err = selective.CreateItem(e.ctx, pk, nested, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 5), r.RequestCharge, 0.005, "id and the 4 values under /o")
	assert.InDelta(t, 7.05, r.RequestCharge, 0.005, "5 indexed values: the calibration point, Microsoft's measured 7.05 RU")

	none := e.container("index-none", &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeNone})
	r, err = none.CreateItem(e.ctx, pk, wide, nil)
	require.NoError(t, err)
	assert.InDelta(t, insert(0, 0), r.RequestCharge, 0.005, "nothing indexed: the 5.5 RU of the source")
}

func TestQueryAndBatchCharges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.container("query-charges", nil)
	pk := azcosmos.NewPartitionKeyString("q")
	loaded := 0
	for i, size := range []int{512, 2048, 4096} {
		doc := docOfSize(t, "d"+strconv.Itoa(i), "q", size)
		loaded += len(doc)
		_, err := c.CreateItem(e.ctx, pk, doc, nil)
		require.NoError(t, err)
	}
	pager := c.NewQueryItemsPager("SELECT c.id FROM c WHERE c.pk = 'q'", pk, nil)
	page, err := pager.NextPage(e.ctx)
	require.NoError(t, err)
	require.Len(t, page.Items, 3)
	assert.InDelta(t, 2.3+float64(loaded)/1024*0.1+3*0.1, page.RequestCharge, 0.006,
		"base + 0.1 RU per KB loaded + 0.1 RU per document returned")

	batch := c.NewTransactionalBatch(pk)
	batch.CreateItem([]byte(`{"id":"b1","pk":"q"}`), nil)
	batch.ReplaceItem("d0", []byte(`{"id":"d0","pk":"q"}`), nil)
	batch.ReadItem("d1", nil)
	res, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
	require.NoError(t, err)
	require.True(t, res.Success)
	require.Len(t, res.OperationResults, 3)
	assert.InDelta(t, insert(0, 2), res.OperationResults[0].RequestCharge, 0.005)
	assert.InDelta(t, 2*insert(0, 2), res.OperationResults[1].RequestCharge, 0.005)
	assert.InDelta(t, 1+1*9.0/99, res.OperationResults[2].RequestCharge, 0.006, "the 2 KB read")
	assert.InDelta(t, 3*insert(0, 2)+1+9.0/99, res.RequestCharge, 0.01, "a batch is the sum of its operations")
}

// BenchmarkIndexedValues measures the charge model's count of indexed
// values for a 2 KB document, under the default policy (everything
// indexed) and a selective one that skips the payload.
func BenchmarkIndexedValues(b *testing.B) {
	body := []byte(`{"id":"msg-1","instanceId":"order-42","type":"orch_queue","dispatchSlot":17,"visibleAt":1700000000000,` +
		`"workItem":{"StartOrchestration":{"instance":"order-42","orchestration":"Checkout","input":"` + strings.Repeat("x", 1800) + `","execution_id":1}}}`)
	selective := &indexPolicy{mode: "consistent", excluded: []indexPath{{wildcard: true}}}
	for _, p := range []string{"/type/?", "/instanceId/?", "/dispatchSlot/?", "/visibleAt/?"} {
		ip, _ := parseIndexPath(p)
		selective.included = append(selective.included, ip)
	}
	for name, idx := range map[string]*indexPolicy{"all": nil, "selective": selective} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				indexedValues(idx, body)
			}
		})
	}
}
