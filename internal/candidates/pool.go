// Package candidates is the provider's in-memory knowledge of the queue
// messages ready to fetch: a Pool per queue (orchestrator, worker) of the
// candidates each lease's slots offer, the instance holds (locks, skips),
// the sessions last seen, and the Notifier that wakes waiting fetches.
// It makes most fetches need no candidate query and hands each candidate
// to one fetch at a time; it is never a source of truth (every candidate
// is checked by the write that locks it). The provider (package cdb) feeds
// it from its candidate queries, its own writes and the change feed.
package candidates

import (
	"slices"
	"sync"
	"time"
)

// Pool is what this process knows about one queue's candidates,
// so that most fetches need no candidate query: the rows of the last
// candidate query of each lease's slots (a "view"), kept for the view
// lifetime New is given, plus the messages this process itself wrote since
// (hints: an enqueue, a turn's queue documents, a work item's completion,
// an outbox delivery, an abandon). Fetches of this process take candidates
// from it one at a time, so two of them never try the same one.
//
// The pool is never a source of truth. Every candidate is checked by the
// write that locks it (the instance lock's If-Match on the ETag just read,
// the work item lock's filter predicate on visibility and lock), so a stale
// entry costs a request, never a wrong answer. What it changes is when a
// fetch sees messages other processes wrote: at the next candidate query,
// at most the view lifetime after the previous one (a fetch that must
// answer now and finds nothing in the pool always queries), or when the
// provider's change-feed reader hints them.
type Pool struct {
	mu  sync.Mutex
	ttl func() time.Duration
	gen uint64
	// views are keyed by lease (and, for the worker queue, filter).
	views map[string]*View
	// claimed holds the keys a fetch is trying now, with the generation of
	// the entry it took.
	claimed map[string]uint64
	// changed records, while a candidate query is in flight, the keys this
	// process changed (and when), so that the query's older rows do not
	// overwrite them.
	changed map[string]uint64
	// removed holds, of those, the keys whose entries this process gave up
	// (it locked their messages, or the instance was deleted): the
	// query's rows of them are older than what this process knows. Rows
	// of keys that were only added to (a hint, a change-feed copy) merge.
	removed  map[string]uint64
	inflight int
	// locked is, per instance, when its lock (this process's or another's,
	// as last seen) expires; skipped, until when its messages are not worth
	// trying (they wait for a start, or the capability filter excludes
	// it). Orchestrator queue only.
	locked  map[string]Hold
	skipped map[string]Hold
	// execs is the current execution of instances, as last seen, for
	// reading the history with the instance's state.
	execs map[string]uint64
	// sessions are the active sessions the last candidate queries saw
	// (worker queue, session routing).
	sessions map[[2]string]Row
	// known is, per message (WorkKey of its instance and id), until when
	// (ms) the change feed's copy of it tells this process nothing new:
	// it wrote the message, a candidate query returned it, or it locked it
	// (see Echo).
	known map[string]int64
	// clock is the provider's clock, in ms since the Unix epoch.
	clock func() int64
	wake  *Notifier
	// slotOf is the dispatch slot of an instance.
	slotOf func(string) uint8
}

// Hold is a time (ms) until which an instance is not tried, and
// its dispatch slot; a skip's scope says which fetches it applies to (""
// for all, or a capability filter's scope).
type Hold struct {
	Until int64
	Slot  uint8
	Scope string
}

// Entry is one candidate: on the orchestrator queue an instance with
// messages (the earliest visibility and the oldest message among those
// known), on the worker queue one message.
type Entry struct {
	Key        string
	Instance   string
	ID         string
	Slot       uint8
	VisibleAt  int64
	EnqueuedAt int64
	Seq        string
	// worker is true for a worker-queue message.
	Worker bool
	// Worker queue only: the message's session and tag.
	SessionID *string
	Tag       *string
	// Msgs are, on the orchestrator queue, the messages the entry stands
	// for as this process saw them (an ID given to Hint, Echo or a
	// candidate query's row), each with its own visibility, at most
	// MaxEntryMsgs; Overflow is set when it saw more. A fetch that locks
	// messages removes them (LockedMessage); one that gives the entry up
	// keeps those not visible yet (a timer), so that the entry still wakes
	// a fetch when they become visible.
	Msgs     []MsgRef
	Overflow bool
	gen      uint64
	// pickedAt is when Pick handed the entry out (ms): its messages
	// visible then are the ones the fetch that took it could lock.
	pickedAt int64
	// inReady says the entry has a valid node in its view's ready heap
	// (order.go).
	inReady bool
}

