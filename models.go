// Document models (DESIGN.md §2.2): the JSON shape of every document kind
// stored in the container, a partition's documents parsed by kind, document
// ids, dispatch slots and lock tokens, the encoding of work items and
// events, and building and consuming queue messages.

package cdb

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/docs"
	"github.com/google/uuid"
)

// Documents (models): the JSON shape of every document kind stored in the
// container (instance, execution, history, queue message, session, KV,
// outbox intent).

// Document types, the value of every document's "type" field
// (DESIGN.md §2.2).
const (
	// typeInstance: an instance's metadata, lock and custom status
	// (DESIGN.md §2.2.1), id "instance".
	typeInstance = "instance"
	// typeInstancePending: the same document before the first ack created
	// the instance: it holds the lock of the first turn only. Queries for
	// instances (type = 'instance') never see it, so an instance exists only
	// once an ack's metadata created it (duroxide's contract).
	typeInstancePending = "instance_pending"
	// typeExecution: one execution's status, output and history watermark.
	typeExecution = "execution"
	// typeHistory: one history event (DESIGN.md §2.2.2).
	typeHistory = "history"
	// typeOrchQueue and typeWorkerQueue: queue messages (DESIGN.md §2.2.3-4).
	typeOrchQueue   = "orch_queue"
	typeWorkerQueue = "worker_queue"
	// typeOutboxIntent: cross-partition writes awaiting delivery (DESIGN.md §2.2.5).
	typeOutboxIntent = "outbox_intent"
	// typeSession: session ownership (DESIGN.md §2.2.6).
	typeSession = "session"
	// typeKV: the instance's KV store and current-execution KV delta.
	typeKV = "kv"
)

// sysETag is the system property every stored document carries.
type sysETag struct {
	ETag string `json:"_etag"`
}

// docETag returns the _etag of a stored document.
func docETag(raw []byte) string {
	var s sysETag
	_ = json.Unmarshal(raw, &s)
	return s.ETag
}

// pinnedVersion is the duroxide version an execution is pinned to
// (internal/docs, shared with the held states).
type pinnedVersion = docs.PinnedVersion

// instanceDoc is the instance document (DESIGN.md §2.2.1), id "instance". Its
// ETag is the instance lock's fencing token: the fetch takes the lock with
// If-Match on the ETag it read, and the ack replaces it with If-Match, so
// any write in between (another fetch, a delete) makes the later one fail.
//
// The output lives in the execution document (a mirror of it here);
// HistoryWatermark is the last committed event id of the current execution
// (history documents above it are staged parts of an unfinished ack and are
// ignored); LastAckedLock names the lock whose ack last committed, which
// lets an ack whose answer was lost find out that it did commit;
// LastReleasedLock does the same for an abandon. Status and
// CompletedAt mirror the current execution's, for listings and bulk filters.
// StatusExecutionID names the execution whose status and output Status and
// Output mirror, written by the ack's batch together with that execution's
// document (statuswatch.Mirror); 0 when they mirror none (documents written
// before the field existed, a terminal output above statuswatch.MaxMirroredOutputBytes).
type instanceDoc struct {
	ID                    string         `json:"id"`
	InstanceID            string         `json:"instanceId"`
	Type                  string         `json:"type"`
	DispatchSlot          int            `json:"dispatchSlot"`
	OrchestrationName     string         `json:"orchestrationName"`
	OrchestrationVersion  *string        `json:"orchestrationVersion"`
	CurrentExecutionID    uint64         `json:"currentExecutionId"`
	HistoryWatermark      uint64         `json:"historyWatermark"`
	Status                string         `json:"status"`
	CompletedAt           *int64         `json:"completedAt"`
	StatusExecutionID     uint64         `json:"statusExecutionId,omitempty"`
	Output                *string        `json:"output,omitempty"`
	ParentInstanceID      *string        `json:"parentInstanceId"`
	PinnedDuroxideVersion *pinnedVersion `json:"pinnedDuroxideVersion"`
	CustomStatus          *string        `json:"customStatus"`
	CustomStatusVersion   uint64         `json:"customStatusVersion"`
	LockToken             *string        `json:"lockToken"`
	LockedUntil           int64          `json:"lockedUntil"`
	LastAckedLock         string         `json:"lastAckedLock,omitempty"`
	LastReleasedLock      string         `json:"lastReleasedLock,omitempty"`
	CreatedAt             int64          `json:"createdAt"`
	UpdatedAt             int64          `json:"updatedAt"`
	// StartMessageID is the id of the start message a client's start
	// stored with the pending document (see startInstance).
	StartMessageID string `json:"startMessageId,omitempty"`
	// PendingReason is why the pending instance's start has not run, as
	// the last runtime that abandoned it reported (pending instances, admin.go); the ack
	// that creates the instance clears it.
	PendingReason string `json:"pendingReason,omitempty"`
	ETag          string `json:"-"`
	// RID is the document's _rid, read by fetches only (a deleted and
	// recreated instance is a new document); never written.
	RID string `json:"-"`
}

