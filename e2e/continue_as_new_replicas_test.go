package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// loopedExecutions is how many executions a Looper runs: inputs 0 to 8,
// continuing as new 8 times and completing with "looped 8".
const loopedExecutions = 9

// TestDuplicateStartsInTheContinueAsNewWindowOfTwoReplicas is issue 33's
// test, as a user running two replicas of a service would meet it: two
// providers on one container (each its own client and runtime of 3
// orchestration and 2 worker dispatchers; on the embedded emulator with
// 1 ms ± 1 ms of latency per request) run ten Loopers, each continuing as
// new every 20 ms until it completes at its ninth execution. Each gets one
// duplicate start of another orchestration (V2) for its own id: half raw
// (a StartOrchestration work item enqueued through the replica that does
// not run the turn, while the turn that ends execution 2 with
// ContinueAsNew is being processed: before its ack, or while the ack is
// on its way), half detached (another orchestration,
// started 0 to 440 ms after the Looper, from its first execution to about
// its last, schedules V2 under the Looper's id).
// A duplicate start of a running instance is dropped (duroxide: "instance
// already exists"): every Looper must complete with "looped 8", its status
// and metadata must agree, and each of its nine executions must have a
// whole history of its own (the start of Looper with its input, then its
// end) and nothing of V2. The in-memory provider runs the same test.
//
// On Cosmos DB it failed 1 run in 3 before the candidate pool kept a
// timer that fired while a fetch of its instance locked the duplicate
// start (candidates.Pool.Release): the successor's timer was forgotten
// until the next candidate query, up to the view lifetime (10 s) later,
// so an execution stopped after its TimerCreated, and when the stop hit
// the last execution the instance completed just after the wait gave up.
func TestDuplicateStartsInTheContinueAsNewWindowOfTwoReplicas(t *testing.T) {
	t.Parallel()
	t.Run("cdb", func(t *testing.T) {
		t.Parallel()
		a := account
		if account.Emulator() != nil {
			a = cdbtest.NewEmulatorAccount(t, emulator.Options{Latency: emulator.Latency{Fixed: time.Millisecond, Jitter: time.Millisecond}})
		}
		cfg := a.Config()
		p1, p2 := a.NewProvider(t, cfg), a.NewProvider(t, cfg)
		testDuplicateStartsInTheWindow(t, [2]duroxide.Provider{p1, p2})
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		p := memory.NewMemoryProvider(memory.MemoryOptions{})
		testDuplicateStartsInTheWindow(t, [2]duroxide.Provider{p, p})
	})
}