// MsgRef is one orchestrator-queue message of an entry: its id and when it
// becomes visible (ms since the Unix epoch).
type MsgRef struct {
	ID        string
	VisibleAt int64
}

// MaxEntryMsgs caps Entry.Msgs.
const MaxEntryMsgs = 64

// addRef records message ref in e (the latest sighting of an id wins).
func (e *Entry) addRef(ref MsgRef) {
	if ref.ID == "" || e.Worker {
		return
	}
	for i := range e.Msgs {
		if e.Msgs[i].ID == ref.ID {
			e.Msgs[i].VisibleAt = ref.VisibleAt
			return
		}
	}
	if len(e.Msgs) >= MaxEntryMsgs {
		e.Overflow = true
		return
	}
	e.Msgs = append(e.Msgs, ref)
}

// removeRef removes message id from e.
func (e *Entry) removeRef(id string) {
	e.Msgs = slices.DeleteFunc(e.Msgs, func(r MsgRef) bool { return r.ID == id })
}

// keepFuture keeps, of e's messages, those not visible at nowMs, and
// reports whether any is left (e's visibility is then the earliest of
// theirs). An entry that saw more messages than it holds keeps nothing.
func (e *Entry) keepFuture(nowMs int64) bool {
	if e.Overflow {
		return false
	}
	e.Msgs = slices.DeleteFunc(e.Msgs, func(r MsgRef) bool { return r.VisibleAt <= nowMs })
	if len(e.Msgs) == 0 {
		return false
	}
	e.VisibleAt = e.Msgs[0].VisibleAt
	for _, r := range e.Msgs[1:] {
		e.VisibleAt = min(e.VisibleAt, r.VisibleAt)
	}
	return true
}

// sighting returns e as a new entry: its own message as its Msgs.
func sighting(e Entry) Entry {
	e.Msgs, e.Overflow = nil, false
	e.addRef(MsgRef{ID: e.ID, VisibleAt: e.VisibleAt})
	return e
}

// before orders entries by enqueue time, then sequence key.
func (e *Entry) before(o *Entry) bool {
	if e.EnqueuedAt != o.EnqueuedAt {
		return e.EnqueuedAt < o.EnqueuedAt
	}
	return e.Seq < o.Seq
}

// WorkKey is the pool key of a worker-queue message (ids are unique per
// partition only).
func WorkKey(instance, id string) string { return instance + "\x00" + id }

// View is the candidates of one lease's slots (and filter).
type View struct {
	slots   [NumSlots]bool
	covers  func(*Entry) bool
	entries map[string]*Entry
	// queried is when the last candidate query of the view started (zero:
	// never), queriedMs the same on the provider's clock; partial, that it
	// stopped at a full page, so the view may miss candidates.
	queried   time.Time
	queriedMs int64
	partial   bool
	// ready and waiting order the entries for Pick (order.go).
	ready   *nodeHeap[readyNode]
	waiting *nodeHeap[waitNode]
}

// Bounds that keep the pool small whatever the load.
const (
	// maxPoolViews caps the views (lease providers other than the default
	// one may hand out many different slot sets).
	maxPoolViews = 64
	// maxViewEntries caps the entries of a view; beyond it, hints are not
	// kept and the view counts as partial, so fetches query again.
	maxViewEntries = 10_000
	// maxInstanceHints caps the per-instance maps (locks, skips,
	// executions); past it they start over.
	maxInstanceHints = 65_536
)

// New returns an empty pool whose views stay fresh for ttl() after their
// last query (the provider's LongPollInterval, or longer while a healthy
// change feed delivers other processes' writes); slotOf is the dispatch
// slot of an instance and clock the provider's clock in ms since the Unix
// epoch.
func New(ttl func() time.Duration, slotOf func(instance string) uint8, clock func() int64) *Pool {
	return &Pool{slotOf: slotOf,
		ttl: ttl, views: map[string]*View{}, claimed: map[string]uint64{}, changed: map[string]uint64{}, removed: map[string]uint64{},
		locked: map[string]Hold{}, skipped: map[string]Hold{}, execs: map[string]uint64{},
		sessions: map[[2]string]Row{}, known: map[string]int64{}, wake: NewNotifier(), clock: clock,
	}
}

