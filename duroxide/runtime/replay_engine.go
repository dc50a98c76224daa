package runtime

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// turnResultKind enumerates duroxide's TurnResult.
type turnResultKind int

const (
	turnContinue turnResultKind = iota
	turnCompleted
	turnFailed
	turnContinueAsNew
	turnCancelled
)

// turnResult is the outcome of one orchestration turn.
type turnResult struct {
	kind    turnResultKind
	output  string                // Completed
	details duroxide.ErrorDetails // Failed
	input   string                // ContinueAsNew
	version *string               // ContinueAsNew
	// carry, for a ContinueAsNew under duroxide 0.1.31's race policy, is
	// exactly the queue arrivals the execution did not read, in history
	// order; exactCarry says it is set (legacy executions count
	// subscriptions in history instead, see unmatchedQueueMessages).
	carry      []duroxide.NameData
	exactCarry bool
	reason     string // Cancelled
}

func failed(d duroxide.ErrorDetails) turnResult { return turnResult{kind: turnFailed, details: d} }

func nondeterminism(msg string) turnResult {
	return failed(duroxide.NondeterminismError("", msg))
}

// maxQuiescenceIterations bounds the re-polls after a turn's actions are
// bound (duroxide's MAX_QUIESCENCE_ITERATIONS), beyond one per queue message
// the execution has received: each buffered message may let one more
// dequeue resolve in the same turn, so a successor that reads the 100
// events continue-as-new carried (and those that followed) is not mistaken
// for code emitting unbounded subscriptions.
const maxQuiescenceIterations = 100

// Reasons recorded in cancellation events, as duroxide writes them.
const reasonDroppedFuture = "dropped_future"

// raceCancellationFixSince is the first duroxide version whose executions
// use the 0.1.31 race cancellation (duroxide's RACE_CANCELLATION_FIX_SINCE).
const raceCancellationFixSince = "0.1.31"

// raceFixFor reports whether the execution that started with started
// uses duroxide 0.1.31's race cancellation: its duroxide_version stamp is
// 0.1.31 or newer. The choice is pinned per execution, for every turn
// and replay of it, since applying the new rules to decisions recorded
// under the old ones can change a recorded race's winner. An older or
// unreadable stamp (or none) keeps the legacy rules.
func raceFixFor(started duroxide.Event) bool {
	v, err := duroxide.ParseVersion(started.DuroxideVersion)
	return err == nil && v.Compare(duroxide.MustParseVersion(raceCancellationFixSince)) >= 0
}

// replayEngine replays an execution's history against its orchestration
// function and decides one turn (duroxide's ReplayEngine): prepComplete
// turns incoming messages into history events, execute re-runs the code
// against the history and returns the turn's result, and the engine
// collects the new events (historyDelta), the actions to dispatch
// (pendingActions) and the select losers to cancel.
type replayEngine struct {
	instance    string
	executionID uint64
	logger      *slog.Logger

	baseline       []duroxide.Event
	persistedLen   int
	historyDelta   []duroxide.Event
	pendingActions []action
	nextEventID    uint64
	abortError     *duroxide.ErrorDetails
	kvSnapshot     map[string]duroxide.KvEntry

	cancelledActivityIDs    []uint64
	cancelledSubOrchestrate []string // unprefixed child ids
	// droppedEvents names the ExternalEvents of this turn (not replayed
	// ones) that no wait was pending for, in order: the runtime counts
	// them (duroxide_external_events_dropped_total).
	droppedEvents []string

	// divergence says where a replay that failed with nondeterminism
	// left the history (for Registry.Replay's report); nil otherwise.
	divergence *divergence
	// wholeHistory makes execute apply every history event even after
	// the function returned, so that recorded calls the code no longer
	// reaches are reported (Registry.Replay); a turn stops at the return.
	wholeHistory bool
	// now is the clock of timers, KV update times and event
	// timestamps (Options.Now); nil means time.Now.
	now func() time.Time

	// resumed, when set before execute, is a suspended execution (from
	// the sticky cache) that has consumed the whole baseline: execute
	// applies only historyDelta to it instead of replaying from the first
	// event. keep makes execute hand the run of a turn that leaves the
	// execution running to the caller (kept) instead of ending it.
	resumed  *replayRun
	resuming bool
	keep     bool
	kept     *replayRun
}

// divergence is where the code and the history parted: the position of
// the recorded event in the execution's history, the event, and the
// action the code emitted in its place (nil when it emitted none).
type divergence struct {
	index  int
	event  duroxide.Event
	action *action
	// When action is nil: whether the code had returned, and how.
	returned bool
	err      error
	panicked *string
}

