// Package runtimetest tests orchestrations as Temporal users test
// workflows, in the shape of net/http/httptest.
//
// # Replaying recorded histories
//
// A code change that no longer replays the histories of running
// instances fails them with a Nondeterminism error once deployed. The
// replayer catches it in a test: it replays recorded histories against the
// current registry with the runtime's own replay engine
// (runtime.Registry.Replay) and reports, for each history that no longer
// replays, the instance, the event and what the code now does there:
//
//	instance "order-7" execution 1 (ProcessOrder@1.0.0): event 2: history has ActivityScheduled "ChargeCard", code scheduled activity "Charge"
//
// Histories come from a provider (ReadProvider), from files written by
// `cdb-admin export` (one JSON document per instance) or holding one
// execution's events in duroxide's serde JSON (`cdb-admin history -json`),
// read by ReadFile and ReadDir. One line checks a directory of them:
//
//	func TestOrdersStillReplay(t *testing.T) {
//		runtimetest.ReplayDir(t, myRegistry(), "testdata/histories")
//	}
//
// Replay returns the failures as an error instead, for programs (a
// deployment check, say).
//
// # Running orchestrations in a test
//
// New runs a registry for one test on a fresh in-memory provider (or any
// provider, WithProvider), stopped by t.Cleanup; environments of parallel
// tests share nothing. Activities can be replaced for the test, every call
// is recorded with its input and attempt, and an instance's status and
// history are checked with assertions that print the history when they
// fail:
//
//	func TestDeclinedCardFailsTheOrder(t *testing.T) {
//		t.Parallel()
//		env := runtimetest.New(t, myRegistry())
//		env.MockActivity("ChargeCard").FailsFirst(2, errors.New("gateway busy")).Fails(errors.New("card declined"))
//		order := env.Run("ProcessOrder", `{"id":7}`)
//		order.AssertFailed("card declined")
//		order.AssertActivityNames("Reserve", "ChargeCard", "ChargeCard", "ChargeCard", "Release")
//	}
//
// Expectations answer calls by input and count them (Temporal's
// OnActivity and OnWorkflow): OnActivity and OnOrchestration with a
// Matcher (Anything, Equals, JSONEquals, MatchedBy), then Returns, Fails
// or Runs, and Times, Once, Never or Maybe; AssertExpectations fails the
// test for a mock never called or called the wrong number of times. An
// orchestration or activity neither registered nor mocked stops the test
// at once, naming the registered names closest to it. Listen reports
// activities, timers and events as turns commit; NewActivityContext
// tests an activity alone.
//
// # Time skipping
//
// On the in-memory provider the environment runs on a virtual Clock (the
// runtime's Options.Now and the provider's MemoryOptions.Now): it runs at
// real speed, and while the test waits (Instance.Wait, Env.Run,
// RaiseEvent), whenever every instance waits only for durable timers, with
// no activity running or queued and nothing the test sent unprocessed, it
// jumps to the next timer. A three-day timeout fires at once; an event the
// test raises still beats it:
//
//	env := runtimetest.New(t, reg)
//	inst := env.Start("approve-1", "Approve", "")
//	inst.RaiseEvent("approval", "ann") // waits for the subscription, skipping earlier timers
//	inst.Wait()                        // the 72-hour timeout lost
//
// RegisterDelayedCallback runs code at a virtual time, and
// Instance.RaiseEventAt raises an event then ("at virtual hour 3");
// Instance.WaitUntilWaiting returns once the instance waits for an event.
// WithRealTime turns skipping off; WithClock gives the clock to a
// provider of your own (WithProvider).
package runtimetest
