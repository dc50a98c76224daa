package runtime

// ackPipeline lets a dispatcher goroutine (orchestration or worker) fetch
// its next item while the previous item's ack is still on its way to the
// store, at most one ack behind: a new ack waits for the previous one. The
// item stays locked until its ack commits (peek-lock; an orchestration's
// lock is renewed until then), so a crash before then redelivers the turn
// or activity as duroxide's at-least-once contract requires; only the
// dispatcher no longer waits for the round trip.
//
// The acks run one after another on one long-lived runtime goroutine per
// pipeline (started by the first run, ended by close; Shutdown waits for
// it), not on a new goroutine per ack: an ack goes deep into the provider
// and its SDK, and a fresh goroutine's stack grew (copied) on every one.
// The worker's fetch ahead (workPrefetch) uses a pipeline of its own for
// the same reason. A pipeline is used by its dispatcher goroutine only.
type ackPipeline struct {
	// jobs hands the next ack to the pipeline's goroutine (unbuffered: run
	// returns once the goroutine took it, that is once the previous ack
	// finished); nil until the first run.
	jobs chan func()
}

func newAckPipeline() *ackPipeline { return &ackPipeline{} }

// run hands ack to the pipeline's goroutine, starting it on first use, and
// returns once the previous ack of this pipeline has finished and ack has
// started.
func (p *ackPipeline) run(r *Runtime, ack func()) {
	if p.jobs == nil {
		jobs := make(chan func())
		p.jobs = jobs
		r.spawn(func() {
			for job := range jobs {
				job()
			}
		})
	}
	p.jobs <- ack
}

// close ends the pipeline's goroutine once the ack it runs (if any) has
// finished; it does not wait for that. run must not be called after close.
func (p *ackPipeline) close() {
	if p.jobs != nil {
		close(p.jobs)
		p.jobs = nil
	}
}