// newReplayEngine prepares a turn over baseline, the execution's history;
// persistedLen is how many of its events came from the provider (the rest,
// such as a fresh OrchestrationStarted, are new this turn).
func newReplayEngine(instance string, executionID uint64, baseline []duroxide.Event, persistedLen int, kv map[string]duroxide.KvEntry, logger *slog.Logger) *replayEngine {
	next := uint64(1)
	if n := len(baseline); n > 0 {
		next = baseline[n-1].EventID + 1
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &replayEngine{
		instance: instance, executionID: executionID, logger: logger,
		baseline: baseline, persistedLen: persistedLen, nextEventID: next, kvSnapshot: kv,
	}
}

func (e *replayEngine) newEvent(source *uint64, kind duroxide.EventKind) duroxide.Event {
	ev := duroxide.NewEvent(e.nextEventID, e.instance, e.executionID, source, kind)
	if e.now != nil {
		ev.TimestampMs = uint64(e.now().UnixMilli())
	}
	e.nextEventID++
	return ev
}

func (e *replayEngine) allEvents() func(yield func(duroxide.Event) bool) {
	return func(yield func(duroxide.Event) bool) {
		for _, ev := range e.baseline {
			if !yield(ev) {
				return
			}
		}
		for _, ev := range e.historyDelta {
			if !yield(ev) {
				return
			}
		}
	}
}

// scheduleKindOf returns "activity", "timer" or "suborchestration" for the
// schedule event with id, or "".
func (e *replayEngine) scheduleKindOf(id uint64) string {
	for ev := range e.allEvents() {
		if ev.EventID != id {
			continue
		}
		if kind := scheduleKindName(ev); kind != "" {
			return kind
		}
	}
	return ""
}

// scheduleKindName is scheduleKindOf for the event ev ("" when it is not a
// schedule).
func scheduleKindName(ev duroxide.Event) string {
	switch ev.Kind.(type) {
	case duroxide.ActivityScheduled:
		return "activity"
	case duroxide.TimerCreated:
		return "timer"
	case duroxide.SubOrchestrationScheduled:
		return "suborchestration"
	}
	return ""
}

// scheduleKindAt is scheduleKindOf, looking first where the event with id
// stands when ids are positions (the first event is 1).
func (e *replayEngine) scheduleKindAt(id uint64) string {
	if id >= 1 && id <= uint64(len(e.baseline)) && e.baseline[id-1].EventID == id {
		if kind := scheduleKindName(e.baseline[id-1]); kind != "" {
			return kind
		}
	}
	return e.scheduleKindOf(id)
}

// hasCompletion reports whether events already hold a completion of the
// given kinds for schedule id.
func hasCompletion(events []duroxide.Event, id uint64, kinds ...duroxide.EventType) bool {
	// Event ids are positions (the first event is 1): a completion comes
	// after its schedule, so a history whose event at the schedule's
	// position is the schedule is scanned from there only.
	if id >= 1 && id <= uint64(len(events)) && events[id-1].EventID == id {
		events = events[id:]
	}
	for _, ev := range events {
		if ev.SourceEventID != nil && *ev.SourceEventID == id && slices.Contains(kinds, ev.Type()) {
			return true
		}
	}
	return false
}

// The completion kinds of activities and of sub-orchestrations: a second
// completion of either kind for one schedule is a duplicate.
var (
	activityCompletions = []duroxide.EventType{duroxide.EventTypeActivityCompleted, duroxide.EventTypeActivityFailed}
	childCompletions    = []duroxide.EventType{duroxide.EventTypeSubOrchestrationCompleted, duroxide.EventTypeSubOrchestrationFailed}
)

// prepCompletions converts the turn's messages into history events
// (duroxide's prep_completions): messages of another execution and
// duplicates (a second completion of the same schedule) are dropped, a completion without a matching schedule of the
// same kind is nondeterminism, and a system error (Configuration,
// Infrastructure, Poison) in an activity or child failure aborts the turn.
func (e *replayEngine) prepCompletions(messages []duroxide.WorkItem) {
	for _, msg := range messages {
		var (
			id         uint64
			wantKind   string
			source     *uint64
			kind       duroxide.EventKind
			sysErr     *duroxide.ErrorDetails
			execID     uint64
			checkExec  bool
			dupKinds   []duroxide.EventType
			completion = true
		)
		var failure *duroxide.ErrorDetails
		switch m := msg.Kind.(type) {
		case duroxide.ActivityCompletedItem:
			id, wantKind, execID, checkExec, dupKinds = m.ID, "activity", m.ExecutionID, true, activityCompletions
			kind = duroxide.ActivityCompleted{Result: m.Result}
		case duroxide.ActivityFailedItem:
			id, wantKind, execID, checkExec, dupKinds = m.ID, "activity", m.ExecutionID, true, activityCompletions
			kind, failure = duroxide.ActivityFailed{Details: m.Details}, &m.Details
		case duroxide.TimerFiredItem:
			id, wantKind, execID, checkExec = m.ID, "timer", m.ExecutionID, true
			kind = duroxide.TimerFired{FireAtMs: m.FireAtMs}
			dupKinds = []duroxide.EventType{duroxide.EventTypeTimerFired}
		case duroxide.SubOrchCompletedItem:
			id, wantKind, execID, checkExec, dupKinds = m.ParentID, "suborchestration", m.ParentExecutionID, true, childCompletions
			kind = duroxide.SubOrchestrationCompleted{Result: m.Result}
		case duroxide.SubOrchFailedItem:
			id, wantKind, execID, checkExec, dupKinds = m.ParentID, "suborchestration", m.ParentExecutionID, true, childCompletions
			kind, failure = duroxide.SubOrchestrationFailed{Details: m.Details}, &m.Details
		case duroxide.ExternalRaisedItem:
			completion = false
			kind = duroxide.ExternalEvent{Name: m.Name, Data: m.Data}
		case duroxide.QueueMessageItem:
			completion = false
			kind = duroxide.QueueEventDelivered{Name: m.Name, Data: m.Data}
		case duroxide.CancelInstanceItem:
			completion = false
			if e.cancelAlreadyDecided() {
				continue
			}
			kind = duroxide.OrchestrationCancelRequested{Reason: m.Reason}
		default:
			continue // start items are handled by the dispatcher
		}
		if failure != nil && failure.Application == nil {
			sysErr = failure // Configuration, Infrastructure, Poison: abort the turn
		}
		if completion {
			if checkExec && execID != e.executionID {
				e.logger.Warn("ignoring completion from a different execution", "instance", e.instance, "id", id, "execution_id", execID)
				continue
			}
			// duroxide checks only the same completion kind against the
			// persisted history (and ActivityFailed not at all); any earlier
			// completion of the schedule makes a redelivery a duplicate here,
			// which a later replay would otherwise reject.
			if hasCompletion(e.baseline, id, dupKinds...) {
				e.logger.Warn("ignoring duplicate completion", "instance", e.instance, "id", id)
				continue
			}
			if hasCompletion(e.historyDelta, id, dupKinds...) {
				e.logger.Warn("dropping duplicate completion in current run", "instance", e.instance, "id", id)
				continue
			}
			switch got := e.scheduleKindAt(id); {
			case got == "":
				what := map[string]string{"activity": "completion", "timer": "timer", "suborchestration": "sub-orchestration"}[wantKind]
				d := duroxide.NondeterminismError("", fmt.Sprintf("no matching schedule for %s id=%d", what, id))
				e.abortError = &d
				continue
			case got != wantKind:
				d := duroxide.NondeterminismError("", fmt.Sprintf("completion kind mismatch for id=%d, expected '%s', got '%s'", id, got, wantKind))
				e.abortError = &d
				continue
			}
			idCopy := id
			source = &idCopy
			if sysErr != nil && e.abortError == nil {
				e.abortError = sysErr
			}
		}
		e.historyDelta = append(e.historyDelta, e.newEvent(source, kind))
	}
}

// cancelAlreadyDecided reports whether the instance already terminated or
// already recorded a cancellation request, so a CancelInstance is dropped.
func (e *replayEngine) cancelAlreadyDecided() bool {
	for _, ev := range e.baseline {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationCancelRequested:
			return true
		}
	}
	for _, ev := range e.historyDelta {
		if _, ok := ev.Kind.(duroxide.OrchestrationCancelRequested); ok {
			return true
		}
	}
	return false
}

