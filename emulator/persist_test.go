package emulator

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restartable starts servers on one address with one certificate and data
// directory, as an emulator restarted by its user.
type restartable struct {
	t    *testing.T
	opts Options
}

func newRestartable(t *testing.T, opts Options) *restartable {
	t.Helper()
	cert, key, err := GenerateCertificate()
	require.NoError(t, err)
	opts.TLS, opts.TLSCertPEM, opts.TLSKeyPEM = true, cert, key
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	if opts.Consistency == "" {
		opts.Consistency = ConsistencyStrong // reads its own writes without session tokens
	}
	return &restartable{t: t, opts: opts}
}

// start starts a server, on the address of the previous one after the first.
func (r *restartable) start() *Server {
	r.t.Helper()
	srv, err := Start(r.opts)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = srv.Close() })
	r.opts.Addr = strings.TrimSuffix(strings.TrimPrefix(srv.Endpoint(), "https://"), "/")
	return srv
}

// changeFeed reads the change feed of logical partition pk from etag ("" for
// the beginning) and returns the ids and the new continuation.
func (e *env) changeFeed(coll, pk, etag string) ([]string, string) {
	e.t.Helper()
	h := map[string]string{"A-IM": "Incremental feed", "x-ms-documentdb-partitionkey": `["` + pk + `"]`}
	if etag != "" {
		h["If-None-Match"] = etag
	}
	st, hdr, body := e.raw(http.MethodGet, "dbs/db/colls/"+coll+"/docs", nil, h)
	var ids []string
	if st == http.StatusNotModified {
		return nil, hdr.Get("etag")
	}
	require.Equal(e.t, http.StatusOK, st, "%s", body)
	for _, d := range decodeMap(e.t, body)["Documents"].([]any) {
		ids = append(ids, d.(map[string]any)["id"].(string))
	}
	return ids, hdr.Get("etag")
}

