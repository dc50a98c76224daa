package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// The tests run cdb-admin against containers of one test-kit account (an
// embedded emulator on plain HTTP, so cdb-admin's own client reaches it
// without certificates), each filled by the runtime with a known workload
// (seed).

var (
	accountOnce sync.Once
	account     *cdbtest.Account
	accountErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range []*fixture{readOnly, oddOnes} {
		if f != nil {
			_ = f.p.Close()
		}
	}
	if account != nil {
		_ = account.Close()
	}
	os.Exit(code)
}

// server returns the shared account.
func server(t *testing.T) *cdbtest.Account {
	t.Helper()
	accountOnce.Do(func() { account, accountErr = cdbtest.Open() })
	require.NoError(t, accountErr)
	return account
}

// fixture is a container holding the seed workload.
type fixture struct {
	t         *testing.T
	srv       *cdbtest.Account
	container string
	p         *cdb.Provider
}

// The seed workload's instances.
const (
	helloID   = "hello-1"        // Hello: one activity, Completed "Hello, World!"
	failID    = "fail-1"         // Fails: its activity fails, Failed
	parentID  = "parent-1"       // Parent: sub-orchestration childID, Completed
	childID   = "parent-1-child" // Child of parentID, Completed
	waitID    = "wait-1"         // Waiter: custom status set, Running (waits for an event)
	eternalID = "eternal-1"      // Eternal: continues as new twice, Completed in execution 3
)

// seed creates a container and runs the workload on it to its known state,
// then stops the runtime, so nothing changes while cdb-admin looks. The
// provider is closed when t ends.
func seed(t *testing.T) *fixture {
	t.Helper()
	f := seedOpen(t)
	t.Cleanup(func() { _ = f.p.Close() })
	return f
}

// seedOpen is seed without closing the provider at the end of t.
func seedOpen(t *testing.T) *fixture {
	t.Helper()
	f := openFixture(t)
	f.runWorkload([]start{
		{helloID, "Hello", "World"}, {failID, "Fails", "x"}, {parentID, "Parent", "Child"},
		{waitID, "Waiter", ""}, {eternalID, "Eternal", "1"},
	})
	return f
}

// openFixture creates an empty container of the shared account in
// cdb-admin's default database (so that its commands need no -database)
// and opens a provider on it, not closed at the end of t.
func openFixture(t *testing.T) *fixture {
	t.Helper()
	srv := server(t)
	f := &fixture{t: t, srv: srv, container: "admin-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]}
	cfg := srv.Config()
	cfg.Database, cfg.Container, cfg.LongPollInterval = cdb.DefaultDatabase, f.container, 20*time.Millisecond
	p, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
	f.p = p
	return f
}

// start is an orchestration runWorkload starts.
type start struct{ id, name, in string }

// runWorkload starts the orchestrations (of the registry below) and runs
// them to their known state: every one ends except Waiter's, which waits
// for an event after setting its custom status. Then it stops the runtime,
// so nothing changes while cdb-admin looks.
func (f *fixture) runWorkload(starts []start) {
	t := f.t
	t.Helper()
	ctx := context.Background()
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	}))
	require.NoError(t, reg.RegisterActivity("Boom", func(*runtime.ActivityContext, string) (string, error) {
		return "", errors.New("boom")
	}))
	require.NoError(t, reg.RegisterOrchestration("Hello", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Greet", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Fails", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Boom", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Greet", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleSubOrchestrationWithID("Child", childID, in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Waiter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus("waiting for approval")
		return ctx.ScheduleWait("approve").Get()
	}))
	require.NoError(t, reg.RegisterOrchestration(tabbedName, func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Greet", in).Get()
	}))
	require.NoError(t, reg.RegisterOrchestration("Eternal", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}
		return "done at " + in, nil
	}))
	rt, err := runtime.Start(ctx, f.p, reg, runtime.Options{PollInterval: 5 * time.Millisecond, LongPollTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	client := runtime.NewClient(f.p)
	for _, s := range starts {
		require.NoError(t, client.StartOrchestration(ctx, s.id, s.name, s.in))
	}
	for _, s := range starts {
		if s.name == "Waiter" {
			st, err := client.WaitForStatusChange(ctx, s.id, 0, 5*time.Millisecond, 30*time.Second)
			require.NoError(t, err)
			require.NotNil(t, st.CustomStatus)
			continue
		}
		st, err := client.WaitForOrchestration(ctx, s.id, 30*time.Second)
		require.NoError(t, err)
		require.True(t, st.IsTerminal(), "%s: %v", s.id, st.Kind)
	}
	require.NoError(t, rt.Shutdown(ctx))
	f.awaitSeen(starts)
}

// awaitSeen waits until cdb-admin, a process of its own (with no session
// token of the workload's writes), lists every instance of starts as the
// workload left it: a read by another process may trail the writes on a
// lagging account (CDB_EMULATOR_REPLICA_LAG), so the tests read what they
// check once it has caught up.
func (f *fixture) awaitSeen(starts []start) {
	t := f.t
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := map[string]listRowJSON{}
		if r := f.admin("", "list", "-json"); r.code == exitOK {
			for _, row := range decode[[]listRowJSON](t, r) {
				seen[row.InstanceID] = row
			}
		}
		caughtUp := true
		for _, s := range starts {
			row, ok := seen[s.id]
			switch {
			case !ok:
				caughtUp = false
			case s.name == "Waiter":
				caughtUp = caughtUp && row.CustomStatus != nil
			default:
				caughtUp = caughtUp && row.Status != duroxide.StatusRunning && row.Status != duroxide.StatusPending
			}
		}
		if caughtUp {
			return
		}
		require.True(t, time.Now().Before(deadline), "cdb-admin does not see the workload's end after 30 s: %v", seen)
		time.Sleep(20 * time.Millisecond)
	}
}

