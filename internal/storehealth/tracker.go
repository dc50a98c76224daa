// Package storehealth tracks whether a provider's store answers, for the
// whole provider: every request the provider sends (each try, of every
// call: fetches, acks, client reads, the lease heartbeat, the change-feed
// reader, the SDK's own metadata reads) reports its outcome to one
// Tracker, so that an outage is seen by the first request it fails,
// whichever call sent it, and ended by the first request that succeeds
// after it began.
//
// An outage is logged as a few lines, not one per failed request: the
// first failure at once at WARN with its cause (connection refused,
// DNS, TLS, 401/403, a missing container, a 5xx or 400 with the service's
// status, substatus and message), then the 2nd, 4th, 8th ... failure of
// the outage, and "store reachable again" at INFO, with the outage's
// length and its number of failed requests, once a request sent after the
// outage began has succeeded. A request that failed because its caller
// gave up (a cancelled context) says nothing of the store and is not
// reported.
//
// The Tracker also keeps the last failure of the current outage
// (LastCause), so that a call cut short by its deadline can say what the
// store did (a connection refused) rather than only that time ran out.
package storehealth

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// Tracker is the health of one provider's store. Its methods are safe for
// concurrent use.
type Tracker struct {
	log *zap.Logger
	// now is the clock of outage lengths (time.Now: monotonic, never the
	// provider's configurable clock, which tests move).
	now func() time.Time

	mu       sync.Mutex
	since    time.Time // the outage's first failure; zero while healthy
	failures int       // failed requests of the current outage
	first    string    // the outage's first cause, described
	last     error     // the outage's last failure
}

// New returns a Tracker that logs to log (nil: nothing).
func New(log *zap.Logger) *Tracker {
	if log == nil {
		log = zap.NewNop()
	}
	return &Tracker{log: log, now: time.Now}
}

// Failed records a request of call (the provider method it belongs to,
// "sdk" for the SDK's own) that got no answer or an answer that says the
// store cannot serve it (err: the transport error, or the
// *azcore.ResponseError). The first failure of an outage is logged at once,
// then the 2nd, 4th, 8th ...
func (t *Tracker) Failed(call string, err error) {
	now := t.now()
	t.mu.Lock()
	if t.since.IsZero() {
		t.since, t.failures, t.first = now, 0, cosmos.Describe(err)
	}
	t.failures++
	t.last = err
	n, since := t.failures, t.since
	t.mu.Unlock()
	if n&(n-1) != 0 {
		return
	}
	msg := "Cosmos DB request failed"
	if n > 1 {
		msg = "Cosmos DB requests still failing"
	}
	t.log.Warn(msg, zap.String("cause", cosmos.Describe(err)), zap.String("call", call),
		zap.Int("failed_requests", n), zap.Duration("failing_for", now.Sub(since).Round(time.Millisecond)))
}

// Succeeded records a request sent at sent that got an answer the store
// served. It ends an outage that began before sent, and logs its end once.
func (t *Tracker) Succeeded(sent time.Time) {
	t.mu.Lock()
	if t.since.IsZero() || sent.Before(t.since) {
		t.mu.Unlock()
		return
	}
	since, n, first := t.since, t.failures, t.first
	t.since, t.failures, t.first, t.last = time.Time{}, 0, "", nil
	t.mu.Unlock()
	t.log.Info("store reachable again", zap.Duration("after", t.now().Sub(since).Round(time.Millisecond)),
		zap.Int("failed_requests", n), zap.String("first_cause", first))
}

// LastCause returns the last failure of the current outage, nil while the
// store answers.
func (t *Tracker) LastCause() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}
