// Fetch tracing: the steps of a fetch reported to an optional tracer (tests)
// and to metrics.

package cdb

// fetchEvent is one step of a fetch, reported to the provider's fetch
// tracer (tests attribute the requests of a fetch with it; nothing is
// traced in production, where the tracer is nil).
type fetchEvent string

// The steps a fetch reports. Those ending in "Query" or "Batch", and
// workPatch, are one Cosmos DB request each; the "skip" events say why a
// candidate was given up.
const (
	orchAttempt        fetchEvent = "orch attempt"
	orchCandidateQuery fetchEvent = "orch candidate query"
	orchStateQuery     fetchEvent = "orch state query"
	orchLockBatch      fetchEvent = "orch lock batch"
	// orchHeldLockBatch is the lock batch of an instance whose state this
	// process holds (the whole fetch); orchHeldRefused, that the service
	// refused it (another process changed the instance) and the fetch
	// reads the partition.
	orchHeldLockBatch  fetchEvent = "orch held lock batch"
	orchHeldRefused    fetchEvent = "orch held state refused"
	orchHistoryQuery   fetchEvent = "orch history query"
	orchSkipLocked     fetchEvent = "orch skip: instance locked"
	orchSkipNoVisible  fetchEvent = "orch skip: no visible message"
	orchSkipNotReady   fetchEvent = "orch skip: waits for a start"
	orchSkipFiltered   fetchEvent = "orch skip: capability filter"
	orchSkipLockLost   fetchEvent = "orch skip: lock batch lost"
	orchFound          fetchEvent = "orch found"
	workAttempt        fetchEvent = "work attempt"
	workCandidateQuery fetchEvent = "work candidate query"
	workPatch          fetchEvent = "work lock"
	workSkipLockLost   fetchEvent = "work skip: lock lost"
	workFound          fetchEvent = "work found"
	// A long-polling fetch that found nothing waits (pollWait), then goes
	// on because this process wrote to the queue (pollNotified) or because
	// the poll interval, a candidate's visibility or the poll timeout came
	// (pollTimer).
	pollWait     fetchEvent = "poll wait"
	pollNotified fetchEvent = "poll woken by a write"
	pollTimer    fetchEvent = "poll woken by the timer"
)

// traceFetch reports ev to the fetch tracer, if one is set.
func (p *Provider) traceFetch(ev fetchEvent) {
	if p.metrics != nil {
		p.metrics.fetchEvent(ev)
	}
	if ev == orchSkipLockLost || ev == workSkipLockLost || ev == orchHeldRefused {
		p.usage.lockRacesLost.Add(1)
	}
	if p.fetchTracer != nil {
		p.fetchTracer(ev)
	}
}
