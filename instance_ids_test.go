package cdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// TestAnyInstanceIDRoundTrips runs a whole orchestration, with a session
// activity, KV and custom status, for instance ids Cosmos DB would refuse in
// a document id (/ \ ? #), unicode ones, and ids of the longest accepted
// length, and reads everything back.
func TestAnyInstanceIDRoundTrips(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	ids := []string{
		`orders/2024\eu?x=1#frag`,
		"ünïcødé-订单-🚀",
		"quote'\"and space ",
		strings.Repeat("λ", cdb.MaxInstanceIDBytes/2), // 2048 bytes of UTF-8
	}
	for _, id := range ids {
		require.NoError(t, helloWorld(ctx, p, id, nil), "instance id of %d bytes", len(id))
		history, err := p.Read(ctx, id)
		require.NoError(t, err)
		require.Len(t, history, 4)
		assert.Equal(t, id, history[0].InstanceID)
		info, err := p.GetInstanceInfo(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, id, info.InstanceID)
		assert.Equal(t, duroxide.StatusCompleted, info.Status)
	}
	listed, err := p.ListInstances(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, ids, listed)

	// KV, custom status and sessions with awkward ids too.
	id := ids[0]
	require.NoError(t, p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{Kind: duroxide.ExternalRaisedItem{Instance: id, Name: "e", Data: "d"}}, 0))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	require.Equal(t, id, item.Instance)
	session := `sess/ion\?#` + strings.Repeat("s", 300)
	events := []duroxide.Event{
		duroxide.NewEvent(5, id, 1, nil, duroxide.KeyValueSet{Key: "k/ey#?", Value: "v", LastUpdatedAtMs: 1}),
		duroxide.NewEvent(6, id, 1, nil, duroxide.CustomStatusUpdated{Status: duroxide.StringPtr("busy")}),
	}
	act := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 7, Name: "a", Input: "i", SessionID: &session}}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, []duroxide.WorkItem{act}, nil, duroxide.ExecutionMetadata{}, nil))
	v, ok, err := p.GetKVValue(ctx, id, "k/ey#?")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "v", v)
	cs, err := p.GetCustomStatus(ctx, id, 0)
	require.NoError(t, err)
	require.NotNil(t, cs)
	assert.Equal(t, "busy", *cs.Status)
	w, err := p.FetchWorkItem(ctx, longLock, 0, &duroxide.SessionFetchConfig{OwnerID: "owner/#1", LockTimeout: longLock}, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	require.NotNil(t, w)
	assert.Equal(t, session, *w.Item.Kind.(duroxide.ActivityExecuteItem).SessionID)
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, nil))
}

// TestTooLongInstanceIDRejected checks that an instance id longer than a
// partition key value may be is a permanent error with nothing written.
func TestTooLongInstanceIDRejected(t *testing.T) {
	p := newProvider(t, nil)
	ctx := context.Background()
	id := strings.Repeat("x", cdb.MaxInstanceIDBytes+1)
	var pe *duroxide.ProviderError
	err := p.EnqueueForOrchestrator(ctx, startItem(id), 0)
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.False(t, pe.Retryable)
	err = p.EnqueueForWorker(ctx, duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: id, ExecutionID: 1, ID: 1}})
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.False(t, pe.Retryable)
	err = p.AppendWithExecution(ctx, id, 1, []duroxide.Event{started(id)})
	require.True(t, errors.As(err, &pe), "%v", err)
	_, err = p.Read(ctx, id)
	require.True(t, errors.As(err, &pe), "%v", err)

	// A turn that would start a child with such an id writes nothing.
	require.NoError(t, p.EnqueueForOrchestrator(ctx, startItem("parent"), 0))
	item, err := p.FetchOrchestrationItem(ctx, longLock, 0, nil)
	require.NoError(t, err)
	child := duroxide.WorkItem{Kind: duroxide.StartOrchestrationItem{Instance: id, Orchestration: "Child", ExecutionID: 1}}
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started("parent")}, nil, []duroxide.WorkItem{child}, runningMetadata(), nil)
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.False(t, pe.Retryable)
	history, err := p.Read(ctx, "parent")
	require.NoError(t, err)
	assert.Empty(t, history, "the refused turn left no history")

	pager := p.Container().NewQueryItemsPager("SELECT c.id FROM c WHERE c.type IN ('history', 'orch_queue', 'worker_queue', 'outbox_intent') AND c.instanceId != 'parent'", azcosmos.NewPartitionKey(), nil)
	page, err := pager.NextPage(ctx)
	require.NoError(t, err)
	assert.Empty(t, page.Items, "nothing was written for the long id")
}
