// Lock cache: the locks this provider holds (orchestration and work item),
// kept so that ack, renew and abandon need no read.

package cdb

import (
	"sync"
)

// orchLock is what a fetch learned about the instance it locked, kept so
// that the ack, renew and abandon of the same lock need no read: the
// instance document as locked (with the ETag the ack replaces it under),
// the ids of the messages the lock tagged, and the KV documents.
type orchLock struct {
	instance    string
	lockID      string
	doc         instanceDoc
	messageIDs  []string
	kvStore     *kvDoc
	kvDelta     *kvDoc
	lockedUntil int64
	// oldestEnqueuedAt and oldestSeq order the locked messages' instance
	// among the candidates again when the lock is abandoned.
	oldestEnqueuedAt int64
	oldestSeq        string
}

// workerLock is what a work-item fetch learned about the item it locked.
type workerLock struct {
	instance    string
	docID       string
	lockID      string
	etag        string
	sessionID   *string
	lockedUntil int64
	// enqueuedAt, seq and tag put the message back among the candidates
	// in its place when the lock is abandoned.
	enqueuedAt int64
	seq        string
	tag        *string
}

// lockCache remembers the locks this process took. It is an optimisation,
// never a source of truth: an ack, renew or abandon whose token is not in
// the cache (another process's lock, or an entry swept after expiry) reads
// what it needs from the container instead, and every write it makes is
// conditioned on the stored lock (If-Match or a filter predicate), so a
// stale entry makes a write fail, not succeed wrongly.
type lockCache struct {
	mu      sync.Mutex
	orch    map[string]*orchLock
	worker  map[string]*workerLock
	inserts int
}

func newLockCache() *lockCache {
	return &lockCache{orch: map[string]*orchLock{}, worker: map[string]*workerLock{}}
}

// sweepGraceMs is how long after its expiry a cached lock is kept.
const sweepGraceMs = 60_000

func (c *lockCache) putOrch(token string, l *orchLock, nowMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orch[token] = l
	c.sweepLocked(nowMs)
}

func (c *lockCache) getOrch(token string) (orchLock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.orch[token]
	if !ok {
		return orchLock{}, false
	}
	return *l, true
}

// updateOrch applies f to the cached lock of token, if any.
func (c *lockCache) updateOrch(token string, f func(*orchLock)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.orch[token]; ok {
		f(l)
	}
}

func (c *lockCache) dropOrch(token string) {
	c.mu.Lock()
	delete(c.orch, token)
	c.mu.Unlock()
}

func (c *lockCache) putWorker(token string, l *workerLock, nowMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker[token] = l
	c.sweepLocked(nowMs)
}

func (c *lockCache) getWorker(token string) (workerLock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.worker[token]
	if !ok {
		return workerLock{}, false
	}
	return *l, true
}

func (c *lockCache) updateWorker(token string, f func(*workerLock)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.worker[token]; ok {
		f(l)
	}
}

func (c *lockCache) dropWorker(token string) {
	c.mu.Lock()
	delete(c.worker, token)
	c.mu.Unlock()
}

// holdsInstance reports whether this process holds an unexpired
// orchestration lock on instance at nowMs.
func (c *lockCache) holdsInstance(instance string, nowMs int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.orch {
		if l.instance == instance && l.lockedUntil > nowMs {
			return true
		}
	}
	return false
}

// dropInstance forgets every lock of instance (after it was deleted).
func (c *lockCache) dropInstance(instance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, l := range c.orch {
		if l.instance == instance {
			delete(c.orch, k)
		}
	}
	for k, l := range c.worker {
		if l.instance == instance {
			delete(c.worker, k)
		}
	}
}

// sweepLocked drops entries expired for longer than sweepGraceMs; it runs
// on every 64th insert, so the cache stays bounded by the locks taken in
// the last minute.
func (c *lockCache) sweepLocked(nowMs int64) {
	c.inserts++
	if c.inserts%64 != 0 {
		return
	}
	for k, l := range c.orch {
		if l.lockedUntil+sweepGraceMs < nowMs {
			delete(c.orch, k)
		}
	}
	for k, l := range c.worker {
		if l.lockedUntil+sweepGraceMs < nowMs {
			delete(c.worker, k)
		}
	}
}
