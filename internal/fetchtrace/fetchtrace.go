// Package fetchtrace names the steps of a provider's fetch: each attempt,
// query, lock batch and skip, and the long poll's waits. The provider
// reports every step to an optional tracer (its tests count the requests
// of a fetch with it; nothing is traced in production) and counts the lost
// lock races among them as metrics (LostRace).
package fetchtrace

// Event is one step of a fetch.
type Event string

// The steps a fetch reports. Those ending in "Query" or "Batch", and
// WorkPatch, are one Cosmos DB request each; the "skip" events say why a
// candidate was given up.
const (
	OrchAttempt        Event = "orch attempt"
	OrchCandidateQuery Event = "orch candidate query"
	OrchStateQuery     Event = "orch state query"
	OrchLockBatch      Event = "orch lock batch"
	// OrchHeldLockBatch is the lock batch of an instance whose state this
	// process holds (the whole fetch); OrchHeldRefused, that the service
	// refused it (another process changed the instance) and the fetch
	// reads the partition.
	OrchHeldLockBatch  Event = "orch held lock batch"
	OrchHeldRefused    Event = "orch held state refused"
	OrchHistoryQuery   Event = "orch history query"
	OrchSkipLocked     Event = "orch skip: instance locked"
	OrchSkipNoVisible  Event = "orch skip: no visible message"
	OrchSkipStaleRead  Event = "orch skip: state read older than the candidate"
	OrchSkipNotReady   Event = "orch skip: waits for a start"
	OrchSkipFiltered   Event = "orch skip: capability filter"
	OrchSkipLockLost   Event = "orch skip: lock batch lost"
	OrchFound          Event = "orch found"
	WorkAttempt        Event = "work attempt"
	WorkCandidateQuery Event = "work candidate query"
	WorkPatch          Event = "work lock"
	WorkSkipLockLost   Event = "work skip: lock lost"
	WorkFound          Event = "work found"
	// A waiting fetch was handed an item an ack locked for it in its own
	// batch (eager dispatch): PollEagerWork a work item, PollEagerTurn a
	// turn. No request of the fetch's.
	PollEagerWork Event = "poll handed a work item"
	PollEagerTurn Event = "poll handed a turn"
	// A long-polling fetch that found nothing waits (PollWait), then goes
	// on because this process wrote to the queue (PollNotified) or because
	// the poll interval, a candidate's visibility or the poll timeout came
	// (PollTimer).
	PollWait     Event = "poll wait"
	PollNotified Event = "poll woken by a write"
	PollTimer    Event = "poll woken by the timer"
)

// LostRace reports whether ev is a lock race this process lost (another
// fetch or process locked or changed the candidate first), and the queue's
// metric name ("orchestrator" or "worker").
func LostRace(ev Event) (queue string, lost bool) {
	switch ev {
	case OrchSkipLockLost, OrchHeldRefused:
		return "orchestrator", true
	case WorkSkipLockLost:
		return "worker", true
	}
	return "", false
}