// result is one cdb-admin run.
type result struct {
	code           int
	stdout, stderr string
}

// admin runs cdb-admin on f's container with args, stdin as its input and
// no environment.
func (f *fixture) admin(stdin string, args ...string) result {
	f.t.Helper()
	full := append([]string{"-endpoint", f.srv.Endpoint(), "-key", f.srv.Key(), "-container", f.container}, args...)
	return runAdmin(f.t, nil, stdin, full...)
}

// runAdmin runs cdb-admin with args, env as its environment and stdin.
func runAdmin(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// decode parses r's stdout as JSON into v.
func decode[T any](t *testing.T, r result) T {
	t.Helper()
	require.Equal(t, exitOK, r.code, r.stderr)
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	return v
}

// instanceIDs returns the ids of a list answer.
func instanceIDs(rows []listRowJSON) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.InstanceID
	}
	return ids
}

// historyJSONIsTheStoredHistory checks that history -json prints the
// instance's current history whole, in duroxide's serde format, as
// ReadHistory returns it, and returns it.
func (f *fixture) historyJSONIsTheStoredHistory(id string) []duroxide.Event {
	f.t.Helper()
	events := decode[[]duroxide.Event](f.t, f.admin("", "history", id, "-json"))
	want, err := f.p.ReadHistory(context.Background(), id)
	require.NoError(f.t, err)
	assert.Equal(f.t, want, events, "-json prints the events whole in duroxide's serde format")
	return want
}

// exists reports whether the instance is still stored.
func (f *fixture) exists(id string) bool {
	f.t.Helper()
	execs, err := f.p.ListExecutions(context.Background(), id)
	require.NoError(f.t, err)
	return len(execs) > 0
}

// assertGone checks that id no longer exists, as f's provider reads it:
// another process deleted it, and on a lagging account
// (CDB_EMULATOR_REPLICA_LAG) f's reads may trail that delete a little.
func (f *fixture) assertGone(id string) {
	f.t.Helper()
	assert.Eventually(f.t, func() bool { return !f.exists(id) }, 10*time.Second, 10*time.Millisecond, "%s still exists", id)
}

var (
	readOnlyOnce sync.Once
	readOnly     *fixture
)

// sharedFixture is one seeded container for the tests that change nothing.
func sharedFixture(t *testing.T) *fixture {
	t.Helper()
	readOnlyOnce.Do(func() { readOnly = seedOpen(t) })
	require.NotNil(t, readOnly, "seeding failed in another test")
	return &fixture{t: t, srv: readOnly.srv, container: readOnly.container, p: readOnly.p}
}

