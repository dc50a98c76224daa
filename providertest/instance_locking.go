package providertest

// instanceLockingCases ports duroxide's src/provider_validation/instance_locking.rs; see README.md for
// the table from each Rust test to its Go function.
var instanceLockingCases = []Case{}
