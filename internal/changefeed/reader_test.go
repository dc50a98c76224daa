package changefeed_test

import (
	"context"
	"encoding/json"
	"errors"
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
	return setupWith(t, emulator.Options{PhysicalPartitions: partitions})
}

// setupWith is setup on an emulator started with opts.
func setupWith(t *testing.T, opts emulator.Options) (*emulator.Server, *azcosmos.ContainerClient) {
	t.Helper()
	srv, err := emulator.Start(opts)
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

// startReader starts a reader with opts (Interval 5 ms unless set) and a
// goroutine that hands every page Next returns to col and every failure
// to onErr (when set), until the test ends.
func startReader(t *testing.T, c *azcosmos.ContainerClient, col *collector, onErr func(error), opts changefeed.Options) *changefeed.Reader {
	t.Helper()
	if opts.Interval == 0 {
		opts.Interval = 5 * time.Millisecond
	}
	r := changefeed.New(c, opts)
	require.NoError(t, r.Start(context.Background()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			docs, err := r.Next(context.Background())
			switch {
			case errors.Is(err, changefeed.ErrClosed):
				return
			case err != nil:
				if onErr != nil {
					onErr(err)
				}
			default:
				col.add(docs)
			}
		}
	}()
	t.Cleanup(func() { r.Close(); <-done })
	return r
}

// TestReaderDeliversWritesOfEveryRangeAndWakesSubscribers: documents
// written after Start, spread over three physical partitions, are all
// delivered, and a subscriber's channel closes once they were handled.
func TestReaderDeliversWritesOfEveryRangeAndWakesSubscribers(t *testing.T) {
	t.Parallel()
	// Strong: on a lagging store the first read, served by a replica
	// behind the writes just made, starts before them and delivers them
	// too (harmless: the reader's documents are hints; the provider's
	// client sends session tokens, which this raw client does not).
	_, c := setupWith(t, emulator.Options{PhysicalPartitions: 3, Consistency: emulator.ConsistencyStrong})
	write(t, c, 0, 5) // before Start: not delivered
	col := &collector{seen: map[string]int{}}
	r := startReader(t, c, col, nil, changefeed.Options{})
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

// TestReaderStartTakesThePositionInTwoReadsWhileOthersWrite: a reader
// started while another process writes to every range (documents of the
// current second in the first range it reads, so the SDK leaves the others
// unread) takes its position in at most two reads, instead of reading
// those ranges from the beginning and chasing the writes, and delivers
// every document written after Start returned.
func TestReaderStartTakesThePositionInTwoReadsWhileOthersWrite(t *testing.T) {
	t.Parallel()
	_, c := setupWith(t, emulator.Options{PhysicalPartitions: 4, Consistency: emulator.ConsistencyStrong})
	write(t, c, 0, 200)
	var written atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 200; i < 1000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id, pk := fmt.Sprintf("d%03d", i), fmt.Sprintf("k%d", i)
			if _, err := c.UpsertItem(context.Background(), azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":%q,"pk":%q}`, id, pk), nil); err != nil {
				return
			}
			written.Store(int64(i))
		}
	}()
	for written.Load() < 220 {
		time.Sleep(time.Millisecond)
	}
	r := changefeed.New(c, changefeed.Options{Interval: 5 * time.Millisecond})
	t.Cleanup(r.Close)
	require.NoError(t, r.Start(context.Background()))
	after := written.Load() + 1
	assert.LessOrEqual(t, r.Reads(), int64(2), "Start reads the feed at most twice")
	col := &collector{seen: map[string]int{}}
	go func() {
		for {
			docs, err := r.Next(context.Background())
			if errors.Is(err, changefeed.ErrClosed) {
				return
			}
			col.add(docs)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	<-stopped
	last := written.Load()
	require.Greater(t, last, after, "the writer wrote after Start")
	var ids []string
	for i := after + 1; i <= last; i++ {
		ids = append(ids, fmt.Sprintf("d%03d", i))
	}
	require.Eventually(t, func() bool { return col.has(ids...) }, 20*time.Second, 5*time.Millisecond)
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
	startReader(t, c, col, func(err error) { errMu.Lock(); errs = append(errs, err); errMu.Unlock() }, changefeed.Options{})
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

// TestReaderCloseStops: Close ends a waiting Next with ErrClosed, twice,
// no read follows it, and a reader never started closes too.
func TestReaderCloseStops(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 1)
	r := changefeed.New(c, changefeed.Options{})
	assert.False(t, r.Healthy(), "a reader not started is not healthy")
	r.Close()
	r = changefeed.New(c, changefeed.Options{})
	require.NoError(t, r.Start(context.Background()))
	assert.True(t, r.Healthy(), "a started reader whose reads succeed is healthy")
	done := make(chan error, 1)
	go func() {
		_, err := r.Next(context.Background())
		done <- err
	}()
	r.Close()
	r.Close()
	require.ErrorIs(t, <-done, changefeed.ErrClosed)
	_, err := r.Next(context.Background())
	require.ErrorIs(t, err, changefeed.ErrClosed)
	assert.False(t, r.Healthy(), "a closed reader is not healthy")
	reads := r.Reads()
	time.Sleep(3 * changefeed.DefaultInterval)
	assert.Equal(t, reads, r.Reads(), "no read after Close")
}

// TestReaderBacksOffWhenIdleAndResetsOnActive: an idle reader's pause
// grows past its interval (towards a cap of an hour); Active returns it
// to the interval and a read follows.
func TestReaderBacksOffWhenIdleAndResetsOnActive(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 1)
	col := &collector{seen: map[string]int{}}
	r := startReader(t, c, col, nil, changefeed.Options{Quiet: 20 * time.Millisecond, IdleRequestsPerSecond: 1.0 / 3600})
	require.Eventually(t, func() bool { return r.Pause() >= 320*time.Millisecond }, 20*time.Second, time.Millisecond, "the pause grows while idle")
	reads := r.Reads()
	r.Active()
	assert.Equal(t, 5*time.Millisecond, r.Pause(), "Active returns the pause to the interval")
	require.Eventually(t, func() bool { return r.Reads() > reads }, 20*time.Second, time.Millisecond, "a read follows Active")
	assert.True(t, r.Healthy())
}

// TestReaderStartsAtTheWarmPaceUntilActive: a reader just started has
// received nothing from other processes yet: it reads WarmFactor times
// its interval apart, not every interval, until Active.
func TestReaderStartsAtTheWarmPaceUntilActive(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 1)
	r := changefeed.New(c, changefeed.Options{Interval: 50 * time.Millisecond})
	t.Cleanup(r.Close)
	require.NoError(t, r.Start(context.Background()))
	assert.Equal(t, changefeed.WarmFactor*50*time.Millisecond, r.Pause(), "the warm pace from the start")
	r.Active()
	assert.Equal(t, 50*time.Millisecond, r.Pause(), "Active brings the interval")
}

