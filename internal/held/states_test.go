package held

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

// picked is the candidate-pool entry of instance as a fetch picks it,
// standing for msgs.
func picked(instance string, msgs ...candidates.MsgRef) candidates.Entry {
	return candidates.Entry{Key: instance, Instance: instance, Msgs: msgs}
}

func heldIDs(msgs []Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	return ids
}

func TestHeldStatesTurnNeedsAStateAndVisibleMessages(t *testing.T) {
	t.Parallel()
	h := NewStates(10)
	h.Message(heldEntry("i", "m0", 1, 1))
	_, _, ok := h.Turn(picked("i"), 100)
	assert.False(t, ok, "a message of an instance not held is not kept")

	h.Hold("i", State{ETag: "e1", Context: true}, false, nil)
	_, _, ok = h.Turn(picked("i"), 100)
	assert.False(t, ok, "no message")

	h.Message(heldEntry("i", "m2", 20, 20))
	h.Message(heldEntry("i", "m1", 10, 10))
	h.Message(heldEntry("i", "timer", 5, 500))
	st, msgs, ok := h.Turn(picked("i"), 100)
	require.True(t, ok)
	assert.Equal(t, "e1", st.ETag)
	assert.Equal(t, []string{"m1", "m2"}, heldIDs(msgs), "visible ones, oldest first")

	h.Locked("i", []string{"m1", "m2"})
	_, _, ok = h.Turn(picked("i"), 1000)
	assert.False(t, ok, "the lock ends the held state until the ack holds the next one")
	h.Hold("i", State{ETag: "e2", Context: true}, false, nil)
	_, msgs, ok = h.Turn(picked("i"), 1000)
	require.True(t, ok)
	assert.Equal(t, []string{"timer"}, heldIDs(msgs), "locked messages are no longer held")
}

func TestHeldStatesTakeInMessagesOthersWrote(t *testing.T) {
	t.Parallel()
	h := NewStates(10)
	h.Hold("i", State{ETag: "e", Context: true}, false, nil)
	h.Message(heldEntry("i", "mine", 1, 1))
	h.Message(heldEntry("i", "theirs", 2, 50)) // shown locked until 50
	h.Message(heldEntry("other", "x", 1, 1))
	_, msgs, ok := h.Turn(picked("i"), 10)
	require.True(t, ok)
	assert.Equal(t, []string{"mine"}, heldIDs(msgs))
	_, msgs, _ = h.Turn(picked("i"), 60)
	assert.Equal(t, []string{"mine", "theirs"}, heldIDs(msgs), "visible once the other lock expired")
	_, _, ok = h.Turn(picked("other"), 10)
	assert.False(t, ok, "messages of instances not held are not kept")
}

func TestHeldStatesTurnTakesThePickedEntrysMessages(t *testing.T) {
	t.Parallel()
	h := NewStates(10)
	h.Hold("i", State{ETag: "e", Context: true}, false, nil)
	h.Message(heldEntry("i", "held", 5, 5))
	_, msgs, ok := h.Turn(picked("i", candidates.MsgRef{ID: "seen", VisibleAt: 1}, candidates.MsgRef{ID: "timer", VisibleAt: 500}), 10)
	require.True(t, ok)
	assert.ElementsMatch(t, []string{"held", "seen"}, heldIDs(msgs), "a message the pool saw before the instance was held is taken too; a future one is not")
	over := picked("i")
	over.Overflow = true
	_, _, ok = h.Turn(over, 10)
	assert.False(t, ok, "an entry that saw more messages than it lists gives no turn")
}

func TestHeldStatesBounds(t *testing.T) {
	t.Parallel()
	h := NewStates(2)
	for i := range 3 {
		inst := fmt.Sprint("i", i)
		h.Hold(inst, State{ETag: "e", Context: true}, false, nil)
		h.Message(heldEntry(inst, "m", 1, 1))
	}
	_, _, ok := h.Turn(picked("i0"), 10)
	assert.False(t, ok, "the least recently used instance is out")
	_, _, ok = h.Turn(picked("i2"), 10)
	assert.True(t, ok)

	for i := range maxHeldMessages {
		h.Message(heldEntry("i2", fmt.Sprint("x", i), 1, 1))
	}
	_, _, ok = h.Turn(picked("i2"), 10)
	assert.False(t, ok, "past maxHeldMessages the instance is forgotten")
}

func TestHeldStatesStartAndETag(t *testing.T) {
	t.Parallel()
	h := NewStates(10)
	h.Hold("i", State{Context: true}, false, nil)
	_, _, ok := h.Turn(picked("i"), 10)
	assert.False(t, ok, "without an ETag nothing can be conditioned")

	h.StartWritten("new", Message{ID: "s", Start: true})
	st, msgs, ok := h.Turn(picked("new"), 10)
	require.True(t, ok)
	assert.True(t, st.Absent, "a start to an instance held nowhere is taken to create it")
	assert.True(t, msgs[0].Start)

	h.Hold("run", State{ETag: "e", Context: true}, false, nil)
	h.StartWritten("run", Message{ID: "s", Start: true})
	st, _, ok = h.Turn(picked("run"), 10)
	require.True(t, ok)
	assert.False(t, st.Absent, "a start to a held instance keeps its state")

	h.Hold("run", State{ETag: "e2"}, true, &Message{ID: "s2", Start: true})
	_, msgs, _ = h.Turn(picked("run"), 10)
	assert.Equal(t, []string{"s2"}, heldIDs(msgs), "a fresh start forgets the earlier incarnation's messages")

	var none *States
	none.Hold("i", State{ETag: "e"}, false, nil)
	none.Message(heldEntry("i", "m", 1, 1))
	_, _, ok = none.Turn(picked("i"), 10)
	assert.False(t, ok, "a nil States holds nothing")
}

// Peek shows a held state with no visible message (an eager turn brings
// its own) and changes nothing; Claim lets one lock at a time be built
// from a held state, and only from the state it was built for.
func TestHeldStatesPeekAndClaim(t *testing.T) {
	t.Parallel()
	h := NewStates(10)
	_, _, ok := h.Peek("i", 100)
	assert.False(t, ok)
	assert.False(t, h.Claim("i", "e1"), "nothing held")

	h.Hold("i", State{ETag: "e1", Context: true}, false, nil)
	st, msgs, ok := h.Peek("i", 100)
	require.True(t, ok)
	assert.Equal(t, "e1", st.ETag)
	assert.Empty(t, msgs)
	h.Message(heldEntry("i", "m2", 20, 20))
	h.Message(heldEntry("i", "m1", 10, 10))
	h.Message(heldEntry("i", "timer", 5, 500))
	_, msgs, ok = h.Peek("i", 100)
	require.True(t, ok)
	assert.Equal(t, []string{"m1", "m2"}, heldIDs(msgs), "visible ones, oldest first")

	assert.False(t, h.Claim("i", "e0"), "another state than the one held")
	require.True(t, h.Claim("i", "e1"))
	assert.False(t, h.Claim("i", "e1"), "claimed once")
	_, _, ok = h.Peek("i", 100)
	assert.False(t, ok, "a claimed state is not held")
	h.Hold("i", State{ETag: "e2", Context: true}, false, nil)
	_, msgs, ok = h.Peek("i", 1000)
	require.True(t, ok)
	assert.Equal(t, []string{"timer", "m1", "m2"}, heldIDs(msgs), "a claim keeps the messages (by enqueue time)")
}
