package cdb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
)

func heldEntry(instance, id string, enqueuedAt, visibleAt int64) candidates.Entry {
	return candidates.Entry{Key: instance, Instance: instance, ID: id, EnqueuedAt: enqueuedAt, VisibleAt: visibleAt, Seq: id}
}

func heldIDs(msgs []heldMessage) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.id
	}
	return ids
}

func TestHeldStatesTurnNeedsAStateAndVisibleMessages(t *testing.T) {
	t.Parallel()
	h := newHeldStates(10)
	h.wrote(heldEntry("i", "m0", 1, 1))
	_, _, ok := h.turn("i", 100)
	assert.False(t, ok, "a message of an instance not held is not kept")

	h.hold("i", heldState{etag: "e1", context: true}, false, nil)
	_, _, ok = h.turn("i", 100)
	assert.False(t, ok, "no message")

	h.wrote(heldEntry("i", "m2", 20, 20))
	h.wrote(heldEntry("i", "m1", 10, 10))
	h.wrote(heldEntry("i", "timer", 5, 500))
	st, msgs, ok := h.turn("i", 100)
	require.True(t, ok)
	assert.Equal(t, "e1", st.etag)
	assert.Equal(t, []string{"m1", "m2"}, heldIDs(msgs), "visible ones, oldest first")

	h.locked("i", []string{"m1", "m2"})
	_, _, ok = h.turn("i", 1000)
	assert.False(t, ok, "the lock ends the held state until the ack holds the next one")
	h.hold("i", heldState{etag: "e2", context: true}, false, nil)
	_, msgs, ok = h.turn("i", 1000)
	require.True(t, ok)
	assert.Equal(t, []string{"timer"}, heldIDs(msgs), "locked messages are no longer held")
}

func TestHeldStatesForgetsAnInstanceWithAMessageItDidNotWrite(t *testing.T) {
	t.Parallel()
	h := newHeldStates(10)
	h.hold("i", heldState{etag: "e", context: true}, false, nil)
	h.wrote(heldEntry("i", "mine", 1, 1))
	h.saw("i", "mine")
	_, _, ok := h.turn("i", 10)
	assert.True(t, ok, "a held message seen elsewhere changes nothing")
	h.saw("i", "theirs")
	_, _, ok = h.turn("i", 10)
	assert.False(t, ok, "another writer's message: the next turn reads the partition")
}

func TestHeldStatesBounds(t *testing.T) {
	t.Parallel()
	h := newHeldStates(2)
	for i := range 3 {
		inst := fmt.Sprint("i", i)
		h.hold(inst, heldState{etag: "e", context: true}, false, nil)
		h.wrote(heldEntry(inst, "m", 1, 1))
	}
	_, _, ok := h.turn("i0", 10)
	assert.False(t, ok, "the least recently used instance is out")
	_, _, ok = h.turn("i2", 10)
	assert.True(t, ok)

	for i := range maxHeldMessages {
		h.wrote(heldEntry("i2", fmt.Sprint("x", i), 1, 1))
	}
	_, _, ok = h.turn("i2", 10)
	assert.False(t, ok, "past maxHeldMessages the instance is forgotten")
}

func TestHeldStatesStartAndETag(t *testing.T) {
	t.Parallel()
	h := newHeldStates(10)
	h.hold("i", heldState{context: true}, false, nil)
	_, _, ok := h.turn("i", 10)
	assert.False(t, ok, "without an ETag nothing can be conditioned")

	h.startWritten("new", heldMessage{id: "s", start: true})
	st, msgs, ok := h.turn("new", 10)
	require.True(t, ok)
	assert.True(t, st.absent, "a start to an instance held nowhere is taken to create it")
	assert.True(t, msgs[0].start)

	h.hold("run", heldState{etag: "e", context: true}, false, nil)
	h.startWritten("run", heldMessage{id: "s", start: true})
	st, _, ok = h.turn("run", 10)
	require.True(t, ok)
	assert.False(t, st.absent, "a start to a held instance keeps its state")

	h.hold("run", heldState{etag: "e2"}, true, &heldMessage{id: "s2", start: true})
	_, msgs, _ = h.turn("run", 10)
	assert.Equal(t, []string{"s2"}, heldIDs(msgs), "a fresh start forgets the earlier incarnation's messages")

	var none *heldStates
	none.hold("i", heldState{etag: "e"}, false, nil)
	none.wrote(heldEntry("i", "m", 1, 1))
	_, _, ok = none.turn("i", 10)
	assert.False(t, ok, "a nil heldStates holds nothing")
}
