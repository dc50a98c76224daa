package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// laggingEnv starts an emulator at the given level whose secondaries trail
// by up to lag on a clock the test moves, and a container "c" in it.
func laggingEnv(t *testing.T, level Consistency, lag time.Duration, partitions int) (*env, *manualClock, *azcosmos.ContainerClient) {
	t.Helper()
	clk := newManualClock()
	e := newEnv(t, Options{Consistency: level, ReplicaLag: lag, PhysicalPartitions: partitions, clock: clk.now})
	return e, clk, e.container("c", nil)
}

// createP creates the document body in partition "p" of c.
func createP(t *testing.T, e *env, c *azcosmos.ContainerClient, body string) azcosmos.ItemResponse {
	t.Helper()
	r, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("p"), []byte(body), nil)
	require.NoError(t, err)
	return r
}

// frozenWithA starts an emulator at level whose secondaries never apply a
// write (an hour's lag on a clock that stands still), creates document a
// {"n": 1} in partition "p" of its container and returns the write's
// session token.
func frozenWithA(t *testing.T, level Consistency) (*env, *azcosmos.ContainerClient, azcosmos.PartitionKey, string) {
	t.Helper()
	e, _, c := laggingEnv(t, level, time.Hour, 1)
	created := createP(t, e, c, `{"id":"a","pk":"p","n":1}`)
	return e, c, azcosmos.NewPartitionKeyString("p"), sessionOf(t, created)
}

// sessionOf returns an item response's session token.
func sessionOf(t *testing.T, r azcosmos.ItemResponse) string {
	t.Helper()
	require.NotNil(t, r.SessionToken)
	return *r.SessionToken
}

var sessionTokenFormat = regexp.MustCompile(`^[0-9]+:-1#[0-9]+$`)

func TestLaggingReadsSeeConsistentPrefixesAndNeverAWriteOutOfOrder(t *testing.T) {
	t.Parallel()
	// Each step i creates log-i, then sets counter to i, 1 ms apart; the
	// secondaries trail by up to 100 ms, so each sees a prefix.
	e, clk, c := laggingEnv(t, ConsistencySession, 100*time.Millisecond, 1)
	pk := azcosmos.NewPartitionKeyString("p")
	const steps = 40
	for i := 1; i <= steps; i++ {
		_, err := c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprintf("log-%d", i), "pk": "p"}), nil)
		require.NoError(t, err)
		_, err = c.UpsertItem(e.ctx, pk, mustJSON(t, map[string]any{"id": "counter", "pk": "p", "n": i}), nil)
		require.NoError(t, err)
		clk.advance(time.Millisecond)
	}
	// checkPrefix asserts that docs are the state after some step m, or
	// between its two writes, and returns m.
	checkPrefix := func(docs []map[string]any) int {
		t.Helper()
		n := 0
		var logs []int
		for _, d := range docs {
			id := d["id"].(string)
			if id == "counter" {
				n = int(d["n"].(float64))
				continue
			}
			i, err := strconv.Atoi(id[len("log-"):])
			require.NoError(t, err)
			logs = append(logs, i)
		}
		sort.Ints(logs)
		for j, i := range logs {
			require.Equal(t, j+1, i, "the logs seen are not a prefix: %v", logs)
		}
		m := len(logs)
		require.Contains(t, []int{m - 1, m}, n, "counter %d with logs 1..%d", n, m)
		return m
	}
	seen := map[int]bool{}
	for range 40 {
		rows, _, err := queryAll(e.ctx, c, "SELECT * FROM c", pk, nil)
		require.NoError(t, err)
		var docs []map[string]any
		for _, r := range rows {
			docs = append(docs, decodeMap(t, r))
		}
		seen[checkPrefix(docs)] = true

		status, _, body := e.raw(http.MethodGet, "dbs/db/colls/c/docs", nil, map[string]string{
			"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkey": `["p"]`})
		if status == http.StatusNotModified {
			seen[checkPrefix(nil)] = true
			continue
		}
		require.Equal(t, http.StatusOK, status, string(body))
		var feed struct{ Documents []map[string]any }
		require.NoError(t, json.Unmarshal(body, &feed))
		var prev float64
		for _, d := range feed.Documents {
			require.Greater(t, d["_lsn"].(float64), prev, "change feed out of LSN order")
			prev = d["_lsn"].(float64)
		}
		seen[checkPrefix(feed.Documents)] = true
	}
	assert.Greater(t, len(seen), 1, "every read saw the same state: no replica lagged")

	// Once the slowest replica's lag has passed, every read sees everything.
	clk.advance(100 * time.Millisecond)
	for range 20 {
		rows, _, err := queryAll(e.ctx, c, "SELECT * FROM c", pk, nil)
		require.NoError(t, err)
		require.Len(t, rows, steps+1)
	}
}