func TestDataDirKeepsEverythingAcrossARestart(t *testing.T) {
	t.Parallel()
	r := newRestartable(t, Options{})
	srv := r.start()
	e := &env{t: t, srv: srv, client: newClient(t, srv, srv.Key()), ctx: t.Context()}

	_, err := e.client.CreateDatabase(e.ctx, azcosmos.DatabaseProperties{ID: "db"}, &azcosmos.CreateDatabaseOptions{
		ThroughputProperties: to.Ptr(azcosmos.NewManualThroughputProperties(800))})
	require.NoError(t, err)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(e.ctx, azcosmos.ContainerProperties{
		ID:                     "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		DefaultTimeToLive:      to.Ptr[int32](-1),
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}},
	}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("c")
	require.NoError(t, err)
	p := azcosmos.NewPartitionKeyString("p")
	for _, doc := range []string{`{"id":"a","pk":"p","email":"x"}`, `{"id":"b","pk":"p","email":"y","ttl":3600}`, `{"id":"gone","pk":"p","email":"g"}`} {
		_, err := c.CreateItem(e.ctx, p, []byte(doc), nil)
		require.NoError(t, err)
	}
	_, err = c.DeleteItem(e.ctx, p, "gone", nil)
	require.NoError(t, err)
	batch := c.NewTransactionalBatch(azcosmos.NewPartitionKeyString("q"))
	batch.CreateItem([]byte(`{"id":"q1","pk":"q","email":"q1"}`), nil)
	batch.CreateItem([]byte(`{"id":"q2","pk":"q","email":"q2"}`), nil)
	res, err := c.ExecuteTransactionalBatch(e.ctx, batch, nil)
	require.NoError(t, err)
	require.True(t, res.Success)
	status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(`{"id":"sp","body":"function () {}"}`), nil)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	_, err = srv.SplitPartitionKeyRange("db", "c", "0")
	require.NoError(t, err)

	before := map[string]map[string]any{}
	for _, id := range []string{"a", "b"} {
		got, err := c.ReadItem(e.ctx, p, id, nil)
		require.NoError(t, err)
		before[id] = decodeMap(t, got.Value)
	}
	fed, cont := e.changeFeed("c", "p", "")
	assert.Equal(t, []string{"a", "b"}, fed)
	ranges, err := srv.PartitionKeyRanges("db", "c")
	require.NoError(t, err)

	// A graceful stop, then a start on the same address, certificate and
	// data directory; the client is the same.
	require.NoError(t, srv.Close())
	srv = r.start()
	e.srv = srv

	for _, id := range []string{"a", "b"} {
		got, err := c.ReadItem(e.ctx, p, id, nil)
		require.NoError(t, err, id)
		after := decodeMap(t, got.Value)
		for _, k := range []string{"_rid", "_etag", "_ts", "_self", "email"} {
			assert.Equal(t, before[id][k], after[k], "%s of %s", k, id)
		}
	}
	_, err = c.ReadItem(e.ctx, p, "gone", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err), "a deleted document stays deleted")
	q := e.queryValues(c, "SELECT VALUE c.id FROM c", "q")
	assert.Equal(t, []any{"q1", "q2"}, q)

	// The change feed continues from a continuation taken before.
	_, err = c.CreateItem(e.ctx, p, []byte(`{"id":"new","pk":"p","email":"z"}`), nil)
	require.NoError(t, err)
	fed, _ = e.changeFeed("c", "p", cont)
	assert.Equal(t, []string{"new"}, fed, "after the restart, the old continuation yields only the new write")

	// ETags: the old one still matches; new ones are new.
	etagA := azcore.ETag(before["a"]["_etag"].(string))
	rep, err := c.ReplaceItem(e.ctx, p, "a", []byte(`{"id":"a","pk":"p","email":"x","n":1}`), &azcosmos.ItemOptions{IfMatchEtag: &etagA})
	require.NoError(t, err)
	assert.NotEqual(t, etagA, rep.ETag)
	assert.NotEqual(t, azcore.ETag(before["b"]["_etag"].(string)), rep.ETag)

	// The unique key policy, the TTL setting, the partitions and the
	// throughput survive.
	_, err = c.CreateItem(e.ctx, p, []byte(`{"id":"dup","pk":"p","email":"y"}`), nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))
	props, err := c.Read(e.ctx, nil)
	require.NoError(t, err)
	require.NotNil(t, props.ContainerProperties.DefaultTimeToLive)
	assert.Equal(t, int32(-1), *props.ContainerProperties.DefaultTimeToLive)
	got, err := srv.PartitionKeyRanges("db", "c")
	require.NoError(t, err)
	assert.Equal(t, ranges, got)
	status, _, _ = e.raw(http.MethodPost, "dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-partitionkeyrangeid": "0"})
	assert.Equal(t, http.StatusGone, status, "the range split before the restart stays gone")
	tp, err := db.ReadThroughput(e.ctx, nil)
	require.NoError(t, err)
	mt, ok := tp.ThroughputProperties.ManualThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(800), mt)
	status, _, _ = e.raw(http.MethodGet, "dbs/db/colls/c/sprocs/sp", nil, nil)
	assert.Equal(t, http.StatusOK, status)

	// New resources get new resource ids.
	c2 := e.container("c2", nil)
	props2, err := c2.Read(e.ctx, nil)
	require.NoError(t, err)
	assert.NotEqual(t, props.ContainerProperties.ResourceID, props2.ContainerProperties.ResourceID)
}

func TestDataDirRefusesADamagedSnapshot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, Options{DataDir: dir})
	e.container("c", nil)
	require.NoError(t, e.srv.Close())
	whole, err := os.ReadFile(filepath.Join(dir, stateFile))
	require.NoError(t, err)
	for name, damaged := range map[string][]byte{
		"truncated":  whole[:len(whole)-20],
		"not json":   []byte("garbage"),
		"no header":  whole[strings.Index(string(whole), "\n")+1:],
		"empty file": nil,
	} {
		bad := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(bad, stateFile), damaged, 0o600))
		_, err := Start(Options{DataDir: bad})
		assert.Error(t, err, name)
	}
}

func TestTLSCertificateFromOptions(t *testing.T) {
	t.Parallel()
	cert, key, err := GenerateCertificate()
	require.NoError(t, err)
	srv, err := Start(Options{TLS: true, TLSCertPEM: cert, TLSKeyPEM: key})
	require.NoError(t, err)
	defer srv.Close()
	assert.Equal(t, cert, srv.CertificatePEM())
	_, other, err := GenerateCertificate()
	require.NoError(t, err)
	_, err = Start(Options{TLS: true, TLSCertPEM: cert, TLSKeyPEM: other})
	assert.Error(t, err, "a key that does not match the certificate")
	_, err = Start(Options{TLS: true, TLSCertPEM: cert})
	assert.Error(t, err, "a certificate without its key")
}

