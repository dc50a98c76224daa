package runtimetest

// The virtual clock of an environment, and time skipping: when every
// instance waits only for durable timers, the clock jumps to the next one.

import (
	"context"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Clock is a virtual clock: real time plus an offset that only grows.
// It runs at the speed of real time, so lock timeouts, backoffs and
// everything else that waits keep working, and Advance moves it forward
// at once; an Env with a Clock advances it to the next durable timer
// whenever its instances wait for nothing else (time skipping). Safe for
// concurrent use.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
	skips  int
}

// NewClock returns a clock that reads real time until advanced.
func NewClock() *Clock { return &Clock{} }

// Now reads the clock: give it to the runtime (runtime.Options.Now) and to
// the provider (memory.MemoryOptions.Now, or the provider's own clock
// setting) of the same environment.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d (a negative d does nothing).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += max(d, 0)
}

// Skipped returns how many times the environment jumped the clock to a
// timer, and by how much in all (Advance's moves included).
func (c *Clock) Skipped() (jumps int, total time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skips, c.offset
}

// advanceTo moves the clock to at when it is ahead, counting a jump.
func (c *Clock) advanceTo(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := at.Sub(time.Now().Add(c.offset)); d > 0 {
		c.offset += d
		c.skips++
	}
}

// skipInterval is how often the environment checks whether its instances
// wait only for timers; two checks in a row must agree before it jumps.
const skipInterval = 2 * time.Millisecond

// skipTime jumps e's clock to the next durable timer whenever the
// environment is idle but for timers, until ctx ends.
func (e *Env) skipTime(ctx context.Context) {
	ticker := time.NewTicker(skipInterval)
	defer ticker.Stop()
	var seen idleState
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if e.runDueCallbacks() {
			seen = idleState{}
			continue
		}
		st, ok := e.idleButForTimers(ctx)
		if cb := e.nextCallback(); ok && !cb.IsZero() && (st.next.IsZero() || cb.Before(st.next)) {
			st.next = cb // a delayed callback comes before the next timer
		}
		switch {
		case !ok || st.next.IsZero():
			seen = idleState{}
		case st != seen:
			seen = st // once more, to be sure nothing moved in between
		default:
			e.clock.advanceTo(st.next)
			seen = idleState{}
		}
	}
}

// idleState is what two consecutive idle checks must agree on: the next
// timer and how many events the instances have.
type idleState struct {
	next   time.Time
	events int
}

