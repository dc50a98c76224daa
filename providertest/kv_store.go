package providertest

// kvStoreCases ports duroxide's src/provider_validation/kv_store.rs; see README.md for
// the table from each Rust test to its Go function.
var kvStoreCases = []Case{}