func TestListPrintsEveryInstanceWithItsStatus(t *testing.T) {
	f := sharedFixture(t)
	rows := decode[[]listRowJSON](t, f.admin("", "list", "-json"))
	assert.ElementsMatch(t, []string{helloID, failID, parentID, childID, waitID, eternalID}, instanceIDs(rows))
	byID := map[string]listRowJSON{}
	for _, r := range rows {
		byID[r.InstanceID] = r
	}
	assert.Equal(t, "Completed", byID[helloID].Status)
	assert.Equal(t, "Hello", byID[helloID].OrchestrationName)
	assert.NotNil(t, byID[helloID].CompletedAt, "a completed instance's end")
	assert.Equal(t, "Failed", byID[failID].Status)
	assert.NotEmpty(t, byID[failID].Error, "a failed instance's error")
	require.NotNil(t, byID[waitID].CustomStatus)
	assert.Equal(t, "waiting for approval", *byID[waitID].CustomStatus)
	assert.Equal(t, "Running", byID[waitID].Status)
	assert.Equal(t, uint64(3), byID[eternalID].CurrentExecutionID)
	require.NotNil(t, byID[childID].ParentInstanceID)
	assert.Equal(t, parentID, *byID[childID].ParentInstanceID)

	table := f.admin("", "list")
	require.Equal(t, exitOK, table.code, table.stderr)
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	require.Len(t, lines, 7, table.stdout)
	assert.Equal(t, []string{"INSTANCE", "ORCHESTRATION", "STATUS", "EXECUTION", "CREATED", "ENDED", "PARENT", "DETAIL"}, strings.Fields(lines[0]))
	assert.Regexp(t, `(?m)^`+waitID+`\s.*\sstatus: waiting for approval$`, table.stdout, "the custom status in the list")
	assert.Contains(t, table.stdout, childID)
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, childID) {
			assert.Equal(t, []string{childID, "Child", "Completed", "1"}, strings.Fields(l)[:4])
			assert.Equal(t, parentID, strings.Fields(l)[6])
		}
	}
}

func TestListFiltersByStatusInAnyCase(t *testing.T) {
	f := sharedFixture(t)
	assert.Equal(t, []string{failID}, instanceIDs(decode[[]listRowJSON](t, f.admin("", "list", "-status", "failed", "-json"))))
	assert.Equal(t, []string{waitID}, instanceIDs(decode[[]listRowJSON](t, f.admin("", "-json", "list", "-status", "Running"))))
	assert.Len(t, decode[[]listRowJSON](t, f.admin("", "list", "-limit", "2", "-json")), 2)
	assert.Equal(t, []listRowJSON{}, decode[[]listRowJSON](t, f.admin("", "list", "-status", "ContinuedAsNew", "-json")))
}

func TestShowPrintsStatusOutputCustomStatusAndExecutions(t *testing.T) {
	f := sharedFixture(t)
	got := decode[showJSON](t, f.admin("", "show", waitID, "-json"))
	assert.Equal(t, "Running", got.Instance.Status)
	assert.Nil(t, got.Instance.Output)
	require.NotNil(t, got.CustomStatus)
	require.NotNil(t, got.CustomStatus.Status)
	assert.Equal(t, "waiting for approval", *got.CustomStatus.Status)
	assert.Equal(t, uint64(1), got.CustomStatus.Version)
	require.Len(t, got.Executions, 1)
	assert.Nil(t, got.Executions[0].CompletedAt)

	eternal := decode[showJSON](t, f.admin("", "show", eternalID, "-json"))
	assert.Nil(t, eternal.CustomStatus)
	require.Len(t, eternal.Executions, 3)
	assert.Equal(t, []string{"ContinuedAsNew", "ContinuedAsNew", "Completed"},
		[]string{eternal.Executions[0].Status, eternal.Executions[1].Status, eternal.Executions[2].Status})
	require.NotNil(t, eternal.Executions[2].Output)
	assert.Equal(t, "done at 3", *eternal.Executions[2].Output)

	text := f.admin("", "show", failID)
	require.Equal(t, exitOK, text.code, text.stderr)
	assert.Regexp(t, `(?m)^Status:\s+Failed$`, text.stdout)
	assert.Regexp(t, `(?m)^Error:\s+.*boom`, text.stdout, "a failed instance's error is printed as an error")
	assert.NotRegexp(t, `(?m)^Output:`, text.stdout)
	assert.Regexp(t, `(?m)^Custom status:\s+- \(never set\)$`, text.stdout)
	assert.Regexp(t, `(?m)^1\s+Failed\s+`, text.stdout)
}

