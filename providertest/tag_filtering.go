package providertest

// tagFilteringCases ports duroxide's src/provider_validation/tag_filtering.rs; see README.md for
// the table from each Rust test to its Go function.
var tagFilteringCases = []Case{}
