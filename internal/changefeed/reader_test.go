package changefeed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
)

// setup starts an emulator with partitions physical partitions and returns
// it with a container client on a fresh container "c" partitioned by /pk.
func setup(t *testing.T, partitions int) (*emulator.Server, *azcosmos.ContainerClient) {
	t.Helper()
	srv, err := emulator.Start(emulator.Options{PhysicalPartitions: partitions})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cred, err := azcosmos.NewKeyCredential(srv.Key())
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: srv.HTTPClient(), Retry: policy.RetryOptions{MaxRetries: -1},
	}})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("c")
	require.NoError(t, err)
	return srv, c
}

// collector records the ids the reader delivers.
type collector struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *collector) add(docs [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, raw := range docs {
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &d) == nil {
			c.seen[d.ID]++
		}
	}
}

func (c *collector) has(ids ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.seen[id] == 0 {
			return false
		}
	}
	return true
}

func write(t *testing.T, c *azcosmos.ContainerClient, from, to int) []string {
	t.Helper()
	var ids []string
	for i := from; i < to; i++ {
		id := fmt.Sprintf("d%03d", i)
		pk := fmt.Sprintf("k%d", i)
		_, err := c.UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q}`, id, pk), nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func startReader(t *testing.T, c *azcosmos.ContainerClient, col *collector, onErr func(error)) *changefeed.Reader {
	t.Helper()
	r := changefeed.New(c, changefeed.Options{Interval: 5 * time.Millisecond, OnDocuments: col.add, OnError: onErr})
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Close)
	return r
}

// TestReaderDeliversWritesOfEveryRangeAndWakesSubscribers: documents
// written after Start, spread over three physical partitions, are all
// delivered, and a subscriber's channel closes.
func TestReaderDeliversWritesOfEveryRangeAndWakesSubscribers(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 3)
	write(t, c, 0, 5) // before Start: not delivered
	col := &collector{seen: map[string]int{}}
	r := startReader(t, c, col, nil)
	changed := r.Changed()
	ids := write(t, c, 5, 65)
	require.Eventually(t, func() bool { return col.has(ids...) }, 20*time.Second, 5*time.Millisecond)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the subscriber was not woken")
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for i := 0; i < 5; i++ {
		assert.Zero(t, col.seen[fmt.Sprintf("d%03d", i)], "documents written before Start are not delivered")
	}
}

// TestReaderFollowsSplitAndThrottling: a range splits while the reader
// holds a continuation on it, then change feed reads are throttled for a
// while: every document written before, between and after is delivered.
func TestReaderFollowsSplitAndThrottling(t *testing.T) {
	t.Parallel()
	srv, c := setup(t, 2)
	col := &collector{seen: map[string]int{}}
	var errMu sync.Mutex
	var errs []error
	startReader(t, c, col, func(err error) { errMu.Lock(); errs = append(errs, err); errMu.Unlock() })
	first := write(t, c, 0, 20)
	require.Eventually(t, func() bool { return col.has(first...) }, 20*time.Second, 5*time.Millisecond)

	_, err := srv.SplitPartitionKeyRange("db", "c", "0")
	require.NoError(t, err)
	second := write(t, c, 20, 40)
	require.Eventually(t, func() bool { return col.has(second...) }, 20*time.Second, 5*time.Millisecond)

	remove := srv.InjectFault(emulator.FaultRule{Op: emulator.OpChangeFeed, Times: 5, Fault: emulator.TooManyRequests(10 * time.Millisecond)})
	defer remove()
	third := write(t, c, 40, 60)
	require.Eventually(t, func() bool { return col.has(third...) }, 20*time.Second, 5*time.Millisecond)
	errMu.Lock()
	defer errMu.Unlock()
	assert.NotEmpty(t, errs, "the throttled reads were reported")
}

// TestReaderCloseStops: Close returns after the goroutine ended, twice,
// and a reader never started closes too.
func TestReaderCloseStops(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 1)
	r := changefeed.New(c, changefeed.Options{})
	assert.False(t, r.Healthy(), "a reader not started is not healthy")
	r.Close()
	r = changefeed.New(c, changefeed.Options{})
	require.NoError(t, r.Start(context.Background()))
	assert.True(t, r.Healthy(), "a started reader whose reads succeed is healthy")
	r.Close()
	r.Close()
	assert.False(t, r.Healthy(), "a closed reader is not healthy")
	reads := r.Reads()
	time.Sleep(3 * changefeed.DefaultInterval)
	assert.Equal(t, reads, r.Reads(), "no read after Close")
}

// TestReaderStretchLengthensThePauseAfterAnEmptyRead: with Stretch asking
// for 1,000 intervals, the reader makes its first read after Start (empty)
// and then waits, where an unstretched reader at the same 5 ms interval
// reads dozens of times in the same 300 ms.
func TestReaderStretchLengthensThePauseAfterAnEmptyRead(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 1)
	var asked atomic.Int64
	r := changefeed.New(c, changefeed.Options{Interval: 5 * time.Millisecond, Stretch: func() float64 { asked.Add(1); return 1000 }})
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Close)
	require.Eventually(t, func() bool { return asked.Load() == 1 }, 10*time.Second, time.Millisecond, "the first empty read asks for the stretch")
	reads := r.Reads()
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, reads, r.Reads(), "no read during the stretched pause")
	assert.Equal(t, int64(1), asked.Load())
}
