package emulator

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func feedIDs(t *testing.T, resp azcosmos.ChangeFeedResponse) []string {
	var ids []string
	for _, it := range resp.Items {
		m := decodeMap(t, it)
		assert.Contains(t, m, "_lsn")
		ids = append(ids, m["id"].(string))
	}
	return ids
}

func TestChangeFeedLatestVersion(t *testing.T) {
	e := newEnv(t)
	c := e.container("cf", nil)
	ranges, err := c.ReadFeedRanges(e.ctx, nil)
	require.NoError(t, err)
	require.Len(t, ranges, 1)

	// Empty container: nothing yet (304).
	resp, err := c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0]})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotModified, resp.RawResponse.StatusCode)
	assert.Empty(t, resp.Items)

	for i := 0; i < 5; i++ {
		pk := fmt.Sprint("p", i%2)
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(pk), mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": pk, "v": 1}), nil)
		require.NoError(t, err)
	}

	// From the beginning, two per page, following the composite continuation.
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], MaxItemCount: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "1"}, feedIDs(t, resp))
	assert.NotEmpty(t, resp.ContinuationToken)
	assert.NotEmpty(t, resp.ETag)
	var all []string
	all = append(all, feedIDs(t, resp)...)
	token := resp.ContinuationToken
	for {
		resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{Continuation: &token, MaxItemCount: 2})
		require.NoError(t, err)
		if resp.RawResponse.StatusCode == http.StatusNotModified {
			break
		}
		all = append(all, feedIDs(t, resp)...)
		token = resp.ContinuationToken
	}
	assert.Equal(t, []string{"0", "1", "2", "3", "4"}, all)

	// Updates move a document to the end, once, at its latest version.
	_, err = c.UpsertItem(e.ctx, azcosmos.NewPartitionKeyString("p1"), mustJSON(t, map[string]any{"id": "1", "pk": "p1", "v": 2}), nil)
	require.NoError(t, err)
	_, err = c.UpsertItem(e.ctx, azcosmos.NewPartitionKeyString("p1"), mustJSON(t, map[string]any{"id": "1", "pk": "p1", "v": 3}), nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(e.ctx, azcosmos.NewPartitionKeyString("p0"), "2", nil)
	require.NoError(t, err)
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{Continuation: &token})
	require.NoError(t, err)
	require.Equal(t, []string{"1"}, feedIDs(t, resp))
	assert.Equal(t, 3.0, decodeMap(t, resp.Items[0])["v"])
	token = resp.ContinuationToken

	// From the beginning again: deleted documents are gone, "1" is last.
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0]})
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "3", "4", "1"}, feedIDs(t, resp))

	// Nothing new after the last continuation.
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{Continuation: &token})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotModified, resp.RawResponse.StatusCode)

	// Scoped to one logical partition.
	p0 := azcosmos.NewPartitionKeyString("p0")
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], PartitionKey: &p0})
	require.NoError(t, err)
	assert.Equal(t, []string{"0", "4"}, feedIDs(t, resp))

	// Start from a point in time.
	future := time.Now().Add(time.Hour)
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], StartFrom: &future})
	require.NoError(t, err)
	assert.Empty(t, resp.Items)
	past := time.Now().Add(-time.Hour)
	resp, err = c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], StartFrom: &past})
	require.NoError(t, err)
	assert.Len(t, resp.Items, 4)
}

func TestChangeFeedBatchIsOneTransaction(t *testing.T) {
	e := newEnv(t)
	c := e.container("cf", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	b := c.NewTransactionalBatch(pk)
	for i := 0; i < 5; i++ {
		b.CreateItem(mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": "p"}), nil)
	}
	r, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	require.True(t, r.Success)
	ranges, err := c.ReadFeedRanges(e.ctx, nil)
	require.NoError(t, err)
	// A page never splits the changes of one transaction.
	resp, err := c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0], MaxItemCount: 2})
	require.NoError(t, err)
	assert.Len(t, resp.Items, 5)
	lsn := decodeMap(t, resp.Items[0])["_lsn"]
	for _, it := range resp.Items {
		assert.Equal(t, lsn, decodeMap(t, it)["_lsn"])
	}
}

func TestChangeFeedRawProtocol(t *testing.T) {
	e := newEnv(t)
	c := e.container("cf", nil)
	_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	h := map[string]string{"A-IM": "Incremental Feed"}
	status, hdr, body := e.raw(http.MethodGet, "dbs/db/colls/cf/docs", nil, h)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"_count":1`)
	etag := hdr.Get("etag")
	// "*" starts from now.
	h["If-None-Match"] = "*"
	status, hdr2, _ := e.raw(http.MethodGet, "dbs/db/colls/cf/docs", nil, h)
	assert.Equal(t, http.StatusNotModified, status)
	assert.Equal(t, etag, hdr2.Get("etag"))
	h["If-None-Match"] = "garbage"
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/cf/docs", nil, h)
	assert.Equal(t, http.StatusBadRequest, status)

	// Without A-IM, GET docs is a plain read feed.
	status, _, body = e.raw(http.MethodGet, "dbs/db/colls/cf/docs", nil, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"Documents":[{"id":"a"`)
	assert.Equal(t, int64(1), e.srv.Counters()[OpReadFeed].Requests)
}
