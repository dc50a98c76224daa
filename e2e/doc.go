// Package e2e holds the end-to-end samples of duroxide
// (tests/e2e_samples.rs) ported to Go, and the runtime reliability tests.
// They are tests only: each one starts the Go runtime (duroxide/runtime) on
// a provider, runs an orchestration to completion and checks its outcome
// and history. See duroxide/runtime/README.md for the table of every Rust
// sample and its Go test.
package e2e