// replayRun is the state of one execute call.
type replayRun struct {
	ctx           *OrchestrationContext
	co            *coroutine
	emitted       []tokenAction
	openSchedules map[uint64]bool
	scheduleKinds map[uint64]duroxide.EventType
	mustPoll      bool
	finished      bool
	mismatched    *action // the action a failed match popped, for the divergence
}

// poll resumes the orchestration and queues the actions it emitted; it
// returns true when the function has returned (or panicked).
func (r *replayRun) poll() bool {
	done := r.co.poll()
	r.ctx.mu.Lock()
	r.emitted = append(r.emitted, r.ctx.state.drain()...)
	r.ctx.mu.Unlock()
	r.finished = done
	return done
}

// execute replays the history and runs the orchestration for one turn
// (duroxide's execute_orchestration). A resumed execution (e.resumed)
// skips the baseline it has already consumed; with e.keep, the run of a
// turn that leaves the execution running is kept in e.kept, its goroutine
// parked, instead of being ended.
func (e *replayEngine) execute(fn OrchestrationFunc, input, name, version string) (res turnResult) {
	resumed := e.resumed
	e.resumed = nil
	if e.abortError != nil {
		if resumed != nil {
			resumed.co.abort()
		}
		return failed(*e.abortError)
	}
	n := len(e.baseline) + len(e.historyDelta)
	var run *replayRun
	first := 0
	if resumed != nil {
		run, first, e.resuming = resumed, len(e.baseline), true
		if e.now != nil {
			run.ctx.now = e.now
		}
		run.mustPoll = false
	} else {
		for i := range n {
			if e.eventAt(i).IsTerminal() {
				return turnResult{kind: turnContinue}
			}
		}
		if n == 0 {
			return nondeterminism("corrupted history: empty")
		}
		started, ok := e.eventAt(0).Kind.(duroxide.OrchestrationStarted)
		if !ok {
			return nondeterminism("corrupted history: first event must be OrchestrationStarted")
		}
		ctx := newOrchestrationContext(e.instance, e.executionID, name, version, e.logger)
		if e.now != nil {
			ctx.now = e.now
		}
		// An unreadable stamp keeps the legacy rules; the dispatcher warns
		// about it every turn (decideTurn).
		ctx.state.raceFix = raceFixFor(e.eventAt(0))
		ctx.state.seedKV(e.kvSnapshot)
		ctx.state.customStatus = started.InitialCustomStatus
		co := newCoroutine(func() (string, error) {
			out, err := fn(ctx, input)
			ctx.dropPending()
			return out, err
		})
		ctx.co = co
		run = &replayRun{ctx: ctx, co: co, openSchedules: map[uint64]bool{}, scheduleKinds: map[uint64]duroxide.EventType{}, mustPoll: true}
		if e.persistedLen == 0 {
			ctx.setReplaying(false)
		}
	}
	ctx, co := run.ctx, run.co
	applied := -1 // how much of historyDelta the loop applied; -1 until it ran to the end
	defer func() {
		if e.keep && res.kind == turnContinue && !run.finished && applied >= 0 {
			e.settle(run, e.historyDelta[applied:])
			e.kept = run
			return
		}
		co.abort()
	}()

	for i := first; i < n; i++ {
		ev := e.eventAt(i)
		if i >= e.persistedLen {
			ctx.setReplaying(false)
		}
		if run.mustPoll {
			if run.poll() && !e.wholeHistory {
				break
			}
			run.mustPoll = false
		}
		if res, failedTurn := e.applyHistoryEvent(run, ev); failedTurn {
			e.divergence = &divergence{index: i, event: ev, action: run.mismatched, returned: run.finished, err: co.err, panicked: co.panicked}
			return res
		}
	}
	ctx.setReplaying(false)
	if run.mustPoll && !run.finished {
		run.poll()
	}
	if co.panicked != nil {
		return failed(duroxide.ErrorDetails{Application: &duroxide.ApplicationDetails{
			Kind: duroxide.AppErrorKind{Name: duroxide.AppErrorPanicked}, Message: *co.panicked,
		}})
	}
	applied = len(e.historyDelta)

	ctx.mu.Lock()
	for _, id := range ctx.state.cancelledIDs(kindQueueDequeue) {
		ctx.state.queueCancelled[id] = true
	}
	ctx.mu.Unlock()
	e.convertEmitted(ctx, run.emitted)
	run.emitted = nil

	if res, bad := e.quiesce(run); bad {
		return res
	}
	return e.finalize(run)
}

