// Document ids and lock tokens: how each document kind is named in its
// partition, dispatch slots, and parsing lock tokens.

package cdb

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Document ids. The partition key is the instance id (/instanceId), so a
// document id only has to be unique inside its instance's logical partition
// and never contains the instance id itself: whatever the instance id holds
// (/ \ ? #, unicode, 2 KB of text), every id below is short, ASCII, and free
// of the characters Cosmos DB forbids in ids (/ \ ? #). User-supplied text
// that must go into an id (a session id) is encoded by encodeIDPart.
const (
	// instanceDocID is the id of the instance document (DESIGN.md §2.2.1,
	// without the instance id prefix).
	instanceDocID = "instance"
	// kvStoreDocID and kvDeltaDocID are the ids of the two KV documents of
	// an instance (see kv.go).
	kvStoreDocID = "kv-store"
	kvDeltaDocID = "kv-delta"
)

// MaxInstanceIDBytes is the longest instance id the provider accepts, in
// bytes of UTF-8: the limit Cosmos DB puts on a partition key value in a
// container with large (version 2) partition keys, which New creates. A
// longer id is rejected up front with a permanent error and nothing written.
const MaxInstanceIDBytes = 2048

// maxIDPartLen is how long encodeIDPart lets its base64url form grow before
// it switches to a SHA-256 digest, so that every id stays far below the
// service's 255-character limit.
const maxIDPartLen = 200

// validateInstanceID checks that instance can be a partition key value: not
// empty, valid UTF-8, at most MaxInstanceIDBytes bytes, and not the
// partition the provider reserves for its leases (LeasePartitionKey).
func validateInstanceID(op, instance string) error {
	switch {
	case instance == "":
		return permanent(op, "instance id must not be empty")
	case len(instance) > MaxInstanceIDBytes:
		return permanent(op, fmt.Sprintf("instance id is %d bytes; Cosmos DB partition key values are limited to %d bytes", len(instance), MaxInstanceIDBytes))
	case !utf8.ValidString(instance):
		return permanent(op, "instance id is not valid UTF-8")
	case instance == LeasePartitionKey:
		return permanent(op, fmt.Sprintf("instance id %q is reserved for the provider's dispatch-slot leases", instance))
	}
	return nil
}

// encodeIDPart turns arbitrary text into a piece of a document id: "b" and
// the unpadded base64url encoding of s when that is at most maxIDPartLen
// characters, otherwise "h" and the hex SHA-256 of s. The result never holds
// / \ ? # or a quote, and is at most 201 characters long.
func encodeIDPart(s string) string {
	b := base64.RawURLEncoding.EncodeToString([]byte(s))
	if len(b) <= maxIDPartLen {
		return "b" + b
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:])
}

// pad20 formats n in 20 decimal digits, so that ids sort in numeric order.
func pad20(n uint64) string {
	s := strconv.FormatUint(n, 10)
	return strings.Repeat("0", 20-len(s)) + s
}

// historyDocID is the id of one history event: "hist-<execution>-<event>",
// both zero-padded to 20 digits.
func historyDocID(executionID, eventID uint64) string {
	return "hist-" + pad20(executionID) + "-" + pad20(eventID)
}

// executionDocID is the id of one execution's document: "exec-<execution>".
func executionDocID(executionID uint64) string {
	return "exec-" + pad20(executionID)
}

// workerDocID is the deterministic id of an activity's worker-queue
// document: "wq-<execution>-<activity id>". Being deterministic, a repeated
// enqueue of the same activity is a 409 (already queued), and cancellation
// deletes by id without a query.
func workerDocID(executionID, activityID uint64) string {
	return "wq-" + pad20(executionID) + "-" + pad20(activityID)
}

// sessionDocID is the id of a session document: "session-" and the encoded
// session id.
func sessionDocID(sessionID string) string {
	return "session-" + encodeIDPart(sessionID)
}

// newOrchQueueDocID returns a fresh id for a message a client enqueues:
// "oq-" and a time-ordered UUID (version 7).
func newOrchQueueDocID() string {
	return "oq-" + newSeq()
}

