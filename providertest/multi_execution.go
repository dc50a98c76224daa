package providertest

// multiExecutionCases ports duroxide's src/provider_validation/multi_execution.rs; see README.md for
// the table from each Rust test to its Go function.
var multiExecutionCases = []Case{}
