package providertest

// bulkDeletionCases ports duroxide's src/provider_validation/bulk_deletion.rs; see README.md for
// the table from each Rust test to its Go function.
var bulkDeletionCases = []Case{}
