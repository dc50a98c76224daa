package runtime

import (
	"fmt"
	goruntime "runtime"
)

// coroutine runs an orchestration function on its own goroutine one step at
// a time: poll resumes it and waits until it blocks on an unresolved future
// or returns, which is how duroxide polls the orchestration future once per
// history event. Exactly one of the engine and the orchestration goroutine
// runs at any moment; the channels hand control back and forth.
type coroutine struct {
	fn      func() (string, error)
	resume  chan bool // true: run on; false: abort (Goexit)
	yielded chan struct{}
	exited  chan struct{}
	started bool

	// Written by the orchestration goroutine before it yields the last
	// time, read by the engine after: the yielded channel orders them.
	finished bool
	output   string
	err      error
	panicked *string
	aborting bool
	// aborted is set by abort once the goroutine has exited (engine side),
	// so that a second abort returns at once.
	aborted bool
}

func newCoroutine(fn func() (string, error)) *coroutine {
	return &coroutine{
		fn:      fn,
		resume:  make(chan bool),
		yielded: make(chan struct{}),
		exited:  make(chan struct{}),
	}
}

// poll runs the orchestration until it blocks or finishes and reports
// whether it finished.
func (co *coroutine) poll() bool {
	if co.finished {
		return true
	}
	if !co.started {
		co.started = true
		go co.run()
	} else {
		co.resume <- true
	}
	<-co.yielded
	return co.finished
}

func (co *coroutine) run() {
	defer close(co.exited)
	defer func() {
		if co.aborting {
			return // Goexit after abort: the engine no longer listens
		}
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if e, ok := r.(error); ok {
				msg = e.Error()
			}
			co.panicked = &msg
		}
		co.finished = true
		co.yielded <- struct{}{}
	}()
	co.output, co.err = co.fn()
}

// block is called on the orchestration goroutine when it waits on something
// unresolved: it hands control to the engine and returns when the engine
// polls again. When the engine aborts the turn it unwinds the goroutine with
// runtime.Goexit (deferred calls run; the function never returns).
func (co *coroutine) block() {
	if co.aborting {
		goruntime.Goexit()
	}
	co.yielded <- struct{}{}
	if !<-co.resume {
		co.aborting = true
		goruntime.Goexit()
	}
}

// abort ends a suspended orchestration goroutine and waits until it has
// exited, so that nothing touches the turn's state afterwards. Aborting
// twice is harmless.
func (co *coroutine) abort() {
	if !co.started || co.finished || co.aborted {
		return
	}
	co.resume <- false
	<-co.exited
	co.aborted = true
}
