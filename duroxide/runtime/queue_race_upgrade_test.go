package runtime

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The Go form of duroxide main's tests/queue_race_upgrade.rs: executions
// whose OrchestrationStarted is stamped older than 0.1.31 keep the legacy
// race cancellation of the engine that recorded them, executions stamped
// 0.1.31 or newer cancel dropped queue and positional waits at once.
//
// The fixtures in testdata/queue_race_old_engine.json are this port's own:
// the recorder below ran the scenarios against the Go engine as it was on
// main before the stamp-dependent policy (the legacy one), stamping every
// execution "0.1.30". Re-record only to add scenarios, never to accept a
// changed replay:
//
//	go test -run TestRecordOldEngineQueueHistories ./duroxide/runtime/ -args -record-queue-race
//
// Compared with upstream's own 0.1.30 recordings, this engine's legacy
// decisions are the same (the prebound and unbound canaries, the positional
// hang, the positional replay that fails in the next turn) except at
// continue-as-new: this engine records the dropped waits' cancellations
// there and carries what they never read (continue-drop carries "a",
// continue-drain "b"); 0.1.30 records none and carries nothing.
//
// Upstream also runs each race scenario with a lazily created dequeue
// (`async { ctx.dequeue_event("q").await }`); Go has no lazy futures (a
// Future's action is emitted when it is created), so those variants have
// no Go counterpart and the scenarios run once.

var recordQueueRace = flag.Bool("record-queue-race", false, "re-record testdata/queue_race_old_engine.json with the engine as it is (legacy stamps)")

const queueRaceFixture = "testdata/queue_race_old_engine.json"

// queueRaceMode is one orchestration shape of the upgrade tests (upstream's
// Mode).
type queueRaceMode string

const (
	modeOrdinary            queueRaceMode = "Ordinary"
	modeLoop                queueRaceMode = "Loop"
	modeDrain               queueRaceMode = "Drain"
	modeBarrier             queueRaceMode = "Barrier"
	modePreboundCompetition queueRaceMode = "PreboundCompetition"
	modeUnbound             queueRaceMode = "Unbound"
	modePositionalBarrier   queueRaceMode = "PositionalBarrier"
	modePositionalBlocking  queueRaceMode = "PositionalBlocking"
	modeResolveAtCreation   queueRaceMode = "ResolveAtCreation"
	modeContinueDrop        queueRaceMode = "ContinueDrop"
	modeContinueDrain       queueRaceMode = "ContinueDrain"
)

// queueRaceHandler is the orchestration of mode.
func queueRaceHandler(mode queueRaceMode) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		var value string
		switch mode {
		case modePositionalBarrier, modePositionalBlocking:
			w, _, _ := ctx.Select(ctx.ScheduleWait("s"), ctx.ScheduleTimer(10*time.Millisecond))
			if w == 1 && mode == modePositionalBarrier {
				if _, err := ctx.ScheduleActivity("tick", "").Get(); err != nil {
					return "", err
				}
			}
			value, _ = ctx.ScheduleWait("s").Get()
		case modeResolveAtCreation:
			wait := ctx.ScheduleWait("s")
			if _, err := ctx.ScheduleActivity("work", "").Get(); err != nil {
				return "", err
			}
			wait.Cancel()
			if _, err := ctx.ScheduleActivity("work2", "").Get(); err != nil {
				return "", err
			}
			value, _ = ctx.ScheduleWait("s").Get()
		case modeContinueDrop, modeContinueDrain:
			_, _, _ = ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(10*time.Millisecond))
			if mode == modeContinueDrain {
				_, _ = ctx.DequeueEvent("q").Get()
			}
			return "", ctx.ContinueAsNew("successor")
		case modeOrdinary:
			result, err := ctx.ScheduleActivity("ordinary", "input").Get()
			if err != nil {
				return "", err
			}
			_, _ = ctx.ScheduleTimer(20 * time.Millisecond).Get()
			first, _ := ctx.DequeueEvent("q").Get()
			second, _ := ctx.DequeueEvent("other").Get()
			return result + ":" + first + ":" + second, nil
		case modePreboundCompetition:
			first, second := ctx.DequeueEvent("q"), ctx.DequeueEvent("q")
			firstTimer, secondTimer := ctx.ScheduleTimer(20*time.Millisecond), ctx.ScheduleTimer(30*time.Millisecond)
			_, _, _ = ctx.Select(first, firstTimer)
			if w, v, _ := ctx.Select(second, secondTimer); w == 0 {
				value = v
			} else {
				value = "second-timeout"
			}
		case modeUnbound:
			ctx.DequeueEvent("q").Cancel()
			value, _ = ctx.DequeueEvent("q").Get()
		case modeLoop, modeDrain, modeBarrier:
			var messages []string
			timers := 0
			for len(messages) < 2 {
				w, v, _ := ctx.Select(ctx.DequeueEvent("q"), ctx.ScheduleTimer(20*time.Millisecond))
				if w == 0 {
					messages = append(messages, v)
					continue
				}
				timers++
				if mode == modeBarrier {
					if _, err := ctx.ScheduleActivity("barrier", "").Get(); err != nil {
						return "", err
					}
				}
				if mode == modeDrain || mode == modeBarrier {
					m, _ := ctx.DequeueEvent("q").Get()
					messages = append(messages, m)
				}
			}
			value = fmt.Sprintf("%d:%s", timers, strings.Join(messages, ","))
		default:
			return "", fmt.Errorf("unknown mode %q", mode)
		}
		if _, err := ctx.ScheduleActivity("checkpoint", value).Get(); err != nil {
			return "", err
		}
		return value, nil
	}
}

