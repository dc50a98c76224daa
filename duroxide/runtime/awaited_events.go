package runtime

import (
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// AwaitedEvent is an external-event wait of an execution that has
// received no event yet: what raising an event of that name would
// complete.
type AwaitedEvent struct {
	// EventID is the ExternalSubscribed event of the wait.
	EventID uint64
	// Name is the event name it waits for.
	Name string
	// SubscribedAtMs is when the wait was recorded (ms since the Unix
	// epoch).
	SubscribedAtMs uint64
}

// AwaitedExternalEvents returns the external-event waits of history (one
// execution's, from its OrchestrationStarted, in order) that no event has
// reached and no cancellation ended, in subscription order; none when the
// execution has ended. It replays the subscriptions, cancellations and
// arrivals through the replay engine's matching state, as
// DroppedExternalEvents does, so a wait it reports is one an event raised
// now with that name would complete (for the dashboard's pending work and
// its raise form).
func AwaitedExternalEvents(history []duroxide.Event) []AwaitedEvent {
	s := newCtxState()
	var subs []duroxide.Event
	for _, ev := range history {
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			s, subs = newCtxState(), nil
			s.raceFix = raceFixFor(ev)
		case duroxide.ExternalSubscribed:
			s.bindExternalSubscription(ev.EventID, k.Name)
			subs = append(subs, ev)
		case duroxide.ExternalSubscribedCancelled:
			if ev.SourceEventID != nil {
				s.cancelExternal(*ev.SourceEventID)
			}
		case duroxide.ExternalEvent:
			if s.hasPendingSubscriptionSlot(k.Name) {
				s.deliverExternal(k.Name, k.Data)
			}
		}
		if ev.IsTerminal() {
			return nil
		}
	}
	var out []AwaitedEvent
	for _, ev := range subs {
		i, ok := s.externalArrivalIndex(ev.EventID)
		name := s.extSubs[ev.EventID].name
		if ok && i >= len(s.extArrivals[name]) {
			out = append(out, AwaitedEvent{EventID: ev.EventID, Name: name, SubscribedAtMs: ev.TimestampMs})
		}
	}
	return slices.Clip(out)
}
