// Held locks: what this provider keeps of the locks it holds (orchestration
// and work item), cached by internal/locks so that ack, renew and abandon
// need no read.

package cdb

import (
	"github.com/duroxide-go/duroxide-cdb/internal/locks"
)

// orchLock is what a fetch learned about the instance it locked, kept so
// that the ack, renew and abandon of the same lock need no read: the
// instance document as locked (with the ETag the ack replaces it under),
// the ids of the messages the lock tagged, and the KV documents (with
// the pages no root names, which the ack deletes once it committed).
type orchLock struct {
	instance    string
	lockID      string
	doc         instanceDoc
	messageIDs  []string
	kv          kvState
	lockedUntil int64
	// oldestEnqueuedAt and oldestSeq order the locked messages' instance
	// among the candidates again when the lock is abandoned.
	oldestEnqueuedAt int64
	oldestSeq        string
}

// workerLock is what a work-item fetch learned about the item it locked.
type workerLock struct {
	instance    string
	docID       string
	lockID      string
	etag        string
	sessionID   *string
	lockedUntil int64
	// enqueuedAt, seq and tag put the message back among the candidates
	// in its place when the lock is abandoned.
	enqueuedAt int64
	seq        string
	tag        *string
}

// HeldInstance and HeldUntil let the lock cache (internal/locks) sweep and
// find the locks.
func (l orchLock) HeldInstance() string   { return l.instance }
func (l orchLock) HeldUntil() int64       { return l.lockedUntil }
func (l workerLock) HeldInstance() string { return l.instance }
func (l workerLock) HeldUntil() int64     { return l.lockedUntil }

// lockCache is the cache of the locks this process holds.
type lockCache = locks.Cache[orchLock, workerLock]

func newLockCache() *lockCache { return locks.New[orchLock, workerLock]() }
