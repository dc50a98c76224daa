package emulator

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounters(t *testing.T) {
	e := newEnv(t)
	c := e.container("cnt", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	before := e.srv.Counters()
	assert.Greater(t, before[OpAccount].Requests, int64(0), "the SDK reads the account first")
	assert.Equal(t, int64(1), before[OpContainer].Requests)
	e.srv.ResetCounters()
	assert.Empty(t, e.srv.Counters())

	for i := 0; i < 5; i++ {
		_, err := c.CreateItem(e.ctx, pk, doc(t, fmt.Sprint(i)), nil)
		require.NoError(t, err)
	}
	_, err := c.ReadItem(e.ctx, pk, "0", nil)
	require.NoError(t, err)
	_, err = c.ReadItem(e.ctx, pk, "missing", nil)
	require.Error(t, err)
	items, pages, err := queryAll(e.ctx, c, "SELECT * FROM c", pk, &azcosmos.QueryOptions{PageSizeHint: 2})
	require.NoError(t, err)
	require.Len(t, items, 5)
	b := c.NewTransactionalBatch(pk)
	b.ReadItem("1", nil)
	b.ReadItem("2", nil)
	b.DeleteItem("3", nil)
	_, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)

	got := e.srv.Counters()
	create := got[OpCreateItem]
	assert.Equal(t, int64(5), create.Requests)
	assert.Equal(t, int64(0), create.ItemsReturned, "minimal responses carry no document")
	assert.Greater(t, create.RequestBytes, int64(5*len(`{"id":"0","pk":"p"}`)-1))
	assert.Greater(t, create.ResponseBytes, int64(-1))

	read := got[OpReadItem]
	assert.Equal(t, int64(2), read.Requests)
	assert.Equal(t, int64(1), read.ItemsReturned)
	assert.Greater(t, read.ResponseBytes, int64(0))

	q := got[OpQuery]
	assert.Equal(t, int64(pages), q.Requests)
	assert.Equal(t, int64(5), q.ItemsReturned)
	assert.Greater(t, q.RequestBytes, int64(0))

	bt := got[OpBatch]
	assert.Equal(t, int64(1), bt.Requests)
	assert.Equal(t, int64(2), bt.ItemsReturned, "the two reads (the delete result carries no document)")
}

// TestConcurrentWritersAreLinearizable hammers one document with
// read-modify-write loops using If-Match; no increment may be lost.
func TestConcurrentWritersAreLinearizable(t *testing.T) {
	e := newEnv(t)
	c := e.container("conc", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"ctr","pk":"p","n":0}`), nil)
	require.NoError(t, err)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	conflicts := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				r, err := c.ReadItem(e.ctx, pk, "ctr", nil)
				if !assert.NoError(t, err) {
					return
				}
				m := decodeMap(t, r.Value)
				m["n"] = m["n"].(float64) + 1
				etag := r.ETag
				_, err = c.ReplaceItem(e.ctx, pk, "ctr", mustJSON(t, m), &azcosmos.ItemOptions{IfMatchEtag: &etag})
				if statusOf(err) == http.StatusPreconditionFailed {
					mu.Lock()
					conflicts++
					mu.Unlock()
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				done++
			}
		}()
	}
	// Meanwhile, other partitions and batches run in parallel.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			b := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString("other"))
			b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": "other"}), nil)
			b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint(i, "b"), "pk": "other"}), nil)
			r, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
			assert.NoError(t, err)
			assert.True(t, r.Success)
		}
	}()
	wg.Wait()
	r, err := c.ReadItem(e.ctx, pk, "ctr", nil)
	require.NoError(t, err)
	assert.Equal(t, float64(workers*each), decodeMap(t, r.Value)["n"])
	t.Logf("%d optimistic-concurrency conflicts", conflicts)
	items, _, err := queryAll(e.ctx, c, "SELECT VALUE COUNT(1) FROM c", azcosmos.NewPartitionKeyString("other"), nil)
	require.NoError(t, err)
	assert.Equal(t, "100", string(items[0]))
}
