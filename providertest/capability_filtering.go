package providertest

// capabilityFilteringCases ports duroxide's src/provider_validation/capability_filtering.rs; see README.md for
// the table from each Rust test to its Go function.
var capabilityFilteringCases = []Case{}