func TestSessionTokenMakesReadsSeeTheWrite(t *testing.T) {
	t.Parallel()
	e, c, pk, token := frozenWithA(t, ConsistencySession)
	assert.Regexp(t, sessionTokenFormat, token)

	for range 20 {
		r, err := c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &token})
		require.NoError(t, err)
		assert.Regexp(t, sessionTokenFormat, sessionOf(t, r))
		rows, _, err := queryAll(e.ctx, c, "SELECT * FROM c", pk, &azcosmos.QueryOptions{SessionToken: &token})
		require.NoError(t, err)
		require.Len(t, rows, 1)
	}
	// Without it, some reads go to a secondary that has not seen it (each
	// of 40 reads does with probability 3/4).
	missing := 0
	for range 40 {
		_, err := c.ReadItem(e.ctx, pk, "a", nil)
		if statusOf(err) == http.StatusNotFound {
			missing++
		} else {
			require.NoError(t, err)
		}
	}
	assert.Positive(t, missing)

	replaced, err := c.ReplaceItem(e.ctx, pk, "a", []byte(`{"id":"a","pk":"p","n":2}`), nil)
	require.NoError(t, err)
	token2 := sessionOf(t, replaced)
	for range 20 {
		r, err := c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &token2})
		require.NoError(t, err)
		assert.EqualValues(t, 2, decodeMap(t, r.Value)["n"])
	}
}

func TestReadAheadOfEveryReplicaIsReadSessionNotAvailable(t *testing.T) {
	t.Parallel()
	e, c, pk, _ := frozenWithA(t, ConsistencySession)
	var err error
	for _, token := range []string{"0:-1#1000", "0:1000", "0:-1#1000#1=1000", "5:-1#1,0:-1#1000"} {
		_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &token})
		assert.Equal(t, http.StatusNotFound, statusOf(err), token)
		assert.Equal(t, "1002", substatusOf(err), token)
		_, _, err = queryAll(e.ctx, c, "SELECT * FROM c", pk, &azcosmos.QueryOptions{SessionToken: &token})
		assert.Equal(t, "1002", substatusOf(err), token)
	}
	// A token of another range does not hold this one back.
	other := "7:-1#1000"
	_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &other})
	assert.True(t, err == nil || statusOf(err) == http.StatusNotFound, "%v", err)
	assert.NotEqual(t, "1002", substatusOf(err))

	status, _, _ := e.raw(http.MethodGet, "dbs/db/colls/c/docs/a", nil, map[string]string{
		"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-session-token": "not a token"})
	assert.Equal(t, http.StatusBadRequest, status)
}

