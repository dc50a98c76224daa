package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestAwaitedExternalEventsAreTheWaitsNoEventReached checks the waits
// reported open: a wait its event reached is not, a cancelled one is not,
// an event raised before any wait (dropped) completes nothing, and a
// finished execution waits for nothing.
func TestAwaitedExternalEventsAreTheWaitsNoEventReached(t *testing.T) {
	t.Parallel()
	id := uint64(0)
	ev := func(src uint64, k duroxide.EventKind) duroxide.Event {
		id++
		var s *uint64
		if src != 0 {
			s = duroxide.Uint64Ptr(src)
		}
		return duroxide.NewEvent(id, "i", 1, s, k)
	}
	h := []duroxide.Event{
		ev(0, duroxide.OrchestrationStarted{Name: "o", Version: "1", Input: ""}),
		ev(0, duroxide.ExternalEvent{Name: "Approval", Data: "early"}), // 2: no wait yet: dropped
		ev(0, duroxide.ExternalSubscribed{Name: "Approval"}),           // 3
		ev(0, duroxide.ExternalSubscribed{Name: "Shipped"}),            // 4
		ev(0, duroxide.ExternalSubscribed{Name: "Timeout"}),            // 5
		ev(5, duroxide.ExternalSubscribedCancelled{Reason: "lost"}),    // 6
		ev(0, duroxide.ExternalEvent{Name: "Shipped", Data: "yes"}),    // 7
		ev(0, duroxide.ExternalSubscribed{Name: "Shipped"}),            // 8
	}
	got := AwaitedExternalEvents(h)
	var names []string
	var ids []uint64
	for _, a := range got {
		names, ids = append(names, a.Name), append(ids, a.EventID)
	}
	assert.Equal(t, []string{"Approval", "Shipped"}, names)
	assert.Equal(t, []uint64{3, 8}, ids)
	done := append(h, ev(0, duroxide.OrchestrationCompleted{Output: ""}))
	assert.Empty(t, AwaitedExternalEvents(done), "a finished execution waits for nothing")
}
