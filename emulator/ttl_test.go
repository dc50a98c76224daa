package emulator

import (
	"net/http"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualClock is a clock tests advance by hand.
type manualClock struct{ ns atomic.Int64 }

func newManualClock() *manualClock {
	c := &manualClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *manualClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *manualClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// ttlContainer creates a container with the given defaultTtl (nil = off).
func ttlContainer(e *env, name string, defaultTTL *int32) *azcosmos.ContainerClient {
	e.t.Helper()
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	if err != nil && statusOf(err) != http.StatusConflict {
		require.NoError(e.t, err)
	}
	db, err := e.client.NewDatabase("db")
	require.NoError(e.t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     name,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		DefaultTimeToLive:      defaultTTL,
	}, nil)
	require.NoError(e.t, err)
	c, err := db.NewContainer(name)
	require.NoError(e.t, err)
	return c
}

func createDoc(e *env, c *azcosmos.ContainerClient, doc map[string]any) {
	e.t.Helper()
	_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(doc["pk"].(string)), mustJSON(e.t, doc), nil)
	require.NoError(e.t, err)
}

// visibleIDs lists the ids a point read, a cross-partition query and the
// change feed from the beginning each see, sorted.
func visibleIDs(e *env, c *azcosmos.ContainerClient, ids ...string) (read, query, feed []string) {
	e.t.Helper()
	for _, id := range ids {
		_, err := c.ReadItem(e.ctx, azcosmos.NewPartitionKeyString("p"), id, nil)
		if err == nil {
			read = append(read, id)
		} else {
			require.Equal(e.t, http.StatusNotFound, statusOf(err), err)
		}
	}
	docs, _, err := queryAll(e.ctx, c, "SELECT * FROM c", azcosmos.NewPartitionKey(), nil)
	require.NoError(e.t, err)
	for _, d := range docs {
		query = append(query, decodeMap(e.t, d)["id"].(string))
	}
	ranges, err := c.ReadFeedRanges(e.ctx, nil)
	require.NoError(e.t, err)
	resp, err := c.ReadChangeFeed(e.ctx, &azcosmos.ChangeFeedOptions{FeedRange: &ranges[0]})
	require.NoError(e.t, err)
	for _, d := range resp.Items {
		feed = append(feed, decodeMap(e.t, d)["id"].(string))
	}
	sort.Strings(read)
	sort.Strings(query)
	sort.Strings(feed)
	return read, query, feed
}

func TestTimeToLiveExpiresItemsFromReadsQueriesAndChangeFeed(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{clock: clk.now})
	ten := int32(10)
	c := ttlContainer(e, "ttl", &ten)
	createDoc(e, c, map[string]any{"id": "default", "pk": "p"})           // container default: 10 s
	createDoc(e, c, map[string]any{"id": "longer", "pk": "p", "ttl": 60}) // its own: 60 s
	createDoc(e, c, map[string]any{"id": "never", "pk": "p", "ttl": -1})  // never expires
	all := []string{"default", "longer", "never"}

	read, query, feed := visibleIDs(e, c, all...)
	assert.Equal(t, all, read)
	assert.Equal(t, all, query)
	assert.Equal(t, all, feed)

	clk.advance(11 * time.Second)
	read, query, feed = visibleIDs(e, c, all...)
	want := []string{"longer", "never"}
	assert.Equal(t, want, read, "reads")
	assert.Equal(t, want, query, "queries")
	assert.Equal(t, want, feed, "change feed")

	clk.advance(50 * time.Second)
	read, query, feed = visibleIDs(e, c, all...)
	assert.Equal(t, []string{"never"}, read)
	assert.Equal(t, []string{"never"}, query)
	assert.Equal(t, []string{"never"}, feed)
}

func TestTimeToLiveCountsFromTheLastWrite(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{clock: clk.now})
	ten := int32(10)
	c := ttlContainer(e, "ttl", &ten)
	createDoc(e, c, map[string]any{"id": "a", "pk": "p"})
	clk.advance(8 * time.Second)
	_, err := c.UpsertItem(e.ctx, azcosmos.NewPartitionKeyString("p"), mustJSON(t, map[string]any{"id": "a", "pk": "p", "v": 2}), nil)
	require.NoError(t, err)
	clk.advance(8 * time.Second) // 16 s after the create, 8 s after the upsert
	read, _, _ := visibleIDs(e, c, "a")
	assert.Equal(t, []string{"a"}, read)
	clk.advance(3 * time.Second)
	read, _, _ = visibleIDs(e, c, "a")
	assert.Empty(t, read)
}

func TestTimeToLiveFollowsTheContainerPolicy(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{clock: clk.now})
	// No defaultTtl: an item's own ttl is ignored.
	off := ttlContainer(e, "off", nil)
	createDoc(e, off, map[string]any{"id": "a", "pk": "p", "ttl": 5})
	// defaultTtl -1: only items with their own ttl expire.
	on := int32(-1)
	opt := ttlContainer(e, "opt", &on)
	createDoc(e, opt, map[string]any{"id": "a", "pk": "p", "ttl": 5})
	createDoc(e, opt, map[string]any{"id": "b", "pk": "p"})

	clk.advance(6 * time.Second)
	read, _, _ := visibleIDs(e, off, "a")
	assert.Equal(t, []string{"a"}, read, "ttl ignored without defaultTtl")
	read, _, _ = visibleIDs(e, opt, "a", "b")
	assert.Equal(t, []string{"b"}, read, "defaultTtl -1: only the item with a ttl expires")

	// defaultTtl 0 is refused, as the service refuses it.
	zero := int32(0)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "zero",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		DefaultTimeToLive:      &zero,
	}, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
}

func TestTimeToLiveDeletesInTheBackground(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{clock: clk.now})
	one := int32(1)
	c := ttlContainer(e, "ttl", &one)
	createDoc(e, c, map[string]any{"id": "a", "pk": "p"})
	coll := e.srv.dbs["db"].colls["ttl"]
	coll.mu.RLock()
	require.Equal(t, 1, coll.count)
	coll.mu.RUnlock()
	clk.advance(2 * time.Second)
	e.srv.sweepExpired() // what the janitor runs every second, with no request
	coll.mu.RLock()
	defer coll.mu.RUnlock()
	assert.Equal(t, 0, coll.count, "deleted without any request to the container")
}
