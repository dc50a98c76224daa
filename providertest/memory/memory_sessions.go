package memory

import (
	"context"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// sessionAvailable reports whether owner may take an item of session sid:
// the session is unknown, its lock expired, or owner holds it. The caller
// holds p.mu.
func (p *MemoryProvider) sessionAvailable(sid, owner string, now int64) bool {
	s := p.sessions[sid]
	return s == nil || s.lockedUntil <= now || s.owner == owner
}

// claimSession gives session sid to cfg.OwnerID for cfg.LockTimeout and
// stamps its last activity (SQLite's upsert on fetch); the caller holds
// p.mu and has checked sessionAvailable.
func (p *MemoryProvider) claimSession(sid string, cfg *duroxide.SessionFetchConfig, now int64) {
	p.sessions[sid] = &memSessionRow{
		owner:          cfg.OwnerID,
		lockedUntil:    memAfter(now, cfg.LockTimeout),
		lastActivityAt: now,
	}
}

// touchSession stamps the last activity of a session whose lock is still
// held (the piggyback of ack and renew); the caller holds p.mu.
func (p *MemoryProvider) touchSession(sid *string, now int64) {
	if sid == nil {
		return
	}
	if s := p.sessions[*sid]; s != nil && s.lockedUntil > now {
		s.lastActivityAt = now
	}
}

// RenewSessionLock extends to now + extendFor the unexpired sessions owned
// by any of ownerIDs whose last activity is within idleTimeout, and
// returns how many it extended. Idle sessions are left to expire, so that
// another worker can claim them.
func (p *MemoryProvider) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	const op = "renew_session_lock"
	if err := memCtxErr(op, ctx); err != nil {
		return 0, err
	}
	if len(ownerIDs) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	idleCutoff := now - idleTimeout.Milliseconds()
	n := 0
	for _, s := range p.sessions {
		if slices.Contains(ownerIDs, s.owner) && s.lockedUntil > now && s.lastActivityAt > idleCutoff {
			s.lockedUntil = memAfter(now, extendFor)
			n++
		}
	}
	return n, nil
}

// CleanupOrphanedSessions removes sessions whose lock expired and that no
// worker-queue item refers to, and returns how many it removed.
// idleTimeout is unused, as in SQLite.
func (p *MemoryProvider) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	const op = "cleanup_orphaned_sessions"
	if err := memCtxErr(op, ctx); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.nowMs()
	pending := map[string]bool{}
	for _, r := range p.workQueue {
		if r.item.SessionID != nil {
			pending[*r.item.SessionID] = true
		}
	}
	n := 0
	for sid, s := range p.sessions {
		if s.lockedUntil < now && !pending[sid] {
			delete(p.sessions, sid)
			n++
		}
	}
	if n > 0 {
		p.signal()
	}
	return n, nil
}
