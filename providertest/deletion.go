package providertest

// deletionCases ports duroxide's src/provider_validation/deletion.rs; see README.md for
// the table from each Rust test to its Go function.
var deletionCases = []Case{}
