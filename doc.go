// Package cdb is the Azure Cosmos DB (NoSQL API) provider for duroxide: it
// implements duroxide.Provider and duroxide.ProviderAdmin over one container
// partitioned by /instanceId. A service opens it and runs its
// orchestrations on it with the runtime:
//
//	p, err := cdb.New(ctx, cdb.ConfigFromEnv()) // COSMOS_ENDPOINT, COSMOS_KEY
//	if err != nil { ... }
//	defer p.Close()
//	rt, err := runtime.Start(ctx, p, registry, runtime.Options{})
//	if err != nil { ... }
//	defer rt.Shutdown(context.Background())
//	client := runtime.NewClient(p)
//	err = client.StartOrchestration(ctx, "order-1", "ProcessOrder", input)
//
// Example opens one on the embedded emulator (package emulator, in the
// process, nothing to install); go run ./examples/hello_world runs an
// orchestration end to end. Start one with New and stop it with Close.
//
// # How it stores orchestrations
//
// Every document of an instance (its metadata and lock, history,
// executions, orchestrator and worker queue messages, sessions, KV store
// and outbox intents) lives in the instance's logical partition, so a turn
// commits with one transactional batch. Writes to other instances
// (sub-orchestration starts and completions, detached starts, cancel
// cascades) go through a transactional outbox: intents written in the
// turn's batch, delivered at once, and by a reconciler goroutine when that
// fails. Locks are optimistic: the instance lock is taken with If-Match on
// the instance document's ETag. docs/DESIGN.md describes the data model,
// turns, outbox, leases, change feed and held state.
//
// # Errors
//
// The Provider's methods return their errors as *duroxide.ProviderError
// values (match with errors.As): Operation names the call, Message says
// what happened, Cause keeps the SDK's error, and Retryable tells the
// runtime whether to try again: true for 408, 409 and 412 (a race), 410,
// 429, 449, 503 and other 5xx answers, lost connections, outcomes the provider
// could not verify, and a cancelled or expired context; false for 400, 404,
// 413 and other 4xx answers, invalid input and a call after Close. A
// missing database or container wraps ErrContainerNotFound. Throttling and
// transient failures are first retried inside the provider: up to 8
// retries, backing off from 20 ms to 2 s and honouring x-ms-retry-after-ms;
// a write that must not apply twice only after an answer that proves it was
// not applied (429, 449, 503), and one whose outcome is unknown is read back
// first. docs/DESIGN.md §7 says more.
//
// # Layout
//
// This package holds the public API and the Provider's contract methods;
// the machinery lives in internal packages, one per concept, which never
// import this one (docs/DEVELOPMENT.md lists them).
package cdb
