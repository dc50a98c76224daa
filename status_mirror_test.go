package cdb_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// infoChecker compares GetInstanceInfo with the two-read answer
// (cdb.InstanceInfoFromExecution) and counts GetInstanceInfo's document
// requests as its client sends them.
type infoChecker struct {
	t  *testing.T
	p  *cdb.Provider
	tr *hookTransport
}

// check requires GetInstanceInfo's answer for instance to equal the
// two-read answer and to have cost reads document requests, and returns it.
func (c infoChecker) check(instance string, reads int) duroxide.InstanceInfo {
	c.t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var sent []string
	c.tr.setHook(func(r *http.Request) {
		if strings.Contains(r.URL.Path, "/docs") {
			mu.Lock()
			sent = append(sent, r.Method+" "+r.URL.Path)
			mu.Unlock()
		}
	})
	got, err := c.p.GetInstanceInfo(ctx, instance)
	c.tr.setHook(nil)
	require.NoError(c.t, err)
	want, err := cdb.InstanceInfoFromExecution(ctx, c.p, instance)
	require.NoError(c.t, err)
	require.Equal(c.t, want, got, "GetInstanceInfo differs from the two-read answer")
	mu.Lock()
	defer mu.Unlock()
	assert.Len(c.t, sent, reads, "document requests of GetInstanceInfo(%s): %v", instance, sent)
	return got
}

// newInfoChecker returns a checker on a private emulator whose provider
// makes no background requests.
func newInfoChecker(t *testing.T) infoChecker {
	p, tr := newCluster(t).process(t, func(c *cdb.Config) {
		c.LongPollInterval, c.DisableChangeFeedWakeups = time.Hour, true // no change-feed read among the counted ones
	})
	return infoChecker{t: t, p: p, tr: tr}
}

// terminal returns metadata that ends the execution with status and output.
func terminal(status, output string) duroxide.ExecutionMetadata {
	return duroxide.ExecutionMetadata{Status: duroxide.StringPtr(status), Output: duroxide.StringPtr(output)}
}

// TestInstanceInfoOneRead requires GetInstanceInfo to give the two-read
// answer with 1 point read for running, completed, failed,
// continued-as-new and sub-orchestration instances, including turns whose
// metadata leave the status alone.
func TestInstanceInfoOneRead(t *testing.T) {
	c := newInfoChecker(t)
	ctx := context.Background()
	p := c.p

	t.Run("running then completed", func(t *testing.T) {
		c.t = t
		startAndAckFirst(t, p, "mirror-done")
		info := c.check("mirror-done", 1)
		assert.Equal(t, duroxide.StatusRunning, info.Status)
		assert.Nil(t, info.Output)

		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised("mirror-done", "e", "d"), 0))
		ackNextTurn(t, p, "mirror-done", []duroxide.Event{externalEvent("mirror-done", 2, "d")})
		assert.Equal(t, duroxide.StatusRunning, c.check("mirror-done", 1).Status, "after a turn that kept the status")

		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised("mirror-done", "e", "d2"), 0))
		item, err := fetchInstance(ctx, p, "mirror-done")
		require.NoError(t, err)
		done := duroxide.NewEvent(3, "mirror-done", 1, nil, duroxide.OrchestrationCompleted{Output: `"done"`})
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{done}, nil, nil, terminal(duroxide.StatusCompleted, `"done"`), nil))
		info = c.check("mirror-done", 1)
		assert.Equal(t, duroxide.StatusCompleted, info.Status)
		require.NotNil(t, info.Output)
		assert.Equal(t, `"done"`, *info.Output)

		// A message after completion, acked without metadata.
		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised("mirror-done", "late", "x"), 0))
		ackNextTurn(t, p, "mirror-done", nil)
		assert.Equal(t, duroxide.StatusCompleted, c.check("mirror-done", 1).Status, "after a late message")
	})

	t.Run("failed", func(t *testing.T) {
		c.t = t
		startAndAckFirst(t, p, "mirror-failed")
		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised("mirror-failed", "e", "d"), 0))
		item, err := fetchInstance(ctx, p, "mirror-failed")
		require.NoError(t, err)
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{externalEvent("mirror-failed", 2, "d")}, nil, nil, terminal(duroxide.StatusFailed, "boom"), nil))
		info := c.check("mirror-failed", 1)
		assert.Equal(t, duroxide.StatusFailed, info.Status)
		require.NotNil(t, info.Output)
		assert.Equal(t, "boom", *info.Output)
	})

	t.Run("continued as new", func(t *testing.T) {
		c.t = t
		const id = "mirror-can"
		startAndAckFirst(t, p, id)
		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(id, "e", "d"), 0))
		item, err := fetchInstance(ctx, p, id)
		require.NoError(t, err)
		can := duroxide.WorkItem{Kind: duroxide.ContinueAsNewItem{Instance: id, Orchestration: helloOrch, Input: `"next"`, Version: duroxide.StringPtr(helloVersion)}}
		canEvent := duroxide.NewEvent(2, id, 1, nil, duroxide.OrchestrationContinuedAsNew{Input: `"next"`})
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{canEvent}, nil, []duroxide.WorkItem{can}, terminal(duroxide.StatusContinuedAsNew, `"next"`), nil))
		info := c.check(id, 1)
		assert.Equal(t, duroxide.StatusContinuedAsNew, info.Status)
		assert.Equal(t, uint64(1), info.CurrentExecutionID)

		item, err = fetchInstance(ctx, p, id)
		require.NoError(t, err)
		start2 := duroxide.NewEvent(1, id, 2, nil, duroxide.OrchestrationStarted{Name: helloOrch, Version: helloVersion, Input: `"next"`})
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 2, []duroxide.Event{start2}, nil, nil, runningMetadata(), nil))
		info = c.check(id, 1)
		assert.Equal(t, duroxide.StatusRunning, info.Status)
		assert.Equal(t, uint64(2), info.CurrentExecutionID)
		assert.Nil(t, info.Output)
	})

	t.Run("sub-orchestration", func(t *testing.T) {
		c.t = t
		const parent, child = "mirror-parent", "mirror-child"
		require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem(parent), 0))
		item, err := fetchInstance(ctx, p, parent)
		require.NoError(t, err)
		sub := duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{
			Instance: child, Orchestration: helloOrch, Input: `"c"`, Version: duroxide.StringPtr(helloVersion),
			ParentInstance: duroxide.StringPtr(parent), ParentID: duroxide.Uint64Ptr(2), ExecutionID: 1,
		}}
		scheduled := duroxide.NewEvent(2, parent, 1, nil, duroxide.SubOrchestrationScheduled{Name: helloOrch, Instance: child, Input: `"c"`})
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(parent), scheduled}, nil, []duroxide.WorkItem{sub}, runningMetadata(), nil))

		item, err = fetchInstance(ctx, p, child)
		require.NoError(t, err)
		md := runningMetadata()
		md.ParentInstanceID = duroxide.StringPtr(parent)
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(child)}, nil, nil, md, nil))
		info := c.check(child, 1)
		require.NotNil(t, info.ParentInstanceID)
		assert.Equal(t, parent, *info.ParentInstanceID)
		assert.Equal(t, duroxide.StatusRunning, info.Status)
		c.check(parent, 1)
	})
}