// raceOutcome is a turn's result as the fixtures keep it (upstream's
// Outcome).
type raceOutcome struct {
	Kind  string `json:"kind"` // Continue, Completed, Failed, ContinueAsNew
	Value string `json:"value,omitempty"`
}

func outcomeOf(t *testing.T, r turnResult) raceOutcome {
	t.Helper()
	switch r.kind {
	case turnContinue:
		return raceOutcome{Kind: "Continue"}
	case turnCompleted:
		return raceOutcome{Kind: "Completed", Value: r.output}
	case turnFailed:
		return raceOutcome{Kind: "Failed", Value: r.details.DisplayMessage()}
	case turnContinueAsNew:
		return raceOutcome{Kind: "ContinueAsNew", Value: r.input}
	}
	t.Fatalf("unexpected turn result %s", describeTurn(r))
	return raceOutcome{}
}

// actionShapes describes the engine's pending actions (upstream's
// action_shapes).
func actionShapes(t *testing.T, actions []action) []string {
	t.Helper()
	out := []string{}
	for _, a := range actions {
		id := a.schedulingEventID
		switch a.kind {
		case actCallActivity:
			out = append(out, fmt.Sprintf("%d:activity:%s:%s", id, a.name, a.input))
		case actCreateTimer:
			out = append(out, fmt.Sprintf("%d:timer", id))
		case actDequeueEvent:
			out = append(out, fmt.Sprintf("%d:queue:%s", id, a.name))
		case actWaitExternal:
			out = append(out, fmt.Sprintf("%d:signal:%s", id, a.name))
		case actContinueAsNew:
			version := "None"
			if a.version != nil {
				version = *a.version
			}
			out = append(out, fmt.Sprintf("continue:%s:%s", a.input, version))
		default:
			t.Fatalf("unexpected action %s", a)
		}
	}
	return out
}

// raceSnapshot is one recorded turn: the history after it and what the
// recording engine decided live and on a replay of that history.
type raceSnapshot struct {
	Name              string           `json:"name"`
	Mode              queueRaceMode    `json:"mode"`
	History           []duroxide.Event `json:"history"`
	OldLiveOutcome    raceOutcome      `json:"old_live_outcome"`
	OldLiveActions    []string         `json:"old_live_actions"`
	OldReplayOutcome  raceOutcome      `json:"old_replay_outcome"`
	OldReplayActions  []string         `json:"old_replay_actions"`
	OldLiveQueueCarry []string         `json:"old_live_queue_carry,omitempty"`
}

// raceFixtures is the fixture file.
type raceFixtures struct {
	// RecordedFrom names the engine that recorded the snapshots.
	RecordedFrom string         `json:"recorded_from"`
	Snapshots    []raceSnapshot `json:"snapshots"`
}