// View returns the view named key, creating it for a lease's slots (all,
// or the given ones) and covers (nil: every message of the slots) when
// missing.
func (p *Pool) View(key string, all bool, slots []uint8, covers func(*Entry) bool) *View {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.views[key]; ok {
		return v
	}
	if len(p.views) >= maxPoolViews {
		p.views = map[string]*View{}
	}
	v := &View{covers: covers, entries: map[string]*Entry{},
		ready: &nodeHeap[readyNode]{less: readyBefore}, waiting: &nodeHeap[waitNode]{less: waitBefore}}
	if all || len(slots) == 0 {
		for i := range v.slots {
			v.slots[i] = true
		}
	} else {
		for _, s := range slots {
			v.slots[s] = true
		}
	}
	p.views[key] = v
	return v
}

// Fresh reports whether v's last query is recent and complete enough that
// an empty view means no work.
func (p *Pool) Fresh(v *View) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !v.queried.IsZero() && !v.partial && time.Since(v.queried) < p.ttl()
}

// Partial reports whether v's last query stopped at a full page.
func (p *Pool) Partial(v *View) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return v.partial
}

// Stale reports whether v should be queried before it is used: it never
// was, its last query is older than the view lifetime, or a lock on an
// instance of its slots (this process's or another's, as last seen) has
// expired since: its messages are visible again, and nothing was written
// to say so.
func (p *Pool) Stale(v *View) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v.queried.IsZero() || time.Since(v.queried) >= p.ttl() {
		return true
	}
	now := p.clock()
	for _, h := range p.locked {
		if v.slots[h.Slot] && h.Until > v.queriedMs && h.Until <= now {
			return true
		}
	}
	return false
}

// BeginRefresh marks a candidate query of v as started and returns the
// generation it started at.
func (p *Pool) BeginRefresh() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight++
	return p.gen
}

// AbortRefresh ends a candidate query that failed.
func (p *Pool) AbortRefresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endRefreshLocked()
}

func (p *Pool) endRefreshLocked() {
	p.inflight--
	if p.inflight == 0 {
		clear(p.changed)
		clear(p.removed)
	}
}

// Refreshed replaces v's entries with rows, the candidate query that
// started at generation start and time at (nowMs on the provider's clock)
// returned, except that entries this process added to since it started
// (hints, change-feed copies) or claimed, and entries not yet visible then
// (the query cannot see them), are kept, the rows merging into them, and
// that rows of keys this process gave up since (it locked their messages)
// are dropped (and their messages not marked known, so that the change
// feed's copies of them still hint them: the fetch may not have taken
// them); locks taken or released since keep this process's view of
// them. locks are the
// instances of v's slots the query saw locked (orchestrator queue), and
// sessions the active sessions it saw (worker queue, session routing; nil
// otherwise).
func (p *Pool) Refreshed(v *View, start uint64, at time.Time, nowMs int64, rows []Entry, partial bool, locks map[string]Hold, sessions []Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.endRefreshLocked()
	// A key changed since the query started, or claimed by a fetch that
	// is trying it, keeps what this process knows.
	newer := func(key string) bool {
		_, busy := p.claimed[key]
		return busy || p.changed[key] > start
	}
	for key, e := range v.entries {
		if !newer(key) && e.VisibleAt <= nowMs && !e.keepFuture(nowMs) {
			delete(v.entries, key)
		}
	}
	for i := range rows {
		r := sighting(rows[i])
		if _, busy := p.claimed[r.Key]; busy || p.removed[r.Key] > start || len(v.entries) >= maxViewEntries {
			// Not kept: the row's message is not known either, so that
			// its change-feed copy still hints it. A row of an instance a
			// fetch is locking (or locked since the query started) may
			// show a message that fetch does not take (another process's
			// timer, written after the fetch read the partition or built
			// its held lock batch): marked known, its copy was ignored,
			// and the instance waited for the next candidate query, up to
			// the view lifetime (10 s) later.
			continue
		}
		p.knowLocked(r.Instance, r.ID, nowMs)
		r.gen = start
		if cur, ok := v.entries[r.Key]; ok {
			// Kept, or added to since the query started (a hint, a
			// change-feed copy): the row adds its message.
			v.merge(cur, &r)
			continue
		}
		v.put(&r)
	}
	if locks != nil {
		for inst, h := range p.locked {
			if v.slots[h.Slot] && !newer(lockKey(inst)) {
				delete(p.locked, inst)
			}
		}
		for inst, h := range locks {
			if !newer(lockKey(inst)) {
				p.locked[inst] = h
			}
		}
	}
	if sessions != nil {
		for k, s := range p.sessions {
			if v.slots[s.DispatchSlot&0xff] && !newer(sessionKey(k)) {
				delete(p.sessions, k)
			}
		}
		for _, s := range sessions {
			k := [2]string{s.InstanceID, *s.SessionID}
			if !newer(sessionKey(k)) {
				p.sessions[k] = s
			}
		}
	}
	for inst, h := range p.skipped {
		if h.Until <= nowMs {
			delete(p.skipped, inst)
		}
	}
	if at.After(v.queried) {
		v.queried, v.queriedMs = at, nowMs
	}
	v.partial = partial || len(v.entries) >= maxViewEntries
}

