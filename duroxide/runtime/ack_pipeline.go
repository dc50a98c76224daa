package runtime

// ackPipeline lets a dispatcher goroutine (orchestration or worker) fetch
// its next item while the previous item's ack is still on its way to the
// store, at most one ack behind: a new ack waits for the previous one. The
// item stays locked until its ack commits (peek-lock; an orchestration's
// lock is renewed until then), so a crash before then redelivers the turn
// or activity as duroxide's at-least-once contract requires; only the
// dispatcher no longer waits for the round trip.
type ackPipeline struct{ busy chan struct{} }

func newAckPipeline() *ackPipeline { return &ackPipeline{busy: make(chan struct{}, 1)} }

// run starts ack on a runtime goroutine (Shutdown waits for it) once the
// previous ack of this pipeline has finished.
func (p *ackPipeline) run(r *Runtime, ack func()) {
	p.busy <- struct{}{}
	r.spawn(func() {
		defer func() { <-p.busy }()
		ack()
	})
}