// completionKind is one message of a recorded batch (upstream's
// Completion).
type completionSpec struct {
	kind  string // message, timer, activity, signal
	name  string
	data  string
	index int
}

func qMsg(name, data string) completionSpec {
	return completionSpec{kind: "message", name: name, data: data}
}
func qTimer(i int) completionSpec        { return completionSpec{kind: "timer", index: i} }
func qActivity(i int) completionSpec     { return completionSpec{kind: "activity", index: i} }
func qSignal(data string) completionSpec { return completionSpec{kind: "signal", data: data} }

// raceMessages turns a batch into work items against history: a timer or
// activity completion answers the index-th schedule of its kind.
func raceMessages(t *testing.T, history []duroxide.Event, batch []completionSpec) []duroxide.WorkItem {
	t.Helper()
	nth := func(want duroxide.EventType, i int) duroxide.Event {
		for _, ev := range history {
			if ev.Type() == want {
				if i == 0 {
					return ev
				}
				i--
			}
		}
		t.Fatalf("history has no %s number %d", want, i)
		return duroxide.Event{}
	}
	var out []duroxide.WorkItem
	for _, c := range batch {
		switch c.kind {
		case "message":
			out = append(out, msg(duroxide.QueueMessageItem{Instance: testInstance, Name: c.name, Data: c.data}))
		case "signal":
			out = append(out, msg(duroxide.ExternalRaisedItem{Instance: testInstance, Name: "s", Data: c.data}))
		case "timer":
			ev := nth(duroxide.EventTypeTimerCreated, c.index)
			out = append(out, msg(duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: ev.EventID, FireAtMs: ev.Kind.(duroxide.TimerCreated).FireAtMs}))
		case "activity":
			out = append(out, actDoneMsg(nth(duroxide.EventTypeActivityScheduled, c.index).EventID, "ok"))
		}
	}
	return out
}

// stampedStart is the first event of a test execution, stamped version.
func stampedStart(version string) duroxide.Event {
	ev := startedEv(1)
	ev.DuroxideVersion = version
	return ev
}

// runRaceTurn runs one turn of mode over history with the batch's messages.
func runRaceTurn(t *testing.T, mode queueRaceMode, history []duroxide.Event, batch []duroxide.WorkItem) (*replayEngine, turnResult) {
	t.Helper()
	e := engineFor(slices.Clone(history)...)
	e.prepCompletions(batch)
	return e, run(e, queueRaceHandler(mode))
}

// recordRace runs the batches turn after turn from a start stamped
// "0.1.30" and snapshots each turn (upstream's record).
func recordRace(t *testing.T, name string, mode queueRaceMode, batches ...[]completionSpec) []raceSnapshot {
	t.Helper()
	history := []duroxide.Event{stampedStart("0.1.30")}
	var out []raceSnapshot
	for i, batch := range batches {
		live, res := runRaceTurn(t, mode, history, raceMessages(t, history, batch))
		history = append(history, live.historyDelta...)
		replay, replayRes := runRaceTurn(t, mode, history, nil)
		out = append(out, raceSnapshot{
			Name: fmt.Sprintf("%s/turn-%d", name, i), Mode: mode, History: slices.Clone(history),
			OldLiveOutcome: outcomeOf(t, res), OldLiveActions: actionShapes(t, live.pendingActions),
			OldReplayOutcome: outcomeOf(t, replayRes), OldReplayActions: actionShapes(t, replay.pendingActions),
			OldLiveQueueCarry: carryShapes(res, history),
		})
	}
	return out
}

