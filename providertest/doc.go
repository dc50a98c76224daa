// Package providertest is the Go port of duroxide's provider validation
// suite (microsoft/duroxide src/provider_validation/: every test of 0.1.26's
// 19 groups, the tests added up to 0.1.30 and duroxide main, race_replay.rs
// among them, the fault-injection tests of duroxide main's
// tests/can_abandon_failure.rs, its sub-orchestration id tests
// (tests/scenarios/suborch_id_collision.rs and the explicit, detached and
// versioned-start tests of tests/instance_id_validation_tests.rs), and
// provider rules of duroxide main) as func(t *testing.T, f Factory)
// functions, named after the Rust tests, and RunAll/RunGroup to run them as
// parallel subtests against any duroxide.Provider a Factory creates.
// README.md maps each Rust test to its Go function.
//
// What its users need lives in three packages, none importing another
// without need:
//
//   - providertest (this package): the validation suite, for provider
//     authors' tests; it uses testing and testify, so only test binaries
//     link it. MemoryFactory is the suite's Factory of the reference
//     provider, with every optional hook.
//   - providertest/memory: MemoryProvider, the reference in-memory provider
//     (the tables of duroxide's SQLite provider behind one mutex, with long
//     polling) that the suite is checked against and the runtime's tests
//     run on. It imports neither testing nor testify.
//   - providertest/stress: the stress harness (RunStress, a port of
//     duroxide's provider_stress_test) used by cmd/cdb-stress and by tests;
//     it imports neither testing nor testify, so binaries stay free of them.
package providertest
