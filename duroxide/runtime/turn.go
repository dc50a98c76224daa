package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// poisonHistorySentinelEventID is the event id duroxide uses for the
// OrchestrationFailed of an instance whose history cannot be decoded (the
// next id is unknowable).
const poisonHistorySentinelEventID = 99999

// historyErrorBackoff is how long an item with undecodable history waits
// before another fetch (giving a newer runtime a chance), as in duroxide.
const historyErrorBackoff = time.Second

// failedAfterContinueAsNew reports whether history holds an
// OrchestrationFailed after its last OrchestrationContinuedAsNew: the
// poison failure the runtime appends to an execution whose successor never
// ran.
func failedAfterContinueAsNew(history []duroxide.Event) bool {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Kind.(type) {
		case duroxide.OrchestrationFailed:
			return true
		case duroxide.OrchestrationContinuedAsNew:
			return false
		}
	}
	return false
}

// ackRequest is everything AckOrchestrationItem commits for a turn.
type ackRequest struct {
	executionID         uint64
	historyDelta        []duroxide.Event
	workerItems         []duroxide.WorkItem
	orchestratorItems   []duroxide.WorkItem
	metadata            duroxide.ExecutionMetadata
	cancelledActivities []duroxide.ScheduledActivityIdentifier
}

// turnDecision is what to do with a fetched orchestration item: ack it with
// ack, or abandon it after delay.
type turnDecision struct {
	abandon bool
	delay   time.Duration
	ack     ackRequest
	poison  bool
	reason  string // why abandoned, for logs
	// pendingReason, set when a start of an instance that has not run is
	// abandoned, is why, for the instance's status (PendingReason).
	pendingReason string
	// collisions are the SubOrchFailed notices to parents whose start of
	// this instance collided with it (also in ack.orchestratorItems): the
	// failure commit of a turn whose ack failed sends them too, so the
	// colliding parent is told all the same (duroxide main's
	// failure_commit_must_preserve_collision_notification).
	collisions []duroxide.WorkItem
	// droppedEvents names the turn's ExternalEvents no wait was pending
	// for, counted once the turn commits.
	droppedEvents []string
}

// turnProcessor decides orchestration turns (the pure part of duroxide's
// process_orchestration_item); it does no I/O except through parentExec.
type turnProcessor struct {
	registry    *Registry
	maxAttempts uint32
	backoff     UnregisteredBackoff
	// onUnregistered is Options.OnUnregistered.
	onUnregistered func(kind, name, instance string)
	supported      duroxide.DispatcherCapabilityFilter
	parentExec     parentExecutionFunc
	logger         *slog.Logger
	now            func() time.Time // Options.Now; nil: time.Now
	runtimeID      string           // named in the pending reasons
	// sticky is the runtime's cache of suspended executions (nil: off);
	// verify is Options.StickyVerify; metrics counts hits and misses (nil
	// in tests: nothing counted).
	sticky  *stickyCache
	verify  func(instance string, err error)
	metrics *runtimeMetrics
}

// decide processes one fetched item.
func (p *turnProcessor) decide(item *duroxide.OrchestrationItem) turnDecision {
	if p.verify == nil || p.sticky == nil {
		return p.decideTurn(item)
	}
	return p.decideVerified(item)
}

