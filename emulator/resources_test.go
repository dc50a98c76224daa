package emulator

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDatabasesAndContainers(t *testing.T) {
	e := newEnv(t)
	dbResp, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "one"}, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, dbResp.RawResponse.StatusCode)
	assert.Equal(t, "one", dbResp.DatabaseProperties.ID)
	assert.NotEmpty(t, dbResp.DatabaseProperties.ResourceID)
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "one"}, nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "two"}, nil)
	require.NoError(t, err)
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "bad/name"}, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err))

	db, err := e.client.NewDatabase("one")
	require.NoError(t, err)
	read, err := db.Read(e.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, dbResp.DatabaseProperties.ResourceID, read.DatabaseProperties.ResourceID)

	var names []string
	pager := e.client.NewQueryDatabasesPager("SELECT * FROM root r", nil)
	for pager.More() {
		p, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, d := range p.Databases {
			names = append(names, d.ID)
		}
	}
	assert.Equal(t, []string{"one", "two"}, names)
	pager = e.client.NewQueryDatabasesPager("SELECT * FROM root r WHERE r.id = @id",
		&azcosmos.QueryDatabasesOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: "two"}}})
	p, err := pager.NextPage(e.ctx)
	require.NoError(t, err)
	require.Len(t, p.Databases, 1)
	assert.Equal(t, "two", p.Databases[0].ID)

	// Containers: definition stored and echoed.
	ttl := int32(3600)
	ip := &azcosmos.IndexingPolicy{
		IndexingMode:  azcosmos.IndexingModeConsistent,
		Automatic:     true,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/type/?"}},
		ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}},
		CompositeIndexes: [][]azcosmos.CompositeIndex{{
			{Path: "/type", Order: azcosmos.CompositeIndexAscending},
			{Path: "/at", Order: azcosmos.CompositeIndexAscending},
		}},
	}
	cResp, err := db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "c1",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/instanceId"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		IndexingPolicy:         ip,
		DefaultTimeToLive:      &ttl,
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, cResp.RawResponse.StatusCode)
	props := cResp.ContainerProperties
	assert.Equal(t, []string{"/instanceId"}, props.PartitionKeyDefinition.Paths)
	assert.Equal(t, 2, props.PartitionKeyDefinition.Version)
	require.NotNil(t, props.IndexingPolicy)
	assert.Equal(t, []azcosmos.IncludedPath{{Path: "/type/?"}}, props.IndexingPolicy.IncludedPaths)
	assert.Contains(t, props.IndexingPolicy.ExcludedPaths, azcosmos.ExcludedPath{Path: "/*"})
	assert.Len(t, props.IndexingPolicy.CompositeIndexes, 1)
	assert.Equal(t, ttl, *props.DefaultTimeToLive)
	assert.NotEmpty(t, props.ResourceID)

	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "c1",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/instanceId"}},
	}, nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))

	c1, err := db.NewContainer("c1")
	require.NoError(t, err)
	got, err := c1.Read(e.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, props.ResourceID, got.ContainerProperties.ResourceID)
	assert.Equal(t, ip.CompositeIndexes, got.ContainerProperties.IndexingPolicy.CompositeIndexes)

	// Default indexing policy when none is given.
	c2Resp, err := db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "c2",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, []azcosmos.IncludedPath{{Path: "/*"}}, c2Resp.ContainerProperties.IndexingPolicy.IncludedPaths)

	// Replace: change the indexing policy.
	newProps := got.ContainerProperties
	newProps.IndexingPolicy = &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeConsistent, Automatic: true,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}}
	rep, err := c1.Replace(e.ctx, *newProps, nil)
	require.NoError(t, err)
	assert.Equal(t, []azcosmos.IncludedPath{{Path: "/*"}}, rep.ContainerProperties.IndexingPolicy.IncludedPaths)

	var cnames []string
	cpager := db.NewQueryContainersPager("SELECT * FROM root r", nil)
	for cpager.More() {
		p, err := cpager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, c := range p.Containers {
			cnames = append(cnames, c.ID)
		}
	}
	assert.Equal(t, []string{"c1", "c2"}, cnames)

	// Missing parents and deletes.
	missing, err := e.client.NewContainer("nope", "c")
	require.NoError(t, err)
	_, err = missing.Read(e.ctx, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	_, err = missing.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("x"), []byte(`{"id":"a","pk":"x"}`), nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	assert.Equal(t, "1003", substatusOf(err), "owner resource does not exist")
	_, err = c1.ReadItem(e.ctx, azcosmos.NewPartitionKeyString("x"), "nope", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	assert.Equal(t, "", substatusOf(err), "a missing document in an existing container")

	_, err = c1.Delete(e.ctx, nil)
	require.NoError(t, err)
	_, err = c1.Read(e.ctx, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	_, err = db.Delete(e.ctx, nil)
	require.NoError(t, err)
	_, err = db.Read(e.ctx, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

func TestContainerRequiresPartitionKey(t *testing.T) {
	e := newEnv(t)
	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, _ := e.client.NewDatabase("db")
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{ID: "nopk"}, nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{ID: "hier",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/a", "/b"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}}, nil)
	require.NoError(t, err)
	c, _ := db.NewContainer("hier")
	pk := azcosmos.NewPartitionKeyString("x").AppendString("y")
	_, err = c.CreateItem(e.ctx, pk, []byte(`{"id":"1","a":"x","b":"y"}`), nil)
	require.NoError(t, err)
	_, err = c.ReadItem(e.ctx, pk, "1", nil)
	require.NoError(t, err)
}

func TestAccountAndFeedRanges(t *testing.T) {
	e := newEnv(t)
	props, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	_ = props
	c := e.container("r", nil)
	ranges, err := c.ReadFeedRanges(e.ctx, nil)
	require.NoError(t, err)
	require.Len(t, ranges, 1)
	assert.Equal(t, "", ranges[0].MinInclusive)
	assert.Equal(t, "FF", ranges[0].MaxExclusive)

	status, _, body := e.raw(http.MethodGet, "", nil, nil)
	assert.Equal(t, http.StatusOK, status)
	m := decodeMap(t, body)
	assert.Contains(t, m, "writableLocations")
	assert.Contains(t, m, "readableLocations")

	// pkranges as a change feed: 304 once the ETag is current.
	status, hdr, _ := e.raw(http.MethodGet, "dbs/db/colls/r/pkranges", nil, map[string]string{"A-IM": "Incremental Feed"})
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/r/pkranges", nil, map[string]string{"A-IM": "Incremental Feed", "If-None-Match": hdr.Get("etag")})
	assert.Equal(t, http.StatusNotModified, status)
}

func TestAuthorization(t *testing.T) {
	e := newEnv(t)
	e.container("a", nil)

	// A client with the wrong key is refused with 401.
	wrong := newClient(t, e.srv, "dGhpcyBpcyBub3QgdGhlIGtleQ==")
	_, err := wrong.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "x"}, nil)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err))
	c, _ := wrong.NewContainer("db", "a")
	_, err = c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString("p"), "x", nil)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err))

	// No Authorization header at all.
	req, _ := http.NewRequest(http.MethodGet, e.srv.Endpoint()+"dbs", nil)
	req.Header.Set("x-ms-date", "Mon, 02 Jan 2006 15:04:05 GMT")
	resp, err := e.srv.HTTPClient().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A signature for another resource does not authorize this one.
	status, _, _ := rawRequest(t, e.srv, e.srv.Key(), http.MethodGet, "dbs/db", nil, nil)
	assert.Equal(t, http.StatusOK, status)

	// A custom key works end to end.
	srv, err := Start(Options{Key: "c2VjcmV0LWtleS1mb3ItdGVzdHM="})
	require.NoError(t, err)
	defer srv.Close()
	ok := newClient(t, srv, "c2VjcmV0LWtleS1mb3ItdGVzdHM=")
	_, err = ok.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "x"}, nil)
	require.NoError(t, err)
	bad := newClient(t, srv, WellKnownKey)
	_, err = bad.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "y"}, nil)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err))

	_, err = Start(Options{Key: "not base64!"})
	assert.Error(t, err)
}

