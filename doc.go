// Package cdb is the Azure Cosmos DB (NoSQL API) provider for duroxide: it
// implements duroxide.Provider and duroxide.ProviderAdmin over one container
// partitioned by /instanceId, as docs/DESIGN.md describes (data model,
// turns, outbox, leases, change feed, held state).
//
// Every document of an instance (its metadata and lock, history,
// executions, orchestrator and worker queue messages, sessions, KV store
// and outbox intents) lives in the instance's logical partition, so a turn
// commits with one transactional batch. Writes to other instances
// (sub-orchestration starts and completions, detached starts, cancel
// cascades) go through a transactional outbox: intents written in the
// turn's batch, delivered at once, and by a reconciler goroutine when that
// fails. Locks are optimistic: the instance lock is taken with If-Match on
// the instance document's ETag.
//
// Start one with New and stop it with Close.
package cdb