// decideTurn processes one fetched item (decide without verification).
func (p *turnProcessor) decideTurn(item *duroxide.OrchestrationItem) turnDecision {
	instance := item.Instance
	// Defense in depth behind the provider's capability filter.
	if stamp, bad := invalidStamp(item.History); bad {
		// duroxide main: replayed as the oldest rules would (the legacy
		// race cancellation, see raceFixFor), with a warning every turn
		// (tests/runtime_version_warnings.rs).
		p.logger.Warn("Invalid pinned version on the execution's OrchestrationStarted; replaying it anyway with the legacy race cancellation",
			"instance", instance, "duroxide_version", stamp)
	}
	if pinned, ok := pinnedVersion(item.History); ok && !p.supported.IsCompatible(pinned) {
		p.logger.Warn("execution pinned at incompatible version, abandoning", "instance", instance, "pinned_version", pinned.String())
		return turnDecision{abandon: true, delay: time.Second, reason: "incompatible version"}
	}
	if item.AttemptCount > p.maxAttempts {
		p.logger.Warn("orchestration message exceeded max attempts, marking as poison",
			"instance", instance, "attempt_count", item.AttemptCount, "max_attempts", p.maxAttempts)
		return p.poison(item)
	}
	if item.HistoryError != nil {
		p.logger.Warn("history deserialization failed, abandoning with backoff",
			"instance", instance, "error", *item.HistoryError, "attempt", item.AttemptCount)
		return turnDecision{abandon: true, delay: historyErrorBackoff, reason: "history error"}
	}

	temp := newHistoryManager(item.History)
	reader := newWorkItemReader(item.Messages, temp, instance, p.logger)
	// An execution poisoned after it continued as new (the successor's
	// start never came, or its first turn ran out of attempts) ends with
	// an OrchestrationFailed after the ContinuedAsNew: it is terminal.
	poisoned := temp.continuedAsNew && failedAfterContinueAsNew(item.History)
	if temp.continuedAsNew && !poisoned && !reader.continueAsNew {
		// The continue-as-new window: the execution ended and its
		// successor's start is not visible yet (it is hidden behind another
		// runtime's backoff, or this fetch ran before it). What arrived
		// belongs to the successor, so it waits for it, with a counted
		// attempt: a start that never comes poisons the instance after
		// MaxAttempts instead of holding the inputs for ever (duroxide
		// main's race rules). Once poisoned (an OrchestrationFailed after
		// the ContinuedAsNew) the instance is terminal and later inputs are
		// drained below, not deferred and poisoned again
		// (can_abandon_failure.rs's assert_late_inputs_are_drained).
		delay := p.backoff.Delay(item.AttemptCount)
		p.logger.Info("inputs wait for the continue-as-new successor's start",
			"instance", instance, "execution_id", item.ExecutionID, "messages", len(item.Messages), "attempt_count", item.AttemptCount, "backoff", delay)
		return turnDecision{abandon: true, delay: delay, reason: "waiting for the continue-as-new successor"}
	}
	terminal := temp.completed || temp.failed || poisoned
	collisions := p.collisionNotices(instance, temp, reader.duplicates, terminal)
	if terminal {
		p.logger.Info("instance is terminal, acking batch without processing", "instance", instance, "messages", len(item.Messages))
		return turnDecision{ack: ackRequest{executionID: item.ExecutionID, orchestratorItems: collisions}, collisions: collisions}
	}

	executionID, h := item.ExecutionID, temp
	if reader.continueAsNew {
		executionID, h = item.ExecutionID+1, newHistoryManager(nil)
	}
	// External events that arrive with the start of an execution are
	// handed to its next turn: applied before the orchestration first ran,
	// they would find no wait subscribed and be dropped (an event raised in
	// a continue-as-new window, or with a start).
	var requeued []duroxide.WorkItem
	if h.isEmpty() {
		kept := reader.completions[:0:0]
		for _, m := range reader.completions {
			if _, ok := m.Kind.(duroxide.ExternalRaisedItem); ok {
				requeued = append(requeued, m)
				continue
			}
			kept = append(kept, m)
		}
		reader.completions = kept
	}

	var exec executionResult
	var kept *replayRun // the run to cache: the execution goes on
	var keptResume *stickyResume
	var resumedFrom *stickyEntry
	if reader.named {
		fn, resolved, ok := p.registry.resolveOrchestration(reader.name, reader.version)
		if !ok {
			delay := p.backoff.Delay(item.AttemptCount)
			p.logger.Warn("orchestration not registered, abandoning with backoff",
				"instance", instance, "orchestration_name", reader.name, "attempt_count", item.AttemptCount, "backoff", delay)
			if p.onUnregistered != nil {
				p.onUnregistered("orchestration", reader.name, instance)
			}
			d := turnDecision{abandon: true, delay: delay, reason: "unregistered orchestration " + reader.name}
			if len(item.History) == 0 {
				// A start that has not run: its status says why.
				d.pendingReason = fmt.Sprintf("orchestration %q is not registered on runtime %s, attempt %d", reader.name, p.runtimeID, item.AttemptCount)
			}
			return d
		}
		if h.isEmpty() {
			started := duroxide.OrchestrationStarted{
				Name: reader.name, Version: resolved.String(), Input: reader.input,
				ParentInstance: reader.parentInstance, ParentID: reader.parentID, ParentExecutionID: reader.parentExecutionID,
			}
			if can, ok := startKind(reader.start).(duroxide.ContinueAsNewItem); ok {
				if len(can.CarryForwardEvents) > 0 {
					started.CarryForwardEvents = can.CarryForwardEvents
				}
				started.InitialCustomStatus = can.InitialCustomStatus
			}
			h.delta = append(h.delta, duroxide.NewEvent(duroxide.InitialEventID, instance, executionID, nil, started))
		}
		var sticky *stickyResume
		if p.sticky != nil {
			sticky = p.takeSticky(instance, executionID, h.history, reader.name, resolved.String(), item.KVSnapshot)
		}
		exec, kept = runExecution(instance, executionID, h, reader, fn, resolved.String(), item.KVSnapshot, p.parentExec, p.logger, p.now, sticky)
		if kept != nil {
			resumedFrom = sticky.entry
			keptResume = sticky
		}
	} else if len(reader.completions) > 0 {
		p.logger.Warn("messages for an instance with no orchestration name; dropping them", "instance", instance)
	}

	metadata := computeMetadata(h.delta)
	if violation := limitViolation(h.delta, item.KVSnapshot); violation != "" {
		p.logger.Error("runtime limit exceeded, failing orchestration", "instance", instance, "violation", violation)
		limited := p.failForLimit(h, instance, executionID, violation)
		limited.cancelledActivities = exec.cancelledActivities
		exec = limited
		metadata = computeMetadata(h.delta)
	}
	if kept != nil {
		if metadata.Status != nil {
			kept.co.abort()
		} else if e := newStickyEntry(instance, executionID, *keptResume, kept, h.history, h.delta, resumedFrom); e != nil {
			p.sticky.put(e)
		} else {
			kept.co.abort()
		}
	}

	cancelled := exec.cancelledActivities
	if metadata.Status != nil {
		reason := map[string]string{
			duroxide.StatusCompleted:      "orchestration_terminal_completed",
			duroxide.StatusFailed:         "orchestration_terminal_failed",
			duroxide.StatusContinuedAsNew: "orchestration_terminal_continued_as_new",
		}[*metadata.Status]
		if reason != "" {
			inflight := h.inflightActivities(instance, executionID)
			for _, a := range inflight {
				h.appendNew(instance, executionID, duroxide.Uint64Ptr(a.ActivityID), duroxide.ActivityCancelRequested{Reason: reason})
			}
			cancelled = append(cancelled, inflight...)
		}
	}
	orchestratorItems := append(exec.orchestratorItems, collisions...)
	if len(h.delta) > 0 {
		orchestratorItems = append(orchestratorItems, requeued...)
	}
	return turnDecision{ack: ackRequest{
		executionID: executionID, historyDelta: h.delta,
		workerItems: exec.workerItems, orchestratorItems: orchestratorItems,
		metadata: metadata, cancelledActivities: dedupeActivities(cancelled),
	}, collisions: collisions, droppedEvents: exec.droppedEvents}
}

