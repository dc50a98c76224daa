package providertest

// longPollingCases ports duroxide's src/provider_validation/long_polling.rs; see README.md for
// the table from each Rust test to its Go function.
var longPollingCases = []Case{}
