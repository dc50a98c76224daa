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

func strPtr(s string) *string { return &s }

// doc returns a small document body for id in partition "p".
func doc(t *testing.T, id string) []byte {
	return mustJSON(t, map[string]any{"id": id, "pk": "p"})
}

func TestFaultTooManyRequestsIsRetriedBySDK(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	e.srv.ResetCounters()

	// Two 429s: the SDK waits x-ms-retry-after-ms and retries; the third try wins.
	e.srv.InjectFault(FaultRule{Op: OpCreateItem, Times: 2, Fault: TooManyRequests(10 * time.Millisecond)})
	start := time.Now()
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.Equal(t, int64(3), e.srv.Counters()[OpCreateItem].Requests)

	// Persistent throttling reaches the client as 429 once retries run out.
	remove := e.srv.InjectFault(FaultRule{Op: OpReadItem, Fault: TooManyRequests(time.Millisecond)})
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.Equal(t, http.StatusTooManyRequests, statusOf(err))
	assert.Equal(t, "3200", substatusOf(err))
	remove()
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.NoError(t, err)
}

func TestFaultStatusesReachTheClient(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.NoError(t, err)

	// Writes are never retried on 503, 408 or 500 (the outcome would be
	// ambiguous); the fault reaches the caller and nothing is written.
	for _, f := range []Fault{ServiceUnavailable(), RequestTimeout(), InternalServerError()} {
		e.srv.ResetCounters()
		e.srv.InjectFault(FaultRule{Op: OpCreateItem, Times: 1, Fault: f})
		_, err := c.CreateItem(e.ctx, pk, doc(t, "w-"+f.Kind.String()), nil)
		want := map[FaultKind]int{FaultServiceUnavailable: 503, FaultRequestTimeout: 408, FaultInternalServerError: 500}[f.Kind]
		assert.Equal(t, want, statusOf(err), f.Kind.String())
		assert.Equal(t, int64(1), e.srv.Counters()[OpCreateItem].Requests, f.Kind.String())
		_, err = c.ReadItem(e.ctx, pk, "w-"+f.Kind.String(), nil)
		assert.Equal(t, http.StatusNotFound, statusOf(err), "the faulted write was not applied")
	}

	// A single-region account has nowhere to fail over: reads see 503 too.
	e.srv.InjectFault(FaultRule{Op: OpReadItem, Times: 1, Fault: ServiceUnavailable()})
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err))

	// Reads are retried once on 500, so a single 500 is invisible.
	e.srv.ResetCounters()
	e.srv.InjectFault(FaultRule{Op: OpReadItem, Times: 1, Fault: InternalServerError()})
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.NoError(t, err)
	assert.Equal(t, int64(2), e.srv.Counters()[OpReadItem].Requests)
}

func TestFaultRequestTimeoutOnReadIsRetried(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.NoError(t, err)
	e.srv.ResetCounters()
	// The SDK retries a read after 408 once, after a one second back-off.
	e.srv.InjectFault(FaultRule{Op: OpReadItem, Times: 1, Fault: RequestTimeout()})
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.NoError(t, err)
	assert.Equal(t, int64(2), e.srv.Counters()[OpReadItem].Requests)
}

func TestFaultDelay(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	e.srv.InjectFault(FaultRule{Op: OpCreateItem, Times: 1, Fault: Delay(150 * time.Millisecond)})
	start := time.Now()
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	_, err = c.ReadItem(e.ctx, pk, "a", nil)
	assert.NoError(t, err)
}

