package cdb

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/internal/leases"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInMemoryLeaseProviderLanes checks the slot distribution
// (DESIGN.md §5.2): with 3 lanes, 86, 85 and 85 slots, s % 3 == i.
func TestInMemoryLeaseProviderLanes(t *testing.T) {
	p := NewInMemoryLeaseProvider(3)
	require.Equal(t, 3, p.Lanes())
	sizes := []int{86, 85, 85}
	all := map[uint8]int{}
	for i := 0; i < 3; i++ {
		slots, err := p.LaneSlots(i)
		require.NoError(t, err)
		assert.Len(t, slots, sizes[i])
		for _, s := range slots {
			assert.Equal(t, i, int(s)%3)
			all[s]++
		}
	}
	assert.Len(t, all, NumDispatchSlots, "every slot belongs to a lane")
	for s, n := range all {
		assert.Equal(t, 1, n, "slot %d is in one lane", s)
	}
	_, err := p.LaneSlots(3)
	assert.Error(t, err)
}

// TestInMemoryLeaseProviderOneLane checks that a single lane holds every
// slot and says so, so queries drop the slot filter.
func TestInMemoryLeaseProviderOneLane(t *testing.T) {
	for _, n := range []int{-5, 0, 1} {
		p := NewInMemoryLeaseProvider(n)
		l, err := p.Acquire(context.Background())
		require.NoError(t, err)
		assert.True(t, l.All)
		assert.Len(t, l.Slots, NumDispatchSlots)
		assert.Equal(t, "", slotFilter(l))
		l.Release()
		l.Release() // idempotent
	}
	assert.Equal(t, NumDispatchSlots, NewInMemoryLeaseProvider(1000).Lanes())
}

// TestInMemoryLeaseProviderDisjoint checks that concurrently held leases
// never share a slot, and that one caller fetching repeatedly visits every
// lane.
func TestInMemoryLeaseProviderDisjoint(t *testing.T) {
	p := NewInMemoryLeaseProvider(4)
	var mu sync.Mutex
	held := map[uint8]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				l, err := p.Acquire(context.Background())
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				for _, s := range l.Slots {
					assert.False(t, held[s], "slot %d leased twice", s)
					held[s] = true
				}
				mu.Unlock()
				mu.Lock()
				for _, s := range l.Slots {
					delete(held, s)
				}
				mu.Unlock()
				l.Release()
			}
		}()
	}
	wg.Wait()

	visited := map[uint8]bool{}
	for i := 0; i < 4; i++ {
		l, err := p.Acquire(context.Background())
		require.NoError(t, err)
		assert.False(t, l.All)
		for _, s := range l.Slots {
			visited[s] = true
		}
		l.Release()
	}
	assert.Len(t, visited, NumDispatchSlots, "four successive leases cover every slot")
}

// TestInMemoryLeaseProviderWaits checks that Acquire waits while every
// lane is held and gives up when its context ends.
func TestInMemoryLeaseProviderWaits(t *testing.T) {
	p := NewInMemoryLeaseProvider(1)
	l, err := p.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)

	got := make(chan *SlotLease)
	go func() {
		l2, err := p.Acquire(context.Background())
		assert.NoError(t, err)
		got <- l2
	}()
	select {
	case <-got:
		t.Fatal("a second lease was granted while the only lane was held")
	case <-time.After(50 * time.Millisecond):
	}
	l.Release()
	(<-got).Release()
}

// TestSlotFilter checks the query clause built from a lease.
func TestSlotFilter(t *testing.T) {
	assert.Equal(t, " AND c.dispatchSlot IN (1,4,255)", slotFilter(NewSlotLease([]uint8{1, 4, 255}, nil)))
	assert.Equal(t, "", slotFilter(nil))
	all := make([]uint8, NumDispatchSlots)
	for i := range all {
		all[i] = uint8(i)
	}
	assert.Equal(t, "", slotFilter(NewSlotLease(all, nil)))
}

// A lease's Slots belong to its holder: changing them changes no later
// lease.
func TestInMemoryLeaseSlotsAreTheHoldersCopy(t *testing.T) {
	t.Parallel()
	p := NewInMemoryLeaseProvider(2)
	ctx := context.Background()
	first, err := p.Acquire(ctx)
	require.NoError(t, err)
	want := append([]uint8(nil), first.Slots...)
	for i := range first.Slots {
		first.Slots[i] = 255
	}
	first.Release()
	second, err := p.Acquire(ctx)
	require.NoError(t, err)
	second.Release()
	third, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer third.Release()
	assert.Equal(t, want, third.Slots, "the lane handed out again must hold its own slots")
}

// NewSlotLease holds all slots only when every one of the 256 is listed;
// 256 entries with duplicates are not all slots, and the lease keeps its
// own copy of the list.
func TestNewSlotLeaseCountsDistinctSlots(t *testing.T) {
	t.Parallel()
	dup := make([]uint8, NumDispatchSlots)
	for i := range dup {
		dup[i] = uint8(i / 2)
	}
	assert.False(t, NewSlotLease(dup, nil).All, "256 entries with duplicates")
	every := make([]uint8, NumDispatchSlots)
	for i := range every {
		every[i] = uint8(i)
	}
	l := NewSlotLease(every, nil)
	assert.True(t, l.All)
	every[0] = 7
	assert.Equal(t, uint8(0), l.Slots[0], "the lease keeps its own copy")
}

// TestContainerLeasesUseThePublicPartitionKey: internal/leases writes its
// documents where LeasePartitionKey says, the partition every method of
// the provider refuses as an instance id.
func TestContainerLeasesUseThePublicPartitionKey(t *testing.T) {
	t.Parallel()
	assert.Equal(t, LeasePartitionKey, leases.PartitionKey)
}