// recordAllRaces records every scenario of upstream's recorder (without
// its lazy variants).
func recordAllRaces(t *testing.T) []raceSnapshot {
	var s []raceSnapshot
	s = append(s, recordRace(t, "ordinary", modeOrdinary,
		nil, []completionSpec{qActivity(0)}, []completionSpec{qTimer(0)},
		[]completionSpec{qMsg("q", "first")}, []completionSpec{qMsg("other", "second")})...)
	for _, mode := range []queueRaceMode{modeLoop, modeDrain} {
		s = append(s, recordRace(t, "message-first-"+string(mode), mode,
			nil, []completionSpec{qMsg("q", "first"), qTimer(0)},
			[]completionSpec{qMsg("q", "second")}, []completionSpec{qActivity(0)})...)
		s = append(s, recordRace(t, "adjacent-turn-"+string(mode), mode,
			nil, []completionSpec{qTimer(0)}, []completionSpec{qMsg("q", "first")},
			[]completionSpec{qMsg("q", "second")}, []completionSpec{qActivity(0)})...)
	}
	s = append(s, recordRace(t, "timer-first-barrier", modeBarrier,
		nil, []completionSpec{qTimer(0), qMsg("q", "first")}, []completionSpec{qActivity(0)},
		[]completionSpec{qMsg("q", "second")}, []completionSpec{qActivity(1)})...)
	s = append(s, recordRace(t, "prebound-queue-versus-second-timer", modePreboundCompetition,
		nil, []completionSpec{qTimer(0), qMsg("q", "first"), qTimer(1)}, []completionSpec{qActivity(0)})...)
	s = append(s, recordRace(t, "unbound-prearrival", modeUnbound,
		[]completionSpec{qMsg("q", "first")}, []completionSpec{qMsg("q", "second")}, []completionSpec{qActivity(0)})...)
	s = append(s, recordRace(t, "positional-barrier", modePositionalBarrier,
		nil, []completionSpec{qTimer(0), qSignal("a")}, []completionSpec{qActivity(0)})...)
	s = append(s, recordRace(t, "positional-blocking", modePositionalBlocking,
		nil, []completionSpec{qTimer(0), qSignal("a")}, []completionSpec{qSignal("b")})...)
	s = append(s, recordRace(t, "positional-resolve-at-creation", modeResolveAtCreation,
		nil, []completionSpec{qSignal("a"), qActivity(0)}, []completionSpec{qActivity(1)})...)
	s = append(s, recordRace(t, "continue-drop", modeContinueDrop,
		nil, []completionSpec{qTimer(0), qMsg("q", "a")})...)
	s = append(s, recordRace(t, "continue-drain", modeContinueDrain,
		nil, []completionSpec{qTimer(0), qMsg("q", "a"), qMsg("q", "b")})...)
	return s
}

// carryShapes lists, for a turn that continued as new, the queue messages
// the execution carries to its successor ("name=data"); nil otherwise.
func carryShapes(res turnResult, history []duroxide.Event) []string {
	if res.kind != turnContinueAsNew {
		return nil
	}
	out := []string{}
	for _, nd := range unmatchedQueueMessages(history) {
		out = append(out, nd.Name+"="+nd.Data)
	}
	return out
}

func readRaceFixtures(t *testing.T) raceFixtures {
	t.Helper()
	data, err := os.ReadFile(queueRaceFixture)
	if err != nil {
		t.Fatalf("read fixtures: %v", err)
	}
	var f raceFixtures
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decode fixtures: %v", err)
	}
	return f
}

// TestRecordOldEngineQueueHistories writes the fixtures; it runs only with
// -record-queue-race.
func TestRecordOldEngineQueueHistories(t *testing.T) {
	if !*recordQueueRace {
		t.Skip("fixture recorder: run with -args -record-queue-race to rewrite " + queueRaceFixture)
	}
	f := raceFixtures{
		RecordedFrom: os.Getenv("QUEUE_RACE_RECORDED_FROM"),
		Snapshots:    recordAllRaces(t),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(queueRaceFixture), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(queueRaceFixture, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d snapshots to %s", len(f.Snapshots), queueRaceFixture)
}

// decisionDelta normalises events for comparison (upstream's
// decision_delta): timestamps, version stamps and timer fire times are
// left out, and within a run of adjacent dropped-future cancellations of
// one type, which the engine may record in any order, the events are
// sorted by source event id while the ids stay in place.
func decisionDelta(t *testing.T, events []duroxide.Event) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(events))
	for i, ev := range events {
		data, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "timestamp_ms")
		delete(m, "duroxide_version")
		delete(m, "fire_at_ms")
		out[i] = m
	}
	independent := func(m map[string]any) bool {
		switch m["type"] {
		case string(duroxide.EventTypeQueueSubscriptionCancelled), string(duroxide.EventTypeExternalSubscribedCancelled),
			string(duroxide.EventTypeActivityCancelRequested), string(duroxide.EventTypeSubOrchestrationCancelRequested):
			return m["reason"] == reasonDroppedFuture
		}
		return false
	}
	for i := 0; i < len(out); {
		if !independent(out[i]) {
			i++
			continue
		}
		start := i
		for i < len(out) && independent(out[i]) && out[i]["type"] == out[start]["type"] {
			i++
		}
		block := out[start:i]
		ids := make([]any, len(block))
		for j, m := range block {
			ids[j] = m["event_id"]
		}
		slices.SortStableFunc(block, func(a, b map[string]any) int {
			return cmp.Compare(a["source_event_id"].(float64), b["source_event_id"].(float64))
		})
		for j, m := range block {
			m["event_id"] = ids[j]
		}
	}
	return out
}

