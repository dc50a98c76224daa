package providertest

// customStatusCases ports duroxide's src/provider_validation/custom_status.rs; see README.md for
// the table from each Rust test to its Go function.
var customStatusCases = []Case{}
