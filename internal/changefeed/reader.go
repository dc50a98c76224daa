// Package changefeed follows a Cosmos DB container's change feed (latest
// version mode) with one reader, so that a process learns of documents
// other processes wrote without querying for them: the provider turns the
// queue messages it reads into candidates and wakes its waiting fetches,
// and any other code (a client waiting for an orchestration to finish) can
// subscribe to be woken when something changed.
//
// One Reader reads the whole container through azcosmos's ReadChangeFeed
// with the feed range ["", "FF"): the SDK keeps one continuation per
// physical partition (its composite continuation token), follows splits
// (410 Gone with substatus 1002: it refreshes its routing map and goes on
// with the children, which inherit the parent's continuation) and reads
// every range before it answers "nothing new". While nothing changes, the
// reader makes one ReadChangeFeed call per Interval, which costs one
// request per physical partition (one on a container of up to 50 GB and
// 10,000 RU/s). A full page of changes (pageSize documents) is followed at
// once by the next read, until the backlog is drained; a partial page, like
// an empty answer, by the pause of Interval, so that a busy container costs
// at most one read per Interval beyond its backlog (changes written during
// the pause are delivered at the next read, as when idle). Throttling (429) waits x-ms-retry-after-ms (at
// least Interval); any other failure waits Interval and tries again from
// the same continuation, so no change is skipped. Every change is delivered
// at least once: a document changed several times between two reads is
// delivered once, at its latest version (latest version mode).
package changefeed

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// DefaultInterval is how often an idle Reader reads the feed when
// Options.Interval is zero: 80 ms, so that a change is delivered within
// 100 ms at the 95th percentile also with a real account's 5 to 10 ms per
// read (a change waits up to one interval for the next read, then the
// read's own latency).
const DefaultInterval = 80 * time.Millisecond

// pageSize is the most documents one read asks for; a read that gets that
// many reads again at once.
const pageSize = 1000

// Options configure a Reader.
type Options struct {
	// Interval is the time from the start of one read to the start of
	// the next while reads find less than a full page (after a failed
	// read: from its end, or the service's retry-after if longer);
	// default DefaultInterval.
	Interval time.Duration
	// OnDocuments, when set, receives every page of changed documents
	// (JSON, with system properties), on the reader's goroutine, before
	// subscribers are woken.
	OnDocuments func(docs [][]byte)
	// OnError, when set, is told every failed read (the reader goes on).
	OnError func(err error)
	// Context, when set, gives the values (not the deadline or
	// cancellation: Close ends the reads) of the context of every read
	// after Start's, such as the caller's request labels.
	Context context.Context
	// Stretch, when set, is asked after every read that found nothing:
	// the pause before the next read is Interval times its answer (1
	// when it answers less). The provider lengthens an idle reader's
	// pauses to repay its other idle requests, so that an idle process
	// stays within one request per Interval.
	Stretch func() float64
}

// Reader follows a container's change feed from the moment Start was
// called. Its methods are safe for concurrent use.
type Reader struct {
	container *azcosmos.ContainerClient
	opts      Options

	mu      sync.Mutex
	changed chan struct{}

	reads atomic.Int64
	docs  atomic.Int64
	// lastOK is when the last read succeeded (Unix nanoseconds).
	lastOK  atomic.Int64
	started atomic.Bool
	stop    chan struct{}
	done    chan struct{}
	closed  sync.Once
}

// New returns a Reader of container; Start starts it.
func New(container *azcosmos.ContainerClient, opts Options) *Reader {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Reader{container: container, opts: opts, changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start takes the feed's current position (one read of every range, which
// answers "nothing new") and starts the reading goroutine; it fails when
// that first read fails (the container does not exist, the account cannot
// be reached), and then starts nothing.
func (r *Reader) Start(ctx context.Context) error {
	cont, err := r.position(ctx)
	if err != nil {
		return err
	}
	r.started.Store(true)
	r.lastOK.Store(time.Now().UnixNano())
	go r.loop(cont)
	return nil
}

// position returns a continuation at the end of the feed: it starts from
// now (If-Modified-Since, second resolution, so changes of the current
// second may be delivered once more) and drains what that returns.
func (r *Reader) position(ctx context.Context) (string, error) {
	now := time.Now().UTC()
	opts := &azcosmos.ChangeFeedOptions{FeedRange: &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}, StartFrom: &now}
	for {
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
		opts = &azcosmos.ChangeFeedOptions{Continuation: &cont}
	}
}

func (r *Reader) loop(cont string) {
	defer close(r.done)
	base := context.Background()
	if r.opts.Context != nil {
		base = context.WithoutCancel(r.opts.Context)
	}
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		// Reads start every Interval (the time a read and its documents'
		// handling took is part of the pause), so a change waits at most
		// one Interval for the read that sees it.
		began := time.Now()
		wait := r.opts.Interval
		r.reads.Add(1)
		resp, err := r.container.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{Continuation: &cont, MaxItemCount: pageSize})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if r.opts.OnError != nil {
				r.opts.OnError(err)
			}
			wait = max(wait, retryAfter(err))
		default:
			r.lastOK.Store(time.Now().UnixNano())
			if resp.ContinuationToken != "" {
				cont = resp.ContinuationToken
			}
			if len(resp.Items) > 0 {
				r.docs.Add(int64(len(resp.Items)))
				if r.opts.OnDocuments != nil {
					r.opts.OnDocuments(resp.Items)
				}
				r.notify()
				if len(resp.Items) >= pageSize {
					wait = 0 // a backlog: read on at once
				}
			}
		}
		if err == nil {
			if len(resp.Items) == 0 && r.opts.Stretch != nil {
				wait = time.Duration(float64(wait) * max(1, r.opts.Stretch()))
			}
			wait -= time.Since(began)
		}
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-r.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Healthy reports whether the reader runs and its last read succeeded
// within the last three Intervals (plus the time a read takes): while it
// does, every change written since is delivered within about an Interval,
// and code that waits on it may stop polling for itself.
func (r *Reader) Healthy() bool {
	if !r.started.Load() {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
	}
	return time.Since(time.Unix(0, r.lastOK.Load())) < 3*r.opts.Interval+time.Second
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

// Changed returns a channel closed when the reader next delivers changed
// documents (the hook for code that waits for other processes' writes:
// take the channel, check the state, then wait on it).
func (r *Reader) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Reads returns the number of ReadChangeFeed calls made so far (each costs
// one request per physical partition it reads).
func (r *Reader) Reads() int64 { return r.reads.Load() }

// Documents returns the number of changed documents delivered so far.
func (r *Reader) Documents() int64 { return r.docs.Load() }

// Close stops the reader and waits for its goroutine; it is idempotent.
// A Reader that was never started closes at once.
func (r *Reader) Close() {
	r.closed.Do(func() { close(r.stop) })
	if r.started.Load() {
		<-r.done
	}
}
