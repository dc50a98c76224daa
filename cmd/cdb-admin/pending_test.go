package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// pendingFixture is a container with two Pending instances: typoID, whose
// start a runtime that does not register "Procss" abandoned once (its
// reason is returned), and queuedID, whose start no runtime has seen.
func pendingFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := openFixture(t)
	t.Cleanup(func() { _ = f.p.Close() })
	ctx := context.Background()
	client := runtime.NewClient(f.p)
	rt, err := runtime.Start(ctx, f.p, runtime.NewRegistry(), runtime.Options{PollInterval: 5 * time.Millisecond, LongPollTimeout: 50 * time.Millisecond,
		UnregisteredBackoff: runtime.UnregisteredBackoff{Base: time.Minute, Max: time.Minute}})
	require.NoError(t, err)
	require.NoError(t, client.StartOrchestration(ctx, typoID, "Procss", ""))
	var st runtime.OrchestrationStatus
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err = client.GetOrchestrationStatus(ctx, typoID)
		require.NoError(t, err)
		if st.PendingReason != "" {
			break
		}
	}
	require.NoError(t, rt.Shutdown(ctx))
	require.Equal(t, runtime.StatusPending, st.Kind)
	require.Equal(t, `orchestration "Procss" is not registered on runtime `+rt.ID()+`, attempt 1`, st.PendingReason)
	require.NoError(t, client.StartOrchestration(ctx, queuedID, "Later", "in"))
	return f, st.PendingReason
}

const (
	typoID   = "typo-1"
	queuedID = "queued-1"
)

func TestShowListAndQueuesPrintPendingInstancesWithTheirReason(t *testing.T) {
	t.Parallel()
	f, reason := pendingFixture(t)

	shown := decode[showJSON](t, f.admin("", "show", typoID, "-json"))
	assert.Equal(t, duroxide.StatusPending, shown.Instance.Status)
	assert.Equal(t, "Procss", shown.Instance.OrchestrationName)
	assert.Equal(t, reason, shown.Instance.PendingReason)
	assert.Empty(t, shown.Executions)
	text := f.admin("", "show", typoID)
	require.Equal(t, exitOK, text.code, text.stderr)
	assert.Regexp(t, `(?m)^Status:\s+Pending \(its start is stored and has not run yet\)$`, text.stdout)
	assert.Regexp(t, `(?m)^Pending reason:\s+orchestration "Procss" is not registered on runtime \w+, attempt 1$`, text.stdout)
	queued := f.admin("", "show", queuedID)
	require.Equal(t, exitOK, queued.code, queued.stderr)
	assert.Regexp(t, `(?m)^Pending reason:\s+- \(no runtime has reported one`, queued.stdout)

	rows := decode[[]listRowJSON](t, f.admin("", "list", "-json"))
	assert.ElementsMatch(t, []string{typoID, queuedID}, instanceIDs(rows))
	for _, r := range rows {
		assert.Equal(t, duroxide.StatusPending, r.Status, r.InstanceID)
	}
	assert.ElementsMatch(t, []string{typoID, queuedID}, instanceIDs(decode[[]listRowJSON](t, f.admin("", "list", "-status", "pending", "-json"))))
	table := f.admin("", "list")
	require.Equal(t, exitOK, table.code, table.stderr)
	assert.Regexp(t, `(?m)^`+typoID+`\s+Procss\s+Pending\s+0\s`, table.stdout)

	q := decode[queuesJSON](t, f.admin("", "queues", "-json"))
	assert.Equal(t, uint64(2), q.OrchestratorQueue, "the two starts")
	require.Len(t, q.Pending, 2)
	byID := map[string]pendingJSON{}
	for _, pi := range q.Pending {
		byID[pi.InstanceID] = pi
	}
	assert.Equal(t, reason, byID[typoID].PendingReason)
	assert.Equal(t, "Later", byID[queuedID].OrchestrationName)
	assert.Empty(t, byID[queuedID].PendingReason)
	qt := f.admin("", "queues")
	require.Equal(t, exitOK, qt.code, qt.stderr)
	assert.Contains(t, qt.stdout, "Pending instances (started, not run yet): 2")
	assert.Regexp(t, `(?m)^`+typoID+`\s+Procss\s+\S+\s+orchestration "Procss" is not registered`, qt.stdout)
	require.NotNil(t, q.Orchestrator)
	assert.Equal(t, q.OrchestratorQueue, q.Orchestrator.Ready+q.Orchestrator.Delayed, "the unlocked messages are the ready and the delayed ones")

	m := decode[metricsJSON](t, f.admin("", "metrics", "-json"))
	assert.Equal(t, uint64(2), m.PendingInstances, "metrics counts the Pending instances")
	assert.Equal(t, uint64(len(rows)), m.TotalInstances, "metrics and list count the same instances")

	history := f.admin("", "history", typoID)
	require.Equal(t, exitOK, history.code, history.stderr)
	assert.Equal(t, typoID+" is Pending: its start has not run yet, so it has no history\n", history.stdout)
	pruned := f.admin("", "prune", "-yes", typoID)
	assert.Equal(t, exitFailed, pruned.code)
	assert.Contains(t, pruned.stderr, typoID+" is Pending")
}

