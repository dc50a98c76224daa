// Package locks keeps the locks a provider process holds (orchestration
// and work-item locks, by lock token), so that the ack, renew and abandon
// of a lock this process took need no read. It is an optimisation, never a
// source of truth: a token that is not in the cache (another process's
// lock, or an entry swept after its expiry) is read from the container
// instead, and every write is conditioned on the stored lock, so a stale
// entry makes a write fail, not succeed wrongly.
package locks

import "sync"

// SweepGraceMs is how long after its expiry a cached lock is kept (ms).
const SweepGraceMs = 60_000

// Held is what the cache needs of a lock: the instance it locks and when
// it expires (ms since the Unix epoch).
type Held interface {
	// HeldInstance is the instance the lock is on.
	HeldInstance() string
	// HeldUntil is when the lock expires (ms since the Unix epoch).
	HeldUntil() int64
}

// Cache holds the orchestration locks (O) and work-item locks (W) of one
// process by lock token; it stays bounded by the locks taken in the last
// minute (every 64th insert sweeps the entries expired for longer than
// SweepGraceMs). Its methods are safe for concurrent use.
type Cache[O, W Held] struct {
	mu      sync.Mutex
	orch    map[string]*O
	worker  map[string]*W
	inserts int
}

// New returns an empty Cache.
func New[O, W Held]() *Cache[O, W] {
	return &Cache[O, W]{orch: map[string]*O{}, worker: map[string]*W{}}
}

// PutOrch caches the orchestration lock l under token (nowMs drives the
// sweep).
func (c *Cache[O, W]) PutOrch(token string, l *O, nowMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orch[token] = l
	c.sweepLocked(nowMs)
}

// Orch returns a copy of the orchestration lock of token, if cached.
func (c *Cache[O, W]) Orch(token string) (O, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyOf(c.orch, token)
}

// UpdateOrch applies f to the cached orchestration lock of token, if any.
func (c *Cache[O, W]) UpdateOrch(token string, f func(*O)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.orch[token]; ok {
		f(l)
	}
}

// DropOrch forgets the orchestration lock of token.
func (c *Cache[O, W]) DropOrch(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.orch, token)
}

// PutWorker caches the work-item lock l under token.
func (c *Cache[O, W]) PutWorker(token string, l *W, nowMs int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.worker[token] = l
	c.sweepLocked(nowMs)
}

// Worker returns a copy of the work-item lock of token, if cached.
func (c *Cache[O, W]) Worker(token string) (W, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyOf(c.worker, token)
}

// UpdateWorker applies f to the cached work-item lock of token, if any.
func (c *Cache[O, W]) UpdateWorker(token string, f func(*W)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.worker[token]; ok {
		f(l)
	}
}

// DropWorker forgets the work-item lock of token.
func (c *Cache[O, W]) DropWorker(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.worker, token)
}

// DropInstance forgets every lock of instance (after it was deleted).
func (c *Cache[O, W]) DropInstance(instance string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dropWhere(c.orch, func(l *O) bool { return (*l).HeldInstance() == instance })
	dropWhere(c.worker, func(l *W) bool { return (*l).HeldInstance() == instance })
}

// HoldsInstance reports whether an unexpired orchestration lock on
// instance is cached at nowMs.
func (c *Cache[O, W]) HoldsInstance(instance string, nowMs int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.orch {
		if (*l).HeldInstance() == instance && (*l).HeldUntil() > nowMs {
			return true
		}
	}
	return false
}

// Len returns the number of cached orchestration and work-item locks.
func (c *Cache[O, W]) Len() (orch, worker int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.orch), len(c.worker)
}

// sweepLocked drops, on every 64th insert, the entries expired for longer
// than SweepGraceMs.
func (c *Cache[O, W]) sweepLocked(nowMs int64) {
	c.inserts++
	if c.inserts%64 != 0 {
		return
	}
	dropWhere(c.orch, func(l *O) bool { return (*l).HeldUntil()+SweepGraceMs < nowMs })
	dropWhere(c.worker, func(l *W) bool { return (*l).HeldUntil()+SweepGraceMs < nowMs })
}

func copyOf[T any](m map[string]*T, token string) (T, bool) {
	l, ok := m[token]
	if !ok {
		var zero T
		return zero, false
	}
	return *l, true
}

func dropWhere[T any](m map[string]*T, drop func(*T) bool) {
	for k, l := range m {
		if drop(l) {
			delete(m, k)
		}
	}
}