func sameDecisions(t *testing.T, a, b []duroxide.Event) bool {
	t.Helper()
	x, _ := json.Marshal(decisionDelta(t, a))
	y, _ := json.Marshal(decisionDelta(t, b))
	return bytes.Equal(x, y)
}

func findSnapshot(t *testing.T, f raceFixtures, name string) raceSnapshot {
	t.Helper()
	for _, s := range f.Snapshots {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no snapshot %q", name)
	return raceSnapshot{}
}

// TestLegacyIndependentCancellationPermutationsReplayIdentically is
// duroxide's legacy_independent_cancellation_permutations_replay_identically:
// the two dropped-future cancellations a legacy turn recorded side by side
// may appear in either order, and both orders replay as recorded, while a
// changed source, reason, duplicate source or position is a different
// decision.
func TestLegacyIndependentCancellationPermutationsReplayIdentically(t *testing.T) {
	t.Parallel()
	snapshot := findSnapshot(t, readRaceFixtures(t), "prebound-queue-versus-second-timer/turn-1")
	var idx []int
	for i, ev := range snapshot.History {
		if k, ok := ev.Kind.(duroxide.QueueSubscriptionCancelled); ok && k.Reason == reasonDroppedFuture {
			idx = append(idx, i)
		}
	}
	if len(idx) != 2 || idx[1] != idx[0]+1 {
		t.Fatalf("want two adjacent dropped-future queue cancellations, found them at %v", idx)
	}
	a, b := idx[0], idx[1]
	reversed := slices.Clone(snapshot.History)
	reversed[a], reversed[b] = reversed[b], reversed[a]
	reversed[a].EventID, reversed[b].EventID = snapshot.History[a].EventID, snapshot.History[b].EventID
	if !sameDecisions(t, snapshot.History, reversed) {
		t.Fatal("swapping independent cancellations changed the decision delta")
	}
	for _, history := range [][]duroxide.Event{snapshot.History, reversed} {
		e, res := runRaceTurn(t, snapshot.Mode, history, nil)
		if got := outcomeOf(t, res); got != snapshot.OldReplayOutcome {
			t.Fatalf("replay outcome %+v, recorded %+v", got, snapshot.OldReplayOutcome)
		}
		if len(e.historyDelta) != 0 {
			t.Fatalf("replay recorded new events %v", deltaTypes(e))
		}
		if got := actionShapes(t, e.pendingActions); !slices.Equal(got, snapshot.OldReplayActions) {
			t.Fatalf("replay actions %v, recorded %v", got, snapshot.OldReplayActions)
		}
	}

	// A different cancellation is not a harmless permutation.
	changed := func(edit func(h []duroxide.Event)) []duroxide.Event {
		h := slices.Clone(snapshot.History)
		edit(h)
		return h
	}
	for name, h := range map[string][]duroxide.Event{
		"other source": changed(func(h []duroxide.Event) { h[a].SourceEventID = duroxide.Uint64Ptr(999) }),
		"other reason": changed(func(h []duroxide.Event) {
			h[a].Kind = duroxide.QueueSubscriptionCancelled{Reason: "continued_as_new"}
		}),
		"same source twice": changed(func(h []duroxide.Event) { h[b].SourceEventID = h[a].SourceEventID }),
		"moved":             changed(func(h []duroxide.Event) { h[a], h[a-1] = h[a-1], h[a] }),
	} {
		if sameDecisions(t, snapshot.History, h) {
			t.Errorf("%s: the decision delta did not change", name)
		}
	}
}

// TestOldEngineRecordedQueueHistoriesReplayIdentically is duroxide's
// old_engine_recorded_queue_histories_replay_identically: every history
// the legacy engine recorded (stamped 0.1.30) replays with the outcome and
// actions that engine's replay had, and records nothing new.
func TestOldEngineRecordedQueueHistoriesReplayIdentically(t *testing.T) {
	t.Parallel()
	f := readRaceFixtures(t)
	if len(f.Snapshots) != 47 {
		t.Fatalf("want 47 recorded turns, the fixtures hold %d", len(f.Snapshots))
	}
	var mismatches []string
	for _, s := range f.Snapshots {
		for _, ev := range s.History {
			if ev.DuroxideVersion != "0.1.30" {
				t.Fatalf("%s: event %d is stamped %q, not 0.1.30", s.Name, ev.EventID, ev.DuroxideVersion)
			}
		}
		e, res := runRaceTurn(t, s.Mode, s.History, nil)
		if len(e.historyDelta) != 0 {
			t.Errorf("%s: replay recorded new events %v", s.Name, deltaTypes(e))
		}
		got, actions := outcomeOf(t, res), actionShapes(t, e.pendingActions)
		if got != s.OldReplayOutcome || !slices.Equal(actions, s.OldReplayActions) {
			mismatches = append(mismatches, fmt.Sprintf("%s: old=%+v/%v, new=%+v/%v", s.Name, s.OldReplayOutcome, s.OldReplayActions, got, actions))
		}
	}
	if len(mismatches) > 0 {
		t.Fatalf("old history replay changed:\n%s", strings.Join(mismatches, "\n"))
	}
}

// TestOldEngineExecutionsResumeIdenticallyAfterUpgrade is duroxide's
// old_engine_executions_resume_identically_after_upgrade: each recorded
// turn, run again from the history before it with the messages it
// received, decides what the legacy engine decided live (outcome, actions,
// events and, at continue-as-new, the queue messages carried).
func TestOldEngineExecutionsResumeIdenticallyAfterUpgrade(t *testing.T) {
	t.Parallel()
	f := readRaceFixtures(t)
	compared := 0
	for i := 1; i < len(f.Snapshots); i++ {
		before, after := f.Snapshots[i-1], f.Snapshots[i]
		scenario := func(s raceSnapshot) string { return s.Name[:strings.LastIndex(s.Name, "/")] }
		if scenario(before) != scenario(after) {
			continue
		}
		n := len(before.History)
		if !sameDecisions(t, after.History[:n], before.History) {
			t.Fatalf("%s does not extend %s", after.Name, before.Name)
		}
		var batch []duroxide.WorkItem
		for _, ev := range after.History[n:] {
			switch k := ev.Kind.(type) {
			case duroxide.QueueEventDelivered:
				batch = append(batch, msg(duroxide.QueueMessageItem{Instance: testInstance, Name: k.Name, Data: k.Data}))
			case duroxide.ExternalEvent:
				batch = append(batch, msg(duroxide.ExternalRaisedItem{Instance: testInstance, Name: k.Name, Data: k.Data}))
			case duroxide.TimerFired:
				batch = append(batch, msg(duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: 1, ID: *ev.SourceEventID, FireAtMs: k.FireAtMs}))
			case duroxide.ActivityCompleted:
				batch = append(batch, actDoneMsg(*ev.SourceEventID, k.Result))
			}
		}
		e, res := runRaceTurn(t, before.Mode, before.History, batch)
		if got := outcomeOf(t, res); got != after.OldLiveOutcome {
			t.Errorf("resuming %s: outcome %+v, the old engine decided %+v", before.Name, got, after.OldLiveOutcome)
		}
		if got := actionShapes(t, e.pendingActions); !slices.Equal(got, after.OldLiveActions) {
			t.Errorf("new decisions after %s: %v, the old engine decided %v", before.Name, got, after.OldLiveActions)
		}
		if !sameDecisions(t, e.historyDelta, after.History[n:]) {
			t.Errorf("history delta after %s differs from the old engine's", before.Name)
		}
		if got := carryShapes(res, append(slices.Clone(before.History), e.historyDelta...)); !slices.Equal(got, after.OldLiveQueueCarry) {
			t.Errorf("carry-forward after %s: %v, the old engine carried %v", before.Name, got, after.OldLiveQueueCarry)
		}
		if res.exactCarry {
			t.Errorf("resuming %s used the 0.1.31 carry-forward", before.Name)
		}
		compared++
	}
	if compared != 34 {
		t.Fatalf("compared %d turns, want 34", compared)
	}
}

