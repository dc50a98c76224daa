package duroxide

import "context"

// QueueStatsReporter is an optional capability of a ProviderAdmin: the
// messages of its queues by state, and how long the oldest ready one has
// waited, for dashboards and alerts ("is the worker queue backing up?").
// GetQueueDepths counts only the unlocked messages; this says what they
// are. It is a Go addition to duroxide's contract, like DispatchConcurrency;
// this module's cdb and in-memory providers implement it. Match it with a
// type assertion.
type QueueStatsReporter interface {
	// GetQueueStats returns both queues' counts at one moment of the
	// provider's clock. Errors are *ProviderError values (a failed query
	// is retryable).
	GetQueueStats(ctx context.Context) (QueueStats, error)
}

// QueueStats is what GetQueueStats reports for the orchestrator queue
// (starts, completions, events, timers) and the worker queue (activities).
type QueueStats struct {
	Orchestrator QueueCounts
	Worker       QueueCounts
}

// QueueCounts is one queue's messages by state; every message is in
// exactly one of Ready, Locked and Delayed.
type QueueCounts struct {
	// Ready counts the messages visible and unlocked: waiting for a
	// dispatcher now.
	Ready uint64
	// Locked counts the messages a live peek-lock holds (a turn or an
	// activity in progress).
	Locked uint64
	// Delayed counts the unlocked messages not visible yet: timers that
	// have not fired (a finished instance's too, until it fires and is
	// dropped), messages abandoned with a delay.
	Delayed uint64
	// OldestReadyAgeMs is how long, in ms, the ready message that became
	// visible first has been waiting (now minus its visible-at time); 0
	// when none is ready. A value that keeps growing means the queue's
	// dispatchers are not keeping up, or none runs.
	OldestReadyAgeMs uint64
}

// Count adds one message to c: locked when lockedUntilMs is after nowMs,
// else delayed when visibleAtMs is after nowMs, else ready (its wait
// counted into OldestReadyAgeMs). Times are ms since the Unix epoch. It is
// the rule every provider's GetQueueStats applies, so they agree.
func (c *QueueCounts) Count(nowMs, visibleAtMs, lockedUntilMs int64) {
	switch {
	case lockedUntilMs > nowMs:
		c.Locked++
	case visibleAtMs > nowMs:
		c.Delayed++
	default:
		c.Ready++
		c.OldestReadyAgeMs = max(c.OldestReadyAgeMs, uint64(nowMs-visibleAtMs))
	}
}
