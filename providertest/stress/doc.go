// Package stress is the provider stress harness, a port of duroxide's
// provider_stress_test (microsoft/duroxide src/provider_stress_test/):
// RunStress starts a runtime on a fresh provider from a
// StressProviderFactory, keeps StressConfig.MaxConcurrent orchestrations of
// a StressScenario in flight for the configured duration, and reports a
// StressResult (throughput, failures, per-operation call counts, latency
// and, through AttributeRequest, Cosmos DB requests and RU per call).
// WriteStressTable prints results as a table. cmd/cdb-stress is its command
// line; it links neither testing nor testify.
package stress
