package held

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

func heldEvents(from, to uint64) []duroxide.Event {
	var evs []duroxide.Event
	for id := from; id <= to; id++ {
		evs = append(evs, duroxide.Event{EventID: id})
	}
	return evs
}

func TestHeldHistoriesExtendInPlaceAndCapWhatTheyHandOut(t *testing.T) {
	t.Parallel()
	h := NewHistories(100)
	h.Put("a", "rid-a", 1, heldEvents(1, 3))
	got, rid, exec, ok := h.Peek("a")
	require.True(t, ok)
	assert.Equal(t, "rid-a", rid)
	assert.Equal(t, uint64(1), exec)
	require.Len(t, got, 3)
	assert.Equal(t, 3, cap(got), "a caller's append must not write into the held array")

	h.Extend("a", "rid-a", 1, false, 3, heldEvents(4, 5))
	got2, _, _, _ := h.Peek("a")
	assert.Len(t, got2, 5)
	assert.Len(t, got, 3, "what was handed out does not change")

	h.Extend("a", "rid-a", 1, false, 3, heldEvents(4, 4))
	_, _, _, ok = h.Peek("a")
	assert.False(t, ok, "a turn not built on what is held drops it")

	h.Put("a", "rid-a", 1, heldEvents(1, 2))
	h.Extend("a", "rid-other", 1, false, 2, heldEvents(3, 3))
	_, _, _, ok = h.Peek("a")
	assert.False(t, ok, "another document (deleted and started again) drops it")

	h.Extend("a", "rid-a", 2, true, 0, heldEvents(1, 2))
	got, _, exec, ok = h.Peek("a")
	require.True(t, ok)
	assert.Equal(t, uint64(2), exec, "a new execution starts afresh")
	assert.Len(t, got, 2)

	h.Extend("a", "rid-a", 2, false, 2, heldEvents(4, 4))
	_, _, _, ok = h.Peek("a")
	assert.False(t, ok, "a gap in the ids drops it")
}

func TestHeldHistoriesEvictTheLeastRecentlyUsedBeyondTheBound(t *testing.T) {
	t.Parallel()
	h := NewHistories(10)
	h.Put("a", "r", 1, heldEvents(1, 4))
	h.Put("b", "r", 1, heldEvents(1, 4))
	_, _, _, _ = h.Peek("a") // a is now the most recent
	h.Put("c", "r", 1, heldEvents(1, 4))
	_, _, _, okA := h.Peek("a")
	_, _, _, okB := h.Peek("b")
	_, _, _, okC := h.Peek("c")
	assert.True(t, okA)
	assert.False(t, okB, "b was the least recently used")
	assert.True(t, okC)
	assert.LessOrEqual(t, h.total, 10)

	h.Put("huge", "r", 1, heldEvents(1, 11))
	_, _, _, ok := h.Peek("huge")
	assert.False(t, ok, "a history larger than the bound is not held")

	var none *Histories
	none.Put("a", "r", 1, heldEvents(1, 1))
	_, _, _, ok = none.Peek("a")
	assert.False(t, ok, "a nil holder (HeldHistoryEvents < 0) holds nothing")
}
