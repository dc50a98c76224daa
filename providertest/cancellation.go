package providertest

// cancellationCases ports duroxide's src/provider_validation/cancellation.rs; see README.md for
// the table from each Rust test to its Go function.
var cancellationCases = []Case{}