// eventAt returns event i of the baseline followed by the delta.
func (e *replayEngine) eventAt(i int) duroxide.Event {
	if i < len(e.baseline) {
		return e.baseline[i]
	}
	return e.historyDelta[i-len(e.baseline)]
}

// settle brings a run that is kept after its turn to the state a full
// replay of the turn's events would leave it in, for the events the turn
// recorded itself rather than applied (new schedules, cancellations of
// dropped futures): their schedules are open, the cancelled subscriptions
// marked. The orchestration goroutine is parked.
func (e *replayEngine) settle(run *replayRun, recorded []duroxide.Event) {
	ctx := run.ctx
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	for _, ev := range recorded {
		switch ev.Kind.(type) {
		case duroxide.ActivityScheduled, duroxide.TimerCreated, duroxide.ExternalSubscribed,
			duroxide.QueueSubscribed, duroxide.SubOrchestrationScheduled:
			run.openSchedules[ev.EventID] = true
			run.scheduleKinds[ev.EventID] = ev.Type()
		case duroxide.ExternalSubscribedCancelled:
			if ev.SourceEventID != nil {
				ctx.state.cancelExternal(*ev.SourceEventID)
			}
		case duroxide.QueueSubscriptionCancelled:
			if ev.SourceEventID != nil {
				ctx.state.queueCancelled[*ev.SourceEventID] = true
			}
		}
	}
}

