package providertest

// lockExpirationCases ports duroxide's src/provider_validation/lock_expiration.rs; see README.md for
// the table from each Rust test to its Go function.
var lockExpirationCases = []Case{}
