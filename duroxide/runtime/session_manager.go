package runtime

import (
	"sync"
	"time"
)

// sessionTracker counts the in-flight activities of each session this
// runtime serves, across all its worker goroutines (duroxide's
// SessionTracker); the number of sessions is checked against
// Options.MaxSessionsPerRuntime.
type sessionTracker struct {
	mu     sync.Mutex
	counts map[string]int
}

func newSessionTracker() *sessionTracker { return &sessionTracker{counts: map[string]int{}} }

// distinct returns the number of sessions with an activity in flight.
func (t *sessionTracker) distinct() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.counts)
}

func (t *sessionTracker) acquire(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[session]++
}

func (t *sessionTracker) release(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[session] <= 1 {
		delete(t.counts, session)
		return
	}
	t.counts[session]--
}

// sessionManager heartbeats the sessions owned by owners and sweeps
// orphaned sessions until the runtime stops (duroxide's
// run_session_manager).
func (r *Runtime) sessionManager(owners []string) {
	renew := time.NewTicker(renewalInterval(r.opts.SessionLockTimeout, r.opts.SessionLockRenewalBuffer))
	defer renew.Stop()
	cleanup := time.NewTicker(r.opts.SessionCleanupInterval)
	defer cleanup.Stop()
	for {
		select {
		case <-r.stopping:
			return
		case <-r.runCtx.Done():
			return
		case <-renew.C:
			n, err := r.provider.RenewSessionLock(r.runCtx, owners, r.opts.SessionLockTimeout, r.opts.SessionIdleTimeout)
			if err != nil && r.runCtx.Err() == nil {
				r.logger.Warn("session lock renewal failed", "error", err)
			} else if n > 0 {
				r.logger.Debug("session locks renewed", "sessions", n)
			}
		case <-cleanup.C:
			n, err := r.provider.CleanupOrphanedSessions(r.runCtx, r.opts.SessionIdleTimeout)
			if err != nil && r.runCtx.Err() == nil {
				r.logger.Warn("session cleanup failed", "error", err)
			} else if n > 0 {
				r.logger.Debug("orphaned sessions cleaned up", "sessions", n)
			}
		}
	}
}
