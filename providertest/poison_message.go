package providertest

// poisonMessageCases ports duroxide's src/provider_validation/poison_message.rs; see README.md for
// the table from each Rust test to its Go function.
var poisonMessageCases = []Case{}