func TestHistoryPrintsTheCurrentOrAGivenExecution(t *testing.T) {
	f := sharedFixture(t)
	want := f.historyJSONIsTheStoredHistory(helloID)

	text := f.admin("", "history", helloID)
	require.Equal(t, exitOK, text.code, text.stderr)
	lines := strings.Split(strings.TrimSpace(text.stdout), "\n")
	require.Len(t, lines, 2+len(want), text.stdout)
	assert.Equal(t, helloID+", execution 1: "+strconv.Itoa(len(want))+" events", lines[0])
	assert.Equal(t, []string{"ID", "SOURCE", "TIME", "TYPE", "DETAIL"}, strings.Fields(lines[1]))
	assert.Regexp(t, `^1\s+-\s+\S+\s+OrchestrationStarted\s+name="Hello" version="[^"]*" input="World"`, lines[2])
	assert.Regexp(t, `ActivityCompleted\s+result="Hello, World!"`, text.stdout)

	first := decode[[]duroxide.Event](t, f.admin("", "history", "-execution", "1", eternalID, "-json"))
	require.NotEmpty(t, first)
	assert.Equal(t, uint64(1), first[0].ExecutionID)
	assert.Equal(t, duroxide.EventTypeOrchestrationContinuedAsNew, first[len(first)-1].Type())
}

func TestTreeShowsSubOrchestrations(t *testing.T) {
	f := sharedFixture(t)
	tree := decode[treeJSON](t, f.admin("", "tree", parentID, "-json"))
	assert.Equal(t, treeJSON{InstanceID: parentID, OrchestrationName: "Parent", Status: "Completed", Children: []treeJSON{
		{InstanceID: childID, OrchestrationName: "Child", Status: "Completed", Children: []treeJSON{}},
	}}, tree)
	text := f.admin("", "tree", parentID)
	require.Equal(t, exitOK, text.code, text.stderr)
	assert.Equal(t, parentID+"  Parent  Completed\n└── "+childID+"  Child  Completed\n", text.stdout)
}

func TestQueuesAndMetricsCountTheStore(t *testing.T) {
	f := sharedFixture(t)
	q := decode[queuesJSON](t, f.admin("", "queues", "-json"))
	assert.Equal(t, queuesJSON{Orchestrator: &queueCountsJSON{}, Worker: &queueCountsJSON{}}, q, "the runtime consumed every message")
	m := decode[metricsJSON](t, f.admin("", "metrics", "-json"))
	want, err := f.p.GetSystemMetrics(context.Background())
	require.NoError(t, err)
	assert.Equal(t, metricsJSON{TotalInstances: 6, TotalExecutions: 8, RunningInstances: 1, CompletedInstances: 4,
		FailedInstances: 1, TotalEvents: want.TotalEvents}, m)

	text := f.admin("", "metrics")
	require.Equal(t, exitOK, text.code, text.stderr)
	assert.Regexp(t, `(?m)^instances\s+6$`, text.stdout)
	assert.Regexp(t, `(?m)^failed\s+1$`, text.stdout)
	qt := f.admin("", "queues")
	assert.Regexp(t, `(?m)^orchestrator\s+0\s+0\s+0\s+-$`, qt.stdout, "ready, locked, delayed, oldest wait")
}

func TestDeleteAsksAndDeletesTheWholeTree(t *testing.T) {
	t.Parallel()
	f := seed(t)
	declined := f.admin("n\n", "delete", parentID)
	assert.Equal(t, exitAborted, declined.code)
	assert.Contains(t, declined.stderr, "Delete 2 instance(s) ("+parentID+", "+childID+")")
	assert.Contains(t, declined.stderr, "nothing was deleted")
	assert.True(t, f.exists(parentID))

	noAnswer := f.admin("", "delete", parentID)
	assert.Equal(t, exitAborted, noAnswer.code, "a closed stdin is no")
	assert.True(t, f.exists(parentID))

	res := decode[deleteResultJSON](t, f.admin("yes\n", "delete", parentID, "-json"))
	assert.Equal(t, uint64(2), res.InstancesDeleted)
	assert.Equal(t, uint64(2), res.ExecutionsDeleted)
	f.assertGone(parentID)
	f.assertGone(childID)
	assert.True(t, f.exists(helloID))
}

