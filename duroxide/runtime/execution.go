package runtime

import (
	"log/slog"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Reasons duroxide writes when it cancels work at a terminal state.
const (
	reasonTerminal            = "orchestration_terminal"
	reasonParentCanceled      = "parent canceled"
	reasonParentDroppedFuture = "parent dropped sub-orchestration future"
)

// parentExecutionFunc returns the execution id to address a child's
// completion to: the parent's execution that scheduled the child.
type parentExecutionFunc func(parent string, parentID uint64, child string) uint64

// executionResult is what one turn of an execution produced besides the
// history delta (kept in the historyManager).
type executionResult struct {
	workerItems         []duroxide.WorkItem
	orchestratorItems   []duroxide.WorkItem
	cancelledActivities []duroxide.ScheduledActivityIdentifier
	// droppedEvents names the turn's ExternalEvents no wait was pending
	// for (replayEngine.droppedEvents).
	droppedEvents []string
}

// runExecution runs one turn of an execution whose history (with
// OrchestrationStarted) is in h and turns its result into work items,
// terminal events and parent notifications (duroxide's
// run_single_execution_atomic). With sticky (the sticky cache is on), a
// cached execution in sticky.entry is resumed instead of replayed, and the
// run of a turn that leaves the execution running is returned as kept
// (its goroutine parked; the caller caches or ends it).
func runExecution(instance string, executionID uint64, h *historyManager, r workItemReader, fn OrchestrationFunc,
	version string, kv map[string]duroxide.KvEntry, parentExec parentExecutionFunc, logger *slog.Logger, now func() time.Time,
	sticky *stickyResume) (res executionResult, kept *replayRun) {
	started := h.startedEvent()
	input := started.Input
	link, hasParent := h.parentLink()
	parent, parentID := link.instance, link.id

	// The baseline includes what h.delta already holds (a new
	// OrchestrationStarted), which is not replay. The engine only reads
	// it, so the persisted history is used as it is when there is none.
	baseline := h.history
	if len(h.delta) > 0 {
		baseline = h.full()
	}
	engine := newReplayEngine(instance, executionID, baseline, len(h.history), kv, logger)
	engine.now = now
	if sticky != nil {
		engine.keep = true
		if e := sticky.entry; e != nil {
			engine.resumed = e.run
			resumeKV(e.run.ctx, e.kvSetKeys, now)
		}
	}
	if len(r.completions) > 0 {
		engine.prepCompletions(r.completions)
	}
	turn := engine.execute(fn, input, r.name, version)
	kept = engine.kept
	res.droppedEvents = engine.droppedEvents

	for _, id := range engine.cancelledActivityIDs {
		res.cancelledActivities = append(res.cancelledActivities, duroxide.ScheduledActivityIdentifier{Instance: instance, ExecutionID: executionID, ActivityID: id})
	}
	var droppedChildren []duroxide.WorkItem
	for _, child := range engine.cancelledSubOrchestrate {
		droppedChildren = append(droppedChildren, duroxide.WorkItem{Kind: duroxide.CancelInstanceItem{
			Instance: childInstanceID(instance, child), Reason: reasonParentDroppedFuture,
		}})
	}
	h.delta = append(h.delta, engine.historyDelta...)

	detachedStarts := func() {
		for _, a := range engine.pendingActions {
			if a.kind == actStartDetached {
				res.orchestratorItems = append(res.orchestratorItems, startItem(a.instance, a, nil))
			}
		}
	}
	notifyParent := func(kind duroxide.WorkItemKind) {
		res.orchestratorItems = append(res.orchestratorItems, duroxide.WorkItem{Kind: kind})
	}
	failWith := func(d duroxide.ErrorDetails) {
		h.appendNew(instance, executionID, nil, duroxide.OrchestrationFailed{Details: d})
		if hasParent {
			notifyParent(duroxide.SubOrchFailedItem{ParentInstance: parent, ParentExecutionID: link.resolveExecution(parentExec, instance), ParentID: parentID, Details: d})
		}
	}

	switch turn.kind {
	case turnContinue:
		for _, a := range engine.pendingActions {
			switch a.kind {
			case actCallActivity:
				res.workerItems = append(res.workerItems, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{
					Instance: instance, ExecutionID: executionID, ID: a.schedulingEventID,
					Name: a.name, Input: a.input, SessionID: a.sessionID, Tag: a.tag,
				}})
			case actCreateTimer:
				res.orchestratorItems = append(res.orchestratorItems, duroxide.WorkItem{Kind: duroxide.TimerFiredItem{
					Instance: instance, ExecutionID: executionID, ID: a.schedulingEventID, FireAtMs: a.fireAtMs,
				}})
			case actStartSubOrchestration:
				res.orchestratorItems = append(res.orchestratorItems,
					startItem(childInstanceID(instance, a.instance), a, &parentRef{instance: instance, id: a.schedulingEventID, execution: duroxide.Uint64Ptr(executionID)}))
			case actStartDetached:
				res.orchestratorItems = append(res.orchestratorItems, startItem(a.instance, a, nil))
			}
		}
	case turnCompleted:
		detachedStarts()
		emitTerminalBreadcrumbs(h, instance, executionID, outstandingSchedules(h.full()))
		h.appendNew(instance, executionID, nil, duroxide.OrchestrationCompleted{Output: turn.output})
		if hasParent {
			notifyParent(duroxide.SubOrchCompletedItem{ParentInstance: parent, ParentExecutionID: link.resolveExecution(parentExec, instance), ParentID: parentID, Result: turn.output})
		}
	case turnFailed:
		detachedStarts()
		emitTerminalBreadcrumbs(h, instance, executionID, outstandingSchedules(h.full()))
		failWith(turn.details)
	case turnContinueAsNew:
		carry := turn.carry
		if !turn.exactCarry {
			carry = unmatchedQueueMessages(h.full())
		}
		emitTerminalBreadcrumbs(h, instance, executionID, outstandingSchedules(h.full()))
		h.appendNew(instance, executionID, nil, duroxide.OrchestrationContinuedAsNew{Input: turn.input})
		var overflow []duroxide.NameData
		if len(carry) > duroxide.MaxCarryForwardEvents {
			carry, overflow = carry[:duroxide.MaxCarryForwardEvents], carry[duroxide.MaxCarryForwardEvents:]
			logger.Info("continue-as-new carries queue events past the carry-forward limit as queue messages",
				"instance", instance, "carried", len(carry), "requeued", len(overflow), "limit", duroxide.MaxCarryForwardEvents)
		}
		can := duroxide.ContinueAsNewItem{
			Instance: instance, Orchestration: r.name, Input: turn.input, Version: turn.version,
			CarryForwardEvents: carry, InitialCustomStatus: accumulatedCustomStatus(h.full()),
		}
		if hasParent {
			can.ParentInstance, can.ParentID, can.ParentExecutionID = &parent, &parentID, link.execution
		}
		res.orchestratorItems = append(res.orchestratorItems, duroxide.WorkItem{Kind: can})
		// Past the limit, the unread queue events follow the ContinueAsNew
		// as ordinary queue messages in the same ack, so none is lost and
		// the successor dequeues them after the carried ones.
		for _, nd := range overflow {
			res.orchestratorItems = append(res.orchestratorItems, duroxide.WorkItem{Kind: duroxide.QueueMessageItem{Instance: instance, Name: nd.Name, Data: nd.Data}})
		}
	case turnCancelled:
		d := duroxide.CancelledError(turn.reason)
		out := outstandingSchedules(h.full())
		emitTerminalBreadcrumbs(h, instance, executionID, out)
		h.appendNew(instance, executionID, nil, duroxide.OrchestrationFailed{Details: d})
		for _, c := range out.subOrchestrations {
			res.orchestratorItems = append(res.orchestratorItems, duroxide.WorkItem{Kind: duroxide.CancelInstanceItem{
				Instance: childInstanceID(instance, c.instance), Reason: reasonParentCanceled,
			}})
		}
		if hasParent {
			notifyParent(duroxide.SubOrchFailedItem{ParentInstance: parent, ParentExecutionID: link.resolveExecution(parentExec, instance), ParentID: parentID, Details: d})
		}
	}
	res.orchestratorItems = append(res.orchestratorItems, droppedChildren...)
	return res, kept
}

