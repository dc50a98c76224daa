package cdb_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// badInstanceIDs are instance ids no method may accept.
var badInstanceIDs = map[string]string{
	"empty":        "",
	"too long":     strings.Repeat("x", cdb.MaxInstanceIDBytes+1),
	"invalid utf8": "bad-\xff-utf8",
	"reserved":     cdb.LeasePartitionKey,
}

// requireNoCall runs fn, which must not panic, and requires a permanent
// ProviderError from it.
func requireRefused(t *testing.T, what string, fn func() error) {
	t.Helper()
	var err error
	require.NotPanics(t, func() { err = fn() }, what)
	requirePermanent(t, err, what)
}

// containerDocs returns every document of the provider's container.
func containerDocs(ctx context.Context, t *testing.T, p *cdb.Provider) int {
	t.Helper()
	pager := p.Container().NewQueryItemsPager("SELECT c.id FROM c", azNoPartition(), nil)
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		n += len(page.Items)
	}
	return n
}

// TestBadInstanceIDs passes each bad instance id to every method that
// takes one, directly or inside a work item, and requires a permanent
// ProviderError and nothing written.
func TestBadInstanceIDs(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const good = "good"
	startAndAckFirst(t, p, good)
	before := containerDocs(ctx, t, p)

	for name, bad := range badInstanceIDs {
		t.Run(name, func(t *testing.T) {
			act := activity(bad, 2)
			calls := map[string]func() error{
				"EnqueueForOrchestrator": func() error { return p.EnqueueForOrchestrator(ctx, raised(bad, "e", "d"), 0) },
				"EnqueueForWorker":       func() error { return p.EnqueueForWorker(ctx, act) },
				"Read":                   func() error { _, err := p.Read(ctx, bad); return err },
				"ReadWithExecution":      func() error { _, err := p.ReadWithExecution(ctx, bad, 1); return err },
				"AppendWithExecution": func() error {
					return p.AppendWithExecution(ctx, bad, 1, []duroxide.Event{started(bad)})
				},
				"GetCustomStatus":            func() error { _, err := p.GetCustomStatus(ctx, bad, 0); return err },
				"GetKVValue":                 func() error { _, _, err := p.GetKVValue(ctx, bad, "k"); return err },
				"GetKVAllValues":             func() error { _, err := p.GetKVAllValues(ctx, bad); return err },
				"GetInstanceStats":           func() error { _, err := p.GetInstanceStats(ctx, bad); return err },
				"ListExecutions":             func() error { _, err := p.ListExecutions(ctx, bad); return err },
				"ReadHistory":                func() error { _, err := p.ReadHistory(ctx, bad); return err },
				"ReadHistoryWithExecutionID": func() error { _, err := p.ReadHistoryWithExecutionID(ctx, bad, 1); return err },
				"LatestExecutionID":          func() error { _, err := p.LatestExecutionID(ctx, bad); return err },
				"GetInstanceInfo":            func() error { _, err := p.GetInstanceInfo(ctx, bad); return err },
				"GetExecutionInfo":           func() error { _, err := p.GetExecutionInfo(ctx, bad, 1); return err },
				"GetParentID":                func() error { _, _, err := p.GetParentID(ctx, bad); return err },
				"DeleteInstancesAtomic":      func() error { _, err := p.DeleteInstancesAtomic(ctx, []string{good, bad}, true); return err },
				"DeleteInstance":             func() error { _, err := p.DeleteInstance(ctx, bad, true); return err },
				"PruneExecutions": func() error {
					_, err := p.PruneExecutions(ctx, bad, duroxide.PruneOptions{})
					return err
				},
			}
			for what, fn := range calls {
				requireRefused(t, what, fn)
			}
		})
	}
	assert.Equal(t, before, containerDocs(ctx, t, p), "nothing was written")
	history, err := p.Read(ctx, good)
	require.NoError(t, err)
	assert.Len(t, history, 1, "the good instance was not deleted")
}