func TestDeletePurgesAPendingInstance(t *testing.T) {
	t.Parallel()
	f, _ := pendingFixture(t)
	deleted := f.admin("", "delete", "-yes", typoID)
	require.Equal(t, exitOK, deleted.code, deleted.stderr)
	assert.Equal(t, "deleted 1 instance(s), 0 execution(s), 0 event(s), 1 queue message(s)\n", deleted.stdout, "no -force needed")

	gone := f.admin("", "show", typoID)
	assert.Equal(t, exitNotFound, gone.code, gone.stderr)
	q := decode[queuesJSON](t, f.admin("", "queues", "-json"))
	assert.Equal(t, uint64(1), q.OrchestratorQueue, "the other start stays")
	require.Len(t, q.Pending, 1)
	assert.Equal(t, queuedID, q.Pending[0].InstanceID)
	require.NoError(t, runtime.NewClient(f.p).StartOrchestration(context.Background(), typoID, "Process", ""), "the id can be started again")
}

// TestAdminAndDashboardAgreeOnEveryCount reads the same container through
// cdb-admin (queues, metrics, list) and the dashboard (the queues page
// with its totals, the list's status tabs) and checks that every count is
// the same: queued messages ready, locked and delayed, Pending instances,
// instances (the Pending ones included), running, completed, failed,
// executions, events, and the instances of each status; on the workload
// (every status but Pending) and on two Pending instances with their
// queued starts.
func TestAdminAndDashboardAgreeOnEveryCount(t *testing.T) {
	t.Parallel()
	checkCountsAgree(t, sharedFixture(t))
	f, _ := pendingFixture(t)
	checkCountsAgree(t, f)
}

// checkCountsAgree compares cdb-admin's counts on f with the dashboard's.
func checkCountsAgree(t *testing.T, f *fixture) {
	h, err := dashboard.NewHandler(dashboard.Options{Admin: f.p})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	page := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, path)
		return rec.Body.String()
	}
	num := func(body, pattern string) uint64 {
		m := regexp.MustCompile(pattern).FindStringSubmatch(body)
		require.NotNil(t, m, "no %s in the page", pattern)
		n, err := strconv.ParseUint(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}

	q := decode[queuesJSON](t, f.admin("", "queues", "-json"))
	m := decode[metricsJSON](t, f.admin("", "metrics", "-json"))
	rows := decode[[]listRowJSON](t, f.admin("", "list", "-json"))
	body := page("/queues?metrics=1&confirm=1")
	for _, c := range []struct {
		name string
		q    *queueCountsJSON
	}{{"Orchestrator", q.Orchestrator}, {"Worker", q.Worker}} {
		require.NotNil(t, c.q)
		assert.Equal(t, c.q.Ready, num(body, `<tr><td>`+c.name+`</td><td>(\d+)</td>`), "%s ready", c.name)
		assert.Equal(t, c.q.Locked, num(body, `<tr><td>`+c.name+`</td><td>\d+</td><td>(\d+)</td>`), "%s locked", c.name)
		assert.Equal(t, c.q.Delayed, num(body, `<tr><td>`+c.name+`</td><td>\d+</td><td>\d+</td><td>(\d+)</td>`), "%s delayed", c.name)
	}
	assert.EqualValues(t, len(q.Pending), num(body, `Starts stored that no runtime has run yet \((\d+)`), "Pending instances")
	assert.Equal(t, m.TotalInstances, num(body, `<dt>Instances</dt><dd>(\d+)`), "instances")
	assert.Equal(t, m.PendingInstances, num(body, `<dt>Instances</dt><dd>\d+ <span class="meta">\((\d+) Pending`), "Pending")
	assert.Equal(t, m.RunningInstances, num(body, `<dt>Running</dt><dd>(\d+)`), "running")
	assert.Equal(t, m.CompletedInstances, num(body, `<dt>Completed</dt><dd>(\d+)`), "completed")
	assert.Equal(t, m.FailedInstances, num(body, `<dt>Failed</dt><dd>(\d+)`), "failed")
	assert.Equal(t, m.TotalExecutions, num(body, `<dt>Executions</dt><dd>(\d+)`), "executions")
	assert.Equal(t, m.TotalEvents, num(body, `<dt>Events</dt><dd>(\d+)`), "events")

	list := page("/")
	perStatus := map[string]uint64{}
	for _, r := range rows {
		perStatus[r.Status]++
	}
	assert.EqualValues(t, len(rows), num(list, `data-status=""[^>]*>All <span class="count">(\d+)`), "all instances")
	assert.Equal(t, m.TotalInstances, uint64(len(rows)), "list and metrics")
	for _, st := range listStatuses {
		assert.Equal(t, perStatus[st], num(list, `data-status="`+st+`"[^>]*>`+st+` <span class="count">(\d+)`), "status %s", st)
	}
}
