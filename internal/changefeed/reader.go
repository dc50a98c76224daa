// Package changefeed follows a Cosmos DB container's change feed (latest
// version mode) with one reader per process, so that the process learns of
// documents other processes wrote without querying for them, and paces
// that reading so that an idle process's reads cost 0.8 requests per
// second whatever the number of physical partitions: the change-feed wake-ups and
// their idle pacing, as one concept.
//
// # Reading
//
// One Reader reads the whole container through azcosmos's ReadChangeFeed
// with the feed range ["", "FF"): the SDK keeps one continuation per
// physical partition (its composite continuation token), follows splits
// (410 Gone with substatus 1002: it refreshes its routing map and goes on
// with the children, which inherit the parent's continuation) and reads
// every range before it answers "nothing new". A read that finds nothing
// costs one request per physical partition; one that finds changes stops
// at the first range that has some (one request or more). Its caller pulls
// the changes with Next, in one goroutine, and hands nothing to the Reader:
// Next returns a page of changed documents (JSON, with system properties)
// and, when called again, first wakes the subscribers of Changed, since the
// page has then been handled. Throttling (429) makes the next read wait
// x-ms-retry-after-ms (at least Interval); any failure is returned by Next
// and the next read starts from the same continuation, so no change is
// skipped. Every change is delivered at least once: a document changed
// several times between two reads is delivered once, at its latest version
// (latest version mode).
//
// # Pacing: base, warm and idle
//
// Reads start every Interval (80 ms by default) while the reader's caller
// reports activity (from Start until the first activity they are
// WarmFactor × Interval apart: a process just started has received
// nothing from the others yet); a full page of changes (pageSize documents) is
// followed at once by the next read, until the backlog is drained. The
// caller reports activity with Active: the provider calls it for what
// concerns this process and comes from another one (a page with a queue
// message, new to it, in a dispatch slot it queries; a copy of an
// instance document a client of this process waits on), and for each of
// its own queue writes to a slot another process serves (whose answer
// comes back through the feed). Other processes' traffic among
// themselves, and a process's own traffic in its own slots, is not
// activity: a busy process that exchanges nothing with the others needs
// no wake-up from the feed. Once Warm has passed without an Active call
// (1 s by default), reads start every WarmFactor × Interval (320 ms),
// capped at the idle cap; once Quiet has passed (5 s by default), each
// read that finds nothing quadruples the pause, up to the cap: the pause
// at which an idle read's requests (one per physical partition) come to
// IdleRequestsPerSecond (0.8 by default), that is 1.25 s per physical
// partition, never less than Interval (Schedule is this rule as a pure
// function; a page of changes the caller does not call activity counts as
// a read that found nothing). Active returns the pause to Interval at
// once: a reader waiting out a long pause reads at most Interval after its
// last read began.
//
// What that costs and what it delays, with the defaults: a process that
// receives work from others reads every 80 ms; one that has received
// none for a second every 320 ms (one request per read while the feed has
// changes, one per physical partition when it has none); an idle one
// reaches the cap after about 5.3 s of quiet with one physical partition
// (80 ms pauses for 1 s, 320 ms pauses to 5 s, then 1.25 s), 6.3 s with 4
// (then 1.28 s and 5 s) and 11.4 s with 10 (1.28 s, 5.12 s, then
// 12.5 s), and from then on its reads make 0.8 requests per second (the lease heartbeat, 0.4, and the
// waiting fetches' safety queries, 0.1 per lease view, come on top: 1.6
// for a provider with two orchestration and two worker dispatchers,
// whatever the partitions; issue 26's target is 2).
// A write by another process is seen within Interval (plus the read's own
// latency) while the reader is at its base pace, that is within a second
// of the last work another process sent; within 320 ms after that, up to
// 5 s; after a longer quiet, within the pause reached, at most the cap
// (1.25 s per physical partition), half of it on average. The SDK's read
// stops at the first physical partition with changes, so while every
// partition has changes each partition is read every Interval × the
// number of partitions. The provider's waiting fetches still query for
// themselves every 10 s (HealthyViewLifetime), and a runtime client
// waiting on another process's orchestration every 5 s, whatever the
// reader's pause.
package changefeed

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// DefaultInterval is how often a Reader reads the feed while it finds
// changes when Options.Interval is zero: 80 ms, so that a change is
// delivered within 100 ms at the 95th percentile also with a real
// account's 5 to 10 ms per read (a change waits up to one interval for the
// next read, then the read's own latency).
const DefaultInterval = 80 * time.Millisecond

