package cdb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLockCacheStaysBounded fills the lock cache with locks nobody
// acks or abandons (a dispatcher that died, an ack that failed) and checks
// that later inserts sweep them once expired for sweepGraceMs: in a long
// run the cache holds only the locks of the last lock timeout plus grace.
func TestLockCacheStaysBounded(t *testing.T) {
	c := newLockCache()
	now := int64(1_000_000)
	for i := 0; i < 10_000; i++ {
		c.putOrch(fmt.Sprintf("o%d", i), &orchLock{lockedUntil: now + 30_000}, now)
		c.putWorker(fmt.Sprintf("w%d", i), &workerLock{lockedUntil: now + 30_000}, now)
	}
	later := now + 30_000 + sweepGraceMs + 1
	for i := 0; i < 64; i++ {
		c.putOrch(fmt.Sprintf("late%d", i), &orchLock{lockedUntil: later + 30_000}, later)
	}
	c.mu.Lock()
	orch, worker := len(c.orch), len(c.worker)
	c.mu.Unlock()
	if orch > 64 || worker > 0 {
		t.Fatalf("the cache kept %d orchestration and %d work-item locks expired for over a minute", orch, worker)
	}
}

func TestLockCacheHoldsInstanceWhileItsLockIsUnexpired(t *testing.T) {
	t.Parallel()
	c := newLockCache()
	c.putOrch("tok", &orchLock{instance: "i", lockID: "l", lockedUntil: 1_000}, 0)
	assert.True(t, c.holdsInstance("i", 999))
	assert.False(t, c.holdsInstance("i", 1_000), "an expired lock is not held")
	assert.False(t, c.holdsInstance("other", 0))
	c.dropOrch("tok")
	assert.False(t, c.holdsInstance("i", 0), "an acked lock is not held")
}
