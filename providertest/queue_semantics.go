package providertest

// queueSemanticsCases ports duroxide's src/provider_validation/queue_semantics.rs; see README.md for
// the table from each Rust test to its Go function.
var queueSemanticsCases = []Case{}