// lockedBy reports whether the document holds lock lockID that has not
// expired at nowMs.
func (d *instanceDoc) lockedBy(lockID string, nowMs int64) bool {
	return d.LockToken != nil && *d.LockToken == lockID && d.LockedUntil > nowMs
}

// locked reports whether any unexpired lock is held at nowMs.
func (d *instanceDoc) locked(nowMs int64) bool {
	return d.LockToken != nil && d.LockedUntil > nowMs
}

// exists reports whether the instance was created by an ack.
func (d *instanceDoc) exists() bool { return d != nil && d.Type == typeInstance }

// pending reports whether the document is a pending instance's
// (duroxide.StatusPending): a start stored or locked, no turn committed
// and no execution (history appended to a pending document outside a turn
// makes it no longer pending).
func (d *instanceDoc) pending() bool {
	return d != nil && d.Type == typeInstancePending && d.CurrentExecutionID == 0
}

// hasContext reports whether a turn of the instance has an orchestration
// to continue (it exists, or an execution was started): without it, a turn
// needs a start message.
func (d *instanceDoc) hasContext() bool {
	return d != nil && (d.exists() || d.CurrentExecutionID > 0)
}

// decodeInstanceDoc decodes an instance document with its ETag and _rid.
func decodeInstanceDoc(raw []byte) (*instanceDoc, error) {
	d := &instanceDoc{}
	var err error
	if d.ETag, err = decodeDoc(raw, d); err != nil {
		return nil, err
	}
	var sys struct {
		RID string `json:"_rid"`
	}
	if err := json.Unmarshal(raw, &sys); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	d.RID = sys.RID
	return d, nil
}

// executionDoc is one execution of an instance, id "exec-<n>": the status
// and output the runtime's metadata set (the SQLite provider's executions
// table), its pinned version, and its history watermark.
type executionDoc struct {
	ID          string         `json:"id"`
	InstanceID  string         `json:"instanceId"`
	Type        string         `json:"type"`
	ExecutionID uint64         `json:"executionId"`
	Status      string         `json:"status"`
	Output      *string        `json:"output"`
	StartedAt   int64          `json:"startedAt"`
	CompletedAt *int64         `json:"completedAt"`
	Watermark   uint64         `json:"watermark"`
	Pinned      *pinnedVersion `json:"pinnedDuroxideVersion"`
	ETag        string         `json:"-"`
}

// historyDoc is one history event (DESIGN.md §2.2.2), id "hist-<exec>-<event>".
// EventData is the event's duroxide JSON, kept as a string so that a
// document with undecodable data still loads (history_error contract).
type historyDoc struct {
	ID          string `json:"id"`
	InstanceID  string `json:"instanceId"`
	Type        string `json:"type"`
	ExecutionID uint64 `json:"executionId"`
	EventID     uint64 `json:"eventId"`
	EventData   string `json:"eventData"`
}

// queueDoc is an orchestrator-queue or worker-queue message (DESIGN.md §2.2.3
// and §2.2.4). LockedUntil is 0 when unlocked, so that one comparison
// (lockedUntil <= now) finds unlocked messages. Seq orders messages
// enqueued in the same millisecond.
type queueDoc struct {
	ID           string  `json:"id"`
	InstanceID   string  `json:"instanceId"`
	Type         string  `json:"type"`
	WorkItem     string  `json:"workItem"`
	DispatchSlot int     `json:"dispatchSlot"`
	VisibleAt    int64   `json:"visibleAt"`
	EnqueuedAt   int64   `json:"enqueuedAt"`
	Seq          string  `json:"seq"`
	LockToken    *string `json:"lockToken"`
	LockedUntil  int64   `json:"lockedUntil"`
	AttemptCount int64   `json:"attemptCount"`
	// ReleasedLock is the lock the last abandon released (worker queue),
	// so that an abandon whose answer was lost can tell it landed.
	ReleasedLock string `json:"releasedLock,omitempty"`
	// ConsumedBy is the lock whose ack consumed the message, in its
	// tombstone (type "consumed": queue documents, below).
	ConsumedBy string `json:"consumedBy,omitempty"`
	// Worker queue only.
	ExecutionID *uint64 `json:"executionId,omitempty"`
	ActivityID  *uint64 `json:"activityId,omitempty"`
	SessionID   *string `json:"sessionId"`
	Tag         *string `json:"tag"`
	ETag        string  `json:"-"`
}