// takeSticky takes instance's suspended execution out of the sticky cache
// and returns it for the turn when it can be resumed: the same execution
// of the same orchestration version under the same registry, with a
// history exactly what it consumed and the same KV seed. Otherwise the
// entry is released and the turn replays in full (a miss, counted when
// the execution has history). The result also carries what the turn's own
// entry is keyed and checked by.
func (p *turnProcessor) takeSticky(instance string, executionID uint64, history []duroxide.Event, name, version string, kv map[string]duroxide.KvEntry) *stickyResume {
	s := &stickyResume{name: name, version: version, registryGen: p.registry.generation(), kvSeed: maps.Clone(kv)}
	e := p.sticky.take(instance)
	if e == nil {
		if len(history) > 0 {
			p.metrics.stickyMissed(stickyMissNotCached)
		}
		return s
	}
	if reason := e.missReason(history, executionID, name, version, s.registryGen, kv); reason != "" {
		e.release()
		if len(history) > 0 {
			p.metrics.stickyMissed(reason)
		}
		return s
	}
	p.metrics.stickyHit()
	s.entry, s.kvSeed = e, e.kvSeed
	return s
}

// decideVerified decides item as decideTurn does and, when the turn
// resumed a cached execution, decides it again by a full replay on a
// clock frozen for the turn and reports to p.verify whether the two
// decisions are the same, byte for byte in JSON; the full replay's
// decision is the one returned, and a resumed execution that disagreed is
// dropped from the cache.
func (p *turnProcessor) decideVerified(item *duroxide.OrchestrationItem) turnDecision {
	clock := p.now
	if clock == nil {
		clock = time.Now
	}
	frozen := clock()
	primary := *p
	primary.now = func() time.Time { return frozen }
	cached := p.sticky.has(item.Instance) // it may still not match: then two full replays are compared
	d := primary.decideTurn(item)
	if !cached {
		return d
	}
	shadow := primary
	shadow.sticky, shadow.verify = nil, nil
	full := shadow.decideTurn(item)
	a, errA := decisionJSON(d)
	b, errB := decisionJSON(full)
	var err error
	switch {
	case errA != nil || errB != nil:
		err = fmt.Errorf("runtime: sticky verification of %s: %w", item.Instance, errors.Join(errA, errB))
	case !bytes.Equal(a, b):
		err = fmt.Errorf("runtime: sticky verification of %s: the resumed turn decided\n%s\nthe full replay\n%s", item.Instance, a, b)
		p.sticky.discard(item.Instance, stickyEvictFailed)
	}
	p.verify(item.Instance, err)
	return full
}

