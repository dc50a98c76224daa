package cdb_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isBatchIn reports whether req is a transactional batch in instance's
// partition.
func isBatchIn(req *http.Request, instance string) bool {
	return req.Header.Get("x-ms-cosmos-is-batch-request") != "" && req.Header.Get("x-ms-documentdb-partitionkey") == `["`+instance+`"]`
}

// TestAckRetriedAfterARenewalDoesNotRestageTheTurn: a lock renewal that
// lands while a large turn's ack is staging its history (as the runtime's
// renewal does when the ack of a 10,000-activity fan-out outlasts the
// renewal interval under load) changes the instance document's ETag, so
// the final batch is refused (412) and retried under the reloaded lock.
// The retry sends the final batch alone, not the staged batches again
// (issue 26: every retry restaged ~100 batches and took longer than the
// renewal interval that caused the next one), and the turn lands whole:
// the ack takes exactly one batch more than the same ack without the
// renewal.
func TestAckRetriedAfterARenewalDoesNotRestageTheTurn(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p1, tr := c.process(t, nil)
	p2, _ := c.process(t, nil)
	ctx := context.Background()
	const n = 400 // 401 events: 4 batches of history staged before the final batch

	ackCountingBatches := func(inst string, renew bool) int {
		t.Helper()
		require.NoError(t, p1.EnqueueForOrchestrator(ctx, startItem(inst), 0))
		item, err := fetchInstance(ctx, p1, inst)
		require.NoError(t, err)
		require.NotNil(t, item)
		var batches atomic.Int32
		tr.setHook(func(req *http.Request) {
			if !isBatchIn(req, inst) {
				return
			}
			if batches.Add(1) == 1 && renew {
				// Another process renews the lock while the first
				// staged batch is on its way.
				require.NoError(t, p2.RenewOrchestrationItemLock(ctx, item.LockToken, longLock))
			}
		})
		events, acts := fanOutTurn(inst, n)
		require.NoError(t, p1.AckOrchestrationItem(ctx, item.LockToken, 1, events, acts, nil, runningMetadata(), nil))
		tr.setHook(nil)

		history, err := p1.Read(ctx, inst)
		require.NoError(t, err)
		require.Len(t, history, n+1)
		for i, ev := range history {
			require.Equal(t, uint64(i+1), ev.EventID, "history in order, no duplicates")
		}
		return int(batches.Load())
	}

	quiet := ackCountingBatches("quiet", false)
	renewed := ackCountingBatches("renewed", true)
	assert.Equal(t, quiet+1, renewed, "the retry after the renewal sends only the final batch again (quiet ack: %d batches)", quiet)

	depths, err := p1.GetQueueDepths(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2*n), depths.WorkerQueue, "every activity of both turns in the worker queue once")
}
