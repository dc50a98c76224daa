package providertest

// errorHandlingCases ports duroxide's src/provider_validation/error_handling.rs; see README.md for
// the table from each Rust test to its Go function.
var errorHandlingCases = []Case{}