// lockKey is the changed-map key of an instance's lock: a lock taken or
// released during a candidate query outdates the query's view of the lock,
// not its rows of the instance's messages (a change-feed copy that shows
// the lock released must not cost the instance its candidate).
func lockKey(instance string) string { return "lock\x00" + instance }

// sessionKey is the changed-map key of a session.
func sessionKey(k [2]string) string { return "session\x00" + k[0] + "\x00" + k[1] }

// mergeEntry folds another sighting of the same key into cur: the earliest
// visibility and the oldest message win, and the messages add up.
func mergeEntry(cur, e *Entry) {
	cur.VisibleAt = min(cur.VisibleAt, e.VisibleAt)
	for _, r := range e.Msgs {
		cur.addRef(r)
	}
	cur.Overflow = cur.Overflow || e.Overflow
	if e.before(cur) {
		cur.EnqueuedAt, cur.Seq = e.EnqueuedAt, e.Seq
	}
	cur.gen = max(cur.gen, e.gen)
	if cur.SessionID == nil {
		cur.SessionID, cur.Tag = e.SessionID, e.Tag
	}
}

// Pick takes the oldest entry of v (Entry.before) that is visible at
// nowMs, not claimed, not held (locked, or skipped for fetches of scope),
// accepted by accept (nil: any) and, for a message with a session, that
// owner (nil: nobody) may take: the session is not active under another
// owner as last seen. It claims the entry; ok is false when there is none.
// It reads the view's entries oldest first (order.go) and stops at the
// first that qualifies, so its cost grows with the entries it passes over
// (held, claimed or refused ones), not with the view's size.
func (p *Pool) Pick(v *View, nowMs int64, scope string, owner *string, accept func(*Entry) bool) (Entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := v.visit(nowMs, func(e *Entry) bool {
		return p.eligibleLocked(e.Key, e, nowMs, scope) && (accept == nil || accept(e)) && p.sessionAllowsLocked(e, owner, nowMs)
	})
	if best == nil {
		return Entry{}, false
	}
	p.claimed[best.Key] = best.gen
	out := *best
	out.Msgs = slices.Clone(best.Msgs)
	out.pickedAt = nowMs
	return out, true
}

// sessionAllowsLocked reports whether owner may take e as far as its
// Session goes.
func (p *Pool) sessionAllowsLocked(e *Entry, owner *string, nowMs int64) bool {
	if e.SessionID == nil {
		return true
	}
	if owner == nil {
		return false
	}
	s, ok := p.sessions[[2]string{e.Instance, *e.SessionID}]
	return !ok || s.LockedUntil <= nowMs || s.OwnerID == *owner
}

// eligibleLocked reports whether e could be taken at nowMs by a fetch of
// scope: visible, not claimed, its instance neither locked nor skipped for
// that scope.
func (p *Pool) eligibleLocked(key string, e *Entry, nowMs int64, scope string) bool {
	if e.VisibleAt > nowMs {
		return false
	}
	if _, busy := p.claimed[key]; busy {
		return false
	}
	if s := p.skipped[e.Instance]; s.Until > nowMs && (s.Scope == "" || s.Scope == scope) {
		return false
	}
	return p.locked[e.Instance].Until <= nowMs
}

