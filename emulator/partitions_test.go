package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEPKHashMatchesServiceBaseline checks the version 2 hash against the
// baseline the official SDKs test with (Azure SDK for Go, azcosmos
// internal/epk testdata PartitionKeyHashBaselineTest.*.xml: the raw hash,
// whose first byte's two top bits the service clears for routing).
func TestEPKHashMatchesServiceBaseline(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`[""]`:                                "32E9366E637A71B4E710384B2F4970A0", // B2E9... raw
		`["asdf"]`:                            "208BF1D598F5B63AD5520F04FE58C5E8", // 608B... raw
		`["` + strings.Repeat("a", 99) + `"]`: "3C02F609961C32AAC2B912B940D1209A",
	}
	for key, want := range cases {
		assert.Equal(t, want, epkOfKey(key, false), key)
	}
	// A hierarchical key concatenates its components' hashes, so a prefix's
	// EPK is a prefix of the full key's.
	full := epkOfKey(`["asdf",""]`, true)
	assert.Equal(t, "208BF1D598F5B63AD5520F04FE58C5E8"+"32E9366E637A71B4E710384B2F4970A0", full)
}

// feedRanges reads a container's feed ranges through the SDK.
func feedRanges(t *testing.T, e *env, c *azcosmos.ContainerClient) []azcosmos.FeedRange {
	t.Helper()
	frs, err := c.ReadFeedRanges(e.ctx, nil)
	require.NoError(t, err)
	return frs
}

// drainChangeFeed reads the change feed of fr (or continues cont) until a
// read returns nothing, and returns the ids read and the continuation.
func drainChangeFeed(t *testing.T, e *env, c *azcosmos.ContainerClient, fr *azcosmos.FeedRange, cont string) ([]string, string) {
	t.Helper()
	var ids []string
	for i := 0; i < 100; i++ {
		opts := &azcosmos.ChangeFeedOptions{FeedRange: fr}
		if cont != "" {
			opts = &azcosmos.ChangeFeedOptions{Continuation: &cont}
		}
		resp, err := c.ReadChangeFeed(e.ctx, opts)
		require.NoError(t, err)
		cont = resp.ContinuationToken
		if len(resp.Items) == 0 {
			return ids, cont
		}
		for _, raw := range resp.Items {
			var d struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(raw, &d))
			ids = append(ids, d.ID)
		}
		fr = nil
	}
	t.Fatal("the change feed did not end")
	return nil, ""
}

func createItems(t *testing.T, e *env, c *azcosmos.ContainerClient, from, to int) []string {
	t.Helper()
	var ids []string
	for i := from; i < to; i++ {
		id := fmt.Sprintf("item-%03d", i)
		body := fmt.Sprintf(`{"id":%q,"pk":"p-%d"}`, id, i)
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p-%d", i)), []byte(body), nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// TestPhysicalPartitionsServeDisjointFeedRanges starts an emulator with 4
// physical partitions: the SDK sees 4 feed ranges covering the EPK space,
// and their change feeds and queries together return every item exactly
// once.
func TestPhysicalPartitionsServeDisjointFeedRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 4})
	c := e.container("parts", nil)
	want := createItems(t, e, c, 0, 120)
	frs := feedRanges(t, e, c)
	require.Len(t, frs, 4)
	assert.Equal(t, "", frs[0].MinInclusive)
	assert.Equal(t, "FF", frs[3].MaxExclusive)
	var got []string
	for i := range frs {
		ids, _ := drainChangeFeed(t, e, c, &frs[i], "")
		assert.NotEmpty(t, ids, "range %d holds some of 120 hashed keys", i)
		got = append(got, ids...)
	}
	sort.Strings(got)
	assert.Equal(t, want, got, "every item once across the ranges")

	// A query addressed to one range (as SDKs that fan out send it) and
	// restricted to an EPK sub-range serves only those partitions.
	ranges, err := e.srv.PartitionKeyRanges("db", "parts")
	require.NoError(t, err)
	total := 0
	for _, r := range ranges {
		status, _, body := e.raw(http.MethodPost, "dbs/db/colls/parts/docs", []byte(`{"query":"SELECT c.id FROM c"}`), map[string]string{
			"Content-Type":                        "application/query+json",
			"x-ms-documentdb-isquery":             "true",
			"x-ms-documentdb-partitionkeyrangeid": r.ID,
		})
		require.Equal(t, http.StatusOK, status, string(body))
		var page struct{ Documents []map[string]any }
		require.NoError(t, json.Unmarshal(body, &page))
		total += len(page.Documents)
	}
	assert.Equal(t, 120, total)
	status, _, body := e.raw(http.MethodPost, "dbs/db/colls/parts/docs", []byte(`{"query":"SELECT c.id FROM c"}`), map[string]string{
		"Content-Type":                        "application/query+json",
		"x-ms-documentdb-isquery":             "true",
		"x-ms-documentdb-partitionkeyrangeid": ranges[0].ID,
		"x-ms-start-epk":                      ranges[0].MinInclusive,
		"x-ms-end-epk":                        "08",
	})
	require.Equal(t, http.StatusOK, status, string(body))
	var page struct{ Documents []map[string]any }
	require.NoError(t, json.Unmarshal(body, &page))
	assert.Less(t, len(page.Documents), 120)
}

