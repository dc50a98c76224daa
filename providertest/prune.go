package providertest

// pruneCases ports duroxide's src/provider_validation/prune.rs; see README.md for
// the table from each Rust test to its Go function.
var pruneCases = []Case{}
