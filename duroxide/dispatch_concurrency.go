package duroxide

// DispatchConcurrency is an optional capability of a Provider whose queues
// are split into lanes, one per concurrent fetch, so that concurrent
// dispatchers never contend for the same messages (duroxide-cdb's dispatch
// slots). A fetch sees only its lane's share of a queue, so a runtime with
// fewer dispatchers than lanes would leave lanes waiting; the runtime reads
// it to run at least that many dispatchers by default and to refuse fewer.
// It is a Go addition to duroxide's contract.
type DispatchConcurrency interface {
	// DispatchConcurrency returns the number of lanes of the orchestrator
	// queue and of the worker queue, each at least 1.
	DispatchConcurrency() (orchestration, worker int)
}
