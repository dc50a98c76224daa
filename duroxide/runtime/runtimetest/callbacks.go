package runtimetest

// Callbacks at a virtual time (Temporal's RegisterDelayedCallback), and
// waiting until an instance waits for an event.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// delayedCallback is fn, due when the environment's clock reaches at.
type delayedCallback struct {
	at time.Time
	fn func()
}

// RegisterDelayedCallback runs fn once the environment's clock is d past
// its start (New): "at virtual hour 3" is 3*time.Hour. With time skipping
// the clock jumps to that moment when the instances wait for nothing
// earlier (a timer due before it fires first), while the test waits
// (Instance.Wait, say), and fn runs on the environment's time-skipping
// goroutine before the clock moves on; in real time (WithRealTime) it
// runs on a timer's goroutine. fn must not call t.Fatal (it may call
// t.Error); it may send to instances with the environment's Client.
// Instance.RaiseEventAt is the one-line form for an event. A callback not
// yet due when the test ends never runs, and the test's cleanup waits
// (up to 10 s) for one that is running, so that none reports through t
// after the test.
func (e *Env) RegisterDelayedCallback(d time.Duration, fn func()) {
	at := e.start.Add(d)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.callbacksStopped {
		return
	}
	if e.clock == nil {
		e.realCallbacks.Add(1)
		e.realTimers = append(e.realTimers, time.AfterFunc(time.Until(at), func() {
			defer e.realCallbacks.Done()
			fn()
		}))
		return
	}
	e.callbacks = append(e.callbacks, &delayedCallback{at: at, fn: fn})
}

// stopCallbacks drops the callbacks not yet due (at the test's end) and
// returns a channel closed once the real-time ones already running have
// returned.
func (e *Env) stopCallbacks() <-chan struct{} {
	e.mu.Lock()
	e.callbacksStopped = true
	e.callbacks = nil
	for _, tm := range e.realTimers {
		if tm.Stop() { // it will not run: it is no longer waited for
			e.realCallbacks.Done()
		}
	}
	e.realTimers = nil
	e.mu.Unlock()
	ran := make(chan struct{})
	go func() {
		e.realCallbacks.Wait()
		close(ran)
	}()
	return ran
}

// nextCallback returns the earliest pending callback's time (zero when
// none).
func (e *Env) nextCallback() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Time
	for _, c := range e.callbacks {
		if next.IsZero() || c.at.Before(next) {
			next = c.at
		}
	}
	return next
}

// runDueCallbacks runs, in time order, the callbacks due at the clock's
// time, and reports whether it ran any.
func (e *Env) runDueCallbacks() bool {
	now := e.clock.Now()
	e.mu.Lock()
	var due []*delayedCallback
	e.callbacks = slices.DeleteFunc(e.callbacks, func(c *delayedCallback) bool {
		if !c.at.After(now) {
			due = append(due, c)
			return true
		}
		return false
	})
	e.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *delayedCallback) int { return a.at.Compare(b.at) })
	for _, c := range due {
		c.fn()
	}
	return len(due) > 0
}

// RaiseEventAt raises the external event name with data on the instance
// once the environment's clock is d past its start (RegisterDelayedCallback):
// "raise Approval at virtual hour 3" is inst.RaiseEventAt(3*time.Hour,
// "Approval", "ann"). Time does not skip on until the instance has
// received it. Unlike RaiseEvent it does not wait for a subscription: an
// event raised while the instance does not wait for it is dropped
// (duroxide's rule), as in production. A failure to raise it fails the
// test (t.Errorf).
func (i *Instance) RaiseEventAt(d time.Duration, name, data string) {
	i.sendAt(d, fmt.Sprintf("event %q", name), func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.ExternalEvent)
		return ok && k.Name == name
	}, func() error { return i.env.client.RaiseEvent(i.env.ctx, i.ID, name, data) })
}

// EnqueueEventAt sends data to the instance's queue (DequeueEvent) once
// the environment's clock is d past its start, as RaiseEventAt does for
// an event; queued messages are kept until dequeued.
func (i *Instance) EnqueueEventAt(d time.Duration, queue, data string) {
	i.sendAt(d, fmt.Sprintf("a message on %q", queue), func(ev duroxide.Event) bool {
		k, ok := ev.Kind.(duroxide.QueueEventDelivered)
		return ok && k.Name == queue
	}, func() error { return i.env.client.EnqueueEvent(i.env.ctx, i.ID, queue, data) })
}

