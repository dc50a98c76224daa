package cdb

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func historyOps(n, size int) []batchOp {
	ops := make([]batchOp, n)
	for i := range ops {
		id := historyDocID(1, uint64(i+1))
		ops[i] = upsertOp(id, []byte(`{"id":"`+id+`","eventData":"`+strings.Repeat("e", size)+`"}`))
	}
	return ops
}

func queueWrites(target string, n, size int) []queueWrite {
	q := make([]queueWrite, n)
	for i := range q {
		id := workerDocID(1, uint64(i+1))
		q[i] = queueWrite{target: target, id: id, doc: []byte(`{"id":"` + id + `","workItem":"` + strings.Repeat("w", size) + `"}`)}
	}
	return q
}

// checkLimits asserts that every batch of a plan respects the service's
// limits.
func checkLimits(t *testing.T, plan turnPlan) {
	t.Helper()
	for _, b := range append(plan.staged, plan.final) {
		assert.LessOrEqual(t, len(b), maxBatchOps)
		assert.LessOrEqual(t, opsSize(b), maxBatchBytes)
	}
}

// TestPlanTurnSmall checks that a normal turn is one batch, fixed
// operations first.
func TestPlanTurnSmall(t *testing.T) {
	fixed := []batchOp{replaceOp("instance", []byte(`{}`), "e"), deleteOp("oq-1", "")}
	plan, err := planTurn("me", newLockID(), "msg-1", 1, fixed, queueWrites("me", 2, 10), historyOps(3, 10))
	require.NoError(t, err)
	assert.Empty(t, plan.staged)
	assert.Empty(t, plan.intents)
	require.Len(t, plan.final, 7)
	assert.Equal(t, "instance", plan.final[0].id, "the lock-validating operation comes first")
}

// TestPlanTurn300Events checks that 300 events stage the overflow and the
// final batch keeps the fixed operations.
func TestPlanTurn300Events(t *testing.T) {
	fixed := []batchOp{replaceOp("instance", []byte(`{}`), "e")}
	plan, err := planTurn("me", newLockID(), "msg-1", 1, fixed, nil, historyOps(300, 100))
	require.NoError(t, err)
	checkLimits(t, plan)
	n := len(plan.final) - 1
	for _, b := range plan.staged {
		n += len(b)
	}
	assert.Equal(t, 300, n, "every event is written exactly once")
	assert.Equal(t, "instance", plan.final[0].id)
	assert.NotEmpty(t, plan.staged)
}

// TestPlanTurnLargeEvents checks 2.5 MB of events: staged in batches of at
// most 2 MB.
func TestPlanTurnLargeEvents(t *testing.T) {
	fixed := []batchOp{replaceOp("instance", []byte(`{}`), "e")}
	plan, err := planTurn("me", newLockID(), "msg-1", 1, fixed, nil, historyOps(25, 100_000))
	require.NoError(t, err)
	checkLimits(t, plan)
	assert.GreaterOrEqual(t, len(plan.staged), 1)
}

// TestPlanTurnFanOut checks that queue documents beyond one batch travel
// in outbox intents of the final batch, and documents for other instances
// always do.
func TestPlanTurnFanOut(t *testing.T) {
	fixed := []batchOp{replaceOp("instance", []byte(`{}`), "e")}
	queue := append(queueWrites("me", 300, 200), queueWrites("child", 1, 10)...)
	lock := newLockID()
	plan, err := planTurn("me", lock, "msg-1", 42, fixed, queue, historyOps(300, 50))
	require.NoError(t, err)
	checkLimits(t, plan)
	delivered := map[string]string{}
	for _, in := range plan.intents {
		assert.Equal(t, "me", in.InstanceID, "intents live in the source partition")
		assert.Equal(t, int64(42), in.CreatedAt)
		for _, d := range in.Deliveries {
			var h docHeader
			require.NoError(t, json.Unmarshal(d.Document, &h))
			delivered[h.ID] = d.TargetInstanceID
		}
	}
	direct := 0
	for _, o := range plan.final {
		if strings.HasPrefix(o.id, "wq-") {
			direct++
		}
	}
	assert.Equal(t, 301, direct+len(delivered), "every queue document is written once")
	assert.Equal(t, "child", delivered[workerDocID(1, 1)], "the other instance's document is delivered")
	intentOps := 0
	for _, o := range plan.final {
		if strings.HasPrefix(o.id, "intent-"+lock) {
			intentOps++
		}
	}
	assert.Equal(t, len(plan.intents), intentOps, "the intents are in the final batch")
}

// TestPlanTurnTooLarge checks the clear errors for what cannot fit.
func TestPlanTurnTooLarge(t *testing.T) {
	_, err := planTurn("me", newLockID(), "msg-1", 1, nil, nil, historyOps(1, maxItemBytes+1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "limited to")
	fixed := make([]batchOp, maxBatchOps+1)
	for i := range fixed {
		fixed[i] = deleteOp("x", "")
	}
	_, err = planTurn("me", newLockID(), "msg-1", 1, fixed, nil, nil)
	require.Error(t, err)
	_, err = planTurn("me", newLockID(), "msg-1", 1, nil, queueWrites("me", 1, maxItemBytes+1), nil)
	require.Error(t, err)
}