// resumeKV gives the keys an execution set the update time a full replay
// would give them: a replayed SetKVValue stamps the key with the replay's
// clock, so after a full replay every key the execution set (and has not
// cleared) reads as updated now, and PruneKVValuesUpdatedBefore must see
// the same on a resumed execution.
func resumeKV(ctx *OrchestrationContext, setKeys map[string]bool, clock func() time.Time) {
	if len(setKeys) == 0 {
		return
	}
	if clock == nil {
		clock = time.Now
	}
	now := uint64(clock().UnixMilli())
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	for k := range setKeys {
		if _, live := ctx.state.kv[k]; live {
			ctx.state.kvUpdatedAt[k] = now
		}
	}
}

// startItem builds the StartOrchestration message of a child (parent set)
// or detached (parent nil) start action.
func startItem(instance string, a action, parent *parentRef) duroxide.WorkItem {
	s := duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: a.name, Input: a.input, Version: a.version, ExecutionID: duroxide.InitialExecutionID,
	}
	if parent != nil {
		s.ParentInstance, s.ParentID, s.ParentExecutionID = &parent.instance, &parent.id, parent.execution
	}
	return duroxide.WorkItem{Kind: s}
}

// childInstanceID is duroxide's build_child_instance_id: a generated id
// ("sub::N", "sub::E_N") is prefixed with the parent ("<parent>::sub::N");
// an explicit one is used as given (explicit ids that begin with "sub::"
// are refused before they become actions: ErrReservedChildID).
func childInstanceID(parent, child string) string {
	if len(child) >= len(duroxide.SubOrchAutoPrefix) && child[:len(duroxide.SubOrchAutoPrefix)] == duroxide.SubOrchAutoPrefix {
		return parent + "::" + child
	}
	return child
}

