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

func qMsg(name, data string) completionSpec { return completionSpec{kind: "message", name: name, data: data} }
func qTimer(i int) completionSpec           { return completionSpec{kind: "timer", index: i} }
func qActivity(i int) completionSpec        { return completionSpec{kind: "activity", index: i} }
func qSignal(data string) completionSpec    { return completionSpec{kind: "signal", data: data} }

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
