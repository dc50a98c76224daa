package duroxide

// EagerDispatcher is implemented by providers that hand work to their own
// waiting fetches in the batch of the ack that produced it, instead of
// leaving it for a fetch to find and lock (duroxide-cdb's Provider: a
// turn's ack creates the activities it schedules already locked for the
// process's waiting work-item fetches, and an activity's ack locks its
// instance's next turn for a waiting orchestration fetch). The base
// Provider contract is unchanged: the fetches return what they would have
// locked themselves, with the same lock semantics. The runtime reads the
// counts into its metrics (duroxide_eager_dispatch_total).
type EagerDispatcher interface {
	// EagerDispatch reports whether eager dispatch is on and its counts
	// since the provider was created.
	EagerDispatch() EagerDispatchStats
}

// EagerDispatchStats are a provider's eager dispatch counts.
type EagerDispatchStats struct {
	// Enabled is false when the provider was configured without eager
	// dispatch (its counts then stay 0).
	Enabled bool
	// Orchestrator counts turns handed to waiting orchestration fetches;
	// Worker counts work items handed to waiting work-item fetches.
	Orchestrator, Worker EagerDispatchCounts
}

// EagerDispatchCounts counts one queue's eager dispatches.
type EagerDispatchCounts struct {
	// Hits are items handed to a waiting fetch.
	Hits uint64
	// Fallbacks are eager attempts that handed nothing (the store refused
	// the eager part, its answer was lost, or the lock expired before the
	// hand-over): the work took the normal path.
	Fallbacks uint64
}