// accumulatedCustomStatus is the custom status at the end of history: the
// carried-over one, then every CustomStatusUpdated (duroxide's
// compute_accumulated_custom_status).
func accumulatedCustomStatus(history []duroxide.Event) *string {
	var status *string
	for _, ev := range history {
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			if k.InitialCustomStatus != nil {
				status = k.InitialCustomStatus
			}
		case duroxide.CustomStatusUpdated:
			status = k.Status
		}
	}
	return status
}

// unmatchedQueueMessages returns the queue messages no active subscription
// consumed, in history order, for carry-forward (duroxide's
// collect_unmatched_queue_messages): each active subscription consumes one
// message of its queue.
func unmatchedQueueMessages(history []duroxide.Event) []duroxide.NameData {
	cancelled := map[uint64]bool{}
	for _, ev := range history {
		if _, ok := ev.Kind.(duroxide.QueueSubscriptionCancelled); ok && ev.SourceEventID != nil {
			cancelled[*ev.SourceEventID] = true
		}
	}
	active := map[string]int{}
	for _, ev := range history {
		if k, ok := ev.Kind.(duroxide.QueueSubscribed); ok && !cancelled[ev.EventID] {
			active[k.Name]++
		}
	}
	consumed := map[string]int{}
	var out []duroxide.NameData
	for _, ev := range history {
		k, ok := ev.Kind.(duroxide.QueueEventDelivered)
		if !ok {
			continue
		}
		if consumed[k.Name] < active[k.Name] {
			consumed[k.Name]++
			continue
		}
		out = append(out, duroxide.NameData(k))
	}
	return out
}

type outstandingChild struct {
	scheduleID uint64
	instance   string
}

// outstanding lists the schedules still open at a terminal state (duroxide's
// OutstandingSchedules).
type outstanding struct {
	activities         []uint64
	subOrchestrations  []outstandingChild
	externalWaits      []uint64
	queueSubscriptions []uint64
}