func TestThroughputOffers(t *testing.T) {
	e := newEnv(t)
	// A container gets 400 RU/s by default.
	c := e.container("dedicated", nil)
	tp, err := c.ReadThroughput(e.ctx, nil)
	require.NoError(t, err)
	mt, ok := tp.ThroughputProperties.ManualThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(400), mt)
	_, err = c.ReplaceThroughput(e.ctx, azcosmos.NewManualThroughputProperties(500), nil)
	require.NoError(t, err)
	tp, err = c.ReadThroughput(e.ctx, nil)
	require.NoError(t, err)
	mt, _ = tp.ThroughputProperties.ManualThroughput()
	assert.Equal(t, int32(500), mt)

	// Autoscale on create.
	db, _ := e.client.NewDatabase("db")
	auto := azcosmos.NewAutoscaleThroughputProperties(5000)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{ID: "auto",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: &auto})
	require.NoError(t, err)
	ac, _ := db.NewContainer("auto")
	tp, err = ac.ReadThroughput(e.ctx, nil)
	require.NoError(t, err)
	max, ok := tp.ThroughputProperties.AutoscaleMaxThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(5000), max)

	// Shared database throughput: containers have no offer of their own.
	shared := azcosmos.NewManualThroughputProperties(1000)
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &shared})
	require.NoError(t, err)
	sdb, _ := e.client.NewDatabase("shared")
	dtp, err := sdb.ReadThroughput(e.ctx, nil)
	require.NoError(t, err)
	mt, _ = dtp.ThroughputProperties.ManualThroughput()
	assert.Equal(t, int32(1000), mt)
	_, err = sdb.CreateContainer(e.ctx, azcosmos.ContainerProperties{ID: "in-shared",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	isc, _ := sdb.NewContainer("in-shared")
	_, err = isc.ReadThroughput(e.ctx, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	// Deleting the container removes its offer.
	_, err = c.Delete(e.ctx, nil)
	require.NoError(t, err)
	bad := azcosmos.NewManualThroughputProperties(100)
	_, err = e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "tiny"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &bad})
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
}