// EligibleElsewhere reports whether a view other than v holds an entry a
// fetch could take at nowMs (a fetch whose lease has nothing then tries
// another lease).
func (p *Pool) EligibleElsewhere(v *View, nowMs int64, scope string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.views {
		if o == v {
			continue
		}
		for key, e := range o.entries {
			if p.eligibleLocked(key, e, nowMs, scope) {
				return true
			}
		}
	}
	return false
}

// Release ends the claim on e. With drop, e is forgotten (it was locked,
// or has nothing left to lock) unless a hint renewed it since it was
// picked; its messages not visible yet when it was picked (Entry.Msgs: a
// timer) are kept. They are judged at the pick, not now: a timer that
// became visible while the fetch locked the others was not locked (the
// lock batch took what was visible when it was built, and LockedMessage
// removed those), and dropping it would leave its instance waiting for the
// next candidate query.
func (p *Pool) Release(e Entry, drop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.claimed, e.Key)
	if !drop {
		return
	}
	for _, v := range p.views {
		if cur, ok := v.entries[e.Key]; ok && cur.gen <= e.gen && !cur.keepFuture(e.pickedAt) {
			delete(v.entries, e.Key)
		}
	}
	p.removeLocked(e.Key)
}

// touchLocked records a local change of key.
func (p *Pool) touchLocked(key string) {
	p.gen++
	if p.inflight > 0 {
		p.changed[key] = p.gen
	}
}

// removeLocked records that this process gave key's entry up.
func (p *Pool) removeLocked(key string) {
	p.touchLocked(key)
	if p.inflight > 0 {
		p.removed[key] = p.gen
	}
}

// knownEchoGraceMs is how long after this process learned of a message
// (or past the expiry of its lock on it) the change feed's copies of it are
// ignored: the change feed delivers a copy within a few
// ChangeFeedIntervals, far less than this.
const knownEchoGraceMs = 10_000

// knowLocked records that this process knows message id of instance
// until untilMs plus knownEchoGraceMs.
func (p *Pool) knowLocked(instance, id string, untilMs int64) {
	if id == "" {
		return
	}
	k := WorkKey(instance, id)
	putBounded(p.known, k, max(p.known[k], untilMs+knownEchoGraceMs))
}

// LockedMessage records that this process locked message id of instance
// until untilMs: its copies on the change feed are older than the lock, or
// echoes of its ack; the instance's entries no longer stand for it.
func (p *Pool) LockedMessage(instance, id string, untilMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.knowLocked(instance, id, untilMs)
	for _, v := range p.views {
		if e, ok := v.entries[instance]; ok && !e.Worker {
			e.removeRef(id)
		}
	}
}

// Echo is Hint for a message copy the change feed delivered, which may be
// older than what this process knows. A copy of a message this process
// already knows (it wrote it, a query returned it, it locked it) is
// ignored, and a copy that shows a lock (another process's) is a
// candidate only from that lock's expiry on. Without the two, the echo of
// a work item this process already ran would cost a failed lock request (a
// lost race), the echo of an orchestrator message already consumed a state
// query, and both would wake every waiting fetch. It reports whether the
// copy was news to this process (it was hinted).
func (p *Pool) Echo(e Entry, lockedUntil, nowMs int64) bool {
	p.mu.Lock()
	until, known := p.known[WorkKey(e.Instance, e.ID)]
	p.mu.Unlock()
	if known && until > nowMs {
		return false
	}
	e.VisibleAt = max(e.VisibleAt, lockedUntil)
	p.Hint(e)
	return true
}

// Hint adds a message this process wrote (or made visible again) to the
// views that cover it and wakes waiting fetches. An orchestrator-queue
// message ends its instance's wait for a start.
func (p *Pool) Hint(e Entry) {
	p.mu.Lock()
	p.knowLocked(e.Instance, e.ID, p.clock())
	p.touchLocked(e.Key)
	e.gen = p.gen
	if s, ok := p.skipped[e.Instance]; ok && s.Scope == "" && !e.Worker {
		// The new message may be the start its messages waited for.
		delete(p.skipped, e.Instance)
	}
	for _, v := range p.views {
		if !v.slots[e.Slot] || (v.covers != nil && !v.covers(&e)) {
			continue
		}
		s := sighting(e)
		if cur, ok := v.entries[e.Key]; ok {
			v.merge(cur, &s)
			cur.gen = e.gen
			continue
		}
		if len(v.entries) >= maxViewEntries {
			v.partial = true
			continue
		}
		v.put(&s)
	}
	p.mu.Unlock()
	p.wake.Notify()
}