func TestFaultDroppedConnections(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")

	// Dropped before applying: the write is lost and the caller gets an error.
	e.srv.InjectFault(FaultRule{Op: OpCreateItem, ItemID: strPtr("lost"), Times: 1, Fault: DropConnection()})
	_, err := c.CreateItem(e.ctx, pk, doc(t, "lost"), nil)
	require.Error(t, err)
	assert.Zero(t, statusOf(err), "no HTTP response: %v", err)
	_, err = c.ReadItem(e.ctx, pk, "lost", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	// Applied, then dropped: the caller gets an error but the write happened,
	// so retrying the create yields 409.
	e.srv.InjectFault(FaultRule{Op: OpCreateItem, ItemID: strPtr("ghost"), Times: 1, Fault: ApplyThenDrop()})
	_, err = c.CreateItem(e.ctx, pk, doc(t, "ghost"), nil)
	require.Error(t, err)
	assert.Zero(t, statusOf(err))
	_, err = c.ReadItem(e.ctx, pk, "ghost", nil)
	assert.NoError(t, err)
	_, err = c.CreateItem(e.ctx, pk, doc(t, "ghost"), nil)
	assert.Equal(t, http.StatusConflict, statusOf(err))

	// A transactional batch applied then dropped is all there.
	e.srv.InjectFault(FaultRule{Op: OpBatch, Times: 1, Fault: ApplyThenDrop()})
	b := c.NewTransactionalBatch(pk)
	b.CreateItem(doc(t, "b1"), nil)
	b.CreateItem(doc(t, "b2"), nil)
	_, err = c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.Error(t, err)
	for _, id := range []string{"b1", "b2"} {
		_, err = c.ReadItem(e.ctx, pk, id, nil)
		assert.NoError(t, err, id)
	}

	// A dropped read is retried by the SDK (it is safe to repeat).
	e.srv.ResetCounters()
	e.srv.InjectFault(FaultRule{Op: OpReadItem, Times: 1, Fault: DropConnection()})
	_, err = c.ReadItem(e.ctx, pk, "ghost", nil)
	assert.NoError(t, err)
	assert.Equal(t, int64(2), e.srv.Counters()[OpReadItem].Requests)
}

func TestFaultMatching(t *testing.T) {
	e := newEnv(t)
	c := e.container("f", nil)

	// Partition key as a plain string, as JSON text, or as the whole key.
	for i, pkText := range []string{"p", `"p"`, `["p"]`} {
		e.srv.ClearFaults()
		e.srv.InjectFault(FaultRule{PartitionKey: strPtr(pkText), Fault: ServiceUnavailable()})
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("p"), doc(t, fmt.Sprint("m", i)), nil)
		assert.Equal(t, http.StatusServiceUnavailable, statusOf(err), pkText)
		_, err = c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("other"), mustJSON(t, map[string]any{"id": fmt.Sprint("m", i), "pk": "other"}), nil)
		assert.NoError(t, err, pkText)
	}
	e.srv.ClearFaults()
	e.srv.InjectFault(FaultRule{PartitionKey: strPtr("42"), Fault: ServiceUnavailable()})
	_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyNumber(42), []byte(`{"id":"n","pk":42}`), nil)
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err))
	_, err = c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString("42"), []byte(`{"id":"n","pk":"42"}`), nil)
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err), "a plain-string rule also matches the string \"42\"")
	e.srv.ClearFaults()

	// Item id and operation kind.
	remove := e.srv.InjectFault(FaultRule{Op: OpReplaceItem, ItemID: strPtr("x"), Fault: ServiceUnavailable()})
	pk := azcosmos.NewPartitionKeyString("p")
	_, err = c.CreateItem(e.ctx, pk, doc(t, "x"), nil)
	require.NoError(t, err)
	_, err = c.ReplaceItem(e.ctx, pk, "x", doc(t, "x"), nil)
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err))
	_, err = c.CreateItem(e.ctx, pk, doc(t, "y"), nil)
	require.NoError(t, err)
	_, err = c.ReplaceItem(e.ctx, pk, "y", doc(t, "y"), nil)
	assert.NoError(t, err)
	remove()
	remove()
	_, err = c.ReplaceItem(e.ctx, pk, "x", doc(t, "x"), nil)
	assert.NoError(t, err)

	// Seeded probability: deterministic across servers.
	fired := func() []bool {
		srv, err := Start(Options{})
		require.NoError(t, err)
		defer srv.Close()
		srv.InjectFault(FaultRule{Op: OpAccount, Probability: 0.5, Seed: 7, Fault: ServiceUnavailable()})
		var out []bool
		for i := 0; i < 20; i++ {
			status, _, _ := rawRequest(t, srv, srv.Key(), http.MethodGet, "", nil, nil)
			out = append(out, status == http.StatusServiceUnavailable)
		}
		return out
	}
	a, b := fired(), fired()
	assert.Equal(t, a, b)
	n := 0
	for _, f := range a {
		if f {
			n++
		}
	}
	assert.Greater(t, n, 2)
	assert.Less(t, n, 18)
}

func TestFaultDropConnectionOverTLS(t *testing.T) {
	e := newEnv(t, Options{TLS: true})
	c := e.container("f", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	e.srv.InjectFault(FaultRule{Op: OpCreateItem, Times: 1, Fault: DropConnection()})
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.Error(t, err)
	assert.Zero(t, statusOf(err))
	_, err = c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	assert.NoError(t, err, "the dropped create was not applied")
}
