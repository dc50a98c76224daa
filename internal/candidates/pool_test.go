package candidates

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
func testPool(t *testing.T) (*Pool, *View) {
	t.Helper()
	p := New(hour, testSlot, func() int64 { return 0 })
	return p, p.View("all", true, nil, nil)
}

func orchEntry(instance string, enqueuedAt int64) Entry {
	return Entry{Key: instance, Instance: instance, Slot: testSlot(instance), VisibleAt: enqueuedAt, EnqueuedAt: enqueuedAt}
}

func TestPoolPicksOldestAndClaims(t *testing.T) {
	p, v := testPool(t)
	p.Hint(orchEntry("b", 20))
	p.Hint(orchEntry("a", 10))
	p.Hint(orchEntry("c", 30))
	p.Hint(orchEntry("later", 1_000)) // not visible at 100

	first, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "a", first.Instance, "oldest first")
	second, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "b", second.Instance, "a claimed candidate is not handed out again")

	p.Release(first, true) // locked: forgotten
	p.Release(second, false)
	again, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "b", again.Instance, "a released candidate is offered again")
	third, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "c", third.Instance)
	_, ok = p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok, "nothing else is visible at 100")
	at, ok := p.NextChange(100)
	require.True(t, ok)
	assert.Equal(t, int64(1_000), at, "the next change is when 'later' becomes visible")
}

func TestPoolReleaseKeepsAHintNewerThanThePick(t *testing.T) {
	p, v := testPool(t)
	p.Hint(orchEntry("a", 10))
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	p.Hint(orchEntry("a", 50)) // a new message while the fetch tried a
	p.Release(c, true)
	got, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok, "the new message's hint survives the release of the older candidate")
	assert.Equal(t, "a", got.Instance)
}

func TestPoolRefreshKeepsWhatChangedWhileItRan(t *testing.T) {
	p, v := testPool(t)
	p.Hint(orchEntry("gone", 10))  // consumed elsewhere: the query will not return it
	p.Hint(orchEntry("taken", 20)) // locked (and acked) by this process while the query runs
	taken, ok := p.Pick(v, 100, "", nil, func(e *Entry) bool { return e.Instance == "taken" })
	require.True(t, ok)

	start := p.BeginRefresh()
	p.Release(taken, true)
	p.Hint(orchEntry("new", 30)) // written by this process after the query started
	rows := []Entry{orchEntry("taken", 20), orchEntry("foreign", 25)}
	p.Refreshed(v, start, time.Now(), 100, rows, false, map[string]Hold{}, nil)

	var got []string
	for {
		c, ok := p.Pick(v, 100, "", nil, nil)
		if !ok {
			break
		}
		got = append(got, c.Instance)
	}
	assert.Equal(t, []string{"foreign", "new"}, got,
		"the query's rows replace the old entries, except the one this process locked and the one it wrote since")
	assert.True(t, p.Fresh(v))
}

// TestPoolRefreshRowMergesIntoWhatWasAddedWhileItRan: a change-feed copy
// of a message locked elsewhere (visible only at that lock's expiry) and a
// copy of the instance document showing its lock released, both arriving
// while the query ran, do not cost the instance the visible message the
// query returned (a fetch with a zero poll timeout found nothing then).
func TestPoolRefreshRowMergesIntoWhatWasAddedWhileItRan(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	start := p.BeginRefresh()
	p.Echo(msgEntry("i", "locked-elsewhere", 10, 10), 60_000, 100)
	p.Unlock("i")
	p.Refreshed(v, start, time.Now(), 100, []Entry{msgEntry("i", "visible", 20, 20)}, false, map[string]Hold{}, nil)
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok, "the query's visible message makes the instance a candidate")
	assert.Equal(t, "i", c.Instance)
	assert.ElementsMatch(t, []MsgRef{{ID: "locked-elsewhere", VisibleAt: 60_000}, {ID: "visible", VisibleAt: 20}}, c.Msgs)
}