func TestDeleteRefusesRunningAndSubOrchestrationsUnlessForced(t *testing.T) {
	t.Parallel()
	f := seed(t)
	running := f.admin("", "delete", "-yes", helloID, waitID)
	assert.Equal(t, exitFailed, running.code)
	assert.Contains(t, running.stderr, waitID+" is Running")
	assert.Contains(t, running.stderr, "-force")
	assert.True(t, f.exists(helloID), "nothing is deleted when one instance is refused")
	assert.True(t, f.exists(waitID))

	child := f.admin("", "delete", "-yes", childID)
	assert.Equal(t, exitFailed, child.code)
	assert.Contains(t, child.stderr, "delete its root instead")
	assert.True(t, f.exists(childID))

	forced := f.admin("", "delete", "-yes", "-force", waitID)
	assert.Equal(t, exitOK, forced.code, forced.stderr)
	assert.Equal(t, "deleted 1 instance(s), 1 execution(s), "+
		strconv.Itoa(int(decodeEvents(t, forced)))+" event(s), 0 queue message(s)\n", forced.stdout)
	f.assertGone(waitID)
}

// decodeEvents reads the event count of delete's human answer.
func decodeEvents(t *testing.T, r result) uint64 {
	t.Helper()
	fields := strings.Fields(r.stdout)
	require.GreaterOrEqual(t, len(fields), 6, r.stdout)
	n, err := strconv.ParseUint(fields[5], 10, 64)
	require.NoError(t, err, r.stdout)
	return n
}

func TestDeleteCompletedBeforeDeletesTerminalRoots(t *testing.T) {
	t.Parallel()
	f := seed(t)
	res := decode[deleteResultJSON](t, f.admin("", "delete", "-completed-before", "0s", "-yes", "-json"))
	assert.Equal(t, uint64(5), res.InstancesDeleted, "hello, fail, parent with its child, eternal")
	assert.True(t, f.exists(waitID), "a Running instance stays")
	for _, id := range []string{helloID, failID, parentID, childID, eternalID} {
		f.assertGone(id)
	}
}

func TestPruneKeepsTheCurrentExecution(t *testing.T) {
	t.Parallel()
	f := seed(t)
	declined := f.admin("no\n", "prune", eternalID)
	assert.Equal(t, exitAborted, declined.code)
	execs, err := f.p.ListExecutions(context.Background(), eternalID)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3}, execs)

	kept := decode[pruneResultJSON](t, f.admin("y\n", "prune", eternalID, "-keep-last", "2", "-json"))
	assert.Equal(t, pruneResultJSON{InstancesProcessed: 1, ExecutionsDeleted: 1, EventsDeleted: kept.EventsDeleted}, kept)
	assert.NotZero(t, kept.EventsDeleted)
	f.awaitExecutions(eternalID, []uint64{2, 3})
	all := f.admin("", "prune", "-all", "-yes")
	require.Equal(t, exitOK, all.code, all.stderr)
	assert.Regexp(t, `^pruned 1 execution\(s\) and \d+ event\(s\) of \d+ instance\(s\)\n$`, all.stdout)
	f.awaitExecutions(eternalID, []uint64{3})
}

// awaitExecutions waits until f's provider lists want as id's executions:
// another process pruned them, and on a lagging account
// (CDB_EMULATOR_REPLICA_LAG) f's reads may trail that a little.
func (f *fixture) awaitExecutions(id string, want []uint64) {
	f.t.Helper()
	var execs []uint64
	assert.Eventually(f.t, func() bool {
		var err error
		execs, err = f.p.ListExecutions(context.Background(), id)
		return err == nil && slices.Equal(execs, want)
	}, 10*time.Second, 10*time.Millisecond, "executions of %s: %v, want %v", id, execs, want)
}

func TestUnknownInstanceIsNotFound(t *testing.T) {
	f := sharedFixture(t)
	for _, args := range [][]string{
		{"show", "nope"}, {"history", "nope"}, {"tree", "nope"},
		{"delete", "-yes", "-force", helloID, "nope"}, {"prune", "-yes", "nope"},
	} {
		r := f.admin("", args...)
		assert.Equal(t, exitNotFound, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "instance nope not found (cdb-admin list shows the instances)", args)
		assert.Empty(t, r.stdout, args)
	}
	assert.True(t, f.exists(helloID), "delete checks every id before deleting any")
	r := f.admin("", "history", helloID, "-execution", "7")
	assert.Equal(t, exitNotFound, r.code)
	assert.Contains(t, r.stderr, "has no execution 7")
}