// before orders queue messages by enqueue time, then sequence key.
func (d *queueDoc) before(o *queueDoc) bool {
	if d.EnqueuedAt != o.EnqueuedAt {
		return d.EnqueuedAt < o.EnqueuedAt
	}
	return d.Seq < o.Seq
}

// sessionDoc is a session's ownership (DESIGN.md §2.2.6), in the partition of
// the instance whose activity claimed it, id "session-<encoded id>".
type sessionDoc struct {
	ID           string `json:"id"`
	InstanceID   string `json:"instanceId"`
	Type         string `json:"type"`
	DispatchSlot int    `json:"dispatchSlot"`
	SessionID    string `json:"sessionId"`
	OwnerID      string `json:"ownerId"`
	LockedUntil  int64  `json:"lockedUntil"`
	LastActivity int64  `json:"lastActivity"`
	CreatedAt    int64  `json:"createdAt"`
	ETag         string `json:"-"`
}

// kvValue is one KV entry; a nil Value in the delta document is a
// tombstone (the key was cleared in the current execution).
type kvValue struct {
	Value           *string `json:"value"`
	LastUpdatedAtMs uint64  `json:"lastUpdatedAtMs"`
	ExecutionID     uint64  `json:"executionId"`
}

// kvDoc is a document of one of an instance's two KV tables: "kv-store"
// holds the values as of the end of the last finished execution (what a
// fetch returns as the KV snapshot, duroxide's kv_store), "kv-delta" the
// changes the current execution made (duroxide's kv_delta), merged into the
// store when the execution ends. Those two are the tables' roots; a table
// too large for its root continues in the page documents its root names in
// Pages (kv.go), which have no Pages of their own.
type kvDoc struct {
	ID         string             `json:"id"`
	InstanceID string             `json:"instanceId"`
	Type       string             `json:"type"`
	Entries    map[string]kvValue `json:"entries"`
	Pages      []string           `json:"pages,omitempty"`
	ETag       string             `json:"-"`
}

// delivery is one document an outbox intent writes into another partition
// (or, for a turn too big for one batch, into its own).
type delivery struct {
	TargetInstanceID string          `json:"targetInstanceId"`
	Document         json.RawMessage `json:"document"`
}

// intentDoc is an outbox intent (DESIGN.md §2.2.5), written in the source
// instance's partition in the same transactional batch as the turn that
// produced it, id "intent-<lock>-<n>". Its deliveries create documents with
// deterministic ids, so delivering twice is a 409, which counts as success.
type intentDoc struct {
	ID            string     `json:"id"`
	InstanceID    string     `json:"instanceId"`
	Type          string     `json:"type"`
	Deliveries    []delivery `json:"deliveries"`
	CreatedAt     int64      `json:"createdAt"`
	AttemptCount  int        `json:"attemptCount"`
	LastAttemptAt *int64     `json:"lastAttemptAt"`
	// Staged marks an intent written before its turn's final batch (a turn
	// whose queue documents do not fit in it): it may be delivered only
	// once the turn acked under TurnLock committed, which the instance
	// document (LastAckedLock) or the tombstone of the turn's first
	// consumed message (FirstMessageID) tells.
	Staged         bool   `json:"staged,omitempty"`
	TurnLock       string `json:"turnLock,omitempty"`
	FirstMessageID string `json:"firstMessageId,omitempty"`
}

// decodeDoc decodes a stored document into v and returns its _etag.
func decodeDoc(raw []byte, v any) (string, error) {
	if err := json.Unmarshal(raw, v); err != nil {
		return "", fmt.Errorf("decode document: %w", err)
	}
	return docETag(raw), nil
}

// docHeader is the part of every document the provider dispatches on.
type docHeader struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// Partition state: one partition's documents parsed by kind (instance,
// executions, queue messages, sessions, KV).

// partitionState is what one single-partition query returned about an
// instance, sorted by document type.
type partitionState struct {
	inst       *instanceDoc
	msgs       []*queueDoc
	workers    []*queueDoc
	kv         kvState
	executions []*executionDoc
	history    []historyDoc
	sessions   []*sessionDoc
	intents    []*intentDoc
	other      []docHeader
}

// holds reports whether the partition read has document id (a queue
// message, or the tombstone it became).
func (st *partitionState) holds(id string) bool {
	for _, m := range st.msgs {
		if m.ID == id {
			return true
		}
	}
	for _, o := range st.other {
		if o.ID == id {
			return true
		}
	}
	return false
}