// outstandingSchedules finds the unresolved, uncancelled schedules
// (duroxide's get_outstanding_schedule_ids): external subscriptions are
// resolved causally by a later event of the same name, queue subscriptions
// FIFO by the messages of their queue.
func outstandingSchedules(history []duroxide.Event) outstanding {
	var out outstanding
	resolvedAct, cancelledAct := map[uint64]bool{}, map[uint64]bool{}
	resolvedSub, cancelledSub := map[uint64]bool{}, map[uint64]bool{}
	cancelledExt, resolvedExt := map[uint64]bool{}, map[uint64]bool{}
	cancelledQueue := map[uint64]bool{}
	pendingExt := map[string][]uint64{}
	var acts, exts []uint64
	var subs []outstandingChild
	var queueSubs []queueSub
	arrivals := map[string]int{}
	src := func(ev duroxide.Event) (uint64, bool) {
		if ev.SourceEventID == nil {
			return 0, false
		}
		return *ev.SourceEventID, true
	}
	for _, ev := range history {
		switch k := ev.Kind.(type) {
		case duroxide.ActivityScheduled:
			acts = append(acts, ev.EventID)
		case duroxide.ActivityCompleted, duroxide.ActivityFailed:
			if id, ok := src(ev); ok {
				resolvedAct[id] = true
			}
		case duroxide.ActivityCancelRequested:
			if id, ok := src(ev); ok {
				cancelledAct[id] = true
			}
		case duroxide.SubOrchestrationScheduled:
			subs = append(subs, outstandingChild{scheduleID: ev.EventID, instance: k.Instance})
		case duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			if id, ok := src(ev); ok {
				resolvedSub[id] = true
			}
		case duroxide.SubOrchestrationCancelRequested:
			if id, ok := src(ev); ok {
				cancelledSub[id] = true
			}
		case duroxide.ExternalSubscribed:
			exts = append(exts, ev.EventID)
			pendingExt[k.Name] = append(pendingExt[k.Name], ev.EventID)
		case duroxide.ExternalEvent:
			if q := pendingExt[k.Name]; len(q) > 0 {
				resolvedExt[q[0]] = true
				pendingExt[k.Name] = q[1:]
			}
		case duroxide.ExternalSubscribedCancelled:
			if id, ok := src(ev); ok {
				cancelledExt[id] = true
				for name, q := range pendingExt {
					pendingExt[name] = removeID(q, id)
				}
			}
		case duroxide.QueueSubscribed:
			queueSubs = append(queueSubs, queueSub{scheduleID: ev.EventID, name: k.Name})
		case duroxide.QueueEventDelivered:
			arrivals[k.Name]++
		case duroxide.QueueSubscriptionCancelled:
			if id, ok := src(ev); ok {
				cancelledQueue[id] = true
			}
		}
	}
	resolvedQueue := map[uint64]bool{}
	consumed := map[string]int{}
	for _, q := range queueSubs {
		if cancelledQueue[q.scheduleID] {
			continue
		}
		if consumed[q.name] < arrivals[q.name] {
			consumed[q.name]++
			resolvedQueue[q.scheduleID] = true
		}
	}
	for _, id := range acts {
		if !resolvedAct[id] && !cancelledAct[id] {
			out.activities = append(out.activities, id)
		}
	}
	for _, c := range subs {
		if !resolvedSub[c.scheduleID] && !cancelledSub[c.scheduleID] {
			out.subOrchestrations = append(out.subOrchestrations, c)
		}
	}
	for _, id := range exts {
		if !resolvedExt[id] && !cancelledExt[id] {
			out.externalWaits = append(out.externalWaits, id)
		}
	}
	for _, q := range queueSubs {
		if !resolvedQueue[q.scheduleID] && !cancelledQueue[q.scheduleID] {
			out.queueSubscriptions = append(out.queueSubscriptions, q.scheduleID)
		}
	}
	return out
}

func removeID(ids []uint64, id uint64) []uint64 {
	out := ids[:0:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// emitTerminalBreadcrumbs cancels the open subscriptions before the
// terminal event (duroxide's emit_terminal_cancellation_breadcrumbs);
// activities are cancelled by the dispatcher, children only on
// cancellation.
func emitTerminalBreadcrumbs(h *historyManager, instance string, executionID uint64, out outstanding) {
	for _, id := range out.externalWaits {
		h.appendNew(instance, executionID, duroxide.Uint64Ptr(id), duroxide.ExternalSubscribedCancelled{Reason: reasonTerminal})
	}
	for _, id := range out.queueSubscriptions {
		h.appendNew(instance, executionID, duroxide.Uint64Ptr(id), duroxide.QueueSubscriptionCancelled{Reason: reasonTerminal})
	}
}
