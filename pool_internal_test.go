package cdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unit tests of the candidate pool (pool.go): its answers only decide
// which candidate a fetch tries first and whether it queries, so what is
// checked here is that it hands each candidate to one fetch at a time,
// oldest first, and that a candidate query's older rows never undo what
// this process did while the query ran.

// testPool returns a pool with one view of every slot.
func testPool(t *testing.T) (*candidatePool, *poolView) {
	t.Helper()
	p := newCandidatePool(time.Hour)
	return p, p.view("all", nil, nil)
}

func orchEntry(instance string, enqueuedAt int64) poolEntry {
	return poolEntry{key: instance, instance: instance, slot: DispatchSlot(instance), visibleAt: enqueuedAt, enqueuedAt: enqueuedAt}
}

func TestPoolPicksOldestAndClaims(t *testing.T) {
	p, v := testPool(t)
	p.hint(orchEntry("b", 20))
	p.hint(orchEntry("a", 10))
	p.hint(orchEntry("c", 30))
	p.hint(orchEntry("later", 1_000)) // not visible at 100

	first, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "a", first.instance, "oldest first")
	second, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "b", second.instance, "a claimed candidate is not handed out again")

	p.release(first, true) // locked: forgotten
	p.release(second, false)
	again, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "b", again.instance, "a released candidate is offered again")
	third, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "c", third.instance)
	_, ok = p.pick(v, 100, "", nil, nil)
	assert.False(t, ok, "nothing else is visible at 100")
	at, ok := p.nextChange(100)
	require.True(t, ok)
	assert.Equal(t, int64(1_000), at, "the next change is when 'later' becomes visible")
}

func TestPoolReleaseKeepsAHintNewerThanThePick(t *testing.T) {
	p, v := testPool(t)
	p.hint(orchEntry("a", 10))
	c, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	p.hint(orchEntry("a", 50)) // a new message while the fetch tried a
	p.release(c, true)
	got, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok, "the new message's hint survives the release of the older candidate")
	assert.Equal(t, "a", got.instance)
}

func TestPoolRefreshKeepsWhatChangedWhileItRan(t *testing.T) {
	p, v := testPool(t)
	p.hint(orchEntry("gone", 10))  // consumed elsewhere: the query will not return it
	p.hint(orchEntry("taken", 20)) // locked (and acked) by this process while the query runs
	taken, ok := p.pick(v, 100, "", nil, func(e *poolEntry) bool { return e.instance == "taken" })
	require.True(t, ok)

	start := p.beginRefresh()
	p.release(taken, true)
	p.hint(orchEntry("new", 30)) // written by this process after the query started
	rows := []poolEntry{orchEntry("taken", 20), orchEntry("foreign", 25)}
	p.refreshed(v, start, time.Now(), 100, rows, false, map[string]instanceHold{}, nil)

	var got []string
	for {
		c, ok := p.pick(v, 100, "", nil, nil)
		if !ok {
			break
		}
		got = append(got, c.instance)
	}
	assert.Equal(t, []string{"foreign", "new"}, got,
		"the query's rows replace the old entries, except the one this process locked and the one it wrote since")
	assert.True(t, p.fresh(v))
}

func TestPoolRefreshRecordsLockedInstances(t *testing.T) {
	p, v := testPool(t)
	start := p.beginRefresh()
	p.refreshed(v, start, time.Now(), 100, []poolEntry{orchEntry("busy", 10), orchEntry("free", 20)}, false,
		map[string]instanceHold{"busy": {until: 5_000, slot: DispatchSlot("busy")}}, nil)
	c, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "free", c.instance, "an instance the query saw locked is not tried")
	p.release(c, true)
	_, ok = p.pick(v, 100, "", nil, nil)
	assert.False(t, ok)

	start = p.beginRefresh()
	p.refreshed(v, start, time.Now(), 200, []poolEntry{orchEntry("busy", 10)}, false, map[string]instanceHold{}, nil)
	c, ok = p.pick(v, 200, "", nil, nil)
	require.True(t, ok, "a later query that no longer sees the lock frees the instance")
	assert.Equal(t, "busy", c.instance)
}

func TestPoolSkipScopes(t *testing.T) {
	p, v := testPool(t)
	p.hint(orchEntry("pinned", 10))
	p.skip("pinned", 1_000, "filter A")
	_, ok := p.pick(v, 100, "filter A", nil, nil)
	assert.False(t, ok, "skipped for the fetches of the filter that excluded it")
	c, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok, "other fetches still try it")
	p.release(c, false)

	p.skip("pinned", 1_000, "")
	_, ok = p.pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a skip for every fetch")
	c, ok = p.pick(v, 1_000, "filter A", nil, nil)
	assert.True(t, ok, "skips end")
	p.release(c, false)

	p.skip("pinned", 1_000, "filter A")
	p.unlock("pinned")
	_, ok = p.pick(v, 100, "filter A", nil, nil)
	assert.True(t, ok, "a turn this process acked ends the skips")
}

