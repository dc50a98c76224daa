package runtime

import (
	"context"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// workPrefetch lets one worker fetch its next work item while its current
// activity runs (Options.WorkerPrefetchHold): the fetch's round trip to the
// store then overlaps the activity. At most one item is fetched ahead; it
// stays locked (peek-lock, as any fetched item) while it waits, and is
// abandoned, its attempt not counted, when the activity outlasts the hold,
// so that an item never waits long behind a slow activity. A worker whose
// last activity outlasted the hold does not fetch ahead for the next one.
// It is used by its worker's goroutine only.
type workPrefetch struct {
	r     *Runtime
	hold  time.Duration
	fetch func() (*duroxide.LockedWorkItem, error)
	// pending delivers the result of the fetch ahead (nil: none started).
	pending <-chan prefetched
	// free is closed when the worker is free for the item fetched ahead.
	free chan struct{}
	// slow is true when the last activity outlasted the hold.
	slow bool
	// lane runs the fetches ahead on one long-lived goroutine (see
	// ackPipeline), one at a time: a fetch ahead starts only after the
	// previous one was handed over (next or close took it).
	lane *ackPipeline
}

// prefetched is the outcome of a fetch ahead: an item, an error, or
// neither (no work, or the item was given up).
type prefetched struct {
	item *duroxide.LockedWorkItem
	err  error
}

func newWorkPrefetch(r *Runtime, fetch func() (*duroxide.LockedWorkItem, error)) *workPrefetch {
	return &workPrefetch{r: r, hold: r.opts.WorkerPrefetchHold, fetch: fetch, lane: newAckPipeline()}
}

// next returns the item fetched ahead, if any, else fetches one.
func (p *workPrefetch) next() (*duroxide.LockedWorkItem, error) {
	if p.pending != nil {
		res := <-p.pending
		p.pending = nil
		if res.item != nil || res.err != nil {
			return res.item, res.err
		}
	}
	return p.fetch()
}

// process runs work (the current item's processing), fetching the next
// item meanwhile unless fetching ahead is off, the last activity was slow,
// or the runtime is stopping.
func (p *workPrefetch) process(work func()) {
	if p.hold > 0 && !p.slow && !p.r.isStopping() {
		out := make(chan prefetched, 1)
		free := make(chan struct{})
		p.pending, p.free = out, free
		p.lane.run(p.r, func() { out <- p.ahead(free) })
	}
	start := time.Now()
	work()
	p.slow = time.Since(start) > p.hold
	if p.free != nil {
		close(p.free)
		p.free = nil
	}
}

// ahead fetches an item and hands it over once free is closed, or gives it
// up after the hold.
func (p *workPrefetch) ahead(free <-chan struct{}) prefetched {
	item, err := p.fetch()
	if item == nil {
		return prefetched{err: err}
	}
	t := time.NewTimer(p.hold)
	defer t.Stop()
	select {
	case <-free:
		return prefetched{item: item}
	case <-t.C:
		p.abandon(item)
		return prefetched{}
	}
}

// close gives up an item fetched ahead that the stopping worker will not
// process, and ends the goroutine that fetches ahead.
func (p *workPrefetch) close() {
	defer p.lane.close()
	if p.pending == nil {
		return
	}
	if res := <-p.pending; res.item != nil {
		p.abandon(res.item)
	}
	p.pending = nil
}

// abandon releases an item fetched ahead at once, without counting the
// attempt; if that fails, its lock expires.
func (p *workPrefetch) abandon(item *duroxide.LockedWorkItem) {
	ctx, cancel := context.WithTimeout(context.Background(), abandonTimeout)
	defer cancel()
	if err := p.r.provider.AbandonWorkItem(ctx, item.LockToken, 0, true); err != nil {
		p.r.logger.Debug("abandoning a work item fetched ahead failed; its lock will expire", "error", err)
	}
}
