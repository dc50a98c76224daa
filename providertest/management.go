package providertest

// managementCases ports duroxide's src/provider_validation/management.rs; see README.md for
// the table from each Rust test to its Go function.
var managementCases = []Case{}
