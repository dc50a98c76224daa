package fetchtrace

import "testing"

func TestLostRaceNamesTheQueueOfEachLostLock(t *testing.T) {
	t.Parallel()
	for ev, want := range map[Event]string{OrchSkipLockLost: "orchestrator", OrchHeldRefused: "orchestrator", WorkSkipLockLost: "worker"} {
		if q, lost := LostRace(ev); !lost || q != want {
			t.Errorf("LostRace(%q) = %q, %v; want %q, true", ev, q, lost, want)
		}
	}
	for _, ev := range []Event{OrchAttempt, OrchSkipLocked, OrchFound, WorkPatch, PollWait} {
		if _, lost := LostRace(ev); lost {
			t.Errorf("LostRace(%q) is a lost race", ev)
		}
	}
}