// decisionJSON is the JSON of what a decision commits, for comparing two
// decisions: the events' timestamps are left out (zero), as the events a
// turn appends to the history manager (a new OrchestrationStarted, a
// terminal event) are stamped with the wall clock, not Options.Now.
func decisionJSON(d turnDecision) ([]byte, error) {
	delta := slices.Clone(d.ack.historyDelta)
	for i := range delta {
		delta[i].TimestampMs = 0
	}
	return json.Marshal(struct {
		Abandon             bool
		Delay               time.Duration
		Poison              bool
		ExecutionID         uint64
		HistoryDelta        []duroxide.Event
		WorkerItems         []duroxide.WorkItem
		OrchestratorItems   []duroxide.WorkItem
		Metadata            duroxide.ExecutionMetadata
		CancelledActivities []duroxide.ScheduledActivityIdentifier
	}{d.abandon, d.delay, d.poison, d.ack.executionID, delta, d.ack.workerItems, d.ack.orchestratorItems, d.ack.metadata, d.ack.cancelledActivities})
}

// collisionNotices answers the duplicate starts of a batch: a start from a
// parent orchestration's call, other than a redelivery of the very call
// that created the instance, fails that call with an error saying the
// instance already exists, so the parent does not wait for ever; a
// client's duplicate start is inert (duroxide main's race rules: a call is
// the same only when the parent instance, its event id and its execution
// are all known and equal).
func (p *turnProcessor) collisionNotices(instance string, h *historyManager, duplicates []duroxide.StartOrchestrationItem, terminal bool) []duroxide.WorkItem {
	var created *duroxide.OrchestrationStarted
	if h != nil {
		created = h.started
	}
	var out []duroxide.WorkItem
	for _, s := range duplicates {
		if s.ParentInstance == nil || s.ParentID == nil {
			continue
		}
		if created != nil && sameParentCall(created, s, terminal) {
			continue
		}
		d := duroxide.ApplicationError(duroxide.AppErrorOrchestrationFailed,
			fmt.Sprintf("sub-orchestration instance %q already exists", instance))
		execID := duroxide.InitialExecutionID
		if s.ParentExecutionID != nil {
			execID = *s.ParentExecutionID
		} else {
			execID = p.parentExec(*s.ParentInstance, *s.ParentID, instance)
		}
		p.logger.Warn("sub-orchestration start collides with an existing instance; failing the parent's call",
			"instance", instance, "parent_instance", *s.ParentInstance, "parent_id", *s.ParentID)
		out = append(out, duroxide.WorkItem{Kind: duroxide.SubOrchFailedItem{
			ParentInstance: *s.ParentInstance, ParentExecutionID: execID, ParentID: *s.ParentID, Details: d,
		}})
	}
	return out
}

