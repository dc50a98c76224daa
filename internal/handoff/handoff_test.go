package handoff

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type params struct{ tag string }

func byTag(tag string) func(params) bool { return func(p params) bool { return p.tag == tag } }

func TestReserveTakesTheOldestMatchingWaiterOnce(t *testing.T) {
	t.Parallel()
	ws := New[params, string]()
	a := ws.Register(params{"a"})
	b1 := ws.Register(params{"b"})
	b2 := ws.Register(params{"b"})
	assert.Equal(t, 3, ws.Free())

	got := ws.Reserve(byTag("b"))
	require.Same(t, b1, got, "the longest-waiting match")
	assert.Nil(t, ws.Reserve(byTag("c")), "no match: no reservation")
	assert.Same(t, b2, ws.Reserve(byTag("b")))
	assert.Nil(t, ws.Reserve(byTag("b")), "a reserved waiter is not reservable again")
	assert.Equal(t, 1, ws.Free())

	b1.Deliver("item")
	<-b1.Ready()
	item, ok := b1.Leave()
	assert.True(t, ok)
	assert.Equal(t, "item", item)

	b2.Fail()
	item, ok = b2.Leave()
	assert.False(t, ok, "a failed reservation delivers nothing")
	assert.Empty(t, item)

	item, ok = a.Leave()
	assert.False(t, ok)
	assert.Empty(t, item)
	assert.Equal(t, 0, ws.Free(), "a waiter that left is no longer free")
	assert.Nil(t, ws.Reserve(byTag("a")))
}

// A waiter whose own wait ends (poll timeout, context) while it is
// reserved takes the outcome when it comes: the item is never left
// without an owner.
func TestLeaveWhileReservedWaitsForTheOutcome(t *testing.T) {
	t.Parallel()
	ws := New[params, string]()
	w := ws.Register(params{"a"})
	require.Same(t, w, ws.Reserve(byTag("a")))

	got := make(chan string, 1)
	go func() {
		item, ok := w.Leave()
		if ok {
			got <- item
		} else {
			got <- "<none>"
		}
	}()
	select {
	case <-got:
		t.Fatal("Leave returned before the reservation's outcome")
	case <-time.After(20 * time.Millisecond):
	}
	w.Deliver("locked item")
	assert.Equal(t, "locked item", <-got)
}

func TestCloseRefusesNewWaitersAndReservationsButSettlesReservedOnes(t *testing.T) {
	t.Parallel()
	ws := New[params, int]()
	free := ws.Register(params{"a"})
	reserved := ws.Register(params{"a"})
	require.Same(t, free, ws.Reserve(byTag("a")))
	_ = reserved
	ws.Close()
	ws.Close() // idempotent

	assert.Nil(t, ws.Register(params{"a"}))
	assert.Nil(t, ws.Reserve(byTag("a")), "a free waiter of a closed set is not reservable")
	assert.Equal(t, 0, ws.Free())
	item, ok := reserved.Leave()
	assert.False(t, ok)
	assert.Zero(t, item)

	free.Deliver(7) // reserved before Close: its outcome still arrives
	item, ok = free.Leave()
	assert.True(t, ok)
	assert.Equal(t, 7, item)
}

func TestNilSetAndNilWaiterAreOff(t *testing.T) {
	t.Parallel()
	var ws *Waiters[params, int]
	w := ws.Register(params{"a"})
	assert.Nil(t, w)
	assert.Nil(t, ws.Reserve(byTag("a")))
	assert.Nil(t, w.Ready())
	_, ok := w.Leave()
	assert.False(t, ok)
	w.Fail()
	ws.Close()
	assert.Zero(t, ws.Free())
}

func TestSettlingTwicePanics(t *testing.T) {
	t.Parallel()
	ws := New[params, int]()
	w := ws.Register(params{"a"})
	assert.Panics(t, func() { w.Deliver(1) }, "a free waiter was not reserved")
	require.Same(t, w, ws.Reserve(byTag("a")))
	w.Fail()
	assert.Panics(t, func() { w.Fail() })
}

// Many acks reserving from many waiters: every waiter gets at most one
// item and every item delivered is taken by exactly one waiter.
func TestConcurrentReservationsDeliverEachItemOnce(t *testing.T) {
	t.Parallel()
	ws := New[params, int]()
	const waiters, acks = 16, 64
	var delivered sync.Map
	var wg sync.WaitGroup
	taken := make(chan int, waiters)
	for range waiters {
		w := ws.Register(params{"a"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-w.Ready():
			case <-time.After(time.Duration(len(taken)) * time.Millisecond):
			}
			if item, ok := w.Leave(); ok {
				taken <- item
			}
		}()
	}
	var ackers sync.WaitGroup
	for i := range acks {
		ackers.Add(1)
		go func() {
			defer ackers.Done()
			if w := ws.Reserve(byTag("a")); w != nil {
				delivered.Store(i, true)
				w.Deliver(i)
			}
		}()
	}
	ackers.Wait()
	wg.Wait()
	close(taken)
	seen := map[int]bool{}
	for item := range taken {
		assert.False(t, seen[item], "item %d taken twice", item)
		seen[item] = true
		_, ok := delivered.Load(item)
		assert.True(t, ok)
	}
	n := 0
	delivered.Range(func(any, any) bool { n++; return true })
	assert.Equal(t, n, len(seen), "every delivered item was taken")
	assert.LessOrEqual(t, n, waiters)
}