// idleButForTimers reports whether every instance of the environment waits
// only for durable timers not yet due (or for events, which only the test
// sends), with nothing queued but those timers and nothing the test sent
// still unprocessed; st.next is the earliest timer, zero when none. The instances are those
// the provider lists, those the environment started, and their children
// and detached starts.
func (e *Env) idleButForTimers(ctx context.Context) (st idleState, ok bool) {
	admin, isAdmin := duroxide.AsManagementCapability(e.provider)
	if !isAdmin {
		return st, false
	}
	e.mu.Lock()
	busy := e.sending > 0 || e.waiting == 0
	todo := append([]string(nil), e.startedIDs...)
	awaited := make(map[[2]string]bool, len(e.awaited))
	for k := range e.awaited {
		awaited[k] = true
	}
	e.mu.Unlock()
	if busy {
		return st, false
	}
	depths, err := admin.GetQueueDepths(ctx)
	if err != nil || depths.WorkerQueue > 0 {
		return st, false
	}
	listed, err := admin.ListInstances(ctx)
	if err != nil {
		return st, false
	}
	todo = append(todo, listed...)
	now := e.clock.Now()
	nowMs := uint64(now.UnixMilli())
	visited := map[string]bool{}
	pendingTimers := 0
	var next uint64
	// read returns an instance's executions, nil when it has none yet.
	read := func(id string) []Execution {
		hs, err := ReadProvider(ctx, e.provider, id)
		if err != nil || len(hs) == 0 {
			return nil
		}
		return hs[0].Executions
	}
	for len(todo) > 0 {
		id := todo[0]
		todo = todo[1:]
		if visited[id] {
			continue
		}
		visited[id] = true
		execs := read(id)
		if len(execs) == 0 || len(execs[len(execs)-1].Events) == 0 {
			return st, false // started, not yet run
		}
		for x, exec := range execs {
			o := openWork(exec.Events)
			st.events += len(exec.Events)
			for _, at := range o.timers {
				if at > nowMs {
					pendingTimers++ // its TimerFired waits in the queue, invisible
					if next == 0 || at < next {
						next = at
					}
				}
			}
			if x < len(execs)-1 {
				continue // an execution that continued as new: only its timers remain
			}
			switch {
			case o.end == endContinuedAsNew:
				return st, false // the successor has not started
			case o.end != endRunning:
				continue
			case o.activities > 0:
				return st, false
			}
			for _, name := range o.waits {
				if awaited[[2]string{id, name}] {
					return st, false // RaiseEvent answers it before any timer
				}
			}
			for _, at := range o.timers {
				if at <= nowMs {
					return st, false // due: the runtime is about to fire it
				}
			}
			for _, child := range o.children {
				childExecs := read(child)
				if len(childExecs) == 0 || openWork(childExecs[len(childExecs)-1].Events).end != endRunning {
					return st, false // not started yet, or its end not yet delivered
				}
				todo = append(todo, child)
			}
			todo = append(todo, o.detached...)
		}
	}
	if depths.OrchestratorQueue != uint64(pendingTimers) {
		return st, false // messages other than timers wait
	}
	if next != 0 {
		st.next = time.UnixMilli(int64(next))
	}
	return st, true // st.next zero: no timer to skip to
}

// How an execution's history ends.
const (
	endRunning = iota
	endDone    // completed or failed
	endContinuedAsNew
)

// open is the work an execution's history leaves open.
type open struct {
	end        int
	activities int
	timers     []uint64 // fire times (ms) of timers not fired
	children   []string // instance ids of children not completed
	detached   []string // instances started detached
	waits      []string // names of the external events subscribed and not received
}

// openWork reads the work an execution left open.
func openWork(events []duroxide.Event) open {
	acts := map[uint64]bool{}
	timers := map[uint64]uint64{}
	children := map[uint64]string{}
	waits := map[string]int{}
	var o open
	var instance string
	for _, ev := range events {
		instance = ev.InstanceID
		var closed *uint64
		switch k := ev.Kind.(type) {
		case duroxide.ActivityScheduled:
			acts[ev.EventID] = true
		case duroxide.TimerCreated:
			timers[ev.EventID] = k.FireAtMs
		case duroxide.SubOrchestrationScheduled:
			children[ev.EventID] = k.Instance
		case duroxide.OrchestrationChained:
			o.detached = append(o.detached, k.Instance)
		case duroxide.ExternalSubscribed:
			waits[k.Name]++
		case duroxide.ExternalEvent:
			waits[k.Name]--
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.ActivityCancelRequested,
			duroxide.TimerFired, duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed,
			duroxide.SubOrchestrationCancelRequested:
			closed = ev.SourceEventID
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			o.end = endDone
		case duroxide.OrchestrationContinuedAsNew:
			o.end = endContinuedAsNew
		}
		if closed != nil {
			delete(acts, *closed)
			delete(timers, *closed)
			delete(children, *closed)
		}
	}
	o.activities = len(acts)
	for name, n := range waits {
		if n > 0 {
			o.waits = append(o.waits, name)
		}
	}
	for _, at := range timers {
		o.timers = append(o.timers, at)
	}
	for _, child := range children {
		o.children = append(o.children, childInstanceID(instance, child))
	}
	return o
}

// childInstanceID is the runtime's id of a child recorded as child by
// parent: a generated "sub::..." id is prefixed with the parent's.
func childInstanceID(parent, child string) string {
	if len(child) >= len(duroxide.SubOrchAutoPrefix) && child[:len(duroxide.SubOrchAutoPrefix)] == duroxide.SubOrchAutoPrefix {
		return parent + "::" + child
	}
	return child
}