// sameParentCall reports whether start s is a redelivery of the parent call
// recorded in created: same parent instance and event id, and the same
// parent execution when both sides know it. When one side does not (a
// message or history older than duroxide 0.1.30), a running instance
// cannot prove the call is the same and notifies the parent
// (live_collision_ignores_only_the_same_known_parent_call), while a
// terminal one takes it for the redelivery of its own start and does not
// (redelivered_child_start_does_not_fail_parent, duroxide main's
// tests/scenarios/suborch_id_collision.rs).
func sameParentCall(created *duroxide.OrchestrationStarted, s duroxide.StartOrchestrationItem, terminal bool) bool {
	if created.ParentInstance == nil || *created.ParentInstance != *s.ParentInstance ||
		created.ParentID == nil || *created.ParentID != *s.ParentID {
		return false
	}
	if created.ParentExecutionID != nil && s.ParentExecutionID != nil {
		return *created.ParentExecutionID == *s.ParentExecutionID
	}
	return terminal
}

// failForLimit fails the turn because a runtime limit was exceeded
// (duroxide's fail_orchestration_for_limit): the work the turn scheduled is
// dropped and OrchestrationFailed ends the history. Unlike duroxide, a
// terminal event already in the delta is replaced rather than followed, and
// a parent is still notified, so it does not wait forever.
func (p *turnProcessor) failForLimit(h *historyManager, instance string, executionID uint64, message string) executionResult {
	if n := len(h.delta); n > 0 && h.delta[n-1].IsTerminal() {
		h.delta = h.delta[:n-1]
	}
	d := duroxide.ApplicationError(duroxide.AppErrorOrchestrationFailed, message)
	h.appendNew(instance, executionID, nil, duroxide.OrchestrationFailed{Details: d})
	var res executionResult
	if link, ok := h.parentLink(); ok {
		res.orchestratorItems = []duroxide.WorkItem{{Kind: duroxide.SubOrchFailedItem{
			ParentInstance: link.instance, ParentExecutionID: link.resolveExecution(p.parentExec, instance), ParentID: link.id, Details: d,
		}}}
	}
	return res
}