// TestPoolExpiredLockMakesTheViewStale: a lock the query saw (another
// process's, which may have died) expires without a write; the view is
// stale from then on, and a waiting fetch is woken then, so its messages
// are queried at once instead of when the view's lifetime ends.
func TestPoolExpiredLockMakesTheViewStale(t *testing.T) {
	t.Parallel()
	var now int64 = 100
	p := New(hour, testSlot, func() int64 { return now })
	v := p.View("all", true, nil, nil)
	p.Refreshed(v, p.BeginRefresh(), time.Now(), 100, nil, false, map[string]Hold{"held": {Until: 500, Slot: testSlot("held")}}, nil)
	assert.False(t, p.Stale(v))
	at, ok := p.NextChange(now)
	require.True(t, ok, "the lock's expiry is a change to wake for")
	assert.Equal(t, int64(500), at)
	now = 500
	assert.True(t, p.Stale(v), "the lock expired since the query")
	p.Refreshed(v, p.BeginRefresh(), time.Now(), now, nil, false, map[string]Hold{}, nil)
	assert.False(t, p.Stale(v), "queried after the expiry")
	p.Lock("mine", 900) // this process's lock, released by its ack
	p.Unlock("mine")
	now = 1_000
	assert.False(t, p.Stale(v), "a released lock does not expire")
}

func TestPoolViewLifetimeIsReadAtEachCheck(t *testing.T) {
	t.Parallel()
	ttl := time.Hour
	p := New(func() time.Duration { return ttl }, testSlot, func() int64 { return 0 })
	v := p.View("all", true, nil, nil)
	assert.True(t, p.Stale(v), "a view never queried is stale")
	p.Refreshed(v, p.BeginRefresh(), time.Now().Add(-time.Second), 0, nil, false, map[string]Hold{}, nil)
	assert.True(t, p.Fresh(v))
	assert.False(t, p.Stale(v))
	ttl = 500 * time.Millisecond // the change feed stopped being healthy
	assert.False(t, p.Fresh(v), "a query 1 s old is older than the new lifetime")
	assert.True(t, p.Stale(v))
}

func TestPoolRefreshRecordsLockedInstances(t *testing.T) {
	p, v := testPool(t)
	start := p.BeginRefresh()
	p.Refreshed(v, start, time.Now(), 100, []Entry{orchEntry("busy", 10), orchEntry("free", 20)}, false,
		map[string]Hold{"busy": {Until: 5_000, Slot: testSlot("busy")}}, nil)
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, "free", c.Instance, "an instance the query saw locked is not tried")
	p.Release(c, true)
	_, ok = p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok)

	start = p.BeginRefresh()
	p.Refreshed(v, start, time.Now(), 200, []Entry{orchEntry("busy", 10)}, false, map[string]Hold{}, nil)
	c, ok = p.Pick(v, 200, "", nil, nil)
	require.True(t, ok, "a later query that no longer sees the lock frees the instance")
	assert.Equal(t, "busy", c.Instance)
}

func TestPoolSkipScopes(t *testing.T) {
	p, v := testPool(t)
	p.Hint(orchEntry("pinned", 10))
	p.Skip("pinned", 1_000, "filter A")
	_, ok := p.Pick(v, 100, "filter A", nil, nil)
	assert.False(t, ok, "skipped for the fetches of the filter that excluded it")
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok, "other fetches still try it")
	p.Release(c, false)

	p.Skip("pinned", 1_000, "")
	_, ok = p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a skip for every fetch")
	c, ok = p.Pick(v, 1_000, "filter A", nil, nil)
	assert.True(t, ok, "skips end")
	p.Release(c, false)

	p.Skip("pinned", 1_000, "filter A")
	p.Unlock("pinned")
	_, ok = p.Pick(v, 100, "filter A", nil, nil)
	assert.True(t, ok, "a turn this process acked ends the skips")
}

func TestPoolNewMessageEndsTheWaitForAStart(t *testing.T) {
	p, v := testPool(t)
	p.Hint(orchEntry("early", 10)) // an event raised before the start
	p.Skip("early", 1_000, "")     // the fetch found no start
	_, ok := p.Pick(v, 100, "", nil, nil)
	require.False(t, ok)
	p.Hint(orchEntry("early", 50)) // the start
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok, "the new message is tried at once")
	assert.Equal(t, "early", c.Instance)
}

func TestPoolSessionOwnership(t *testing.T) {
	p, v := testPool(t)
	sid := "s1"
	e := Entry{Key: WorkKey("i", "m1"), Instance: "i", ID: "m1", Slot: testSlot("i"), Worker: true, SessionID: &sid}
	p.Hint(e)
	_, ok := p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a session item is not offered to a fetch without session routing")

	p.SetSession(Row{InstanceID: "i", SessionID: &sid, OwnerID: "worker-B", LockedUntil: 1_000})
	me := "worker-A"
	_, ok = p.Pick(v, 100, "", &me, nil)
	assert.False(t, ok, "the session is active under another owner")
	other := "worker-B"
	c, ok := p.Pick(v, 100, "", &other, nil)
	require.True(t, ok, "its owner takes it")
	p.Release(c, false)
	_, ok = p.Pick(v, 1_000, "", &me, nil)
	assert.True(t, ok, "an expired session can be claimed")
}