// TestPartitionKeyRangeSplitAnswersGoneAndContinues splits a range while a
// change feed reader holds a continuation on it: a request naming the old
// range gets 410 with substatus 1002, the SDK follows the split, and items
// written after the continuation are read exactly once.
func TestPartitionKeyRangeSplitAnswersGoneAndContinues(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	c := e.container("split", nil)
	first := createItems(t, e, c, 0, 40)
	frs := feedRanges(t, e, c)
	require.Len(t, frs, 2)
	all := azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}
	got, cont := drainChangeFeed(t, e, c, &all, "")
	sort.Strings(got)
	require.Equal(t, first, got)

	children, err := e.srv.SplitPartitionKeyRange("db", "split", "0")
	require.NoError(t, err)
	assert.Equal(t, [2]string{"2", "3"}, children)
	ranges, err := e.srv.PartitionKeyRanges("db", "split")
	require.NoError(t, err)
	require.Len(t, ranges, 3)
	assert.Equal(t, []string{"0"}, ranges[0].Parents)

	status, hdr, _ := e.raw(http.MethodGet, "dbs/db/colls/split/docs", nil, map[string]string{
		"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0",
	})
	assert.Equal(t, http.StatusGone, status)
	assert.Equal(t, "1002", hdr.Get("x-ms-substatus"))

	second := createItems(t, e, c, 40, 80)
	got, _ = drainChangeFeed(t, e, c, nil, cont)
	sort.Strings(got)
	assert.Equal(t, second, got, "after the split, exactly the new items")
	assert.Len(t, feedRanges(t, e, c), 3)
}

// TestHierarchicalPartitionKeyPrefix queries and reads the change feed of
// a key prefix of a container partitioned by /tenant and /user: every
// logical partition under the prefix, and nothing else.
func TestHierarchicalPartitionKeyPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 3})
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{ID: "h", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Kind: azcosmos.PartitionKeyKindMultiHash, Paths: []string{"/tenant", "/user"}, Version: 2,
	}}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("h")
	require.NoError(t, err)
	for _, tenant := range []string{"t1", "t2"} {
		for u := 0; u < 5; u++ {
			user := fmt.Sprintf("u%d", u)
			body := fmt.Sprintf(`{"id":"%s-%s","tenant":%q,"user":%q}`, tenant, user, tenant, user)
			_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKey().AppendString(tenant).AppendString(user), []byte(body), nil)
			require.NoError(t, err)
		}
	}
	pager := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", azcosmos.NewPartitionKey().AppendString("t1"), nil)
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var id string
			require.NoError(t, json.Unmarshal(raw, &id))
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	assert.Equal(t, []string{"t1-u0", "t1-u1", "t1-u2", "t1-u3", "t1-u4"}, ids)
}
