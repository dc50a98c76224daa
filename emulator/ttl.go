package emulator

import (
	"container/heap"
	"math"
	"time"
)

// Time to live, as the service applies it (Learn: "Time to Live (TTL) in
// Azure Cosmos DB", https://learn.microsoft.com/azure/cosmos-db/nosql/time-to-live):
//
//   - the container's defaultTtl absent (or null): nothing expires, an item's
//     own ttl is ignored;
//   - defaultTtl -1: items do not expire unless their own ttl is a positive
//     number of seconds;
//   - defaultTtl n > 0: items expire n seconds after their last write (_ts),
//     unless their own ttl says otherwise (-1: never; m > 0: after m seconds).
//
// An expired item is gone at once from reads, queries and the change feed
// (the service hides it before its background deletion runs); the emulator
// deletes it on the first request to its container at or after its expiry
// and, in the background, within about a second.

// ttlPolicy is a container's defaultTtl: on reports whether TTL is enabled;
// seconds is the default lifetime, -1 for "no default expiry".
type ttlPolicy struct {
	on      bool
	seconds int64
}

// parseDefaultTTL validates a container's defaultTtl: absent or null turns
// TTL off; otherwise it must be -1 or a positive integer number of seconds
// (the service refuses 0 and other values with 400).
func parseDefaultTTL(v value) (ttlPolicy, *response) {
	switch {
	case !v.defined() || v.k == kNull:
		return ttlPolicy{}, nil
	case v.k == kNumber && v.n == math.Trunc(v.n) && (v.n == -1 || (v.n > 0 && v.n <= math.MaxInt32)):
		return ttlPolicy{on: true, seconds: int64(v.n)}, nil
	}
	return ttlPolicy{}, badRequest("The value of 'defaultTtl' must be -1 or a positive integer number of seconds, or be omitted to turn time to live off; got " + v.jsonText() + ".")
}

// expiryOf returns when it expires, in seconds since the Unix epoch, or 0 when
// it never does under policy p.
func (p ttlPolicy) expiryOf(it *item) int64 {
	if !p.on {
		return 0
	}
	secs := p.seconds
	if v := it.get("ttl"); v.k == kNumber && v.n == math.Trunc(v.n) && (v.n == -1 || v.n > 0) {
		secs = int64(v.n)
	}
	if secs <= 0 {
		return 0
	}
	return it.ts + secs
}

// expiry is one scheduled expiration: it expires at (seconds since the
// epoch) unless it is no longer the live version of its document.
type expiry struct {
	at int64
	it *item
}

// expiryHeap orders expirations, earliest first.
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// scheduleExpiry records when the newly written version it expires. The
// caller holds c.mu for writing.
func (c *container) scheduleExpiry(it *item) {
	at := c.ttl.expiryOf(it)
	if at == 0 {
		return
	}
	heap.Push(&c.expiries, expiry{at: at, it: it})
	c.nextExpiry.Store(c.expiries[0].at)
}

// rescheduleExpiries recomputes every live item's expiry after the
// container's defaultTtl changed. The caller holds c.mu for writing.
func (c *container) rescheduleExpiries() {
	c.expiries = c.expiries[:0]
	for _, it := range c.all {
		if it == nil {
			continue
		}
		if at := c.ttl.expiryOf(it); at != 0 {
			c.expiries = append(c.expiries, expiry{at: at, it: it})
		}
	}
	heap.Init(&c.expiries)
	c.storeNextExpiry()
}

func (c *container) storeNextExpiry() {
	if len(c.expiries) == 0 {
		c.nextExpiry.Store(0)
		return
	}
	c.nextExpiry.Store(c.expiries[0].at)
}

// expireDue deletes the items that have expired by now. It costs one atomic
// load when nothing is due, so every request to the container calls it.
func (c *container) expireDue(now time.Time) {
	next := c.nextExpiry.Load()
	if next == 0 || now.Unix() < next {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sec := now.Unix()
	var gone []*item
	for len(c.expiries) > 0 && c.expiries[0].at <= sec {
		e := heap.Pop(&c.expiries).(expiry)
		if c.live(e.it) {
			c.remove(e.it)
			gone = append(gone, e.it)
		}
	}
	c.logExpired(gone)
	c.storeNextExpiry()
}

// sweepExpired deletes the expired items of every container: the background
// deletion, run by the server's janitor about once a second.
func (s *Server) sweepExpired() {
	s.mu.RLock()
	var due []*container
	for _, d := range s.dbs {
		for _, c := range d.colls {
			if c.nextExpiry.Load() != 0 {
				due = append(due, c)
			}
		}
	}
	s.mu.RUnlock()
	now := s.now()
	for _, c := range due {
		c.expireDue(now)
	}
}

// janitor runs sweepExpired every second until the server closes.
func (s *Server) janitor(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			s.sweepExpired()
		}
	}
}
