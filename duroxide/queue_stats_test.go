package duroxide

import "testing"

func TestQueueCountsCountsEachMessageInOneState(t *testing.T) {
	t.Parallel()
	var c QueueCounts
	const now = 10_000
	c.Count(now, 9_000, 0)      // ready for 1 s
	c.Count(now, 7_500, 9_999)  // ready for 2.5 s, its lock expired
	c.Count(now, 5_000, 10_001) // locked
	c.Count(now, 11_000, 0)     // a timer that has not fired
	c.Count(now, now, 0)        // ready this instant
	want := QueueCounts{Ready: 3, Locked: 1, Delayed: 1, OldestReadyAgeMs: 2_500}
	if c != want {
		t.Fatalf("counts = %+v, want %+v", c, want)
	}
}