// TestInstanceInfoFallsBack requires GetInstanceInfo to read the execution
// document, and still give the two-read answer, when the instance document
// does not carry the output: a terminal output too large to copy, and an
// instance document written before the copy existed.
func TestInstanceInfoFallsBack(t *testing.T) {
	c := newInfoChecker(t)
	ctx := context.Background()
	p := c.p

	complete := func(id, output string) {
		startAndAckFirst(t, p, id)
		require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(id, "e", "d"), 0))
		item, err := fetchInstance(ctx, p, id)
		require.NoError(t, err)
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{externalEvent(id, 2, "d")}, nil, nil, terminal(duroxide.StatusCompleted, output), nil))
	}

	large := `"` + strings.Repeat("x", 20<<10) + `"`
	complete("mirror-large", large)
	info := c.check("mirror-large", 2)
	require.NotNil(t, info.Output)
	assert.Equal(t, large, *info.Output)

	// Documents as an older version wrote them: no statusExecutionId or
	// output on the instance document.
	stripMirror := func(id string) {
		pk := azcosmos.NewPartitionKeyString(id)
		resp, err := p.Container().ReadItem(ctx, pk, "instance", nil)
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(resp.Value, &doc))
		require.Contains(t, doc, "statusExecutionId", "the ack mirrored the execution")
		delete(doc, "statusExecutionId")
		delete(doc, "output")
		body, err := json.Marshal(doc)
		require.NoError(t, err)
		_, err = p.Container().ReplaceItem(ctx, pk, "instance", body, nil)
		require.NoError(t, err)
	}
	complete("mirror-legacy-done", `"old"`)
	stripMirror("mirror-legacy-done")
	info = c.check("mirror-legacy-done", 2)
	assert.Equal(t, duroxide.StatusCompleted, info.Status)
	require.NotNil(t, info.Output)
	assert.Equal(t, `"old"`, *info.Output)

	startAndAckFirst(t, p, "mirror-legacy-running")
	stripMirror("mirror-legacy-running")
	info = c.check("mirror-legacy-running", 1)
	assert.Equal(t, duroxide.StatusRunning, info.Status)

	// The next ack of a legacy running instance that leaves the status
	// alone cannot know the execution's output without a read; a later
	// completion mirrors it again.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised("mirror-legacy-running", "e", "d"), 0))
	ackNextTurn(t, p, "mirror-legacy-running", []duroxide.Event{externalEvent("mirror-legacy-running", 2, "d")})
	assert.Equal(t, duroxide.StatusRunning, c.check("mirror-legacy-running", 1).Status)
}