// TestNewEngineExecutionsUseImmediateQueueCancellation is duroxide's
// new_engine_executions_use_immediate_queue_cancellation: in an execution
// stamped 0.1.31 the first queue wait, dropped when its timer wins, stops
// matching at once, so the message that arrives next goes to the second
// wait (the legacy engine lost it and timed out, see the fixtures), and
// the history that decision leaves replays to the same end.
func TestNewEngineExecutionsUseImmediateQueueCancellation(t *testing.T) {
	t.Parallel()
	history := []duroxide.Event{stampedStart("0.1.31")}
	first, res := runRaceTurn(t, modePreboundCompetition, history, nil)
	wantContinue(t, res)
	history = append(history, first.historyDelta...)

	second, res := runRaceTurn(t, modePreboundCompetition, history,
		raceMessages(t, history, []completionSpec{qTimer(0), qMsg("q", "first"), qTimer(1)}))
	wantContinue(t, res)
	if got := actionShapes(t, second.pendingActions); !slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, ":checkpoint:first") }) {
		t.Fatalf("actions %v: the second queue wait did not get the message", got)
	}
	history = append(history, second.historyDelta...)

	replay, res := runRaceTurn(t, modePreboundCompetition, history, nil)
	wantContinue(t, res)
	if len(replay.pendingActions) != 0 || len(replay.historyDelta) != 0 {
		t.Fatalf("replay decided again: actions %v, events %v", actionShapes(t, replay.pendingActions), deltaTypes(replay))
	}
	_, res = runRaceTurn(t, modePreboundCompetition, history, raceMessages(t, history, []completionSpec{qActivity(0)}))
	wantCompleted(t, res, "first")
}