// applyHistoryEvent replays one event against the code's actions (duroxide's
// apply_history_event); failedTurn is true with the nondeterminism result
// when they disagree.
func (e *replayEngine) applyHistoryEvent(run *replayRun, ev duroxide.Event) (res turnResult, failedTurn bool) {
	ctx := run.ctx
	popAndCheck := func(what string) (turnResult, bool) {
		if len(run.emitted) == 0 {
			return turnResult{}, false // no action: the event came from carry-forward or older code
		}
		ta := run.emitted[0]
		run.emitted = run.emitted[1:]
		if !ta.action.matchesEvent(ev.Kind) {
			run.mismatched = &ta.action
			return nondeterminism(fmt.Sprintf("%s mismatch: action=%s vs event=%s", what, ta.action, describeEvent(ev.Kind))), true
		}
		return turnResult{}, false
	}
	deliver := func(c completion) (turnResult, bool) {
		if ev.SourceEventID == nil {
			return turnResult{}, false
		}
		src := *ev.SourceEventID
		if !run.openSchedules[src] {
			return nondeterminism("completion without open schedule"), true
		}
		ctx.mu.Lock()
		ctx.state.deliver(src, c)
		ctx.mu.Unlock()
		delete(run.openSchedules, src)
		run.mustPoll = true
		return turnResult{}, false
	}

	switch k := ev.Kind.(type) {
	case duroxide.OrchestrationStarted:
		if k.InitialCustomStatus != nil {
			ctx.mu.Lock()
			ctx.state.customStatus = k.InitialCustomStatus
			ctx.mu.Unlock()
		}
	case duroxide.CustomStatusUpdated:
		return popAndCheck("custom status")
	case duroxide.KeyValueSet:
		return popAndCheck("kv set")
	case duroxide.KeyValueCleared:
		return popAndCheck("kv clear")
	case duroxide.KeyValuesCleared:
		return popAndCheck("kv clear_all")
	case duroxide.ActivityScheduled, duroxide.TimerCreated:
		_, res, bad := e.matchAndBind(run, ev)
		return res, bad
	case duroxide.ExternalSubscribed:
		_, res, bad := e.matchAndBind(run, ev)
		if !bad {
			ctx.mu.Lock()
			ctx.state.bindExternalSubscription(ev.EventID, k.Name)
			ctx.mu.Unlock()
		}
		return res, bad
	case duroxide.QueueSubscribed:
		_, res, bad := e.matchAndBind(run, ev)
		if !bad {
			ctx.mu.Lock()
			ctx.state.bindQueueSubscription(ev.EventID, k.Name)
			ctx.mu.Unlock()
			run.mustPoll = true
		}
		return res, bad
	case duroxide.SubOrchestrationScheduled:
		token, res, bad := e.matchAndBind(run, ev)
		if !bad {
			ctx.mu.Lock()
			ctx.state.subOrchInstances[token] = k.Instance
			ctx.mu.Unlock()
		}
		return res, bad
	case duroxide.OrchestrationChained:
		if len(run.emitted) == 0 {
			return nondeterminism("history OrchestrationChained but no emitted action"), true
		}
		ta := run.emitted[0]
		run.emitted = run.emitted[1:]
		if !ta.action.matchesEvent(ev.Kind) {
			run.mismatched = &ta.action
			return nondeterminism(fmt.Sprintf("schedule mismatch: action=%s vs event=%s", ta.action, describeEvent(ev.Kind))), true
		}
		ctx.mu.Lock()
		ctx.state.bindToken(ta.token, ev.EventID)
		ctx.mu.Unlock()
	case duroxide.ActivityCompleted:
		if ev.SourceEventID != nil && run.openSchedules[*ev.SourceEventID] && run.scheduleKinds[*ev.SourceEventID] != duroxide.EventTypeActivityScheduled {
			return nondeterminism("completion kind mismatch: expected activity"), true
		}
		return deliver(completion{value: k.Result})
	case duroxide.ActivityFailed:
		return deliver(completion{err: &TaskFailedError{Details: k.Details}})
	case duroxide.TimerFired:
		return deliver(completion{})
	case duroxide.SubOrchestrationCompleted:
		return deliver(completion{value: k.Result})
	case duroxide.SubOrchestrationFailed:
		return deliver(completion{err: &TaskFailedError{Details: k.Details}})
	case duroxide.ExternalSubscribedCancelled:
		if ev.SourceEventID != nil {
			ctx.mu.Lock()
			ctx.state.cancelExternal(*ev.SourceEventID)
			ctx.mu.Unlock()
		}
	case duroxide.QueueSubscriptionCancelled:
		if ev.SourceEventID != nil {
			ctx.mu.Lock()
			ctx.state.queueCancelled[*ev.SourceEventID] = true
			ctx.mu.Unlock()
		}
	case duroxide.ExternalEvent:
		ctx.mu.Lock()
		if ctx.state.hasPendingSubscriptionSlot(k.Name) {
			ctx.state.deliverExternal(k.Name, k.Data)
			run.mustPoll = true
		} else {
			if !ctx.state.replaying {
				e.droppedEvents = append(e.droppedEvents, k.Name)
			}
			e.logger.Warn("skipping ExternalEvent delivery: no pending subscription slot (event remains in history for audit)",
				"instance", e.instance, "event_name", k.Name)
		}
		ctx.mu.Unlock()
	case duroxide.QueueEventDelivered:
		ctx.mu.Lock()
		ctx.state.deliverQueue(k.Name, k.Data)
		ctx.mu.Unlock()
		run.mustPoll = true
	}
	return turnResult{}, false
}