// poison fails an item fetched more than maxAttempts times (duroxide's
// fail_orchestration_as_poison).
func (p *turnProcessor) poison(item *duroxide.OrchestrationItem) turnDecision {
	if item.HistoryError != nil {
		d := duroxide.ErrorDetails{Poison: &duroxide.PoisonDetails{
			AttemptCount: item.AttemptCount, MaxAttempts: p.maxAttempts,
			MessageType: duroxide.PoisonMessageType{FailedDeserialization: &duroxide.PoisonFailedDeserialization{
				Instance: item.Instance, ExecutionID: item.ExecutionID, Error: *item.HistoryError,
			}},
			Message: *item.HistoryError,
		}}
		ev := duroxide.NewEvent(poisonHistorySentinelEventID, item.Instance, item.ExecutionID, nil, duroxide.OrchestrationFailed{Details: d})
		return turnDecision{poison: true, ack: ackRequest{
			executionID: item.ExecutionID, historyDelta: []duroxide.Event{ev},
			metadata: duroxide.ExecutionMetadata{
				Status: duroxide.StringPtr(duroxide.StatusFailed), Output: duroxide.StringPtr(d.DisplayMessage()),
				OrchestrationName: duroxide.StringPtr(item.OrchestrationName), OrchestrationVersion: duroxide.StringPtr(item.Version),
			},
		}}
	}
	messages, err := json.Marshal(item.Messages)
	if err != nil {
		messages = []byte(fmt.Sprintf("%d messages (not serializable: %v)", len(item.Messages), err))
	}
	d := duroxide.ErrorDetails{Poison: &duroxide.PoisonDetails{
		AttemptCount: item.AttemptCount, MaxAttempts: p.maxAttempts,
		MessageType: duroxide.PoisonMessageType{Orchestration: &duroxide.PoisonOrchestration{Instance: item.Instance, ExecutionID: item.ExecutionID}},
		Message:     withNote(p.unregisteredOrchestration(item), string(messages)),
	}}
	h := newHistoryManager(item.History)
	if h.isEmpty() {
		started := duroxide.OrchestrationStarted{Name: item.OrchestrationName, Version: item.Version}
		for _, m := range item.Messages {
			if s, ok := m.Kind.(duroxide.StartOrchestrationItem); ok {
				started.Name, started.Input = s.Orchestration, s.Input
				started.ParentInstance, started.ParentID, started.ParentExecutionID = s.ParentInstance, s.ParentID, s.ParentExecutionID
				break
			}
			if c, ok := m.Kind.(duroxide.ContinueAsNewItem); ok {
				started.Name, started.Input, started.CarryForwardEvents = c.Orchestration, c.Input, c.CarryForwardEvents
				started.ParentInstance, started.ParentID, started.ParentExecutionID = c.ParentInstance, c.ParentID, c.ParentExecutionID
				break
			}
		}
		h.delta = append(h.delta, duroxide.NewEvent(duroxide.InitialEventID, item.Instance, item.ExecutionID, nil, started))
	}
	h.appendNew(item.Instance, item.ExecutionID, nil, duroxide.OrchestrationFailed{Details: d})
	md := duroxide.ExecutionMetadata{
		Status: duroxide.StringPtr(duroxide.StatusFailed), Output: duroxide.StringPtr(failureMessage(d)),
		OrchestrationName: duroxide.StringPtr(item.OrchestrationName), OrchestrationVersion: duroxide.StringPtr(item.Version),
	}
	var orch []duroxide.WorkItem
	if link, ok := h.parentLink(); ok {
		md.ParentInstanceID = duroxide.StringPtr(link.instance)
		orch = append(orch, duroxide.WorkItem{Kind: duroxide.SubOrchFailedItem{
			ParentInstance: link.instance, ParentExecutionID: link.resolveExecution(p.parentExec, item.Instance), ParentID: link.id, Details: d,
		}})
	}
	return turnDecision{poison: true, ack: ackRequest{executionID: item.ExecutionID, historyDelta: h.delta, orchestratorItems: orch, metadata: md}}
}

// pinnedVersion returns the duroxide version that wrote the execution's
// OrchestrationStarted.
func pinnedVersion(history []duroxide.Event) (duroxide.Version, bool) {
	for _, ev := range history {
		if _, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			v, err := duroxide.ParseVersion(ev.DuroxideVersion)
			return v, err == nil
		}
	}
	return duroxide.Version{}, false
}