func testDuplicateStartsInTheWindow(t *testing.T, replicas [2]duroxide.Provider) {
	const instances = 10
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	looper := func(i int) string { return fmt.Sprintf("looper-%d", i) }
	raw := func(i int) bool { return i%2 == 0 }

	// rawSent marks the raw duplicates sent, so a retried turn sends none.
	var rawSent sync.Map
	var rawWrites sync.WaitGroup
	logs := &instanceLogs{n: map[[3]string]int{}}
	duplicate := func(instance string) duroxide.StartOrchestrationItem {
		return duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "V2", Input: "v2", ExecutionID: duroxide.InitialExecutionID}
	}
	var clients [2]*runtime.Client
	for r := range replicas {
		other := replicas[1-r]
		reg := runtime.NewRegistry()
		must(t,
			// Looper waits 20 ms and continues as new with its input + 1,
			// until it completes at 8. A raw Looper's turn that ends
			// execution 2 writes its duplicate start through the other
			// replica: before the turn is acknowledged, or (every other
			// raw Looper) at the same time as its ack.
			reg.RegisterOrchestration("Looper", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
				n, err := strconv.Atoi(in)
				if err != nil {
					return "", err
				}
				if _, err := ctx.ScheduleTimer(20 * time.Millisecond).Get(); err != nil {
					return "", err
				}
				if n == loopedExecutions-1 {
					return "looped " + in, nil
				}
				if id, i := ctx.InstanceID(), instanceIndex(ctx.InstanceID()); n == 1 && !ctx.IsReplaying() && raw(i) {
					if _, sent := rawSent.LoadOrStore(id, true); !sent {
						send := func() {
							if err := other.EnqueueForOrchestrator(context.Background(), duroxide.WorkItem{Kind: duplicate(id)}, 0); err != nil {
								t.Errorf("%s: raw duplicate start: %v", id, err)
							}
						}
						if i%4 == 0 {
							send() // written before the turn's ack
						} else {
							// written while the turn's ack is on its way
							rawWrites.Go(send)
						}
					}
				}
				return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
			}),
			// V2 must never run: every start of it is a duplicate.
			reg.RegisterOrchestration("V2", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
				return "V2 ran", nil
			}),
			// Starter schedules V2 under the Looper's id (its input).
			reg.RegisterOrchestration("Starter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
				ctx.ScheduleOrchestration("V2", in, "v2")
				return "scheduled", nil
			}))
		opts := options()
		opts.OrchestrationConcurrency, opts.WorkerConcurrency = 3, 2
		opts.Logger = slog.New(logs)
		startRuntime(ctx, t, replicas[r], reg, opts)
		clients[r] = runtime.NewClient(replicas[r])
	}

	var wg sync.WaitGroup
	for i := range instances {
		if err := clients[i%2].StartOrchestration(ctx, looper(i), "Looper", "0"); err != nil {
			t.Fatal(err)
		}
		if raw(i) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i/2) * 110 * time.Millisecond) // 0-440 ms after the Looper
			if err := clients[(i+1)%2].StartOrchestration(ctx, "starter-"+strconv.Itoa(i), "Starter", looper(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	defer rawWrites.Wait()

	for i := range instances {
		instance, c := looper(i), clients[i%2]
		st, err := c.WaitForOrchestration(ctx, instance, 10*time.Second)
		info, infoErr := c.GetInstanceInfo(ctx, instance)
		if err != nil || st.Kind != runtime.StatusCompleted || st.Output != "looped 8" {
			t.Errorf("%s (raw %v): status %s %q %v, %v; metadata %+v, %v", instance, raw(i), st.Kind, st.Output, st.Err(), err, info, infoErr)
		} else if infoErr != nil || info.Status != duroxide.StatusCompleted || info.CurrentExecutionID != loopedExecutions ||
			info.Output == nil || *info.Output != "looped 8" {
			t.Errorf("%s: metadata %+v, %v, want execution %d Completed \"looped 8\" as its status says", instance, info, infoErr, loopedExecutions)
		}
		checkLooperHistories(ctx, t, c, instance, raw(i))
		if !raw(i) {
			if st, err := c.WaitForOrchestration(ctx, "starter-"+strconv.Itoa(i), 10*time.Second); err != nil || st.Output != "scheduled" {
				t.Errorf("starter-%d: %s %q %v, %v", i, st.Kind, st.Output, st.Err(), err)
			}
		}
		// The duplicate was dropped with a warning, or found the Looper
		// completed (a detached one that came late) and was drained; a
		// detached one may still be on its way when the Looper completed.
		var dropped, drained int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			dropped = logs.count(slog.LevelWarn, duplicateStartDropped, instance)
			drained = logs.count(slog.LevelInfo, terminalDrained, instance)
			if dropped+drained > 0 || time.Now().After(deadline) {
				break
			}
		}
		if dropped > 1 || (dropped == 0 && (raw(i) || drained == 0)) {
			t.Errorf("%s (raw %v): duplicate start dropped with a warning %d times, drained after completion %d times; want it dropped once (or drained, when it came after the end)",
				instance, raw(i), dropped, drained)
		}
	}
}