func TestPoolViewsAreBounded(t *testing.T) {
	p := New(hour, testSlot, func() int64 { return 0 })
	for i := 0; i < 3*maxPoolViews; i++ {
		p.View(string(rune('a'+i%26))+string(rune(i)), false, []uint8{uint8(i)}, nil)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.LessOrEqual(t, len(p.views), maxPoolViews)
}

func workEntry(instance, id string, visibleAt int64) Entry {
	return Entry{Key: WorkKey(instance, id), Instance: instance, ID: id, Slot: testSlot(instance), VisibleAt: visibleAt, EnqueuedAt: visibleAt, Worker: true}
}

func TestPoolEchoOfAMessageThisProcessLockedIsNoCandidate(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.LockedMessage("i", "m1", 5_000) // this process locked m1 until 5,000 ms

	p.Echo(workEntry("i", "m1", 10), 0, 100) // the change feed's copy from before the lock
	_, ok := p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok, "the echo of a message this process locked is not offered")
	late := int64(5_000 + knownEchoGraceMs + 1)
	p.Echo(workEntry("i", "m1", 10), 0, late)
	_, ok = p.Pick(v, late, "", nil, nil)
	assert.True(t, ok, "a copy delivered long after the lock and its grace is a candidate again")
}

func TestPoolEchoOfAMessageThisProcessWroteAddsNothing(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.clock = func() int64 { return 100 }
	p.Hint(workEntry("i", "m1", 10)) // written by this process
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	p.Release(c, true) // locked by a fetch (and acked)
	p.Echo(workEntry("i", "m1", 10), 0, 150)
	_, ok = p.Pick(v, 150, "", nil, nil)
	assert.False(t, ok, "the change feed's copy of a message this process wrote brings nothing back")

	p.Echo(workEntry("i", "m2", 10), 0, 150) // another process's message
	c, ok = p.Pick(v, 150, "", nil, nil)
	require.True(t, ok, "a message this process did not know is a candidate at once")
	assert.Equal(t, "m2", c.ID)
}

func TestPoolEchoShowingAnotherLockWaitsForItsExpiry(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.Echo(workEntry("i", "m2", 10), 3_000, 100) // another process holds m2 until 3,000 ms
	_, ok := p.Pick(v, 100, "", nil, nil)
	assert.False(t, ok, "a message locked elsewhere is not tried before its lock expires")
	c, ok := p.Pick(v, 3_000, "", nil, nil)
	require.True(t, ok, "it is tried once the lock expired")
	assert.Equal(t, "m2", c.ID)
}

// hour is a view lifetime for the tests that must not see views expire.
func hour() time.Duration { return time.Hour }

// testSlot is a dispatch slot function for the tests (the provider's is
// cdb.DispatchSlot): the first byte of the instance id.
func testSlot(instance string) uint8 {
	if instance == "" {
		return 0
	}
	return instance[0]
}

// msgEntry is orchEntry for message id of instance, visible at visibleAt.
func msgEntry(instance, id string, enqueuedAt, visibleAt int64) Entry {
	e := orchEntry(instance, enqueuedAt)
	e.ID, e.VisibleAt = id, visibleAt
	return e
}

func TestPoolEntryListsItsMessages(t *testing.T) {
	p, v := testPool(t)
	p.Hint(msgEntry("a", "m1", 10, 10))
	p.Hint(msgEntry("a", "m2", 20, 20))
	p.Hint(msgEntry("a", "m1", 10, 10)) // the same message again
	c, ok := p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, []MsgRef{{"m1", 10}, {"m2", 20}}, c.Msgs)
	assert.False(t, c.Overflow)

	p.LockedMessage("a", "m1", 1_000)
	p.Release(c, false)
	c, ok = p.Pick(v, 100, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, []MsgRef{{"m2", 20}}, c.Msgs, "a locked message is no longer one of the entry's")
	p.Release(c, false)

	for i := range MaxEntryMsgs {
		p.Hint(msgEntry("b", string(rune('A'+i)), 30, 30))
	}
	p.Hint(msgEntry("b", "one too many", 30, 30))
	c, ok = p.Pick(v, 100, "", nil, func(e *Entry) bool { return e.Instance == "b" })
	require.True(t, ok)
	assert.Len(t, c.Msgs, MaxEntryMsgs)
	assert.True(t, c.Overflow)
}