// matchAndBind pops the next emitted action, checks it against the schedule
// event ev and binds its token to ev's id (duroxide's
// match_and_bind_schedule).
func (e *replayEngine) matchAndBind(run *replayRun, ev duroxide.Event) (token uint64, res turnResult, bad bool) {
	if len(run.emitted) == 0 {
		return 0, nondeterminism("history schedule but no emitted action"), true
	}
	ta := run.emitted[0]
	run.emitted = run.emitted[1:]
	if !ta.action.matchesEvent(ev.Kind) {
		run.mismatched = &ta.action
		return 0, nondeterminism(fmt.Sprintf("schedule mismatch: action=%s vs event=%s", ta.action, describeEvent(ev.Kind))), true
	}
	run.ctx.mu.Lock()
	run.ctx.state.bindToken(ta.token, ev.EventID)
	run.ctx.mu.Unlock()
	run.openSchedules[ev.EventID] = true
	run.scheduleKinds[ev.EventID] = ev.Type()
	return ta.token, turnResult{}, false
}

// convertEmitted gives new actions their event ids, binds their tokens and
// records their events (duroxide's convert_emitted_actions).
func (e *replayEngine) convertEmitted(ctx *OrchestrationContext, emitted []tokenAction) {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	for _, ta := range emitted {
		id := e.nextEventID
		a := ta.action.withEventID(id, e.executionID)
		ctx.state.bindToken(ta.token, id)
		switch a.kind {
		case actStartSubOrchestration:
			ctx.state.subOrchInstances[ta.token] = a.instance
		case actWaitExternal:
			ctx.state.bindExternalSubscription(id, a.name)
		case actDequeueEvent:
			ctx.state.bindQueueSubscription(id, a.name)
		}
		if kind, ok := a.toEventKind(); ok {
			e.historyDelta = append(e.historyDelta, e.newEvent(nil, kind))
		} else {
			e.nextEventID++ // duroxide consumes an id for ContinueAsNew too
		}
		e.pendingActions = append(e.pendingActions, a)
	}
}