// parseState decodes the documents of one partition by their type; the
// orchestrator-queue messages come out in enqueue order.
func parseState(raws [][]byte) (partitionState, error) {
	var st partitionState
	kvDocs := map[string]*kvDoc{}
	for _, raw := range raws {
		var h docHeader
		if err := json.Unmarshal(raw, &h); err != nil {
			return st, fmt.Errorf("decode document: %w", err)
		}
		var err error
		switch h.Type {
		case typeInstance, typeInstancePending:
			st.inst, err = decodeInstanceDoc(raw)
		case typeOrchQueue, typeWorkerQueue:
			d := &queueDoc{}
			d.ETag, err = decodeDoc(raw, d)
			if h.Type == typeOrchQueue {
				st.msgs = append(st.msgs, d)
			} else {
				st.workers = append(st.workers, d)
			}
		case typeKV:
			// One pass: KV documents can be megabytes.
			var d struct {
				kvDoc
				SysETag string `json:"_etag"`
			}
			if err = json.Unmarshal(raw, &d); err != nil {
				err = fmt.Errorf("decode document: %w", err)
				break
			}
			d.ETag = d.SysETag
			kvDocs[d.ID] = &d.kvDoc
		case typeExecution:
			d := &executionDoc{}
			d.ETag, err = decodeDoc(raw, d)
			st.executions = append(st.executions, d)
		case typeHistory:
			var d historyDoc
			_, err = decodeDoc(raw, &d)
			st.history = append(st.history, d)
		case typeSession:
			d := &sessionDoc{}
			d.ETag, err = decodeDoc(raw, d)
			st.sessions = append(st.sessions, d)
		case typeOutboxIntent:
			d := &intentDoc{}
			_, err = decodeDoc(raw, d)
			st.intents = append(st.intents, d)
		default:
			st.other = append(st.other, h)
		}
		if err != nil {
			return st, err
		}
	}
	if len(kvDocs) > 0 {
		var err error
		if st.kv, err = resolveKV(kvDocs); err != nil {
			return st, err
		}
	}
	sort.Slice(st.msgs, func(i, j int) bool { return st.msgs[i].before(st.msgs[j]) })
	sort.Slice(st.executions, func(i, j int) bool { return st.executions[i].ExecutionID < st.executions[j].ExecutionID })
	return st, nil
}

// execution returns the execution document with id executionID, or nil.
func (st *partitionState) execution(executionID uint64) *executionDoc {
	for _, e := range st.executions {
		if e.ExecutionID == executionID {
			return e
		}
	}
	return nil
}

// Document ids and lock tokens: how each document kind is named in its
// partition, dispatch slots, and parsing lock tokens.

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

// Encoding of work items and history events into documents, and decoding an
// execution's visible history.

// encodeWorkItem returns the duroxide JSON of a work item.
func encodeWorkItem(item duroxide.WorkItem) (string, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return "", fmt.Errorf("encode work item: %w", err)
	}
	return string(b), nil
}

// decodeWorkItem decodes a work item stored as duroxide JSON.
func decodeWorkItem(s string) (duroxide.WorkItem, error) {
	var w duroxide.WorkItem
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return duroxide.WorkItem{}, fmt.Errorf("decode work item: %w", err)
	}
	return w, nil
}

// encodeEvent returns the duroxide JSON of an event.
func encodeEvent(ev duroxide.Event) (string, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("encode event %d: %w", ev.EventID, err)
	}
	return string(b), nil
}

