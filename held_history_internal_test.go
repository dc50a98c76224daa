package cdb

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
	h := newHeldHistories(100)
	h.put("a", "rid-a", 1, heldEvents(1, 3))
	got, rid, exec, ok := h.peek("a")
	require.True(t, ok)
	assert.Equal(t, "rid-a", rid)
	assert.Equal(t, uint64(1), exec)
	require.Len(t, got, 3)
	assert.Equal(t, 3, cap(got), "a caller's append must not write into the held array")

	h.extend("a", "rid-a", 1, false, 3, heldEvents(4, 5))
	got2, _, _, _ := h.peek("a")
	assert.Len(t, got2, 5)
	assert.Len(t, got, 3, "what was handed out does not change")

	h.extend("a", "rid-a", 1, false, 3, heldEvents(4, 4))
	_, _, _, ok = h.peek("a")
	assert.False(t, ok, "a turn not built on what is held drops it")

	h.put("a", "rid-a", 1, heldEvents(1, 2))
	h.extend("a", "rid-other", 1, false, 2, heldEvents(3, 3))
	_, _, _, ok = h.peek("a")
	assert.False(t, ok, "another document (deleted and started again) drops it")

	h.extend("a", "rid-a", 2, true, 0, heldEvents(1, 2))
	got, _, exec, ok = h.peek("a")
	require.True(t, ok)
	assert.Equal(t, uint64(2), exec, "a new execution starts afresh")
	assert.Len(t, got, 2)

	h.extend("a", "rid-a", 2, false, 2, heldEvents(4, 4))
	_, _, _, ok = h.peek("a")
	assert.False(t, ok, "a gap in the ids drops it")
}

func TestHeldHistoriesEvictTheLeastRecentlyUsedBeyondTheBound(t *testing.T) {
	t.Parallel()
	h := newHeldHistories(10)
	h.put("a", "r", 1, heldEvents(1, 4))
	h.put("b", "r", 1, heldEvents(1, 4))
	_, _, _, _ = h.peek("a") // a is now the most recent
	h.put("c", "r", 1, heldEvents(1, 4))
	_, _, _, okA := h.peek("a")
	_, _, _, okB := h.peek("b")
	_, _, _, okC := h.peek("c")
	assert.True(t, okA)
	assert.False(t, okB, "b was the least recently used")
	assert.True(t, okC)
	assert.LessOrEqual(t, h.total, 10)

	h.put("huge", "r", 1, heldEvents(1, 11))
	_, _, _, ok := h.peek("huge")
	assert.False(t, ok, "a history larger than the bound is not held")

	var none *heldHistories
	none.put("a", "r", 1, heldEvents(1, 1))
	_, _, _, ok = none.peek("a")
	assert.False(t, ok, "a nil holder (HeldHistoryEvents < 0) holds nothing")
}