// runRaceScenario runs the batches turn after turn from a start stamped
// version and returns the last turn's engine and result and the history.
func runRaceScenario(t *testing.T, version string, mode queueRaceMode, batches ...[]completionSpec) (*replayEngine, turnResult, []duroxide.Event) {
	t.Helper()
	history := []duroxide.Event{stampedStart(version)}
	var (
		e   *replayEngine
		res turnResult
	)
	for _, batch := range batches {
		e, res = runRaceTurn(t, mode, history, raceMessages(t, history, batch))
		history = append(history, e.historyDelta...)
	}
	return e, res, history
}

// wantReplaysQuietly checks that history replays without new decisions.
func wantReplaysQuietly(t *testing.T, mode queueRaceMode, history []duroxide.Event) {
	t.Helper()
	e, res := runRaceTurn(t, mode, history, nil)
	if res.kind == turnFailed || len(e.historyDelta) != 0 || len(e.pendingActions) != 0 {
		t.Fatalf("replay of the new history: %s, events %v, actions %v", describeTurn(res), deltaTypes(e), actionShapes(t, e.pendingActions))
	}
}

// TestRaceCancellationPolicyFollowsTheStartedStamp checks which stamps of
// OrchestrationStarted select duroxide 0.1.31's race cancellation: 0.1.31
// and newer do; older, missing and unreadable stamps keep the legacy one.
func TestRaceCancellationPolicyFollowsTheStartedStamp(t *testing.T) {
	t.Parallel()
	for stamp, want := range map[string]bool{
		"0.1.31": true, "0.1.32": true, "0.2.0": true, "1.0.0": true,
		"0.1.30": false, "0.1.26": false, "0.1.31-rc.1": false, "": false, "not-a-version": false,
	} {
		if got := raceFixFor(stampedStart(stamp)); got != want {
			t.Errorf("stamp %q: 0.1.31 race cancellation %v, want %v", stamp, got, want)
		}
	}
	// A fresh execution is stamped by this runtime, so it uses the new rules.
	if !raceFixFor(startedEv(1)) {
		t.Errorf("an execution started by this runtime (stamp %q) keeps the legacy rules", duroxide.DuroxideVersion)
	}
}