// TestBadItemsInAcks passes work items and events without a kind, or
// naming a bad instance, to the acks, and requires a permanent error,
// nothing written and the lock still held.
func TestBadItemsInAcks(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "bad-items"
	item, w := lockTurnAndWork(t, p, inst)
	act := activity(inst, 2)
	before := containerDocs(ctx, t, p)

	ev := duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "d"})
	ack := func(delta []duroxide.Event, workers, orchs []duroxide.WorkItem) func() error {
		return func() error {
			return p.AckOrchestrationItem(ctx, item.LockToken, 1, delta, workers, orchs, duroxide.ExecutionMetadata{}, nil)
		}
	}
	requireRefused(t, "WorkItem{} to EnqueueForOrchestrator", func() error { return p.EnqueueForOrchestrator(ctx, duroxide.WorkItem{}, 0) })
	requireRefused(t, "WorkItem{} to EnqueueForWorker", func() error { return p.EnqueueForWorker(ctx, duroxide.WorkItem{}) })
	requireRefused(t, "Event{} in a delta", ack([]duroxide.Event{{EventID: 2, InstanceID: inst, ExecutionID: 1}}, nil, nil))
	requireRefused(t, "Event{} to AppendWithExecution", func() error {
		return p.AppendWithExecution(ctx, inst, 1, []duroxide.Event{{EventID: 9, InstanceID: inst, ExecutionID: 1}})
	})
	requireRefused(t, "WorkItem{} as a worker item", ack([]duroxide.Event{ev}, []duroxide.WorkItem{{}}, nil))
	requireRefused(t, "WorkItem{} as an orchestrator item", ack([]duroxide.Event{ev}, nil, []duroxide.WorkItem{{}}))
	requireRefused(t, "an activity as an orchestrator item", ack([]duroxide.Event{ev}, nil, []duroxide.WorkItem{act}))
	requireRefused(t, "event id 0", ack([]duroxide.Event{duroxide.NewEvent(0, inst, 1, nil, duroxide.ExternalEvent{Name: "e"})}, nil, nil))
	requireRefused(t, "execution id 0", func() error {
		return p.AckOrchestrationItem(ctx, item.LockToken, 0, []duroxide.Event{ev}, nil, nil, duroxide.ExecutionMetadata{}, nil)
	})
	requireRefused(t, "WorkItem{} as a completion", func() error { return p.AckWorkItem(ctx, w.LockToken, &duroxide.WorkItem{}) })
	requireRefused(t, "a start as a completion", func() error { return p.AckWorkItem(ctx, w.LockToken, &duroxide.WorkItem{Kind: startItem(inst).Kind}) })
	for name, bad := range badInstanceIDs {
		badAct := duroxide.WorkItem{Kind: duroxide.ActivityExecuteItem{Instance: bad, ExecutionID: 1, ID: 2, Name: "A", Input: "i"}}
		requireRefused(t, name+" worker item", ack([]duroxide.Event{ev}, []duroxide.WorkItem{badAct}, nil))
		requireRefused(t, name+" orchestrator item", ack([]duroxide.Event{ev}, nil, []duroxide.WorkItem{raised(bad, "e", "d")}))
		done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: bad, ExecutionID: 1, ID: 2, Result: "r"}}
		requireRefused(t, name+" completion", func() error { return p.AckWorkItem(ctx, w.LockToken, &done) })
	}
	assert.Equal(t, before, containerDocs(ctx, t, p), "nothing was written")

	require.NoError(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, longLock), "the orchestration lock is still held")
	_, err := p.RenewWorkItemLock(ctx, w.LockToken, longLock)
	require.NoError(t, err, "the work item lock is still held")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{ev}, nil, nil, duroxide.ExecutionMetadata{}, nil))
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))
}

// TestEnormousKVValue sets a KV value larger than an item in a turn:
// a permanent error with nothing written and the lock still held; then
// 2.5 MB of KV values in one turn, more than an item, which are stored
// across pages.
func TestEnormousKVValue(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "kv-huge"
	startAndAckFirst(t, p, inst)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, raised(inst, "e", "d"), 0))
	item, err := fetchInstance(ctx, p, inst)
	require.NoError(t, err)
	before := containerDocs(ctx, t, p)
	// duroxide's runtime enforces MaxKVValueBytes; what reaches the
	// provider beyond that must still fail cleanly when it cannot be stored.
	set := duroxide.NewEvent(2, inst, 1, nil, duroxide.KeyValueSet{Key: "k", Value: strings.Repeat("v", 3_000_000), LastUpdatedAtMs: 1})
	err = p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{set}, nil, nil, duroxide.ExecutionMetadata{}, nil)
	requirePermanent(t, err, "a 3 MB KV value")
	many := make([]duroxide.Event, 0, 5)
	for i := 0; i < 5; i++ {
		many = append(many, duroxide.NewEvent(uint64(2+i), inst, 1, nil, duroxide.KeyValueSet{Key: string(rune('a' + i)), Value: strings.Repeat("v", 500_000), LastUpdatedAtMs: 1}))
	}
	assert.Equal(t, before, containerDocs(ctx, t, p), "nothing was written")
	_, ok, err := p.GetKVValue(ctx, inst, "k")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, p.RenewOrchestrationItemLock(ctx, item.LockToken, longLock), "the lock is still held")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, many, nil, nil, duroxide.ExecutionMetadata{}, nil), "2.5 MB of KV values in one instance")
	all, err := p.GetKVAllValues(ctx, inst)
	require.NoError(t, err)
	assert.Len(t, all, 5)
	assert.Equal(t, strings.Repeat("v", 500_000), all["e"])
}