// quiesce re-polls while the newly bound actions let the code progress
// (duroxide's run_quiescence_loop): a dequeue whose message is already
// buffered resolves in the same turn.
func (e *replayEngine) quiesce(run *replayRun) (turnResult, bool) {
	// The limit grows by the queue messages in history; they are counted
	// only if the loop gets that far, not on every turn.
	limit, counted := maxQuiescenceIterations, false
	reached := func(iter int) bool {
		if iter >= limit && !counted {
			counted = true
			for ev := range e.allEvents() {
				if _, ok := ev.Kind.(duroxide.QueueEventDelivered); ok {
					limit++
				}
			}
		}
		return iter >= limit
	}
	iter := 0
	for !run.finished && len(e.pendingActions) > 0 && !reached(iter) {
		iter++
		before := len(e.pendingActions)
		run.poll()
		if run.co.panicked != nil {
			return failed(duroxide.ErrorDetails{Application: &duroxide.ApplicationDetails{
				Kind: duroxide.AppErrorKind{Name: duroxide.AppErrorPanicked}, Message: *run.co.panicked,
			}}), true
		}
		e.convertEmitted(run.ctx, run.emitted)
		run.emitted = nil
		if len(e.pendingActions) == before {
			break
		}
	}
	if reached(iter) {
		return failed(duroxide.ErrorDetails{Infrastructure: &duroxide.InfrastructureDetails{
			Operation: "quiescence_loop",
			Message:   fmt.Sprintf("quiescence loop exceeded %d iterations — orchestration is emitting unbounded persistent event subscriptions", limit),
		}}), true
	}
	return turnResult{}, false
}

// finalize decides the turn's result (duroxide's finalize_turn): a recorded
// cancellation request wins, then continue-as-new, then the function's
// output; dropped futures are reconciled with history first.
func (e *replayEngine) finalize(run *replayRun) turnResult {
	// By index, baseline then delta: this runs every turn, and copying
	// each event out (as ranging over allEvents does) costs more than the
	// check.
	for _, events := range [2][]duroxide.Event{e.baseline, e.historyDelta} {
		for i := range events {
			if k, ok := events[i].Kind.(duroxide.OrchestrationCancelRequested); ok {
				return turnResult{kind: turnCancelled, reason: k.Reason}
			}
		}
	}
	// Dropped futures are recorded before a continue-as-new too: a queue
	// wait that lost a select, or that the code never awaited again, must
	// not count as consuming a message, or that message would be neither
	// delivered nor carried to the next execution.
	if res, bad := e.collectCancelled(run.ctx); bad {
		return res
	}
	for _, a := range e.pendingActions {
		if a.kind == actContinueAsNew {
			res := turnResult{kind: turnContinueAsNew, input: a.input, version: a.version}
			run.ctx.mu.Lock()
			if run.ctx.state.raceFix {
				res.carry, res.exactCarry = run.ctx.state.unconsumedQueueArrivals(), true
			}
			run.ctx.mu.Unlock()
			return res
		}
	}
	if run.finished {
		if run.co.err != nil {
			return failed(duroxide.ApplicationError(duroxide.AppErrorOrchestrationFailed, run.co.err.Error()))
		}
		return turnResult{kind: turnCompleted, output: run.co.output}
	}
	return turnResult{kind: turnContinue}
}