// invalidStamp returns the duroxide_version of the execution's
// OrchestrationStarted when it is not a semver (empty, or garbage written
// by another tool).
func invalidStamp(history []duroxide.Event) (string, bool) {
	for _, ev := range history {
		if _, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			_, err := duroxide.ParseVersion(ev.DuroxideVersion)
			return ev.DuroxideVersion, err != nil
		}
	}
	return "", false
}

// computeMetadata derives the ack metadata from the turn's events
// (duroxide's compute_execution_metadata): name, version, parent and pinned
// version from a new OrchestrationStarted, status and output from a
// terminal event.
func computeMetadata(delta []duroxide.Event) duroxide.ExecutionMetadata {
	var md duroxide.ExecutionMetadata
	for _, ev := range delta {
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationStarted:
			md.OrchestrationName = duroxide.StringPtr(k.Name)
			md.OrchestrationVersion = duroxide.StringPtr(k.Version)
			md.ParentInstanceID = k.ParentInstance
			if v, err := duroxide.ParseVersion(ev.DuroxideVersion); err == nil {
				md.PinnedDuroxideVersion = &v
			}
		case duroxide.OrchestrationCompleted:
			md.Status, md.Output = duroxide.StringPtr(duroxide.StatusCompleted), duroxide.StringPtr(k.Output)
			return md
		case duroxide.OrchestrationFailed:
			md.Status, md.Output = duroxide.StringPtr(duroxide.StatusFailed), duroxide.StringPtr(k.Details.DisplayMessage())
			return md
		case duroxide.OrchestrationContinuedAsNew:
			md.Status, md.Output = duroxide.StringPtr(duroxide.StatusContinuedAsNew), duroxide.StringPtr(k.Input)
			return md
		}
	}
	return md
}

// limitViolation checks the turn against duroxide's runtime limits (custom
// status size, tag size, KV value size, KV key count) and returns the
// failure message of the first one exceeded, or "".
func limitViolation(delta []duroxide.Event, kv map[string]duroxide.KvEntry) string {
	for i := len(delta) - 1; i >= 0; i-- {
		if k, ok := delta[i].Kind.(duroxide.CustomStatusUpdated); ok && k.Status != nil {
			if n := len(*k.Status); n > duroxide.MaxCustomStatusBytes {
				return fmt.Sprintf("Custom status size (%d bytes) exceeds limit (%d bytes)", n, duroxide.MaxCustomStatusBytes)
			}
			break
		}
	}
	for _, ev := range delta {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Tag != nil && len(*k.Tag) > duroxide.MaxTagNameBytes {
			return fmt.Sprintf("Activity '%s' tag size (%d bytes) exceeds limit (%d bytes)", k.Name, len(*k.Tag), duroxide.MaxTagNameBytes)
		}
	}
	for _, ev := range delta {
		if k, ok := ev.Kind.(duroxide.KeyValueSet); ok && len(k.Value) > duroxide.MaxKVValueBytes {
			return fmt.Sprintf("KV value for key '%s' (%d bytes) exceeds limit (%d bytes)", k.Key, len(k.Value), duroxide.MaxKVValueBytes)
		}
	}
	keys := map[string]bool{}
	for k := range kv {
		keys[k] = true
	}
	for _, ev := range delta {
		switch k := ev.Kind.(type) {
		case duroxide.KeyValueSet:
			keys[k.Key] = true
		case duroxide.KeyValueCleared:
			delete(keys, k.Key)
		case duroxide.KeyValuesCleared:
			clear(keys)
		}
	}
	if len(keys) > duroxide.MaxKVKeys {
		return fmt.Sprintf("KV key count (%d) exceeds limit (%d)", len(keys), duroxide.MaxKVKeys)
	}
	return ""
}

func dedupeActivities(in []duroxide.ScheduledActivityIdentifier) []duroxide.ScheduledActivityIdentifier {
	seen := map[duroxide.ScheduledActivityIdentifier]bool{}
	out := in[:0:0]
	for _, a := range in {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