// putBounded sets m[k] = v, first emptying m when it holds
// maxInstanceHints entries (its entries are hints, which may be lost).
func putBounded[V any](m map[string]V, k string, v V) {
	if len(m) >= maxInstanceHints {
		clear(m)
	}
	m[k] = v
}

// Lock records that instance is locked until untilMs (by this process, or
// as a read found it).
func (p *Pool) Lock(instance string, untilMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	putBounded(p.locked, instance, Hold{Until: untilMs, Slot: p.slotOf(instance)})
	p.touchLocked(lockKey(instance))
}

// Unlock records that this process released its lock on instance (which
// also ends the instance's skips) and wakes waiting fetches.
func (p *Pool) Unlock(instance string) {
	p.mu.Lock()
	delete(p.locked, instance)
	delete(p.skipped, instance) // the turn may have changed what held it back
	p.touchLocked(lockKey(instance))
	p.mu.Unlock()
	p.wake.Notify()
}

// Skip records that instance is not worth trying before untilMs for the
// fetches of scope ("": all of them).
func (p *Pool) Skip(instance string, untilMs int64, scope string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	putBounded(p.skipped, instance, Hold{Until: untilMs, Slot: p.slotOf(instance), Scope: scope})
}

// Unskip clears instance's skip.
func (p *Pool) Unskip(instance string) {
	p.mu.Lock()
	delete(p.skipped, instance)
	p.mu.Unlock()
}

// SetExec records instance's current execution.
func (p *Pool) SetExec(instance string, executionID uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	putBounded(p.execs, instance, executionID)
}

// Exec returns instance's current execution as last seen, or 0.
func (p *Pool) Exec(instance string) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.execs[instance]
}

// Session returns the active session k as the last query saw it.
func (p *Pool) Session(k [2]string) (Row, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.sessions[k]
	return s, ok
}

// SetSession records a session this process just claimed.
func (p *Pool) SetSession(s Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]string{s.InstanceID, *s.SessionID}
	p.sessions[k] = s
	p.touchLocked(sessionKey(k))
}

// SessionWritten records a session's new ETag (and, when untilMs is not
// 0, its new lock expiry) after this process updated it, if it is known.
func (p *Pool) SessionWritten(instance, sessionID, etag string, untilMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := [2]string{instance, sessionID}
	s, ok := p.sessions[k]
	if !ok {
		return
	}
	s.ETag = etag
	if untilMs != 0 {
		s.LockedUntil = untilMs
	}
	p.sessions[k] = s
	p.touchLocked(sessionKey(k))
}

// ForgetSession forgets session k (instance, session id), whose claim
// failed.
func (p *Pool) ForgetSession(k [2]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sessions, k)
	p.touchLocked(sessionKey(k))
}

// NextChange returns the earliest time (ms) after nowMs at which an entry
// becomes visible, a skip of an instance with an entry ends, or a lock on
// any instance expires (which makes its entries eligible, and its view
// stale); ok is false when nothing is pending.
func (p *Pool) NextChange(nowMs int64) (atMs int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	consider := func(t int64) {
		if t > nowMs && (!ok || t < atMs) {
			atMs, ok = t, true
		}
	}
	for _, v := range p.views {
		for _, e := range v.entries {
			consider(e.VisibleAt)
			consider(p.skipped[e.Instance].Until)
		}
	}
	for _, h := range p.locked {
		consider(h.Until)
	}
	return atMs, ok
}

// ForgetInstance drops everything known about instance (it was deleted).
func (p *Pool) ForgetInstance(instance string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.views {
		for key, e := range v.entries {
			if e.Instance == instance {
				delete(v.entries, key)
				p.removeLocked(key)
			}
		}
	}
	delete(p.locked, instance)
	delete(p.skipped, instance)
	delete(p.execs, instance)
	for k := range p.sessions {
		if k[0] == instance {
			delete(p.sessions, k)
		}
	}
	p.removeLocked(instance)
	p.touchLocked(lockKey(instance))
}

// Wake returns the pool's Notifier, notified when an entry is added or a
// hold ends: what a waiting fetch waits on.
func (p *Pool) Wake() *Notifier { return p.wake }
