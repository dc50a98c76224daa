package dashboard

import (
	"cmp"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The pending-work panel: what an instance's current execution waits for,
// from its history (the subscriptions, activities, timers and
// sub-orchestrations with no outcome yet) and, when the admin is a
// duroxide.InstanceMessagesReader, its queued messages (an activity's
// attempt and lock, a timer's fire time).

// awaitedEvent is an external event (or queue) the execution waits for.
type awaitedEvent struct {
	Name    string
	Queue   bool // a persistent (queue) subscription
	EventID uint64
	Since   string // how long ago it subscribed
	Href    string // links its subscription event
}

// inflightActivity is an activity scheduled with no outcome yet.
type inflightActivity struct {
	Name      string
	EventID   uint64
	Since     string // how long ago it was scheduled
	Canceling bool   // ActivityCancelRequested recorded
	// From the worker queue, when the admin reports it.
	Known    bool // the message was found
	Attempt  uint32
	Locked   bool
	LockedBy string // the lock token, cut
	LockLeft string // until the lock expires
}

// pendingTimer is a timer created that has not fired.
type pendingTimer struct {
	EventID uint64
	FireAt  string // UTC
	FiresIn string // "fires in 5h59m", "due 3s ago"
}

// pendingChild is a sub-orchestration with no outcome yet.
type pendingChild struct {
	Name, Instance string
	EventID        uint64
}

// pendingWork is the panel.
type pendingWork struct {
	Events     []awaitedEvent
	Activities []inflightActivity
	Timers     []pendingTimer
	Children   []pendingChild
	// Partial: the history read is not the whole execution's (the panel
	// may miss older waits); MessagesError: the queues could not be read.
	Partial       bool
	MessagesError string
}

// Empty reports whether nothing is pending.
func (p pendingWork) Empty() bool {
	return len(p.Events)+len(p.Activities)+len(p.Timers)+len(p.Children) == 0
}

// EventNames are the names of the external events awaited (not queues),
// in order, without repeats: what the raise form offers.
func (p pendingWork) EventNames() []string {
	var out []string
	for _, e := range p.Events {
		if !e.Queue && !slices.Contains(out, e.Name) {
			out = append(out, e.Name)
		}
	}
	return out
}

// pendingOf derives what events (one execution's history, in order) leave
// open. The external-event waits are runtime.AwaitedExternalEvents' (the
// replay engine's matching); a queue event goes to the oldest open queue
// subscription, else it waits in the queue for the next one.
func (h *Handler) pendingOf(events []duroxide.Event) pendingWork {
	type open struct {
		ev   duroxide.Event
		name string
	}
	var queues []open
	queued := map[string]int{} // queue events delivered before a subscription
	activities := map[uint64]*inflightActivity{}
	var actOrder []uint64
	timers := map[uint64]uint64{} // TimerCreated id -> fire at
	var timerOrder []uint64
	children := map[uint64]pendingChild{}
	var childOrder []uint64
	drop := func(list []open, id uint64) []open {
		return slices.DeleteFunc(list, func(o open) bool { return o.ev.EventID == id })
	}
	src := func(ev duroxide.Event) uint64 {
		if ev.SourceEventID == nil {
			return 0
		}
		return *ev.SourceEventID
	}
	for _, ev := range events {
		switch k := ev.Kind.(type) {
		case duroxide.QueueSubscribed:
			if queued[k.Name] > 0 {
				queued[k.Name]--
			} else {
				queues = append(queues, open{ev, k.Name})
			}
		case duroxide.QueueSubscriptionCancelled:
			queues = drop(queues, src(ev))
		case duroxide.QueueEventDelivered:
			if i := slices.IndexFunc(queues, func(o open) bool { return o.name == k.Name }); i >= 0 {
				queues = slices.Delete(queues, i, i+1)
			} else {
				queued[k.Name]++
			}
		case duroxide.ActivityScheduled:
			activities[ev.EventID] = &inflightActivity{Name: k.Name, EventID: ev.EventID, Since: h.age(ev.TimestampMs)}
			actOrder = append(actOrder, ev.EventID)
		case duroxide.ActivityCompleted, duroxide.ActivityFailed:
			delete(activities, src(ev))
		case duroxide.ActivityCancelRequested:
			if a := activities[src(ev)]; a != nil {
				a.Canceling = true
			}
		case duroxide.TimerCreated:
			timers[ev.EventID] = k.FireAtMs
			timerOrder = append(timerOrder, ev.EventID)
		case duroxide.TimerFired:
			delete(timers, src(ev))
		case duroxide.SubOrchestrationScheduled:
			children[ev.EventID] = pendingChild{Name: k.Name, Instance: k.Instance, EventID: ev.EventID}
			childOrder = append(childOrder, ev.EventID)
		case duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			delete(children, src(ev))
		}
		if ev.IsTerminal() {
			return pendingWork{} // a finished execution waits for nothing
		}
	}
	var p pendingWork
	for _, a := range runtime.AwaitedExternalEvents(events) {
		p.Events = append(p.Events, awaitedEvent{Name: a.Name, EventID: a.EventID, Since: h.age(a.SubscribedAtMs)})
	}
	for _, o := range queues {
		p.Events = append(p.Events, awaitedEvent{Name: o.name, Queue: true, EventID: o.ev.EventID, Since: h.age(o.ev.TimestampMs)})
	}
	for _, id := range actOrder {
		if a := activities[id]; a != nil {
			p.Activities = append(p.Activities, *a)
		}
	}
	for _, id := range timerOrder {
		if at, ok := timers[id]; ok {
			p.Timers = append(p.Timers, pendingTimer{EventID: id, FireAt: utcMs(at), FiresIn: h.firesIn(at)})
		}
	}
	for _, id := range childOrder {
		if c, ok := children[id]; ok {
			p.Children = append(p.Children, c)
		}
	}
	return p
}

// firesIn says when a timer at ms fires: "fires in 5h59m", or "due 3s
// ago" when it is past (its message waits for a dispatcher).
func (h *Handler) firesIn(ms uint64) string {
	d := time.UnixMilli(int64(ms)).Sub(h.opts.Now())
	if d >= 0 {
		return "fires in " + formatDuration(d)
	}
	return "due " + formatDuration(-d) + " ago"
}

// addMessages completes p with the instance's queued messages for
// execution exec: each activity's attempt and lock from its worker-queue
// message, and the activities and timers the history read did not show
// (scheduled before the events read, in a long history).
func (h *Handler) addMessages(p *pendingWork, exec uint64, msgs []duroxide.InstanceMessage) {
	now := uint64(h.opts.Now().UnixMilli())
	for _, m := range msgs {
		switch item := m.Item.Kind.(type) {
		case duroxide.ActivityExecuteItem:
			if item.ExecutionID != exec {
				continue
			}
			i := slices.IndexFunc(p.Activities, func(a inflightActivity) bool { return a.EventID == item.ID })
			if i < 0 {
				p.Activities = append(p.Activities, inflightActivity{Name: item.Name, EventID: item.ID})
				i = len(p.Activities) - 1
			}
			a := &p.Activities[i]
			a.Known, a.Attempt = true, m.AttemptCount
			if m.LockToken != "" && m.LockedUntil > now {
				a.Locked, a.LockedBy = true, shortToken(m.LockToken)
				a.LockLeft = formatDuration(time.Duration(m.LockedUntil-now) * time.Millisecond)
			}
		case duroxide.TimerFiredItem:
			if item.ExecutionID == exec && !slices.ContainsFunc(p.Timers, func(t pendingTimer) bool { return t.EventID == item.ID }) {
				p.Timers = append(p.Timers, pendingTimer{EventID: item.ID, FireAt: utcMs(item.FireAtMs), FiresIn: h.firesIn(item.FireAtMs)})
			}
		}
	}
	slices.SortStableFunc(p.Activities, func(a, b inflightActivity) int { return cmp.Compare(a.EventID, b.EventID) })
	slices.SortStableFunc(p.Timers, func(a, b pendingTimer) int { return cmp.Compare(a.EventID, b.EventID) })
}

// shortToken cuts a lock token to its first 8 characters.
func shortToken(s string) string {
	if len(s) > 8 {
		return s[:8] + "…"
	}
	return s
}