// DefaultWarm is how long a Reader keeps reading every Interval after the
// last Active call when Options.Warm is zero: 1 s, so that the
// gaps between the writes of an exchange between processes do not slow
// its wake-ups, while a process that receives nothing from the others
// reads WarmFactor times less often within a second.
const DefaultWarm = time.Second

// WarmFactor multiplies Interval into the pause between reads from Warm
// to Quiet after the last Active call: 4, 320 ms by default, which bounds
// what a hop of an exchange between processes waits after a stall of a
// second (the idle backoff after 1 s of quiet let one 4-process run in
// four take 25 s instead of 4 on a loaded machine: each hop waited a
// backed-off pause and the gaps grew).
const WarmFactor = 4

// DefaultQuiet is how long a Reader reads at most WarmFactor × Interval
// apart after the last Active call (or Start, which counts as Warm
// before it) when Options.Quiet is zero: 5 s; after it the idle backoff
// starts.
const DefaultQuiet = 5 * time.Second

// DefaultIdleRequestsPerSecond is the request rate an idle Reader's reads
// come down to when Options.IdleRequestsPerSecond is zero: 0.8, which with
// an idle provider's other requests (a lease heartbeat of 2 requests per
// 5 s, a safety query per lease view every 10 s: 0.8 with four
// dispatchers) keeps an idle process under 2 requests per second whatever
// the number of physical partitions, also in a window that catches one
// more heartbeat or read than the average.
const DefaultIdleRequestsPerSecond = 0.8

// HealthyViewLifetime is how long the answer of a candidate query stands,
// and how often a waiting fetch queries for itself, while the Reader is
// healthy: every message written since reaches the process through the
// reader or its own writes, so the queries are a safety net.
const HealthyViewLifetime = 10 * time.Second

// UnhealthyPollFactor multiplies the provider's long-poll interval into
// the pause of a waiting fetch while a Reader runs but its reads fail
// (they still wake it once they succeed again).
const UnhealthyPollFactor = 4

// pageSize is the most documents one read asks for; a read that gets that
// many reads again at once.
const pageSize = 1000

// ErrClosed is what Next returns once Close was called.
var ErrClosed = errors.New("changefeed: the reader is closed")

// Options configure a Reader.
type Options struct {
	// Interval is the time from the start of one read to the start of
	// the next while reads find changes, and the pause the backoff starts
	// from; default DefaultInterval.
	Interval time.Duration
	// Warm is how long reads stay Interval apart after the last Active
	// call; from then until Quiet they are WarmFactor × Interval apart,
	// as they are from Start to the first Active call; default
	// DefaultWarm (at most Quiet).
	Warm time.Duration
	// Quiet is how long after the last Active call (or Warm before
	// Start) the idle backoff starts; default DefaultQuiet.
	Quiet time.Duration
	// IdleRequestsPerSecond sets the backoff's cap: the pause after which
	// a read that finds nothing (one request per physical partition)
	// costs this many requests per second; default
	// DefaultIdleRequestsPerSecond.
	IdleRequestsPerSecond float64
	// Context, when set, gives the values (not the deadline or
	// cancellation: Close ends the reads) of the context of every read
	// after Start's, such as the caller's request labels.
	Context context.Context
}

// Schedule is the idle backoff as a pure function of what a Reader knows.
// Its zero value is not useful; Options build one.
type Schedule struct {
	// Interval is the base pause, Warm the time without activity during
	// which it holds, Quiet the time without activity before the backoff
	// starts, and Max the pause it stops at (at least Interval).
	Interval, Warm, Quiet, Max time.Duration
}

// Pause returns the pause (from the start of a read to the start of the
// next) after a read that found nothing: Interval while the reader has
// been quiet for less than Warm (quiet: the time since the last Active
// call, or Start), WarmFactor × Interval (at most Max) until Quiet, then
// four times the previous pause prev, from Interval up to Max (four, not
// two: the cap is reached within about 12 s of quiet even with 10
// physical partitions, so that the reads cost their idle budget from then
// on).
func (s Schedule) Pause(quiet, prev time.Duration) time.Duration {
	switch {
	case quiet < s.Warm:
		return s.Interval
	case quiet < s.Quiet:
		return max(s.Interval, min(s.Max, WarmFactor*s.Interval))
	}
	return max(s.Interval, min(s.Max, 4*prev))
}

