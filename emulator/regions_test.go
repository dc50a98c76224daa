package emulator

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accountLocations is what the account document says of its regions.
type accountLocations struct {
	WritableLocations            []struct{ Name, DatabaseAccountEndpoint string }
	ReadableLocations            []struct{ Name, DatabaseAccountEndpoint string }
	EnableMultipleWriteLocations bool
}

func readAccount(t *testing.T, e *env) accountLocations {
	t.Helper()
	status, _, body := e.raw(http.MethodGet, "", nil, nil)
	require.Equal(t, http.StatusOK, status)
	var acct accountLocations
	require.NoError(t, json.Unmarshal(body, &acct))
	return acct
}

func TestReadRegionTrailsTheWriteRegionAndRefusesWrites(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{Consistency: ConsistencySession, Regions: []string{"West US", "East US"}, RegionLag: 10 * time.Minute, clock: clk.now})
	acct := readAccount(t, e)
	require.Len(t, acct.ReadableLocations, 2)
	require.Len(t, acct.WritableLocations, 1)
	assert.False(t, acct.EnableMultipleWriteLocations)
	east, err := e.srv.RegionEndpoint("East US")
	require.NoError(t, err)
	assert.Equal(t, "West US", acct.WritableLocations[0].Name)
	assert.Equal(t, e.srv.Endpoint(), acct.ReadableLocations[0].DatabaseAccountEndpoint)
	assert.Equal(t, east, acct.ReadableLocations[1].DatabaseAccountEndpoint)
	assert.NotEqual(t, e.srv.Endpoint(), east)
	_, err = e.srv.RegionEndpoint("Mars")
	assert.Error(t, err)

	c := e.container("c", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	created := createP(t, e, c, `{"id":"a","pk":"p"}`)
	token := sessionOf(t, created)

	// A client preferring East US reads there: ten minutes behind.
	cred, err := azcosmos.NewKeyCredential(e.srv.Key())
	require.NoError(t, err)
	eastClient, err := azcosmos.NewClientWithKey(e.srv.Endpoint(), cred, &azcosmos.ClientOptions{
		ClientOptions:    azcore.ClientOptions{Transport: e.srv.HTTPClient(), Retry: policy.RetryOptions{RetryDelay: 5 * time.Millisecond}},
		PreferredRegions: []string{"East US"},
	})
	require.NoError(t, err)
	t.Cleanup(eastClient.Close)
	ec, err := eastClient.NewContainer("db", "c")
	require.NoError(t, err)
	for range 5 {
		_, err = ec.ReadItem(e.ctx, pk, "a", nil)
		assert.Equal(t, http.StatusNotFound, statusOf(err), "East US has not applied the create")
		// With the write's session token East US answers 1002 and the SDK
		// retries in the write region.
		_, err = ec.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &token})
		require.NoError(t, err)
	}
	// The same client's writes go to the write region.
	_, err = ec.CreateItem(e.ctx, pk, []byte(`{"id":"b","pk":"p"}`), nil)
	require.NoError(t, err)

	status, _, _ := e.raw(http.MethodGet, "dbs/db/colls/c/docs/a", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-session-token": token})
	assert.Equal(t, http.StatusOK, status)
	status, h, _ := rawRequestAt(t, e.srv, east, e.srv.Key(), http.MethodGet, "dbs/db/colls/c/docs/a", "", nil, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-session-token": token})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "1002", h.Get("x-ms-substatus"))
	status, h, _ = rawRequestAt(t, e.srv, east, e.srv.Key(), http.MethodPost, "dbs/db/colls/c/docs", "", []byte(`{"id":"x","pk":"p"}`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, "3", h.Get("x-ms-substatus"))

	clk.advance(11 * time.Minute) // past RegionLag and any EnvReplicaLag
	_, err = ec.ReadItem(e.ctx, pk, "a", nil)
	assert.NoError(t, err, "East US caught up")
}

func TestMultipleWriteLocationsAreReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Regions: []string{"West US", "East US", "North Europe"}, MultipleWriteLocations: true})
	acct := readAccount(t, e)
	assert.True(t, acct.EnableMultipleWriteLocations)
	assert.Len(t, acct.WritableLocations, 3)
	assert.Len(t, acct.ReadableLocations, 3)
	e.container("c", nil)
	north, err := e.srv.RegionEndpoint("North Europe")
	require.NoError(t, err)
	status, _, body := rawRequestAt(t, e.srv, north, e.srv.Key(), http.MethodPost, "dbs/db/colls/c/docs", "", []byte(`{"id":"x","pk":"p"}`), map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	assert.Equal(t, http.StatusCreated, status, string(body))

	one := readAccount(t, newEnv(t))
	assert.False(t, one.EnableMultipleWriteLocations)
	require.Len(t, one.ReadableLocations, 1)
	assert.Equal(t, defaultRegion, one.ReadableLocations[0].Name)

	_, err = Start(Options{Regions: []string{"a", "a"}})
	assert.Error(t, err)
	_, err = Start(Options{Regions: []string{"a", "b"}, RegionLag: -time.Second})
	assert.Error(t, err)
}

func TestStrongReadsInAReadRegionSeeTheWriteRegion(t *testing.T) {
	t.Parallel()
	clk := newManualClock()
	e := newEnv(t, Options{Consistency: ConsistencyStrong, Regions: []string{"West US", "East US"}, RegionLag: 10 * time.Minute, clock: clk.now})
	c := e.container("c", nil)
	createP(t, e, c, `{"id":"a","pk":"p"}`)
	east, err := e.srv.RegionEndpoint("East US")
	require.NoError(t, err)
	pkHeader := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	status, _, _ := rawRequestAt(t, e.srv, east, e.srv.Key(), http.MethodGet, "dbs/db/colls/c/docs/a", "", nil, pkHeader)
	assert.Equal(t, http.StatusOK, status)
	pkHeader["x-ms-consistency-level"] = "Eventual"
	status, _, _ = rawRequestAt(t, e.srv, east, e.srv.Key(), http.MethodGet, "dbs/db/colls/c/docs/a", "", nil, pkHeader)
	assert.Equal(t, http.StatusNotFound, status, "an Eventual read in East US sees it ten minutes late")
}