func TestPoolDroppedEntryKeepsItsMessagesNotVisibleYet(t *testing.T) {
	now := int64(100)
	p := New(hour, testSlot, func() int64 { return now })
	v := p.View("all", true, nil, nil)
	p.Hint(msgEntry("a", "event", 10, 10))
	p.Hint(msgEntry("a", "timer", 20, 5_000))
	c, ok := p.Pick(v, now, "", nil, nil)
	require.True(t, ok)
	p.LockedMessage("a", "event", 1_000)
	p.Release(c, true) // the turn took what was visible
	_, ok = p.Pick(v, now, "", nil, nil)
	assert.False(t, ok, "nothing visible is left")
	at, ok := p.NextChange(now)
	require.True(t, ok, "the timer still wakes a fetch")
	assert.Equal(t, int64(5_000), at)
	c, ok = p.Pick(v, 5_000, "", nil, nil)
	require.True(t, ok)
	assert.Equal(t, []MsgRef{{"timer", 5_000}}, c.Msgs)
}

// A timer that becomes visible while the fetch that picked its entry
// locks the other messages is not one the fetch took: the entry keeps it,
// visible at once (issue 33: a continue-as-new successor's timer dropped
// this way waited for the next candidate query, seconds later).
func TestPoolDroppedEntryKeepsATimerThatFiredDuringTheFetch(t *testing.T) {
	now := int64(100)
	p := New(hour, testSlot, func() int64 { return now })
	v := p.View("all", true, nil, nil)
	p.Hint(msgEntry("a", "duplicate start", 10, 10))
	p.Hint(msgEntry("a", "timer", 20, 103))
	c, ok := p.Pick(v, now, "", nil, nil)
	require.True(t, ok)
	p.LockedMessage("a", "duplicate start", 5_000) // the lock batch, built at 101
	now = 104                                      // the fetch ends after the timer fired
	p.Release(c, true)
	c, ok = p.Pick(v, now, "", nil, nil)
	require.True(t, ok, "the timer is still a candidate")
	assert.Equal(t, []MsgRef{{"timer", 103}}, c.Msgs)
}

func TestPoolRefreshKeepsMessagesNotVisibleYet(t *testing.T) {
	p, v := testPool(t)
	p.Hint(msgEntry("a", "event", 10, 10))
	p.Hint(msgEntry("a", "timer", 20, 5_000))
	start := p.BeginRefresh()
	p.Refreshed(v, start, time.Now(), 100, nil, false, nil, nil) // the query saw nothing visible
	at, ok := p.NextChange(100)
	require.True(t, ok, "the timer the query could not see is kept")
	assert.Equal(t, int64(5_000), at)
}

// A candidate query's row of an instance a fetch is locking, or locked
// while the query ran, is not kept (the fetch decides what is left), but
// its message may be one the fetch does not take: another process's timer
// written after the fetch read the partition. Its change-feed copy must
// still be news, or the instance waits for the next candidate query, up
// to the view lifetime later (issue 33's stall: the continue-as-new
// successor stopped after its TimerCreated).
func TestPoolRowOfAnInstanceBeingLockedLeavesItsMessageToTheChangeFeed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lockDuringQuery is true when the fetch locks and releases the
		// entry while the query runs (its key is then removed), false
		// when it still holds its claim when the query's rows come.
		lockDuringQuery bool
	}{{"claimed", false}, {"locked while the query ran", true}} {
		t.Run(tc.name, func(t *testing.T) {
			now := int64(100)
			p := New(hour, testSlot, func() int64 { return now })
			v := p.View("all", true, nil, nil)
			p.Hint(msgEntry("a", "duplicate start", 10, 10))
			start := p.BeginRefresh()
			c, ok := p.Pick(v, now, "", nil, nil)
			require.True(t, ok)
			lock := func() {
				p.LockedMessage("a", "duplicate start", 5_000)
				p.Release(c, true)
			}
			if tc.lockDuringQuery {
				lock()
			}
			// The query saw the timer another process wrote after the
			// fetch's read: it fires at 300.
			p.Refreshed(v, start, time.Now(), now, []Entry{msgEntry("a", "timer", 20, 300)}, false, map[string]Hold{}, nil)
			if !tc.lockDuringQuery {
				lock()
			}
			now = 150
			assert.True(t, p.Echo(msgEntry("a", "timer", 20, 300), 0, now), "the timer's change-feed copy is news to this process")
			c, ok = p.Pick(v, 300, "", nil, nil)
			require.True(t, ok, "the timer is a candidate once it fires")
			assert.Equal(t, []MsgRef{{"timer", 300}}, c.Msgs)
		})
	}
}