// MaxPause returns the backoff's cap for reads that cost ranges requests
// each when idle (one per physical partition): the pause at which they
// come to perSecond requests per second, never less than interval.
func MaxPause(interval time.Duration, ranges int, perSecond float64) time.Duration {
	return max(interval, time.Duration(float64(max(ranges, 1))/perSecond*float64(time.Second)))
}

// Reader follows a container's change feed from the moment Start was
// called. Next must be called by one goroutine at a time; the other
// methods are safe for concurrent use.
type Reader struct {
	container *azcosmos.ContainerClient
	opts      Options
	base      context.Context // the reads' context: Options.Context's values, cancelled by Close

	// cont is the continuation; only Next and Start touch it.
	cont string
	// notifyNext: the page Next returned last has not woken the
	// subscribers yet; only Next touches it.
	notifyNext bool

	mu      sync.Mutex
	changed chan struct{}
	// active is when the reader was last told Active (or started);
	// began when the last read began; pause the pause after it; ranges
	// the physical partitions the last read covered.
	active, began time.Time
	pause         time.Duration
	// okPause is the pause set by the last successful read (Active
	// shortens pause, not the time that read vouches for).
	okPause time.Duration
	due     time.Time // when the next read may start
	ranges  int

	// poke wakes a Next that waits for its next read (Active).
	poke chan struct{}

	reads atomic.Int64
	docs  atomic.Int64
	// lastOK is when the last read succeeded (Unix nanoseconds).
	lastOK  atomic.Int64
	started atomic.Bool
	stop    chan struct{}
	cancel  context.CancelFunc
	closed  sync.Once
}

// New returns a Reader of container; Start starts it.
func New(container *azcosmos.ContainerClient, opts Options) *Reader {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Warm <= 0 {
		opts.Warm = DefaultWarm
	}
	opts.Warm = min(opts.Warm, opts.Quiet)
	if opts.IdleRequestsPerSecond <= 0 {
		opts.IdleRequestsPerSecond = DefaultIdleRequestsPerSecond
	}
	base := context.Background()
	if opts.Context != nil {
		base = context.WithoutCancel(opts.Context)
	}
	base, cancel := context.WithCancel(base)
	return &Reader{container: container, opts: opts, base: base, cancel: cancel,
		changed: make(chan struct{}), poke: make(chan struct{}, 1), stop: make(chan struct{}), ranges: 1}
}

// Start takes the feed's current position (position: one read of every
// range, which answers "nothing new", or two when the feed has changes of
// the current second); Next then returns what changes from there. It
// fails when a read fails (the container does not exist, the account
// cannot be reached), and the Reader stays unstarted.
func (r *Reader) Start(ctx context.Context) error {
	cont, err := r.position(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	r.mu.Lock()
	r.cont, r.ranges = cont, rangesOf(cont)
	// It starts as after Warm without activity: nothing has come from
	// another process yet, and the first page that does (Active) brings
	// the base pace; a process started warm read every Interval for its
	// first second whatever it received (12 of the 20 reads of each
	// process of an 8-process stress run of 2.5 s).
	warm := Schedule{Interval: r.opts.Interval, Warm: r.opts.Warm, Quiet: r.opts.Quiet, Max: MaxPause(r.opts.Interval, r.ranges, r.opts.IdleRequestsPerSecond)}.Pause(r.opts.Warm, r.opts.Interval)
	r.active, r.began, r.pause, r.okPause, r.due = now.Add(-r.opts.Warm), now, warm, warm, now.Add(warm)
	r.mu.Unlock()
	r.lastOK.Store(now.UnixNano())
	r.started.Store(true)
	return nil
}

// position returns a continuation at the end of the feed, in at most two
// reads whatever other processes write meanwhile: the first starts from
// now (If-Modified-Since, second resolution) and lists the feed ranges;
// when it finds changes (writes of the current second, in one range: the
// SDK stops at the first range with changes and leaves the ranges after
// it unread, which a read from the continuation would read from the
// beginning of the container), every range's continuation is set to "*"
// (the service's "from now", If-None-Match: *) and a second read takes
// each range's position (one request per physical partition, each
// answering 304). Draining the changes instead chased the other
// processes' writes: a process started while others wrote read the feed
// page after page (60 requests per process at the start of a 4-process
// stress run).
func (r *Reader) position(ctx context.Context) (string, error) {
	now := time.Now().UTC()
	opts := &azcosmos.ChangeFeedOptions{FeedRange: &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}, StartFrom: &now}
	for try := 0; ; try++ {
		r.reads.Add(1)
		resp, err := r.container.ReadChangeFeed(ctx, opts)
		if err != nil {
			return "", err
		}
		if resp.ContinuationToken == "" {
			return "", errors.New("changefeed: the service returned no continuation")
		}
		cont := resp.ContinuationToken
		if len(resp.Items) == 0 {
			return cont, nil
		}
		if try == 0 {
			if now, ok := fromNow(cont); ok {
				cont = now
			}
		}
		opts = &azcosmos.ChangeFeedOptions{Continuation: &cont}
	}
}

