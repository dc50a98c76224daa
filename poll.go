package cdb

import (
	"context"
	"sync"
	"time"
)

// DefaultLongPollInterval is how often a fetch with a poll timeout queries
// again while it waits for work. A write made through the same Provider
// (an enqueue, an ack, an abandon) wakes waiting fetches at once; writes by
// other processes are seen at the next poll.
const DefaultLongPollInterval = 250 * time.Millisecond

// notifier wakes long-polling fetches when this process writes to a queue.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

// wait returns a channel closed at the next notify.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// notify wakes every waiter.
func (n *notifier) notify() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// longPoll runs attempt until it finds work, fails, or pollTimeout passes
// (duroxide's long-polling contract: a provider may wait up to the poll
// timeout; with a zero timeout it tries once and returns at once). Between
// attempts it sleeps for the poll interval, or until this process writes
// to a queue.
func (p *Provider) longPoll(ctx context.Context, pollTimeout time.Duration, attempt func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(pollTimeout)
	for {
		woken := p.changes.wait()
		found, err := attempt(ctx)
		if err != nil || found || pollTimeout <= 0 {
			return err
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return nil
		}
		wait = min(wait, p.pollInterval)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-p.stop:
			t.Stop()
			return nil
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}
