package cdb_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest"
)

// cosmosFactory runs the provider validation suite against the Cosmos DB
// provider: a fresh container per provider, a 1 s lock timeout, long
// polling, and both optional hooks, which write to the container directly.
type cosmosFactory struct{}

var (
	_ providertest.Factory             = cosmosFactory{}
	_ providertest.HistoryCorrupter    = cosmosFactory{}
	_ providertest.AttemptCountReader  = cosmosFactory{}
	_ providertest.LongPollingReporter = cosmosFactory{}
)

// NewProvider returns a provider on a fresh container that has fetched
// once from each queue, as a runtime's dispatchers do when they start: the
// claim of its dispatch slots (a few requests at a provider's first fetch
// of a queue, LeasesInContainer) is behind it, so that the suite's lock
// tests time locks, not the first claim.
func (cosmosFactory) NewProvider(t testing.TB) duroxide.Provider {
	p := newProvider(t, func(c *cdb.Config) { c.LongPollInterval = 50 * time.Millisecond })
	ctx := context.Background()
	_, err := p.FetchOrchestrationItem(ctx, time.Second, 0, nil)
	require.NoError(t, err)
	_, err = p.FetchWorkItem(ctx, time.Second, 0, nil, duroxide.TagFilterDefaultOnly())
	require.NoError(t, err)
	return p
}

func (cosmosFactory) LockTimeout() time.Duration { return time.Second }

// ShortPollThreshold is how fast an empty fetch must come back: one
// cross-partition query, far less on the emulator; a remote account needs
// the network's round trip.
func (cosmosFactory) ShortPollThreshold() time.Duration {
	if env.emu == nil {
		return 2 * time.Second
	}
	return 500 * time.Millisecond
}

func (cosmosFactory) SupportsLongPolling() bool { return true }

// partitionDocs returns every document of instance's partition.
func partitionDocs(ctx context.Context, t testing.TB, p duroxide.Provider, instance, query string) []map[string]any {
	t.Helper()
	c := p.(*cdb.Provider).Container()
	pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString(instance), nil)
	var docs []map[string]any
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var d map[string]any
			require.NoError(t, json.Unmarshal(raw, &d))
			docs = append(docs, d)
		}
	}
	return docs
}

// CorruptInstanceHistory replaces the event data of every history document
// of instance with text that is not an event, as if a newer version had
// written them.
func (cosmosFactory) CorruptInstanceHistory(ctx context.Context, t testing.TB, p duroxide.Provider, instance string) {
	t.Helper()
	c := p.(*cdb.Provider).Container()
	for _, d := range partitionDocs(ctx, t, p, instance, "SELECT * FROM c WHERE c.type = 'history'") {
		d["eventData"] = `{"type":"FutureEventKind","this is":"not a duroxide event"`
		for _, k := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
			delete(d, k)
		}
		b, err := json.Marshal(d)
		require.NoError(t, err)
		_, err = c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(instance), b, nil)
		require.NoError(t, err)
	}
	// Events this provider decoded and holds are not read again; stored
	// history changes only with another process's ack, which this one
	// never decoded.
	cdb.ForgetHeld(p.(*cdb.Provider), instance)
}

// MaxAttemptCount returns the highest attempt count among instance's
// orchestrator-queue messages.
func (cosmosFactory) MaxAttemptCount(ctx context.Context, t testing.TB, p duroxide.Provider, instance string) uint32 {
	t.Helper()
	var n uint32
	for _, d := range partitionDocs(ctx, t, p, instance, "SELECT c.attemptCount FROM c WHERE c.type = 'orch_queue'") {
		if v, ok := d["attemptCount"].(float64); ok && uint32(v) > n {
			n = uint32(v)
		}
	}
	return n
}

// TestCosmosValidation runs duroxide's provider validation suite (ported in
// providertest) against the provider and requires every case to pass.
func TestCosmosValidation(t *testing.T) {
	t.Parallel()
	tally := providertest.RunAll(t, cosmosFactory{})
	require.Zero(t, tally.Failed(), "validation: %s", tally)
	require.Zero(t, tally.Skipped(), "validation: %s", tally)
}
