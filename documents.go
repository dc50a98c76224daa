// Documents (models): the JSON shape of every document kind stored in the
// container (instance, execution, history, queue message, session, KV,
// outbox intent).

package cdb

import (
	"encoding/json"
	"fmt"

	"github.com/duroxide-go/duroxide-cdb/internal/docs"
)

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
// document (status_mirror.go); 0 when they mirror none (documents written
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
	// the last runtime that abandoned it reported (pending.go); the ack
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
	// tombstone (type "consumed": queue_documents.go).
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
// Pages (kv_pages.go), which have no Pages of their own.
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
