package runtime

import (
	"cmp"
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// What became of an external event raised while no wait for it was
// pending. duroxide's rule (kept here so that histories replay the same on
// every duroxide runtime) skips such an ExternalEvent: it stays in history
// for audit, and no later wait receives it. For events that may come
// before their wait, use the persistent queue (Client.EnqueueEvent and
// OrchestrationContext.DequeueEvent), which buffers them.

// The reasons DroppedExternalEvents gives.
const (
	// DroppedNoWaitPending: when the event was applied, every wait for
	// its name had already received its event, or none existed.
	DroppedNoWaitPending = "dropped: no wait was pending"
	// DroppedWaitCancelled: the event was matched to a wait that the
	// orchestration then dropped unread (a Select it lost, Cancel), in an
	// execution under duroxide 0.1.31's race rules, which discard such an
	// event with its wait.
	DroppedWaitCancelled = "dropped: its wait was cancelled"
)

// DroppedEvent is an ExternalEvent of a history that the orchestration
// never received.
type DroppedEvent struct {
	// ExecutionID and EventID identify the ExternalEvent.
	ExecutionID, EventID uint64
	// Name is the event's name.
	Name string
	// Reason is DroppedNoWaitPending or DroppedWaitCancelled.
	Reason string
}

// DroppedExternalEvents returns the ExternalEvents of history (one or more
// executions, each from its OrchestrationStarted, in order) that the
// orchestration never received, in history order, without the
// orchestration's code (for `cdb-admin history` and the dashboard).
//
// It replays the history's subscriptions, cancellations and arrivals
// through the replay engine's own matching state (the code that decides
// at run time), so an event it reports DroppedNoWaitPending is one the
// engine skipped. One case needs the code to tell apart, and is reported
// either way as dropped: under the 0.1.31 race rules, a wait the code
// dropped in the very turn its event arrived (the cancellation is recorded
// at the end of that turn) either skipped the event or discarded it; both
// are reported DroppedWaitCancelled. Under the legacy rules (executions
// stamped before 0.1.31) an event matched to a wait cancelled later moves
// on to the next wait, as the engine does, and is not reported.
func DroppedExternalEvents(history []duroxide.Event) []DroppedEvent {
	var out []DroppedEvent
	var s *ctxState
	var arrivalIDs map[string][]uint64 // per name, the event ids behind s.extArrivals
	for _, ev := range history {
		if _, ok := ev.Kind.(duroxide.OrchestrationStarted); ok || s == nil {
			s, arrivalIDs = newCtxState(), map[string][]uint64{}
			s.raceFix = raceFixFor(ev)
		}
		switch k := ev.Kind.(type) {
		case duroxide.ExternalSubscribed:
			s.bindExternalSubscription(ev.EventID, k.Name)
		case duroxide.ExternalSubscribedCancelled:
			if ev.SourceEventID == nil {
				continue
			}
			sub := *ev.SourceEventID
			if s.raceFix {
				if i, ok := s.externalArrivalIndex(sub); ok {
					name := s.extSubs[sub].name
					if ids := arrivalIDs[name]; i < len(ids) {
						out = append(out, DroppedEvent{ExecutionID: ev.ExecutionID, EventID: ids[i], Name: name, Reason: DroppedWaitCancelled})
						arrivalIDs[name] = slices.Delete(ids, i, i+1)
					}
				}
			}
			s.cancelExternal(sub)
		case duroxide.ExternalEvent:
			if s.hasPendingSubscriptionSlot(k.Name) {
				s.deliverExternal(k.Name, k.Data)
				arrivalIDs[k.Name] = append(arrivalIDs[k.Name], ev.EventID)
			} else {
				out = append(out, DroppedEvent{ExecutionID: ev.ExecutionID, EventID: ev.EventID, Name: k.Name, Reason: DroppedNoWaitPending})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b DroppedEvent) int {
		if a.ExecutionID != b.ExecutionID {
			return cmp.Compare(a.ExecutionID, b.ExecutionID)
		}
		return cmp.Compare(a.EventID, b.EventID)
	})
	return out
}