// collectCancelled reconciles the futures the code dropped with the
// cancellation events already in history and records the new ones
// (duroxide's collect_cancelled_from_context): a persisted dropped-future
// cancellation the code no longer makes is nondeterminism; a new one adds a
// *CancelRequested/*Cancelled event and, for activities and children, the
// provider side channel.
func (e *replayEngine) collectCancelled(ctx *OrchestrationContext) (turnResult, bool) {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	s := ctx.state
	acts := s.cancelledIDs(kindActivity)
	children := s.cancelledSubOrchestrations()
	exts := s.cancelledIDs(kindExternalWait)
	queues := s.cancelledIDs(kindQueueDequeue)
	childIDs := make([]uint64, len(children))
	for i, c := range children {
		childIDs[i] = c.scheduleID
	}

	// A resumed execution checked its persisted cancellations when it
	// recorded or first replayed them; its code dropped those futures in
	// earlier turns, which clearCancelled forgot.
	if e.persistedLen > 0 && !e.resuming {
		persisted := e.baseline[:e.persistedLen]
		checks := []struct {
			what     string
			cancel   duroxide.EventType
			schedule duroxide.EventType
			code     []uint64
		}{
			{"activities", duroxide.EventTypeActivityCancelRequested, duroxide.EventTypeActivityScheduled, acts},
			{"sub-orchestrations", duroxide.EventTypeSubOrchestrationCancelRequested, duroxide.EventTypeSubOrchestrationScheduled, childIDs},
			{"external waits", duroxide.EventTypeExternalSubscribedCancelled, duroxide.EventTypeExternalSubscribed, exts},
			{"persistent waits", duroxide.EventTypeQueueSubscriptionCancelled, duroxide.EventTypeQueueSubscribed, queues},
		}
		for _, c := range checks {
			recorded := map[uint64]bool{}
			scheduled := map[uint64]bool{}
			for _, ev := range persisted {
				switch ev.Type() {
				case c.cancel:
					if ev.SourceEventID != nil && cancelReason(ev.Kind) == reasonDroppedFuture {
						recorded[*ev.SourceEventID] = true
					}
				case c.schedule:
					scheduled[ev.EventID] = true
				}
			}
			inCode := map[uint64]bool{}
			for _, id := range c.code {
				if scheduled[id] {
					inCode[id] = true
				}
			}
			for _, id := range sortedKeys(recorded) {
				if !inCode[id] {
					e.divergence = cancellationDivergence(persisted, c.cancel, id)
					return nondeterminism(fmt.Sprintf("cancellation mismatch (%s): baseline_dropped_future_cancel_requests=%v ctx_cancelled_in_replayed_segment=%v",
						c.what, sortedKeys(recorded), sortedKeys(inCode))), true
				}
			}
		}
	}

	if len(acts) == 0 && len(children) == 0 && len(exts) == 0 && len(queues) == 0 {
		s.clearCancelled()
		return turnResult{}, false
	}
	already := map[duroxide.EventType]map[uint64]bool{}
	for ev := range e.allEvents() {
		switch ev.Kind.(type) {
		case duroxide.ActivityCancelRequested, duroxide.SubOrchestrationCancelRequested,
			duroxide.ExternalSubscribedCancelled, duroxide.QueueSubscriptionCancelled:
			if ev.SourceEventID != nil {
				if already[ev.Type()] == nil {
					already[ev.Type()] = map[uint64]bool{}
				}
				already[ev.Type()][*ev.SourceEventID] = true
			}
		}
	}
	isNew := func(t duroxide.EventType, id uint64) bool {
		if already[t] == nil {
			already[t] = map[uint64]bool{}
		}
		if already[t][id] {
			return false
		}
		already[t][id] = true
		return true
	}
	for _, id := range acts {
		if isNew(duroxide.EventTypeActivityCancelRequested, id) {
			e.cancelledActivityIDs = append(e.cancelledActivityIDs, id)
			e.historyDelta = append(e.historyDelta, e.newEvent(duroxide.Uint64Ptr(id), duroxide.ActivityCancelRequested{Reason: reasonDroppedFuture}))
		}
	}
	for _, c := range children {
		if isNew(duroxide.EventTypeSubOrchestrationCancelRequested, c.scheduleID) {
			e.cancelledSubOrchestrate = append(e.cancelledSubOrchestrate, c.instance)
			e.historyDelta = append(e.historyDelta, e.newEvent(duroxide.Uint64Ptr(c.scheduleID), duroxide.SubOrchestrationCancelRequested{Reason: reasonDroppedFuture}))
		}
	}
	for _, id := range exts {
		if isNew(duroxide.EventTypeExternalSubscribedCancelled, id) {
			e.historyDelta = append(e.historyDelta, e.newEvent(duroxide.Uint64Ptr(id), duroxide.ExternalSubscribedCancelled{Reason: reasonDroppedFuture}))
		}
	}
	for _, id := range queues {
		if isNew(duroxide.EventTypeQueueSubscriptionCancelled, id) {
			e.historyDelta = append(e.historyDelta, e.newEvent(duroxide.Uint64Ptr(id), duroxide.QueueSubscriptionCancelled{Reason: reasonDroppedFuture}))
		}
	}
	s.clearCancelled()
	return turnResult{}, false
}

// cancellationDivergence locates the recorded dropped-future cancellation
// of schedule id (of type cancel) that the code no longer makes.
func cancellationDivergence(persisted []duroxide.Event, cancel duroxide.EventType, id uint64) *divergence {
	for i, ev := range persisted {
		if ev.Type() == cancel && ev.SourceEventID != nil && *ev.SourceEventID == id {
			return &divergence{index: i, event: ev}
		}
	}
	return nil
}

// cancelReason returns the reason of a cancellation event kind.
func cancelReason(kind duroxide.EventKind) string {
	switch k := kind.(type) {
	case duroxide.ActivityCancelRequested:
		return k.Reason
	case duroxide.SubOrchestrationCancelRequested:
		return k.Reason
	case duroxide.ExternalSubscribedCancelled:
		return k.Reason
	case duroxide.QueueSubscriptionCancelled:
		return k.Reason
	}
	return ""
}

func sortedKeys(m map[uint64]bool) []uint64 {
	return slices.Sorted(maps.Keys(m))
}
