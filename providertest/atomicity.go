package providertest

// atomicityCases ports duroxide's src/provider_validation/atomicity.rs; see README.md for
// the table from each Rust test to its Go function.
var atomicityCases = []Case{}