// sendAt registers a delayed callback that sends (send) and holds time
// until the instance's history has one more event that is (the
// instance's end, the environment's stop or the wait timeout end the
// hold).
func (i *Instance) sendAt(d time.Duration, what string, is func(duroxide.Event) bool, send func() error) {
	i.env.RegisterDelayedCallback(d, func() {
		e := i.env
		count := func() int {
			n := 0
			for _, x := range i.callbackExecutions() {
				for _, ev := range x.Events {
					if is(ev) {
						n++
					}
				}
			}
			return n
		}
		e.mu.Lock()
		e.sending++
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.sending--
			e.mu.Unlock()
		}()
		before := count()
		if err := send(); err != nil {
			if e.ctx.Err() == nil {
				e.t.Errorf("runtimetest: %q: send %s at %v: %v", i.ID, what, d, err)
			}
			return
		}
		for deadline := time.Now().Add(e.waitTimeout); count() <= before; time.Sleep(2 * time.Millisecond) {
			if e.ctx.Err() != nil || openWork(lastEvents(i.callbackExecutions())).end == endDone {
				return
			}
			if time.Now().After(deadline) {
				e.t.Errorf("runtimetest: %q did not receive %s (sent at %v) within %v", i.ID, what, d, e.waitTimeout)
				return
			}
		}
	})
}

// callbackExecutions is executions for a delayed callback, which runs on
// the environment's time-skipping goroutine, not the test's: a failed
// read is reported with Errorf (never Fatalf, which must run on the
// test's goroutine) and only while the environment runs (once the test
// ends its runtime is shut down and reads fail by design); it returns
// nothing then.
func (i *Instance) callbackExecutions() []Execution {
	execs, err := i.env.history(i.ID)
	if err != nil && !errors.Is(err, ErrNoHistory) {
		if i.env.ctx.Err() == nil {
			i.env.t.Errorf("%v", err)
		}
		return nil
	}
	return execs
}

// WaitUntilWaiting waits until the instance's current execution waits for
// the external event name: it subscribed to name more times than it
// received name (Temporal tests poll a query for this). Time skips to get
// there, but not past the moment it subscribes, so an event the test then
// raises beats the timers. It stops the test after the environment's wait
// timeout, printing the history.
func (i *Instance) WaitUntilWaiting(name string) {
	i.env.t.Helper()
	_, stopWaiting := i.waitUntilWaiting(name)
	stopWaiting()
}

// waitUntilWaiting is WaitUntilWaiting, leaving the environment counting
// the test as waiting for name until stopWaiting is called (RaiseEvent
// calls it once its answer is counted as sent); received is how many name
// events the execution had received then.
func (i *Instance) waitUntilWaiting(name string) (received int, stopWaiting func()) {
	i.env.t.Helper()
	key := [2]string{i.ID, name}
	i.env.mu.Lock()
	i.env.waiting++ // time may skip to reach the subscription, not past it
	i.env.awaited[key]++
	i.env.mu.Unlock()
	stopWaiting = sync.OnceFunc(func() {
		i.env.mu.Lock()
		i.env.waiting--
		if i.env.awaited[key]--; i.env.awaited[key] == 0 {
			delete(i.env.awaited, key)
		}
		i.env.mu.Unlock()
	})
	reached := false
	defer func() {
		if !reached { // the test stopped (t.Fatal)
			stopWaiting()
		}
	}()
	i.until(fmt.Sprintf("wait for event %q", name), func(execs []Execution) bool {
		subscribed, got := eventCounts(execs, name)
		received = got
		return subscribed > got
	})
	reached = true
	return received, stopWaiting
}

// eventCounts counts, in the last execution, the subscriptions to the
// external event name and the name events received.
func eventCounts(execs []Execution, name string) (subscribed, got int) {
	for _, ev := range lastEvents(execs) {
		switch k := ev.Kind.(type) {
		case duroxide.ExternalSubscribed:
			if k.Name == name {
				subscribed++
			}
		case duroxide.ExternalEvent:
			if k.Name == name {
				got++
			}
		}
	}
	return subscribed, got
}
