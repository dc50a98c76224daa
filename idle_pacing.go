// Idle pacing: the change-feed reader of an idle process reads a little
// less often to make room for the process's other idle requests.

package cdb

import "sync"

// An idle process makes one change-feed read per ChangeFeedInterval, and
// also the lease heartbeat's renewal and lease query and the waiting
// fetches' safety queries (a candidate query when a lease view's answer
// is older than its lifetime, or a lock the pool knew of expired). Each
// of those other requests is owed one interval of the reader's pause: the
// pause after a read that found nothing is lengthened by at most
// idlePayStep of an interval until the debt is paid, so that reads and
// the other requests together make at most one request per interval
// (issue 13's idle target), while no pause grows by more than a tenth
// (the wake-ups' latency by a few milliseconds) instead of whole reads
// being left out. A read that finds changes is followed by the plain
// interval; what is owed meanwhile is capped at maxIdleDebt intervals.

// idlePayStep is the most of an interval one pause repays: 0.1, enough
// for the default heartbeat and safety queries (about 0.65 requests/s,
// 0.05 per 80 ms interval).
const idlePayStep = 0.1

// maxIdleDebt bounds what is owed (in intervals), so that a process
// coming out of a busy stretch pays at most maxIdleDebt/idlePayStep
// lengthened pauses.
const maxIdleDebt = 50

// idlePacer is what the reader owes for a process's other idle requests
// (not the slot moves of a rebalance, which are events, not a steady
// cost). Safe for concurrent use.
type idlePacer struct {
	mu   sync.Mutex
	owed float64 // intervals
}

// add counts n idle requests other than change-feed reads.
func (ip *idlePacer) add(n int) {
	ip.mu.Lock()
	ip.owed = min(maxIdleDebt, ip.owed+float64(n))
	ip.mu.Unlock()
}

// stretch returns the factor for the reader's pause after an empty read
// (1 plus what it repays) and takes the repayment off the debt.
func (ip *idlePacer) stretch() float64 {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	pay := min(ip.owed, idlePayStep)
	ip.owed -= pay
	return 1 + pay
}