func TestWritesAndTheirConditionsAreDecidedAtThePrimary(t *testing.T) {
	t.Parallel()
	e, _, c := laggingEnv(t, ConsistencyEventual, time.Hour, 1)
	pk := azcosmos.NewPartitionKeyString("p")
	created := createP(t, e, c, `{"id":"a","pk":"p","n":1}`)
	// No secondary has a, yet the primary refuses a second create.
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p"}`), nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))
	replaced, err := c.ReplaceItem(e.ctx, pk, "a", []byte(`{"id":"a","pk":"p","n":2}`), &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	require.NoError(t, err)
	_, err = c.ReplaceItem(e.ctx, pk, "a", []byte(`{"id":"a","pk":"p","n":3}`), &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err))
	_, err = c.PatchItem(e.ctx, pk, "a", func() azcosmos.PatchOperations {
		var p azcosmos.PatchOperations
		p.AppendIncrement("/n", 1)
		p.SetCondition("FROM c WHERE c.n = 2")
		return p
	}(), nil)
	require.NoError(t, err)

	b := c.NewTransactionalBatch(pk)
	b.ReadItem("a", nil)
	b.ReplaceItem("a", []byte(`{"id":"a","pk":"p","n":10}`), &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &replaced.ETag})
	res, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	assert.False(t, res.Success, "the patch changed the ETag at the primary")
	b = c.NewTransactionalBatch(pk)
	b.ReadItem("a", nil)
	b.DeleteItem("a", nil)
	b.CreateItem([]byte(`{"id":"b","pk":"p"}`), nil)
	res, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	require.True(t, res.Success)
	assert.EqualValues(t, 3, decodeMap(t, res.OperationResults[0].ResourceBody)["n"], "the batch read the primary")
	_, err = c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p","n":1}`), nil)
	require.NoError(t, err, "a was deleted at the primary")
}

func TestConsistencyHeaderMayOnlyWeakenTheAccountLevel(t *testing.T) {
	t.Parallel()
	e, c, pk, token := frozenWithA(t, ConsistencySession)
	var err error
	for _, level := range []azcosmos.ConsistencyLevel{azcosmos.ConsistencyLevelStrong, azcosmos.ConsistencyLevelBoundedStaleness} {
		_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{ConsistencyLevel: level.ToPtr(), SessionToken: &token})
		assert.Equal(t, http.StatusBadRequest, statusOf(err), level)
	}
	for _, level := range []azcosmos.ConsistencyLevel{azcosmos.ConsistencyLevelSession, azcosmos.ConsistencyLevelConsistentPrefix, azcosmos.ConsistencyLevelEventual} {
		_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{ConsistencyLevel: level.ToPtr(), SessionToken: &token})
		assert.NoError(t, err, level)
	}
	status, _, _ := e.raw(http.MethodGet, "dbs/db/colls/c/docs/a", nil, map[string]string{
		"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-consistency-level": "Bogus"})
	assert.Equal(t, http.StatusBadRequest, status)

	// A Strong account reads the primary, unless the request weakens it.
	s, sc, _, _ := frozenWithA(t, ConsistencyStrong)
	missing := 0
	for range 40 {
		_, err := sc.ReadItem(s.ctx, pk, "a", nil)
		require.NoError(t, err)
		_, err = sc.ReadItem(s.ctx, pk, "a", &azcosmos.ItemOptions{ConsistencyLevel: azcosmos.ConsistencyLevelEventual.ToPtr()})
		if statusOf(err) == http.StatusNotFound {
			missing++
		} else {
			require.NoError(t, err)
		}
	}
	assert.Positive(t, missing)
}

func TestSplitChildrenInheritTheParentSession(t *testing.T) {
	t.Parallel()
	e, c, pk, token := frozenWithA(t, ConsistencySession)
	require.Regexp(t, `^0:`, token)
	children, err := e.srv.SplitPartitionKeyRange("db", "c", "0")
	require.NoError(t, err)
	for range 20 {
		r, err := c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &token})
		require.NoError(t, err, "the parent's token holds on its children")
		got := sessionOf(t, r)
		id, _, _ := strings.Cut(got, ":")
		assert.Contains(t, children[:], id, got)
		assert.Regexp(t, sessionTokenFormat, got)
	}
	ahead := "0:-1#1000"
	_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{SessionToken: &ahead})
	assert.Equal(t, "1002", substatusOf(err))
}