// fromNow returns the SDK composite continuation token cont with every
// range's continuation "*" (from now), and false when cont is not one.
func fromNow(cont string) (string, bool) {
	var t map[string]json.RawMessage
	if json.Unmarshal([]byte(cont), &t) != nil {
		return "", false
	}
	var ranges []map[string]json.RawMessage
	if json.Unmarshal(t["continuation"], &ranges) != nil || len(ranges) == 0 {
		return "", false
	}
	for _, rg := range ranges {
		rg["continuationToken"] = json.RawMessage(`"*"`)
	}
	b, err := json.Marshal(ranges)
	if err != nil {
		return "", false
	}
	t["continuation"] = b
	out, err := json.Marshal(t)
	if err != nil {
		return "", false
	}
	return string(out), true
}

// rangesOf returns the number of feed ranges of an SDK composite
// continuation token (its "continuation" list: one entry per physical
// partition, the children of a split included), 1 when it cannot tell.
func rangesOf(cont string) int {
	var t struct {
		Continuation []json.RawMessage `json:"continuation"`
	}
	if json.Unmarshal([]byte(cont), &t) != nil || len(t.Continuation) == 0 {
		return 1
	}
	return len(t.Continuation)
}

// Next waits for the next read that finds changes and returns its page of
// changed documents (JSON, with system properties). It first wakes the
// subscribers of Changed when the page it returned last has not woken them
// yet (its caller has handled it since). Between reads it pauses as the
// package doc says. It returns ErrClosed once Close was called (also
// during a wait or a read), ctx's error when ctx ends first, and the
// read's error when a read fails (the error wraps *azcore.ResponseError
// for an answer of the service); calling it again after a failure reads
// again from the same continuation, after Interval or the service's
// retry-after, whichever is longer.
func (r *Reader) Next(ctx context.Context) ([][]byte, error) {
	if r.notifyNext {
		r.notifyNext = false
		r.notify()
	}
	if !r.started.Load() {
		return nil, errors.New("changefeed: Next before a successful Start")
	}
	for {
		if err := r.wait(ctx); err != nil {
			return nil, err
		}
		began := time.Now()
		r.mu.Lock()
		r.began = began
		cont := r.cont
		r.mu.Unlock()
		r.reads.Add(1)
		rctx, stop := mergeCancel(r.base, ctx)
		resp, err := r.container.ReadChangeFeed(rctx, &azcosmos.ChangeFeedOptions{Continuation: &cont, MaxItemCount: pageSize})
		stop()
		if r.isClosed() {
			return nil, ErrClosed
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		now := time.Now()
		r.mu.Lock()
		if err != nil {
			r.due = now.Add(max(r.opts.Interval, retryAfter(err)))
			r.mu.Unlock()
			return nil, err
		}
		if resp.ContinuationToken != "" {
			r.cont = resp.ContinuationToken
			r.ranges = rangesOf(r.cont)
		}
		// A page of changes paces like an empty read: whether it is
		// activity is for the caller to say (Active, which shortens the
		// pause again).
		sched := Schedule{Interval: r.opts.Interval, Warm: r.opts.Warm, Quiet: r.opts.Quiet, Max: MaxPause(r.opts.Interval, r.ranges, r.opts.IdleRequestsPerSecond)}
		r.pause = sched.Pause(now.Sub(r.active), r.pause)
		r.okPause, r.due = r.pause, began.Add(r.pause)
		if len(resp.Items) == 0 {
			r.mu.Unlock()
			r.lastOK.Store(now.UnixNano())
			continue
		}
		if len(resp.Items) >= pageSize {
			r.due = now // a backlog: read on at once
		}
		r.mu.Unlock()
		r.lastOK.Store(now.UnixNano())
		r.docs.Add(int64(len(resp.Items)))
		r.notifyNext = true
		return resp.Items, nil
	}
}

// wait returns once the next read is due, or with ErrClosed or ctx's error.
func (r *Reader) wait(ctx context.Context) error {
	for {
		r.mu.Lock()
		d := time.Until(r.due)
		r.mu.Unlock()
		if r.isClosed() {
			return ErrClosed
		}
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-r.stop:
			t.Stop()
			return ErrClosed
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-r.poke:
			t.Stop() // Active moved due: look again
		case <-t.C:
		}
	}
}