// TestNewEngineUnboundDroppedWaitDoesNotTakeTheMessage: a queue wait
// dropped before it was ever bound is cancelled as it binds, so a message
// already buffered goes to the next wait in the same turn (the legacy
// engine gave it to the dropped wait until the turn's cancellation was
// recorded, see unbound-prearrival in the fixtures).
func TestNewEngineUnboundDroppedWaitDoesNotTakeTheMessage(t *testing.T) {
	t.Parallel()
	e, res, history := runRaceScenario(t, "0.1.31", modeUnbound, []completionSpec{qMsg("q", "first")})
	wantContinue(t, res)
	if got := actionShapes(t, e.pendingActions); !slices.Contains(got, "5:activity:checkpoint:first") {
		t.Fatalf("actions %v: the second wait did not get the buffered message", got)
	}
	wantReplaysQuietly(t, modeUnbound, history)
}

// TestNewEnginePositionalReplacementWaitGetsTheNextSignal: a positional
// wait that lost a select is cancelled at once, so the signal raised next
// answers the wait that replaced it (the legacy engine hung: the signal
// counted against the dropped wait, see positional-blocking in the
// fixtures), and a signal that arrives while no wait is active is dropped
// rather than kept for a later wait.
func TestNewEnginePositionalReplacementWaitGetsTheNextSignal(t *testing.T) {
	t.Parallel()
	e, res, history := runRaceScenario(t, "0.1.31", modePositionalBlocking,
		nil, []completionSpec{qTimer(0), qSignal("a")}, []completionSpec{qSignal("b")})
	wantContinue(t, res)
	if got := actionShapes(t, e.pendingActions); len(got) != 1 || !strings.HasSuffix(got[0], ":activity:checkpoint:b") {
		t.Fatalf("actions %v: the replacement wait did not get the next signal", got)
	}
	wantReplaysQuietly(t, modePositionalBlocking, history)

	// Barrier: "a" arrives while the dropped wait is cancelled and its
	// replacement does not exist yet, so it is dropped.
	e, res, history = runRaceScenario(t, "0.1.31", modePositionalBarrier,
		nil, []completionSpec{qTimer(0), qSignal("a")}, []completionSpec{qActivity(0)})
	wantContinue(t, res)
	if got := actionShapes(t, e.pendingActions); len(got) != 1 || !strings.HasSuffix(got[0], ":signal:s") {
		t.Fatalf("actions %v: want only the replacement wait", got)
	}
	wantReplaysQuietly(t, modePositionalBarrier, history)
}

// heldDequeueThenContinue holds a queue wait it never awaits nor drops,
// waits for a timer and continues as new.
func heldDequeueThenContinue(ctx *OrchestrationContext, _ string) (string, error) {
	_ = ctx.DequeueEvent("q")
	_, _ = ctx.ScheduleTimer(10 * time.Millisecond).Get()
	return "", ctx.ContinueAsNew("successor")
}

// TestNewEngineContinueAsNewCarriesExactlyTheUnreadArrivals: under the
// 0.1.31 rules continue-as-new carries the queue messages no wait read;
// the legacy rule counts every live subscription in history as a reader,
// so a message a held, never-awaited wait "received" is not carried.
func TestNewEngineContinueAsNewCarriesExactlyTheUnreadArrivals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stamp string
		exact bool
		want  []string
	}{{"0.1.31", true, []string{"q=a"}}, {"0.1.30", false, []string{}}} {
		history := []duroxide.Event{stampedStart(c.stamp)}
		e := engineFor(history...)
		wantContinue(t, run(e, heldDequeueThenContinue))
		history = append(history, e.historyDelta...)
		e = engineFor(history...)
		e.prepCompletions(raceMessages(t, history, []completionSpec{qTimer(0), qMsg("q", "a")}))
		res := run(e, heldDequeueThenContinue)
		if res.kind != turnContinueAsNew || res.exactCarry != c.exact {
			t.Fatalf("stamp %s: %s, exact carry %v", c.stamp, describeTurn(res), res.exactCarry)
		}
		got := []string{}
		if res.exactCarry {
			for _, nd := range res.carry {
				got = append(got, nd.Name+"="+nd.Data)
			}
		} else {
			got = carryShapes(res, append(history, e.historyDelta...))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("stamp %s: carried %v, want %v", c.stamp, got, c.want)
		}
	}
}