// TestBadLockTokens passes malformed, foreign and unknown lock
// tokens to every method that takes one: a permanent ProviderError, no
// panic, nothing written.
func TestBadLockTokens(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	p, _ := c.process(t, nil)
	ctx := context.Background()
	const inst = "tokens"
	item, w := lockTurnAndWork(t, p, inst)
	before := containerDocs(ctx, t, p)

	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	lockID := strings.Repeat("a", 32)
	orchParts := strings.Split(item.LockToken, ".")
	workParts := strings.Split(w.LockToken, ".")
	tokens := map[string]string{
		"empty":                     "",
		"garbage":                   "garbage",
		"dots":                      "...",
		"bad base64":                "o.!!!." + lockID,
		"padded base64":             "o." + base64.URLEncoding.EncodeToString([]byte("tokens!")) + "." + lockID,
		"short lock id":             "o." + b64(inst) + ".abc",
		"upper-case lock id":        "o." + b64(inst) + "." + strings.ToUpper(strings.Repeat("ab", 16)),
		"quote in lock id":          "o." + b64(inst) + "." + strings.Repeat("a", 31) + "'",
		"empty instance":            "o.." + lockID,
		"invalid utf8 instance":     "o." + b64("\xff\xfe") + "." + lockID,
		"too long instance":         "o." + b64(strings.Repeat("x", cdb.MaxInstanceIDBytes+1)) + "." + lockID,
		"unknown instance":          "o." + b64("nobody") + "." + lockID,
		"unknown lock":              "o." + orchParts[1] + "." + lockID,
		"worker token":              w.LockToken,
		"extra part":                item.LockToken + ".x",
		"worker: unknown lock":      "w." + workParts[1] + "." + workParts[2] + "." + lockID,
		"worker: bad doc id":        "w." + workParts[1] + ".instance." + workParts[3],
		"worker: quote doc id":      "w." + workParts[1] + ".wq-'x." + workParts[3],
		"worker: invalid utf8":      "w." + b64("\xff") + "." + workParts[2] + "." + workParts[3],
		"worker: too long instance": "w." + b64(strings.Repeat("x", cdb.MaxInstanceIDBytes+1)) + "." + workParts[2] + "." + workParts[3],
		"worker: other instance":    "w." + b64("nobody") + "." + workParts[2] + "." + workParts[3],
		"orchestration token":       item.LockToken,
	}
	ev := []duroxide.Event{duroxide.NewEvent(2, inst, 1, nil, duroxide.ExternalEvent{Name: "e", Data: "d"})}
	done := duroxide.WorkItem{Kind: duroxide.ActivityCompletedItem{Instance: inst, ExecutionID: 1, ID: 2, Result: "r"}}
	for name, tok := range tokens {
		orchestration := !strings.HasPrefix(name, "worker") && name != "orchestration token"
		work := name != "worker token"
		if orchestration {
			requireRefused(t, name+": ack", func() error {
				return p.AckOrchestrationItem(ctx, tok, 1, ev, nil, nil, duroxide.ExecutionMetadata{}, nil)
			})
			requireRefused(t, name+": renew", func() error { return p.RenewOrchestrationItemLock(ctx, tok, longLock) })
			requireRefused(t, name+": abandon", func() error { return p.AbandonOrchestrationItem(ctx, tok, 0, false) })
		}
		if work {
			requireRefused(t, name+": work ack", func() error { return p.AckWorkItem(ctx, tok, &done) })
			requireRefused(t, name+": work renew", func() error { _, err := p.RenewWorkItemLock(ctx, tok, longLock); return err })
			requireRefused(t, name+": work abandon", func() error { return p.AbandonWorkItem(ctx, tok, 0, false) })
		}
	}
	assert.Equal(t, before, containerDocs(ctx, t, p), "nothing was written")
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, ev, nil, nil, duroxide.ExecutionMetadata{}, nil), "the real lock still works")
	require.NoError(t, p.AckWorkItem(ctx, w.LockToken, &done))
}
