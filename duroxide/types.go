package duroxide

import "time"

// OrchestrationItem is one locked turn of work for one instance, as
// FetchOrchestrationItem returns it (duroxide's OrchestrationItem plus the
// lock token and attempt count Rust returns beside it in a tuple).
//
// Until AckOrchestrationItem or AbandonOrchestrationItem is called with
// LockToken, or the lock expires, no other fetch returns this instance.
type OrchestrationItem struct {
	// Instance is the orchestration instance id.
	Instance string
	// OrchestrationName is the orchestration's registered name; for an
	// instance not yet created it comes from the StartOrchestration message.
	OrchestrationName string
	// ExecutionID is the current execution (1 for a new instance).
	ExecutionID uint64
	// Version is the orchestration's version string, e.g. "1.0.0"; it may
	// be empty for a new instance whose start message left it to the runtime.
	Version string
	// History is the current execution's whole history, ordered by EventID.
	History []Event
	// Messages are the instance's visible orchestrator-queue messages this
	// fetch locked, in enqueue order.
	Messages []WorkItem
	// HistoryError is set when the stored history could not be decoded (the
	// lock is held all the same, so the runtime can abandon it and, after
	// the maximum attempts, poison the instance); History may then be
	// empty or partial.
	HistoryError *string
	// KVSnapshot is the instance's KV store at fetch time, by key.
	KVSnapshot map[string]KvEntry
	// LockToken identifies this lock for ack, abandon and renew.
	LockToken string
	// AttemptCount is how many times these messages have been fetched,
	// this time included (1 on the first fetch); the runtime poisons the
	// instance when it exceeds its maximum.
	AttemptCount uint32
}

// KvEntry is one value of an instance's KV store (duroxide's KvEntry).
type KvEntry struct {
	Value string
	// LastUpdatedAtMs is when the key was last written, in milliseconds
	// since the Unix epoch, as stamped by the runtime in KeyValueSet.
	LastUpdatedAtMs uint64
}

// Execution statuses the runtime writes in ExecutionMetadata.Status and
// providers report in InstanceInfo and ExecutionInfo.
const (
	StatusRunning        = "Running"
	StatusCompleted      = "Completed"
	StatusFailed         = "Failed"
	StatusContinuedAsNew = "ContinuedAsNew"
)

// ExecutionMetadata is what the runtime computed about a turn for the
// provider to store blindly with AckOrchestrationItem (duroxide's
// ExecutionMetadata); providers never inspect event contents to derive it.
// A nil field means "leave the stored value as it is".
type ExecutionMetadata struct {
	// Status is the execution's new status (StatusCompleted, StatusFailed,
	// StatusContinuedAsNew, or StatusRunning), nil to keep the current one.
	Status *string
	// Output is the terminal value: the result, the error message, or the
	// input passed to continue-as-new.
	Output *string
	// OrchestrationName and OrchestrationVersion create or update the
	// instance record.
	OrchestrationName    *string
	OrchestrationVersion *string
	// ParentInstanceID links a sub-orchestration to its parent, for
	// cascading deletes and instance trees.
	ParentInstanceID *string
	// PinnedDuroxideVersion, when set, is stored unconditionally as the
	// execution's pinned version for capability filtering; the runtime sets
	// it only on the first turn of an execution.
	PinnedDuroxideVersion *Version
}

// ScheduledActivityIdentifier names an activity the runtime cancels in a
// turn (a select loser, or the activities of a terminated orchestration);
// AckOrchestrationItem removes its worker-queue entry so that the worker
// holding it loses the lock (duroxide's lock-stealing cancellation).
type ScheduledActivityIdentifier struct {
	Instance    string
	ExecutionID uint64
	// ActivityID is the event id of the ActivityScheduled event.
	ActivityID uint64
}

// SessionFetchConfig enables session routing in FetchWorkItem (duroxide's
// SessionFetchConfig): items without a session are always eligible, as are
// items of sessions OwnerID already holds and of unowned sessions, which the
// fetch then claims for LockTimeout. With a nil config only items without a
// session are returned.
type SessionFetchConfig struct {
	// OwnerID identifies the owner of claimed sessions; every worker slot
	// sharing it counts as one owner.
	OwnerID string
	// LockTimeout is how long a newly claimed session is held.
	LockTimeout time.Duration
}

// LockedWorkItem is one worker-queue message locked by FetchWorkItem.
type LockedWorkItem struct {
	Item WorkItem
	// LockToken identifies the lock for ack, abandon and renew.
	LockToken string
	// AttemptCount is how many times the item has been fetched, this time
	// included.
	AttemptCount uint32
}

// ExecutionState is the state of the orchestration an activity belongs to,
// as RenewWorkItemLock reports it, so that a worker can stop an activity
// whose result nobody will read. It is duroxide's ExecutionState
// (Running, Terminal{status}, Missing), which duroxide 0.1.x later replaced
// by lock stealing alone; this port keeps both: a renewal fails when the
// item was removed, and reports the state when it succeeds.
type ExecutionState struct {
	// Kind is ExecutionRunning, ExecutionTerminal or ExecutionMissing.
	Kind ExecutionStateKind
	// Status is the terminal status ("Completed", "Failed",
	// "ContinuedAsNew") when Kind is ExecutionTerminal.
	Status string
}

// ExecutionStateKind enumerates ExecutionState's variants.
type ExecutionStateKind int

// The variants of ExecutionState.
const (
	// ExecutionRunning: the activity's execution is still running.
	ExecutionRunning ExecutionStateKind = iota
	// ExecutionTerminal: the execution completed, failed or continued as
	// new; the activity's result will not be observed.
	ExecutionTerminal
	// ExecutionMissing: the instance does not exist (deleted, or never
	// created).
	ExecutionMissing
)

// String returns "Running", "Terminal(<status>)" or "Missing".
func (s ExecutionState) String() string {
	switch s.Kind {
	case ExecutionRunning:
		return "Running"
	case ExecutionTerminal:
		return "Terminal(" + s.Status + ")"
	}
	return "Missing"
}

// CustomStatus is the custom status of an instance and its version, a
// counter the provider increments on every change (GetCustomStatus).
type CustomStatus struct {
	// Status is the current custom status, nil when cleared or never set.
	Status *string
	// Version increases by one on every change; 0 means never set.
	Version uint64
}

// SystemStats is the size of one instance's stored state
// (GetInstanceStats, duroxide's SystemStats): its current execution's
// history, its KV store and the queue messages carried into it.
type SystemStats struct {
	// HistoryEventCount is the number of events in the current execution.
	HistoryEventCount uint64
	// HistorySizeBytes is the JSON size of those events, in bytes.
	HistorySizeBytes uint64
	// QueuePendingCount is the number of queue messages the current
	// execution's OrchestrationStarted carried forward from the previous
	// execution (duroxide's queue_pending_count).
	QueuePendingCount uint64
	// KVUserKeyCount is the number of keys in the instance's KV store.
	KVUserKeyCount uint64
	// KVTotalValueBytes is the total size of its KV values, in bytes.
	KVTotalValueBytes uint64
}