func TestPoolNewMessageEndsTheWaitForAStart(t *testing.T) {
	p, v := testPool(t)
	p.hint(orchEntry("early", 10)) // an event raised before the start
	p.skip("early", 1_000, "")     // the fetch found no start
	_, ok := p.pick(v, 100, "", nil, nil)
	require.False(t, ok)
	p.hint(orchEntry("early", 50)) // the start
	c, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok, "the new message is tried at once")
	assert.Equal(t, "early", c.instance)
}

func TestPoolSessionOwnership(t *testing.T) {
	p, v := testPool(t)
	sid := "s1"
	e := poolEntry{key: workKey("i", "m1"), instance: "i", id: "m1", slot: DispatchSlot("i"), worker: true, sessionID: &sid}
	p.hint(e)
	_, ok := p.pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a session item is not offered to a fetch without session routing")

	p.setSession(workCandidate{InstanceID: "i", SessionID: &sid, OwnerID: "worker-B", LockedUntil: 1_000})
	me := "worker-A"
	_, ok = p.pick(v, 100, "", &me, nil)
	assert.False(t, ok, "the session is active under another owner")
	other := "worker-B"
	c, ok := p.pick(v, 100, "", &other, nil)
	require.True(t, ok, "its owner takes it")
	p.release(c, false)
	_, ok = p.pick(v, 1_000, "", &me, nil)
	assert.True(t, ok, "an expired session can be claimed")
}

func TestPoolViewsAreBounded(t *testing.T) {
	p := newCandidatePool(time.Hour)
	for i := 0; i < 3*maxPoolViews; i++ {
		p.view(string(rune('a'+i%26))+string(rune(i)), NewSlotLease([]uint8{uint8(i)}, nil), nil)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.LessOrEqual(t, len(p.views), maxPoolViews)
}

func TestCompleteHistory(t *testing.T) {
	docs := func(ids ...uint64) []historyDoc {
		var out []historyDoc
		for _, id := range ids {
			out = append(out, historyDoc{EventID: id})
		}
		return out
	}
	assert.True(t, completeHistory(nil, 0, 0))
	assert.True(t, completeHistory(docs(1, 2, 3), 0, 3))
	assert.True(t, completeHistory(docs(4, 5), 3, 5), "the events above what is held")
	assert.True(t, completeHistory(docs(3, 1, 2, 4), 0, 3), "staged events above the watermark do not count")
	assert.False(t, completeHistory(docs(1, 3), 0, 3), "a missing event")
	assert.False(t, completeHistory(docs(5, 6), 0, 6), "ids that do not start at 1 (an append with gaps) are read again")
}

func workEntry(instance, id string, visibleAt int64) poolEntry {
	return poolEntry{key: workKey(instance, id), instance: instance, id: id, slot: DispatchSlot(instance), visibleAt: visibleAt, enqueuedAt: visibleAt, worker: true}
}

func TestPoolEchoOfAMessageThisProcessLockedIsNoCandidate(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.lockedMessage("i", "m1", 5_000) // this process locked m1 until 5,000 ms

	p.echo(workEntry("i", "m1", 10), 0, 100) // the change feed's copy from before the lock
	_, ok := p.pick(v, 100, "", nil, nil)
	assert.False(t, ok, "the echo of a message this process locked is not offered")
	late := int64(5_000 + knownEchoGraceMs + 1)
	p.echo(workEntry("i", "m1", 10), 0, late)
	_, ok = p.pick(v, late, "", nil, nil)
	assert.True(t, ok, "a copy delivered long after the lock and its grace is a candidate again")
}

func TestPoolEchoOfAMessageThisProcessWroteAddsNothing(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.clock = func() int64 { return 100 }
	p.hint(workEntry("i", "m1", 10)) // written by this process
	c, ok := p.pick(v, 100, "", nil, nil)
	require.True(t, ok)
	p.release(c, true) // locked by a fetch (and acked)
	p.echo(workEntry("i", "m1", 10), 0, 150)
	_, ok = p.pick(v, 150, "", nil, nil)
	assert.False(t, ok, "the change feed's copy of a message this process wrote brings nothing back")

	p.echo(workEntry("i", "m2", 10), 0, 150) // another process's message
	c, ok = p.pick(v, 150, "", nil, nil)
	require.True(t, ok, "a message this process did not know is a candidate at once")
	assert.Equal(t, "m2", c.id)
}

func TestPoolEchoShowingAnotherLockWaitsForItsExpiry(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.echo(workEntry("i", "m2", 10), 3_000, 100) // another process holds m2 until 3,000 ms
	_, ok := p.pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a message locked elsewhere is not tried before its lock expires")
	c, ok := p.pick(v, 3_000, "", nil, nil)
	require.True(t, ok, "it is tried once the lock expired")
	assert.Equal(t, "m2", c.id)
}