func TestCrossPartitionQueryNamesEveryRangeInItsSessionToken(t *testing.T) {
	t.Parallel()
	e, _, c := laggingEnv(t, ConsistencySession, time.Hour, 3)
	for i := range 10 {
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(fmt.Sprint(i)), mustJSON(t, map[string]any{"id": "a", "pk": fmt.Sprint(i)}), nil)
		require.NoError(t, err)
	}
	status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "true", "x-ms-consistency-level": "Strong"})
	assert.Equal(t, http.StatusBadRequest, status, string(body))
	status, h, body := e.raw(http.MethodPost, "dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
		"x-ms-documentdb-query-enablecrosspartition": "true"})
	require.Equal(t, http.StatusOK, status, string(body))
	assert.Regexp(t, `^0:-1#[0-9]+,1:-1#[0-9]+,2:-1#[0-9]+$`, h.Get("x-ms-session-token"))
	assert.NotEmpty(t, h.Get("x-ms-content-path"))
	assert.Equal(t, "dbs/db/colls/c", h.Get("x-ms-alt-content-path"))
}

func TestReplicaLogKeepsOnlyTheWritesOfTheLastLag(t *testing.T) {
	t.Parallel()
	e, clk, c := laggingEnv(t, ConsistencySession, 10*time.Millisecond, 1)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 100 {
		_, err := c.UpsertItem(e.ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprint(i % 7), "pk": "p"}), nil)
		require.NoError(t, err)
	}
	cont, err := e.srv.lookupContainer("db", "c")
	require.NoError(t, err)
	pending := func() int {
		cont.mu.RLock()
		defer cont.mu.RUnlock()
		return len(cont.wlog) - cont.wlogHead
	}
	assert.Equal(t, 100, pending())
	clk.advance(11 * time.Millisecond)
	_, err = c.UpsertItem(e.ctx, pk, []byte(`{"id":"x","pk":"p"}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, pending())
}

// Not parallel: it clears EnvReplicaLag, which a zero ReplicaLag defers to.
func TestNoLagKeepsNoReplicaLog(t *testing.T) {
	t.Setenv(EnvReplicaLag, "")
	e, _, c := laggingEnv(t, ConsistencySession, 0, 1)
	pk := azcosmos.NewPartitionKeyString("p")
	created := createP(t, e, c, `{"id":"a","pk":"p"}`)
	for range 10 {
		_, err := c.ReadItem(e.ctx, pk, "a", nil)
		require.NoError(t, err)
	}
	cont, err := e.srv.lookupContainer("db", "c")
	require.NoError(t, err)
	assert.Empty(t, cont.wlog)
	assert.Regexp(t, sessionTokenFormat, sessionOf(t, created))
}

func TestAccountReportsTheConsistencyLevel(t *testing.T) {
	t.Parallel()
	for _, level := range []Consistency{ConsistencyStrong, ConsistencySession, ConsistencyEventual} {
		e := newEnv(t, Options{Consistency: level})
		status, _, body := e.raw(http.MethodGet, "", nil, nil)
		require.Equal(t, http.StatusOK, status)
		var acct struct {
			UserConsistencyPolicy struct{ DefaultConsistencyLevel string }
		}
		require.NoError(t, json.Unmarshal(body, &acct))
		assert.Equal(t, string(level), acct.UserConsistencyPolicy.DefaultConsistencyLevel)
	}
	// Spelt as ParseConsistency takes it: the account and its reads use
	// the service's name (a read asking for Session is not "stronger"
	// than the account).
	e := newEnv(t, Options{Consistency: "session"})
	assert.Equal(t, ConsistencySession, e.srv.consistency)
	c := e.container("c", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, []byte(`{"id":"a","pk":"p"}`), nil)
	require.NoError(t, err)
	_, err = c.ReadItem(e.ctx, pk, "a", &azcosmos.ItemOptions{ConsistencyLevel: azcosmos.ConsistencyLevelSession.ToPtr()})
	require.NoError(t, err)

	_, err = Start(Options{Consistency: "Linearizable"})
	assert.Error(t, err)
	_, err = Start(Options{ReplicaLag: -time.Second})
	assert.Error(t, err)
}

// Not parallel: it sets environment variables.
func TestStartTakesConsistencyAndLagFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvConsistency, "consistent-prefix")
	t.Setenv(EnvReplicaLag, "20ms")
	srv, err := Start(Options{})
	require.NoError(t, err)
	defer srv.Close()
	assert.Equal(t, ConsistencyConsistentPrefix, srv.consistency)
	assert.Equal(t, 20*time.Millisecond, srv.replicas.lag)

	// Options win over the environment.
	srv2, err := Start(Options{Consistency: ConsistencyStrong, ReplicaLag: time.Second})
	require.NoError(t, err)
	defer srv2.Close()
	assert.Equal(t, ConsistencyStrong, srv2.consistency)
	assert.Equal(t, time.Second, srv2.replicas.lag)

	t.Setenv(EnvReplicaLag, "soon")
	_, err = Start(Options{})
	assert.ErrorContains(t, err, EnvReplicaLag)
	t.Setenv(EnvReplicaLag, "")
	t.Setenv(EnvConsistency, "linearizable")
	_, err = Start(Options{})
	assert.ErrorContains(t, err, EnvConsistency)

	t.Setenv(EnvConsistency, "")
	srv3, err := Start(Options{})
	require.NoError(t, err)
	defer srv3.Close()
	assert.Equal(t, ConsistencyStrong, srv3.consistency, "the default")
	assert.Zero(t, srv3.replicas.lag)
}

func TestParseConsistency(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Consistency{
		"strong": ConsistencyStrong, "BoundedStaleness": ConsistencyBoundedStaleness, "bounded-staleness": ConsistencyBoundedStaleness,
		"SESSION": ConsistencySession, "consistent_prefix": ConsistencyConsistentPrefix, "eventual": ConsistencyEventual,
	} {
		got, err := ParseConsistency(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseConsistency("")
	assert.Error(t, err)
}

func TestLaggingQueriesKeepRidOrder(t *testing.T) {
	t.Parallel()
	e, clk, c := laggingEnv(t, ConsistencySession, time.Minute, 1)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := 1; i <= 6; i++ {
		createP(t, e, c, fmt.Sprintf(`{"id":"d%d","pk":"p","v":1}`, i))
	}
	clk.advance(time.Minute) // every replica has the six documents
	for _, id := range []string{"d2", "d5"} {
		_, err := c.ReplaceItem(e.ctx, pk, id, mustJSON(t, map[string]any{"id": id, "pk": "p", "v": 2}), nil)
		require.NoError(t, err)
	}
	_, err := c.DeleteItem(e.ctx, pk, "d4", nil)
	require.NoError(t, err)
	stale := 0
	for range 40 {
		rows, _, err := queryAll(e.ctx, c, "SELECT * FROM c", pk, nil)
		require.NoError(t, err)
		var ids []string
		for _, r := range rows {
			ids = append(ids, decodeMap(t, r)["id"].(string))
		}
		if len(ids) == 6 {
			stale++
			assert.Equal(t, []string{"d1", "d2", "d3", "d4", "d5", "d6"}, ids)
		} else {
			assert.Equal(t, []string{"d1", "d2", "d3", "d5", "d6"}, ids)
		}
	}
	assert.Positive(t, stale)
}

// TestALagWithoutALevelMakesTheAccountSession: a replica lag asked for
// without a consistency level (Options or the environment) gives a
// Session account, whose reads see the lag; an explicit level still wins.
func TestALagWithoutALevelMakesTheAccountSession(t *testing.T) {
	t.Setenv(EnvConsistency, "")
	t.Setenv(EnvReplicaLag, "20ms")
	srv, err := Start(Options{})
	require.NoError(t, err)
	defer srv.Close()
	assert.Equal(t, ConsistencySession, srv.consistency)

	t.Setenv(EnvReplicaLag, "")
	srv2, err := Start(Options{ReplicaLag: time.Second})
	require.NoError(t, err)
	defer srv2.Close()
	assert.Equal(t, ConsistencySession, srv2.consistency)

	srv3, err := Start(Options{ReplicaLag: time.Second, Consistency: ConsistencyEventual})
	require.NoError(t, err)
	defer srv3.Close()
	assert.Equal(t, ConsistencyEventual, srv3.consistency)
}
