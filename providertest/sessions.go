package providertest

// sessionsCases ports duroxide's src/provider_validation/sessions.rs; see README.md for
// the table from each Rust test to its Go function.
var sessionsCases = []Case{}