// mergeCancel returns a context with a's values, cancelled when a or b
// ends, and the function releasing it.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// Active tells the reader of activity: a page of changes that matters to
// its caller, or something other processes' writes tend to follow (the
// process wrote a queue message another process serves). The pacing
// starts over: the next read starts at most Interval after the last one
// began (at once when that is past), and reads stay Interval apart for
// Warm.
func (r *Reader) Active() {
	now := time.Now()
	r.mu.Lock()
	r.active, r.pause = now, r.opts.Interval
	if soon := r.began.Add(r.opts.Interval); soon.Before(r.due) {
		r.due = soon
	}
	r.mu.Unlock()
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Pause returns the current pause between reads: Interval while the
// reader is busy or recently active, up to the backoff's cap while idle.
func (r *Reader) Pause() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pause
}

// Healthy reports whether the reader runs and its last read succeeded
// within three of the pauses that read set (plus a second for the read
// itself): while it does, every change written since is delivered within
// about a pause, and code that waits on it may stop polling for itself.
// A nil Reader is not healthy.
func (r *Reader) Healthy() bool {
	if r == nil || !r.started.Load() || r.isClosed() {
		return false
	}
	r.mu.Lock()
	p := r.okPause
	r.mu.Unlock()
	return time.Since(time.Unix(0, r.lastOK.Load())) < 3*p+time.Second
}

// ViewLifetime returns how long the answer of a candidate query stands:
// HealthyViewLifetime while r is healthy, poll (the provider's long-poll
// interval) otherwise, also for a nil Reader (no change-feed wake-ups).
func (r *Reader) ViewLifetime(poll time.Duration) time.Duration {
	if r.Healthy() {
		return HealthyViewLifetime
	}
	return poll
}

// FallbackPoll returns how long a waiting fetch sleeps before it queries
// again when nothing wakes it: HealthyViewLifetime while r is healthy,
// UnhealthyPollFactor × poll while it runs but its reads fail, poll for a
// nil Reader (no change-feed wake-ups: the fetches poll).
func (r *Reader) FallbackPoll(poll time.Duration) time.Duration {
	switch {
	case r.Healthy():
		return HealthyViewLifetime
	case r != nil:
		return UnhealthyPollFactor * poll
	default:
		return poll
	}
}

// retryAfter is the delay a throttled answer asks for, or zero.
func retryAfter(err error) time.Duration {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		return 0
	}
	ms, perr := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-retry-after-ms"), 64)
	if perr != nil || ms < 0 {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// notify wakes every subscriber.
func (r *Reader) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Changed returns a channel closed once the caller of Next has handled the
// next page of changed documents (when it calls Next again): the hook for
// code that waits for other processes' writes (take the channel, check the
// state, then wait on it).
func (r *Reader) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Reads returns the number of ReadChangeFeed calls made so far (one that
// finds nothing costs one request per physical partition).
func (r *Reader) Reads() int64 { return r.reads.Load() }

// Documents returns the number of changed documents delivered so far.
func (r *Reader) Documents() int64 { return r.docs.Load() }

func (r *Reader) isClosed() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// Close stops the reader: a Next waiting or reading returns ErrClosed,
// and so does every later one. It is idempotent and does not wait for
// Next's caller.
func (r *Reader) Close() {
	r.closed.Do(func() {
		close(r.stop)
		r.cancel()
	})
}