// TestReaderDeliversAChangeAfterQuiet: documents written once the
// reader has backed off to its cap are delivered (nothing is skipped); a
// page its caller does not call activity leaves the reader at its cap,
// and Active then returns it to its interval.
func TestReaderDeliversAChangeAfterQuiet(t *testing.T) {
	t.Parallel()
	_, c := setup(t, 2)
	col := &collector{seen: map[string]int{}}
	// Two ranges at 10 requests per second: a cap of 200 ms.
	r := startReader(t, c, col, nil, changefeed.Options{Quiet: 20 * time.Millisecond, IdleRequestsPerSecond: 10})
	require.Eventually(t, func() bool { return r.Pause() == 200*time.Millisecond }, 20*time.Second, time.Millisecond, "the pause reaches the cap")
	changed := r.Changed()
	ids := write(t, c, 0, 10)
	require.Eventually(t, func() bool { return col.has(ids...) }, 20*time.Second, time.Millisecond)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the subscriber was not woken")
	}
	assert.Equal(t, 200*time.Millisecond, r.Pause(), "pages nobody called activity: still backed off")
	r.Active()
	assert.Equal(t, 5*time.Millisecond, r.Pause())
	more := write(t, c, 10, 20)
	require.Eventually(t, func() bool { return col.has(more...) }, 20*time.Second, time.Millisecond)
}

