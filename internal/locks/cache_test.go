package locks

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

type testLock struct {
	instance string
	until    int64
}

func (l testLock) HeldInstance() string { return l.instance }
func (l testLock) HeldUntil() int64     { return l.until }

// TestCacheStaysBounded fills the cache with locks nobody acks or abandons
// (a dispatcher that died, an ack that failed) and checks that later
// inserts sweep them once expired for SweepGraceMs: in a long run the cache
// holds only the locks of the last lock timeout plus grace.
func TestCacheStaysBounded(t *testing.T) {
	t.Parallel()
	c := New[testLock, testLock]()
	now := int64(1_000_000)
	for i := 0; i < 10_000; i++ {
		c.PutOrch(fmt.Sprintf("o%d", i), &testLock{until: now + 30_000}, now)
		c.PutWorker(fmt.Sprintf("w%d", i), &testLock{until: now + 30_000}, now)
	}
	later := now + 30_000 + SweepGraceMs + 1
	for i := 0; i < 64; i++ {
		c.PutOrch(fmt.Sprintf("late%d", i), &testLock{until: later + 30_000}, later)
	}
	orch, worker := c.Len()
	if orch > 64 || worker > 0 {
		t.Fatalf("the cache kept %d orchestration and %d work-item locks expired for over a minute", orch, worker)
	}
}

func TestCacheHoldsInstanceWhileItsLockIsUnexpired(t *testing.T) {
	t.Parallel()
	c := New[testLock, testLock]()
	c.PutOrch("tok", &testLock{instance: "i", until: 1_000}, 0)
	assert.True(t, c.HoldsInstance("i", 999))
	assert.False(t, c.HoldsInstance("i", 1_000), "an expired lock is not held")
	assert.False(t, c.HoldsInstance("other", 0))
	c.DropOrch("tok")
	assert.False(t, c.HoldsInstance("i", 0), "an acked lock is not held")
}

func TestCacheGetUpdateAndDropInstance(t *testing.T) {
	t.Parallel()
	c := New[testLock, testLock]()
	c.PutOrch("o", &testLock{instance: "i", until: 10}, 0)
	c.PutWorker("w", &testLock{instance: "i", until: 10}, 0)
	c.PutWorker("w2", &testLock{instance: "j", until: 10}, 0)
	c.UpdateOrch("o", func(l *testLock) { l.until = 20 })
	c.UpdateWorker("missing", func(*testLock) { t.Fatal("no update of a lock not cached") })
	got, ok := c.Orch("o")
	assert.True(t, ok)
	assert.Equal(t, int64(20), got.until)
	got.until = 99 // a copy: the cache keeps its own
	again, _ := c.Orch("o")
	assert.Equal(t, int64(20), again.until)
	c.DropInstance("i")
	_, ok = c.Orch("o")
	assert.False(t, ok)
	_, ok = c.Worker("w")
	assert.False(t, ok)
	_, ok = c.Worker("w2")
	assert.True(t, ok, "another instance's lock stays")
}