// ackQueueDocID is the deterministic id of the n-th queue document a turn
// produces under lock lockID: "oq-<lock>-<n>". Delivering it twice, by the
// ack and by the outbox reconciler, is a 409, which counts as success.
func ackQueueDocID(lockID string, n int) string {
	return "oq-" + lockID + "-" + strconv.Itoa(n)
}

// intentDocID is the id of the n-th outbox intent of the turn acked under
// lockID: "intent-<lock>-<n>".
func intentDocID(lockID string, n int) string {
	return "intent-" + lockID + "-" + strconv.Itoa(n)
}

// completionDocID is the deterministic id of the orchestrator-queue message
// an AckWorkItem creates for the work item locked under lockID:
// "oq-w-<lock>". A retried ack after an ambiguous failure finds it (409).
func completionDocID(lockID string) string {
	return "oq-w-" + lockID
}

// newSeq returns a new time-ordered sequence key: the 32 hex digits of a
// version 7 UUID, monotonic within this process. Queue documents carry it
// so that messages enqueued in the same millisecond keep their order.
func newSeq() string {
	u, err := uuid.NewV7()
	if err != nil {
		u = uuid.New()
	}
	return strings.ReplaceAll(u.String(), "-", "")
}

// newLockID returns a fresh lock id: 32 hex digits of a random UUID. Lock
// ids appear inside patch filter predicates and document ids, so they hold
// only [0-9a-f].
func newLockID() string {
	return strings.ReplaceAll(uuid.NewString(), "-", "")
}

// NumDispatchSlots is the number of dispatch slots the queues are
// partitioned into (DESIGN.md §2.4).
const NumDispatchSlots = 256

// DispatchSlot returns the dispatch slot of an instance, 0 to 255: the
// 32-bit FNV-1a hash of the instance id's UTF-8 bytes, modulo 256. The hash
// is stable across processes, platforms and releases (Rust's
// DefaultHasher, which duroxide-cdb's Rust code uses, is not), so every process agrees on an instance's slot.
func DispatchSlot(instance string) uint8 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(instance))
	return uint8(h.Sum32() % NumDispatchSlots)
}

// Lock tokens. A lock token is opaque to the runtime; it carries what an
// ack, renew or abandon needs to find the locked documents without a read:
//
//	orchestration: "o.<base64url(instance)>.<lock id>"
//	work item:     "w.<base64url(instance)>.<document id>.<lock id>"
//
// base64url never holds '.', and document and lock ids never do either.
const (
	orchTokenPrefix   = "o"
	workerTokenPrefix = "w"
)

// orchLockToken builds the lock token of an instance lock.
func orchLockToken(instance, lockID string) string {
	return orchTokenPrefix + "." + base64.RawURLEncoding.EncodeToString([]byte(instance)) + "." + lockID
}

// workerLockToken builds the lock token of a worker-queue lock.
func workerLockToken(instance, docID, lockID string) string {
	return workerTokenPrefix + "." + base64.RawURLEncoding.EncodeToString([]byte(instance)) + "." + docID + "." + lockID
}

// parseOrchLockToken splits an orchestration lock token into instance and
// lock id; ok is false when the token is malformed.
func parseOrchLockToken(token string) (instance, lockID string, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != orchTokenPrefix || !isLockID(parts[2]) {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(b) == 0 {
		return "", "", false
	}
	return string(b), parts[2], true
}

// parseWorkerLockToken splits a worker lock token into instance, document
// id and lock id; ok is false when the token is malformed.
func parseWorkerLockToken(token string) (instance, docID, lockID string, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 4 || parts[0] != workerTokenPrefix || !isLockID(parts[3]) || !strings.HasPrefix(parts[2], "wq-") {
		return "", "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(b) == 0 {
		return "", "", "", false
	}
	return string(b), parts[2], parts[3], true
}

// isLockID reports whether s looks like a lock id (32 lowercase hex digits),
// which keeps it safe to inline in a patch filter predicate.
func isLockID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