// TestScheduleKeepsTheIntervalWhileWarmThenWarmFactorThenQuadruplesUpToTheCap:
// the pacing as a pure function.
func TestScheduleKeepsTheIntervalWhileWarmThenWarmFactorThenQuadruplesUpToTheCap(t *testing.T) {
	t.Parallel()
	s := changefeed.Schedule{Interval: 80 * time.Millisecond, Warm: 200 * time.Millisecond, Quiet: time.Second, Max: 4 * time.Second}
	assert.Equal(t, 80*time.Millisecond, s.Pause(199*time.Millisecond, 80*time.Millisecond), "within Warm: the interval")
	assert.Equal(t, 80*time.Millisecond, s.Pause(100*time.Millisecond, 2*time.Second), "within Warm after Active: the interval")
	assert.Equal(t, 320*time.Millisecond, s.Pause(200*time.Millisecond, 80*time.Millisecond), "past Warm: WarmFactor times the interval")
	assert.Equal(t, 320*time.Millisecond, s.Pause(999*time.Millisecond, 320*time.Millisecond), "within Quiet: it stays there")
	assert.Equal(t, 1280*time.Millisecond, s.Pause(time.Second, 320*time.Millisecond), "past Quiet: four times the last pause")
	assert.Equal(t, 4*time.Second, s.Pause(3*time.Second, 1280*time.Millisecond), "capped")
	assert.Equal(t, 4*time.Second, s.Pause(time.Hour, 4*time.Second))
	assert.Equal(t, 80*time.Millisecond, s.Pause(2*time.Second, 0), "never under the interval")
	small := changefeed.Schedule{Interval: 80 * time.Millisecond, Warm: 200 * time.Millisecond, Quiet: time.Second, Max: 100 * time.Millisecond}
	assert.Equal(t, 100*time.Millisecond, small.Pause(500*time.Millisecond, 80*time.Millisecond), "the warm pause stays under the cap")
}

// TestMaxPauseIsASecondAndAQuarterPerRangeAtTheDefaultBudget: the cap
// grows with the physical partitions an idle read costs, never below the
// interval.
func TestMaxPauseIsASecondAndAQuarterPerRangeAtTheDefaultBudget(t *testing.T) {
	t.Parallel()
	for ranges, want := range map[int]time.Duration{0: 1250 * time.Millisecond, 1: 1250 * time.Millisecond, 4: 5 * time.Second, 10: 12500 * time.Millisecond} {
		assert.Equal(t, want, changefeed.MaxPause(changefeed.DefaultInterval, ranges, changefeed.DefaultIdleRequestsPerSecond), "%d ranges", ranges)
	}
	assert.Equal(t, changefeed.DefaultInterval, changefeed.MaxPause(changefeed.DefaultInterval, 1, 1000))
}

// TestScheduleMakesAnIdleReaderCheapAfterTenSeconds simulates, with a
// virtual clock, a reader that finds nothing from time 0 (the last
// change) with the default options, for 1, 4 and 10 physical partitions
// (requests per empty read): from 10 s on its reads cost at most 1
// request per second over any window of 20 s (issue 26's target is 2 for
// the whole process, which leaves room for the heartbeat and the safety
// queries), and from a minute on DefaultIdleRequestsPerSecond on average;
// and the
// longest pause, the first wake-up's delay after quiet, is the cap,
// 1.25 s per partition.
func TestScheduleMakesAnIdleReaderCheapAfterTenSeconds(t *testing.T) {
	t.Parallel()
	for _, ranges := range []int{1, 4, 10} {
		s := changefeed.Schedule{Interval: changefeed.DefaultInterval, Warm: changefeed.DefaultWarm, Quiet: changefeed.DefaultQuiet,
			Max: changefeed.MaxPause(changefeed.DefaultInterval, ranges, changefeed.DefaultIdleRequestsPerSecond)}
		var reads []time.Duration // start times
		var now, pause, longest time.Duration
		const horizon = 20 * time.Minute
		for now < horizon {
			reads = append(reads, now)
			pause = s.Pause(now, pause)
			longest = max(longest, pause)
			now += pause
		}
		const window = 20 * time.Second
		for from := 10 * time.Second; from+window <= horizon; from += 100 * time.Millisecond {
			n := 0
			for _, at := range reads {
				if at >= from && at < from+window {
					n++
				}
			}
			perSecond := float64(n*ranges) / window.Seconds()
			if !assert.LessOrEqual(t, perSecond, 1.0, "%d ranges, window from %v", ranges, from) {
				break
			}
		}
		n := 0
		for _, at := range reads {
			if at >= time.Minute {
				n++
			}
		}
		assert.LessOrEqual(t, float64(n*ranges)/(horizon-time.Minute).Seconds(), changefeed.DefaultIdleRequestsPerSecond+0.02, "%d ranges, from a minute on", ranges)
		assert.Equal(t, time.Duration(ranges)*1250*time.Millisecond, longest, "%d ranges", ranges)
	}
}
