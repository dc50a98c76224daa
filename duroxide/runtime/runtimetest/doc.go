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
package runtimetest