func TestMalformedInputIsAUsageError(t *testing.T) {
	f := sharedFixture(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (commands: list, show, history, tree, queues, metrics, delete, prune, export, serve)`},
		{[]string{"list", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"list", "-status", "Sleeping"}, `unknown status "Sleeping" (one of Running, Completed, Failed, ContinuedAsNew, Pending)`},
		{[]string{"list", "-limit", "x"}, `invalid value "x" for flag -limit`},
		{[]string{"show"}, "show: missing argument (usage: cdb-admin show <instance>)"},
		{[]string{"show", "a", "b"}, `show: unexpected argument "b"`},
		{[]string{"history", helloID, "-execution", "-1"}, "invalid value"},
		{[]string{"delete"}, "delete: name the instances to delete, or pass -completed-before"},
		{[]string{"delete", helloID, "-completed-before", "1h"}, "not both"},
		{[]string{"delete", "-completed-before", "yesterday"}, `-completed-before "yesterday" is neither an RFC 3339 time`},
		{[]string{"prune"}, "prune: name the instances to prune, or pass -all"},
		{[]string{"prune", "-all", helloID}, "not both"},
		{[]string{"-timeout", "0s", "list"}, "-timeout must be positive"},
	} {
		r := f.admin("", c.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.msg, c.args)
	}
	assert.True(t, f.exists(helloID))
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	r := runAdmin(t, nil, "", "-h")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "exit status: 0 ok, 1 operation failed, 2 usage, 3 not found, 4 cannot connect, 5 aborted")
	r = runAdmin(t, nil, "", "delete", "-h")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "-force")
	r = runAdmin(t, nil, "", "export", "-h")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, `{"execution_id": 1, "events": [<event>, ...]}`, "the file format")
}

func TestConnectionProblemsSayWhatToCheck(t *testing.T) {
	t.Parallel()
	srv := sharedFixture(t).srv // the default database exists
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		msg  string
	}{
		{"no endpoint", nil, []string{"list"}, "no Cosmos DB endpoint: set COSMOS_ENDPOINT or pass -endpoint"},
		{"no key", map[string]string{"COSMOS_ENDPOINT": srv.Endpoint()}, []string{"list"}, "no account key: set COSMOS_KEY or pass -key"},
		{"bad key", map[string]string{"COSMOS_ENDPOINT": srv.Endpoint(), "COSMOS_KEY": "not base64!"}, []string{"list"}, "not valid base64"},
		{"wrong key", map[string]string{"COSMOS_ENDPOINT": srv.Endpoint(), "COSMOS_KEY": "QUJDREVGR0g="}, []string{"list"}, "refused the key (HTTP 401): check -key or COSMOS_KEY"},
		{"not a URL", nil, []string{"-endpoint", "localhost:8081", "-key", srv.Key(), "list"}, `the endpoint "localhost:8081" is not an http(s) URL`},
		{"unreachable", nil, []string{"-endpoint", "http://127.0.0.1:1/", "-key", srv.Key(), "delete", "-yes", "-force", helloID}, "cannot reach Cosmos DB at http://127.0.0.1:1/"},
		{"missing database", map[string]string{"COSMOS_ENDPOINT": srv.Endpoint(), "COSMOS_KEY": srv.Key(), "COSMOS_DATABASE": "absent"}, []string{"list"}, `database "absent" not found`},
		{"missing container", nil, []string{"-endpoint", srv.Endpoint(), "-key", srv.Key(), "-container", "absent", "metrics"}, `container "absent" in database "duroxide" not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runAdmin(t, c.env, "", c.args...)
			assert.Equal(t, exitConnect, r.code, r.stderr)
			assert.Contains(t, r.stderr, c.msg)
			assert.Empty(t, r.stdout)
		})
	}
}

func TestEnvironmentNamesTheAccount(t *testing.T) {
	f := sharedFixture(t)
	env := map[string]string{"COSMOS_ENDPOINT": f.srv.Endpoint(), "COSMOS_KEY": f.srv.Key(), "COSMOS_CONTAINER": f.container}
	rows := decode[[]listRowJSON](t, runAdmin(t, env, "", "list", "-status", "Failed", "-json"))
	assert.Equal(t, []string{failID}, instanceIDs(rows))
}