// savedState100k fills a server with 100,000 provider-like documents
// (about 300 bytes of JSON each) and writes its snapshot.
func savedState100k(b *testing.B) *Server {
	e := newEnv(b, Options{DataDir: b.TempDir()})
	e.container("c", nil)
	c, err := e.srv.lookupContainer("db", "c")
	require.NoError(b, err)
	c.mu.Lock()
	for i := range 100_000 {
		body := fmt.Sprintf(`{"id":"doc-%d","pk":"instance-%d","type":"history","executionId":1,"eventId":%d,"eventData":{"type":"ActivityCompleted","name":"activity-%d","result":"%s"}}`, i, i%500, i, i%17, strings.Repeat("x", 120))
		d, resp := c.prepareDoc([]byte(body))
		require.Nil(b, resp)
		c.lsn++
		c.commit([]plan{{pkKey: d.pkKey, next: e.srv.newVersion(c, d, c.lsn)}}, c.lsn)
	}
	c.mu.Unlock()
	require.NoError(b, e.srv.compact())
	return e.srv
}

// BenchmarkSaveState measures one compaction (a snapshot) of 100,000
// documents: the locks are held only while it captures the state.
func BenchmarkSaveState(b *testing.B) {
	srv := savedState100k(b)
	for b.Loop() {
		require.NoError(b, srv.compact())
	}
	st, err := os.Stat(filepath.Join(srv.dur.dir, stateFile))
	require.NoError(b, err)
	b.ReportMetric(float64(st.Size())/1e6, "MB")
}

// BenchmarkLoadState measures a start that loads a snapshot of 100,000
// documents.
func BenchmarkLoadState(b *testing.B) {
	srv := savedState100k(b)
	dir := srv.dur.dir
	require.NoError(b, srv.Close())
	for b.Loop() {
		s2, err := Start(Options{DataDir: dir})
		require.NoError(b, err)
		b.StopTimer()
		require.NoError(b, s2.Close())
		b.StartTimer()
	}
}

// Compactions while documents, scripts and offers change (the log asks
// for one every few kilobytes here) stay loadable, and the snapshot Close
// writes holds every write.
func TestDataDirCompactsWhileWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newEnv(t, Options{DataDir: dir, compactBytes: 4 << 10})
	c := e.container("c", nil)
	db, err := e.client.NewDatabase("db")
	require.NoError(t, err)
	cc, err := db.NewContainer("c")
	require.NoError(t, err)
	offerErr := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 20 && err == nil; i++ {
			_, err = cc.ReplaceThroughput(e.ctx, azcosmos.NewManualThroughputProperties(int32(400+100*i)), nil)
		}
		offerErr <- err
	}()
	for i := range 200 {
		pk := azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%7))
		_, err := c.UpsertItem(e.ctx, pk, []byte(fmt.Sprintf(`{"id":"d%d","pk":"p%d","n":%d}`, i, i%7, i)), nil)
		require.NoError(t, err)
		if i%10 == 0 {
			status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/sprocs", []byte(fmt.Sprintf(`{"id":"sp%d","body":"function () {}"}`, i)), nil)
			require.Equal(t, http.StatusCreated, status, "%s", body)
		}
	}
	require.NoError(t, <-offerErr)
	assert.Positive(t, e.srv.PersistenceStats().Compactions, "the log asked for compactions")
	require.NoError(t, e.srv.Close())

	e2 := newEnv(t, Options{DataDir: dir})
	c2, err := e2.client.NewContainer("db", "c")
	require.NoError(t, err)
	n := 0
	for _, pk := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6"} {
		n += len(e2.queryValues(c2, "SELECT VALUE c.id FROM c", pk))
	}
	assert.Equal(t, 200, n)
	status, _, body := e2.raw(http.MethodGet, "dbs/db/colls/c/sprocs", nil, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, string(body), `"_count":20`)
	tp, err := c2.ReadThroughput(e2.ctx, nil)
	require.NoError(t, err)
	mt, ok := tp.ThroughputProperties.ManualThroughput()
	require.True(t, ok)
	assert.Equal(t, int32(2300), mt)
}

// A compaction that cannot be written is reported to PersistErrors and by
// Close, and retried.
func TestDataDirReportsCompactionFailures(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	errs := make(chan error, 100)
	e := newEnv(t, Options{DataDir: dir, compactBytes: 1, PersistErrors: func(err error) {
		select {
		case errs <- err:
		default:
		}
	}})
	require.NoError(t, os.RemoveAll(dir))
	e.container("c", nil)
	select {
	case err := <-errs:
		assert.ErrorContains(t, err, "compact")
	case <-time.After(time.Minute):
		t.Fatal("no snapshot failure reported")
	}
	assert.Error(t, e.srv.Close())
}
