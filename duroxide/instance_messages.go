package duroxide

import "context"

// InstanceMessagesReader is an optional capability of a ProviderAdmin:
// the messages an instance has in the queues now (its orchestrator-queue
// work items, timers waiting to fire among them, and its activities in the
// worker queue), with their visibility, lock and attempt count. A
// dashboard shows from them what an instance waits for: the activities in
// flight (their attempt and lock), the timers and when they fire. It is a
// Go addition to duroxide's contract; find it with a type assertion.
type InstanceMessagesReader interface {
	// ListInstanceMessages returns instance's queued messages, the
	// orchestrator queue's first, each queue in enqueue order; none (not
	// an error) for an instance that has none or does not exist.
	// Errors are *ProviderError values.
	ListInstanceMessages(ctx context.Context, instance string) ([]InstanceMessage, error)
}

// The queues of InstanceMessage.Queue.
const (
	QueueOrchestrator = "orchestrator"
	QueueWorker       = "worker"
)

// InstanceMessage is one queued message of an instance.
type InstanceMessage struct {
	// Queue is QueueOrchestrator or QueueWorker.
	Queue string
	// Item is the work item (a timer is a TimerFiredItem invisible until
	// it fires; an activity is an ActivityExecuteItem).
	Item WorkItem
	// VisibleAt is when the message becomes visible to a fetch (ms since
	// the Unix epoch; a timer's fire time, or an abandon's delay).
	VisibleAt uint64
	// LockedUntil is when the peek-lock that holds the message expires
	// (ms since the Unix epoch), 0 when no lock holds it; LockToken is
	// that lock's token, "" when none.
	LockedUntil uint64
	LockToken   string
	// AttemptCount is how many fetches have locked the message (the
	// attempt in progress, when locked).
	AttemptCount uint32
}