func TestTLSEndpointNeedsItsCertificate(t *testing.T) {
	t.Parallel()
	srv, err := emulator.Start(emulator.Options{TLS: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cert := t.TempDir() + "/cert.pem"
	require.NoError(t, os.WriteFile(cert, srv.CertificatePEM(), 0o600))
	base := []string{"-endpoint", srv.Endpoint(), "-key", srv.Key()}

	untrusted := runAdmin(t, nil, "", append(base, "metrics")...)
	assert.Equal(t, exitConnect, untrusted.code)
	assert.Contains(t, untrusted.stderr, "pass -ca-cert with cdb-emulator's -cert-out file, or -insecure")

	// Trusted, the request reaches the server: the empty account has no database.
	for _, trust := range [][]string{{"-ca-cert", cert}, {"-insecure"}} {
		r := runAdmin(t, nil, "", append(append(base, trust...), "metrics")...)
		assert.Equal(t, exitConnect, r.code)
		assert.Contains(t, r.stderr, `database "duroxide" not found at `+srv.Endpoint(), trust)
	}
	// With the container there, the command works over TLS.
	cfg := cdb.Config{Endpoint: srv.Endpoint(), Key: srv.Key(), DisableReconciler: true,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.HTTPClient()}}}
	p, err := cdb.New(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	ok := runAdmin(t, nil, "", append(base, "-ca-cert", cert, "metrics", "-json")...)
	assert.Equal(t, metricsJSON{}, decode[metricsJSON](t, ok), "an empty container over TLS")

	noCert := runAdmin(t, nil, "", append(base, "-ca-cert", t.TempDir()+"/absent.pem", "metrics")...)
	assert.Equal(t, exitConnect, noCert.code)
	assert.Contains(t, noCert.stderr, "read -ca-cert")
}

func TestVerboseReportsTheCommandsCost(t *testing.T) {
	f := sharedFixture(t)
	r := f.admin("", "-v", "show", helloID)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^cdb-admin: \d+ Cosmos DB requests, \d+\.\d\d RU\n$`, r.stderr)
	quiet := f.admin("", "show", helloID)
	assert.Empty(t, quiet.stderr, "without -v nothing goes to stderr")
}

func TestHistoryMarksAnEventRaisedBeforeItsWait(t *testing.T) {
	t.Parallel()
	f := openFixture(t)
	t.Cleanup(func() { _ = f.p.Close() })
	ctx := context.Background()
	reg := runtime.NewRegistry()
	require.NoError(t, reg.RegisterOrchestration("TwoEvents", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		if _, err := ctx.ScheduleWait("a").Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleWait("b").Get()
	}))
	rt, err := runtime.Start(ctx, f.p, reg, runtime.Options{PollInterval: 5 * time.Millisecond, LongPollTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = rt.Shutdown(ctx)
		}
	})
	client := runtime.NewClient(f.p)
	const id = "early-1"
	require.NoError(t, client.StartOrchestration(ctx, id, "TwoEvents", ""))
	count := func(typ duroxide.EventType, want int) func() bool {
		return func() bool {
			h, err := f.p.ReadHistory(ctx, id)
			n := 0
			for _, ev := range h {
				if ev.Type() == typ {
					n++
				}
			}
			return err == nil && n >= want
		}
	}
	require.Eventually(t, count(duroxide.EventTypeExternalSubscribed, 1), time.Minute, 5*time.Millisecond) // waits for "a"
	require.NoError(t, client.RaiseEvent(ctx, id, "b", "early"))
	require.Eventually(t, count(duroxide.EventTypeExternalEvent, 1), time.Minute, 5*time.Millisecond)
	require.NoError(t, client.RaiseEvent(ctx, id, "a", "first"))
	require.Eventually(t, count(duroxide.EventTypeExternalSubscribed, 2), time.Minute, 5*time.Millisecond) // now "b"
	require.NoError(t, rt.Shutdown(ctx))
	stopped = true

	text := f.admin("", "history", id)
	require.Equal(t, exitOK, text.code, text.stderr)
	assert.Equal(t, 1, strings.Count(text.stdout, "dropped"), text.stdout)
	assert.Regexp(t, `(?m)^3\s+-\s+\S+\s+ExternalEvent\s+\(dropped: no wait was pending\) name="b" data="early"$`, text.stdout)
	assert.Regexp(t, `(?m)ExternalEvent\s+name="a" data="first"$`, text.stdout)
}