// decodeHistory sorts history documents by event id, drops those above the
// watermark (staged parts of an ack that never committed), and decodes the
// rest. Undecodable data is an error naming the event's position, never a
// silently shorter history (duroxide's history deserialization contract).
func decodeHistory(instance string, executionID, watermark uint64, docs []historyDoc) ([]duroxide.Event, error) {
	sort.Slice(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
	events := make([]duroxide.Event, 0, len(docs))
	for i, d := range docs {
		if d.EventID > watermark {
			break
		}
		var ev duroxide.Event
		if err := json.Unmarshal([]byte(d.EventData), &ev); err != nil {
			return nil, fmt.Errorf("failed to deserialize history event at position %d for instance '%s' execution %d: %w", i, instance, executionID, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// visibleHistory filters history documents to those at or below the
// watermark.
func visibleHistory(docs []historyDoc, watermark uint64) []historyDoc {
	out := docs[:0:0]
	for _, d := range docs {
		if d.EventID <= watermark {
			out = append(out, d)
		}
	}
	return out
}

// Queue documents: building orchestrator and worker queue messages,
// consuming them in a batch, cancelling activities, and the work-item lock
// condition.

// Consumed messages leave tombstones.
//
// Every queue document has an id fixed before its first write: a client's
// enqueue reuses its id when it retries, an outbox delivery uses the
// deterministic id of its target document, an activity is
// "wq-<execution>-<activity>", a work item's completion "oq-w-<lock>". A
// repeated create of a document that exists is a 409, which the writers
// count as success, so retries and repeated deliveries are harmless while
// the document exists. Once an ack has consumed it, they would not be: a
// retry whose first answer was lost after it landed, or a second outbox
// reconciler that read an intent before the first one delivered and deleted
// it, would create the message again, and it would be processed a second
// time (an external event raised twice, an activity run again after its
// successful ack, a sub-orchestration's completion delivered twice).
//
// So acks do not delete the messages they consume: they turn each into a
// tombstone with the same id (type "consumed", the work item dropped, the
// consuming lock recorded), which keeps later creates of that id failing
// with 409 and never matches a queue query. A tombstone expires after
// tombstoneTTLSeconds through Cosmos DB's per-item time to live, which New
// turns on for the containers it creates; in a container created without
// it, tombstones stay until their instance is deleted.

// typeConsumed is the type of a consumed message's tombstone.
const typeConsumed = "consumed"

// tombstoneTTLSeconds is how long a tombstone outlives its message: longer
// than any retry of a create or outbox delivery pass takes.
const tombstoneTTLSeconds = 3600

// consumeOp is the batch operation that consumes message id under lockID:
// a patch turning it into a tombstone, with If-Match when etag is set.
func consumeOp(id, lockID, etag string) batchOp {
	var po azcosmos.PatchOperations
	po.AppendSet("/type", typeConsumed)
	po.AppendSet("/consumedBy", lockID)
	po.AppendSet("/workItem", jsonNull)
	po.AppendSet("/ttl", tombstoneTTLSeconds)
	return patchOp(id, po, etag)
}

// cancelPatch turns a worker-queue message into the tombstone of its
// cancellation by the turn acked under lockID; its filter predicate leaves
// a tombstone alone (412), so a message consumed earlier keeps its own.
func cancelPatch(lockID string) azcosmos.PatchOperations {
	op := consumeOp("", lockID, "")
	op.patch.SetCondition("FROM c WHERE c.type = '" + typeWorkerQueue + "'")
	return op.patch
}

// workerLockCondition is lockCondition for a worker-queue message: it also
// requires the document to still be a message, not the tombstone its ack
// left (which keeps the lock token).
func workerLockCondition(lockID string, nowMs int64) string {
	c := "FROM c WHERE c.type = '" + typeWorkerQueue + "' AND c.lockToken = '" + lockID + "'"
	if nowMs > 0 {
		c += " AND c.lockedUntil > " + strconv.FormatInt(nowMs, 10)
	}
	return c
}

// newWorkerDoc builds the worker-queue document of an activity.
func newWorkerDoc(act duroxide.ActivityExecuteItem, nowMs int64) (queueWrite, error) {
	wi, err := encodeWorkItem(duroxide.WorkItem{Kind: act})
	if err != nil {
		return queueWrite{}, err
	}
	exec, id := act.ExecutionID, act.ID
	d := queueDoc{
		ID: workerDocID(exec, id), InstanceID: act.Instance, Type: typeWorkerQueue, WorkItem: wi,
		DispatchSlot: int(DispatchSlot(act.Instance)), VisibleAt: nowMs, EnqueuedAt: nowMs, Seq: newSeq(),
		ExecutionID: &exec, ActivityID: &id, SessionID: act.SessionID, Tag: act.Tag,
	}
	b, err := json.Marshal(d)
	return queueWrite{target: act.Instance, id: d.ID, doc: b, entry: queueEntry(&d)}, err
}

// newOrchDoc builds an orchestrator-queue document.
func newOrchDoc(item duroxide.WorkItem, id string, nowMs, visibleAt int64) (queueWrite, error) {
	wi, err := encodeWorkItem(item)
	if err != nil {
		return queueWrite{}, err
	}
	target := item.Instance()
	d := queueDoc{
		ID: id, InstanceID: target, Type: typeOrchQueue, WorkItem: wi, DispatchSlot: int(DispatchSlot(target)),
		VisibleAt: visibleAt, EnqueuedAt: nowMs, Seq: newSeq(),
	}
	b, err := json.Marshal(d)
	return queueWrite{target: target, id: id, doc: b, entry: queueEntry(&d)}, err
}