// The runtime's log messages the test counts.
const (
	duplicateStartDropped = "start of an instance that already exists is inert; it keeps running what its history started"
	terminalDrained       = "instance is terminal, acking batch without processing"
)

// instanceLogs is a slog.Handler that counts the runtime's log records
// by level, message and instance.
type instanceLogs struct {
	mu sync.Mutex
	n  map[[3]string]int
}

func (l *instanceLogs) Enabled(context.Context, slog.Level) bool { return true }

func (l *instanceLogs) Handle(_ context.Context, r slog.Record) error {
	instance := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "instance" {
			instance = a.Value.String()
			return false
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[[3]string{r.Level.String(), r.Message, instance}]++
	return nil
}

func (l *instanceLogs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *instanceLogs) WithGroup(string) slog.Handler      { return l }

// count returns how many records of level and message named instance.
func (l *instanceLogs) count(level slog.Level, message, instance string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[[3]string{level.String(), message, instance}]
}

// instanceIndex is i of "looper-i".
func instanceIndex(instance string) int {
	var i int
	_, _ = fmt.Sscanf(instance, "looper-%d", &i)
	return i
}

// checkLooperHistories checks that instance ran executions 1 to 9, each a
// history of its own: OrchestrationStarted of Looper with input k-1 (no V2
// anywhere), then ContinuedAsNew with input k (Completed "looped 8" for
// the last), and nothing after its end.
func checkLooperHistories(ctx context.Context, t *testing.T, c *runtime.Client, instance string, raw bool) {
	t.Helper()
	execs, err := c.ListExecutions(ctx, instance)
	if err != nil {
		t.Errorf("%s: list executions: %v", instance, err)
		return
	}
	if len(execs) != loopedExecutions {
		t.Errorf("%s (raw %v): executions %v, want 1 to %d", instance, raw, execs, loopedExecutions)
	}
	for _, e := range execs {
		h, err := c.ReadExecutionHistory(ctx, instance, e)
		if err != nil {
			t.Errorf("%s execution %d: %v", instance, e, err)
			continue
		}
		if problem := looperHistoryProblem(h, e); problem != "" {
			t.Errorf("%s (raw %v) execution %d: %s; history %s", instance, raw, e, problem, describeHistory(h))
		}
	}
}

// looperHistoryProblem says what is wrong with execution e's history of a
// Looper ("" when nothing).
func looperHistoryProblem(h []duroxide.Event, e uint64) string {
	if len(h) < 2 {
		return "fewer than 2 events"
	}
	started, ok := h[0].Kind.(duroxide.OrchestrationStarted)
	if !ok || started.Name != "Looper" || started.Input != strconv.FormatUint(e-1, 10) {
		return fmt.Sprintf("starts with %#v, want OrchestrationStarted of Looper with input %d", h[0].Kind, e-1)
	}
	for k, ev := range h {
		if ev.ExecutionID != e {
			return fmt.Sprintf("event %d belongs to execution %d", k, ev.ExecutionID)
		}
		if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok && k > 0 {
			return fmt.Sprintf("a second start at event %d (%s)", k, s.Name)
		}
	}
	switch end := h[len(h)-1].Kind.(type) {
	case duroxide.OrchestrationContinuedAsNew:
		if e == loopedExecutions || end.Input != strconv.FormatUint(e, 10) {
			return fmt.Sprintf("continued as new with %q", end.Input)
		}
	case duroxide.OrchestrationCompleted:
		if e != loopedExecutions || end.Output != "looped 8" {
			return fmt.Sprintf("completed with %q", end.Output)
		}
	default:
		return fmt.Sprintf("ends with %#v", end)
	}
	return ""
}

// describeHistory lists h's event kinds, for failure messages.
func describeHistory(h []duroxide.Event) string {
	s := ""
	for _, ev := range h {
		s += fmt.Sprintf(" %d:%T", ev.EventID, ev.Kind)
	}
	return "[" + s + " ]"
}
