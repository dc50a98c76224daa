// Package providertest is the Go port of duroxide's provider validation
// suite (microsoft/duroxide 0.1.26, src/provider_validation/): every test of
// its 19 groups as an exported func(t *testing.T, f Factory), named after
// the Rust test, and RunAll/RunGroup to run them as parallel subtests
// against any duroxide.Provider a Factory creates.
//
// It also holds MemoryProvider, a reference in-memory provider (the tables
// of duroxide's SQLite provider behind one mutex, with long polling) that
// the suite is checked against and the runtime's tests run on, its
// MemoryFactory with every optional hook, and the stress harness
// (RunStress, a port of duroxide's provider_stress_test). README.md maps
// each Rust test to its Go function.
package providertest
