// Package memory holds MemoryProvider, duroxide's reference in-memory
// provider: a duroxide.Provider and duroxide.ProviderAdmin over
// mutex-guarded maps mirroring the tables of duroxide's SQLite provider
// (microsoft/duroxide src/providers/sqlite.rs), with long polling. The
// validation suite (package providertest) is checked against it, the
// runtime's tests run on it, and cmd/cdb-stress compares the Cosmos DB
// provider with it. It links neither testing nor testify.
package memory
