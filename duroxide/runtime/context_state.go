package runtime

import (
	"slices"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// scheduleKind says how a future's scheduled work is cancelled when the
// future is dropped (duroxide's ScheduleKind).
type scheduleKind int

const (
	kindActivity scheduleKind = iota
	kindTimer
	kindExternalWait
	kindQueueDequeue
	kindSubOrchestration
)

// completion is a result the engine delivered to a future (duroxide's
// CompletionResult).
type completion struct {
	value string
	err   error
}

type tokenAction struct {
	token  uint64
	action action
}

type externalSub struct {
	name  string
	index int
}

type queueSub struct {
	scheduleID uint64
	name       string
}

// queuePosition is the pos-th arrival of queue name.
type queuePosition struct {
	name string
	pos  int
}

// ctxState is the replay bookkeeping of one turn (duroxide's CtxInner):
// tokens handed to futures, the actions they emitted, the bindings of
// tokens to history event ids, delivered results, external and queue
// subscriptions and arrivals, dropped futures, custom status and KV. It is
// only touched by the engine and by the orchestration goroutine while the
// engine waits for it, always under OrchestrationContext.mu.
type ctxState struct {
	replaying bool
	nextToken uint64
	emitted   []tokenAction
	results   map[uint64]completion // token → result
	bindings  map[uint64]uint64     // token → schedule event id
	byID      map[uint64]uint64     // schedule event id → token

	extSubs      map[uint64]externalSub // schedule id → subscription
	extArrivals  map[string][]string
	extNextIndex map[string]int
	extCancelled map[uint64]bool

	queueSubs      []queueSub
	queueArrivals  map[string][]string
	queueCancelled map[uint64]bool
	queueResolved  map[uint64]bool
	// queueOrder lists the queue arrivals across names in history order
	// (as name and position within the name), queueConsumed the ones a
	// subscription resolved with: what is left is what continue-as-new
	// carries under raceFix.
	queueOrder    []queuePosition
	queueConsumed map[queuePosition]bool

	// raceFix selects duroxide 0.1.31's race cancellation for the
	// execution (its OrchestrationStarted is stamped 0.1.31 or newer): a
	// dropped queue or positional wait stops matching arrivals the moment
	// it is dropped (or, dropped before it was bound, the moment it is
	// bound), not when the turn ends; a positional arrival already matched
	// to the dropped wait but not observed is discarded with it; and
	// continue-as-new carries exactly the unread queue arrivals. Off, the
	// execution keeps the legacy rules it was recorded with.
	raceFix bool

	subOrchInstances map[uint64]string // token → child instance (unprefixed)

	cancelledTokens map[uint64]scheduleKind

	customStatus *string
	kv           map[string]string
	kvUpdatedAt  map[string]uint64
}

func newCtxState() *ctxState {
	return &ctxState{
		replaying:        true,
		results:          map[uint64]completion{},
		bindings:         map[uint64]uint64{},
		byID:             map[uint64]uint64{},
		extSubs:          map[uint64]externalSub{},
		extArrivals:      map[string][]string{},
		extNextIndex:     map[string]int{},
		extCancelled:     map[uint64]bool{},
		queueArrivals:    map[string][]string{},
		queueCancelled:   map[uint64]bool{},
		queueResolved:    map[uint64]bool{},
		queueConsumed:    map[queuePosition]bool{},
		subOrchInstances: map[uint64]string{},
		cancelledTokens:  map[uint64]scheduleKind{},
		kv:               map[string]string{},
		kvUpdatedAt:      map[string]uint64{},
	}
}

// emit records an action and returns its token.
func (s *ctxState) emit(a action) uint64 {
	s.nextToken++
	s.emitted = append(s.emitted, tokenAction{token: s.nextToken, action: a})
	return s.nextToken
}

// drain returns and forgets the actions emitted since the last drain.
func (s *ctxState) drain() []tokenAction {
	out := s.emitted
	s.emitted = nil
	return out
}

func (s *ctxState) bindToken(token, scheduleID uint64) {
	s.bindings[token] = scheduleID
	s.byID[scheduleID] = token
	// A queue wait dropped before it was bound (created and cancelled in
	// one poll) is cancelled as it binds.
	if kind, dropped := s.cancelledTokens[token]; dropped && kind == kindQueueDequeue && s.raceFix {
		s.queueCancelled[scheduleID] = true
	}
}

func (s *ctxState) boundID(token uint64) (uint64, bool) {
	id, ok := s.bindings[token]
	return id, ok
}

// deliver stores the result of the schedule with event id scheduleID for the
// token bound to it; a result without a binding is dropped, as in duroxide.
func (s *ctxState) deliver(scheduleID uint64, c completion) {
	if token, ok := s.byID[scheduleID]; ok {
		s.results[token] = c
	}
}

// bindExternalSubscription gives subscription scheduleID the next positional
// index for name.
func (s *ctxState) bindExternalSubscription(scheduleID uint64, name string) {
	idx := s.extNextIndex[name]
	s.extNextIndex[name] = idx + 1
	s.extSubs[scheduleID] = externalSub{name: name, index: idx}
}

// hasPendingSubscriptionSlot reports whether an active (not cancelled)
// subscription to name still waits for an arrival; an ExternalEvent with no
// such slot is skipped (it stays in history for audit).
func (s *ctxState) hasPendingSubscriptionSlot(name string) bool {
	active := 0
	for id, sub := range s.extSubs {
		if sub.name == name && !s.extCancelled[id] {
			active++
		}
	}
	return active > len(s.extArrivals[name])
}

func (s *ctxState) deliverExternal(name, data string) {
	s.extArrivals[name] = append(s.extArrivals[name], data)
}

// externalEvent returns the arrival matched to subscription scheduleID:
// positional matching over the name's subscriptions, skipping cancelled
// ones (its effective index is its raw index minus the cancelled
// subscriptions below it).
func (s *ctxState) externalEvent(scheduleID uint64) (string, bool) {
	i, ok := s.externalArrivalIndex(scheduleID)
	if !ok {
		return "", false
	}
	if arrivals := s.extArrivals[s.extSubs[scheduleID].name]; i < len(arrivals) {
		return arrivals[i], true
	}
	return "", false
}

// externalArrivalIndex is the position, among its name's arrivals, that
// the active subscription scheduleID answers to; false when it is unknown
// or cancelled.
func (s *ctxState) externalArrivalIndex(scheduleID uint64) (int, bool) {
	sub, ok := s.extSubs[scheduleID]
	if !ok || s.extCancelled[scheduleID] {
		return 0, false
	}
	below := 0
	for id, other := range s.extSubs {
		if other.name == sub.name && other.index < sub.index && s.extCancelled[id] {
			below++
		}
	}
	return sub.index - below, true
}

// cancelExternal cancels positional subscription scheduleID (its future
// was dropped, or history records the cancellation). Under raceFix an
// arrival already matched to it, which its future never observed, is
// discarded rather than shifted onto the next wait of the name.
func (s *ctxState) cancelExternal(scheduleID uint64) {
	if s.raceFix {
		if i, ok := s.externalArrivalIndex(scheduleID); ok {
			name := s.extSubs[scheduleID].name
			if arrivals := s.extArrivals[name]; i < len(arrivals) {
				s.extArrivals[name] = slices.Delete(arrivals, i, i+1)
			}
		}
	}
	s.extCancelled[scheduleID] = true
}

func (s *ctxState) bindQueueSubscription(scheduleID uint64, name string) {
	s.queueSubs = append(s.queueSubs, queueSub{scheduleID: scheduleID, name: name})
}

func (s *ctxState) deliverQueue(name, data string) {
	s.queueOrder = append(s.queueOrder, queuePosition{name: name, pos: len(s.queueArrivals[name])})
	s.queueArrivals[name] = append(s.queueArrivals[name], data)
}

// unconsumedQueueArrivals returns, in history order, the queue arrivals no
// subscription resolved with (duroxide 0.1.31's carry-forward).
func (s *ctxState) unconsumedQueueArrivals() []duroxide.NameData {
	out := []duroxide.NameData{}
	for _, p := range s.queueOrder {
		if !s.queueConsumed[p] {
			out = append(out, duroxide.NameData{Name: p.name, Data: s.queueArrivals[p.name][p.pos]})
		}
	}
	return out
}

// queueMessage returns the message for subscription scheduleID and marks it
// resolved: strict FIFO, where a subscription's arrival index is the number
// of active subscriptions to the same queue created before it.
func (s *ctxState) queueMessage(scheduleID uint64) (string, bool) {
	pos := slices.IndexFunc(s.queueSubs, func(q queueSub) bool { return q.scheduleID == scheduleID })
	if pos < 0 || s.queueResolved[scheduleID] || s.queueCancelled[scheduleID] {
		return "", false
	}
	name := s.queueSubs[pos].name
	idx := 0
	for _, q := range s.queueSubs[:pos] {
		if q.name == name && !s.queueCancelled[q.scheduleID] {
			idx++
		}
	}
	arrivals := s.queueArrivals[name]
	if idx < len(arrivals) {
		s.queueResolved[scheduleID] = true
		s.queueConsumed[queuePosition{name: name, pos: idx}] = true
		return arrivals[idx], true
	}
	return "", false
}

// markCancelled records that the future with token was dropped unresolved.
// Under raceFix a bound queue or positional wait stops matching at once.
func (s *ctxState) markCancelled(token uint64, kind scheduleKind) {
	if id, bound := s.bindings[token]; bound && s.raceFix {
		switch kind {
		case kindQueueDequeue:
			s.queueCancelled[id] = true
		case kindExternalWait:
			s.cancelExternal(id)
		}
	}
	s.cancelledTokens[token] = kind
}

// cancelledTokensOf returns, in ascending (creation) order, the tokens of
// the dropped futures of kind.
func (s *ctxState) cancelledTokensOf(kind scheduleKind) []uint64 {
	tokens := make([]uint64, 0, len(s.cancelledTokens))
	for t, k := range s.cancelledTokens {
		if k == kind {
			tokens = append(tokens, t)
		}
	}
	slices.Sort(tokens)
	return tokens
}

// cancelledIDs returns, in token order, the schedule ids of the dropped
// futures of kind that are bound to history.
func (s *ctxState) cancelledIDs(kind scheduleKind) []uint64 {
	var ids []uint64
	for _, t := range s.cancelledTokensOf(kind) {
		if id, ok := s.bindings[t]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

type cancelledChild struct {
	scheduleID uint64
	instance   string
}

// cancelledSubOrchestrations returns the dropped, bound sub-orchestration
// futures with their (unprefixed) child ids.
func (s *ctxState) cancelledSubOrchestrations() []cancelledChild {
	var out []cancelledChild
	for _, t := range s.cancelledTokensOf(kindSubOrchestration) {
		id, bound := s.bindings[t]
		inst, known := s.subOrchInstances[t]
		if bound && known {
			out = append(out, cancelledChild{scheduleID: id, instance: inst})
		}
	}
	return out
}

func (s *ctxState) clearCancelled() { clear(s.cancelledTokens) }

// seedKV loads the provider's KV snapshot before the turn runs.
func (s *ctxState) seedKV(snapshot map[string]duroxide.KvEntry) {
	for k, e := range snapshot {
		s.kv[k] = e.Value
		s.kvUpdatedAt[k] = e.LastUpdatedAtMs
	}
}
