// Package cdbtest helps the tests of code that uses the Cosmos DB provider
// (package cdb): it hands each test a *cdb.Provider on a fresh container,
// cleaned up with t.Cleanup, in the manner of net/http/httptest.
//
// With no environment the container lives in an in-process Azure Cosmos DB
// emulator (package emulator): no account, no Docker, no network. When
// COSMOS_ENDPOINT is set (with COSMOS_KEY, and optionally COSMOS_DATABASE),
// the same tests run against that account instead; each test then gets a
// container of its own in that database, deleted when the test ends.
//
// Typical use:
//
//	func TestMyOrchestration(t *testing.T) {
//		p := cdbtest.NewProvider(t)
//		rt, err := runtime.Start(ctx, p, registry, runtime.Options{})
//		...
//	}
//
// Tests that need several providers on one container (several replicas of a
// service), or the emulator's request counters and fault injection, use an
// Account: NewAccount, then Account.Config and Account.NewProvider.
package cdbtest
