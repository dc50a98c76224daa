// Package conformance holds no code: its test runs scenarios through an
// official Cosmos DB SDK other than Go's (the Node SDK @azure/cosmos, pinned
// in node/package.json and node/package-lock.json) against the emulator served
// over HTTPS on loopback, as cmd/cdb-emulator serves it, and reports each
// scenario as a subtest. The scenarios live in node/scenarios.js.
//
// The test runs `npm ci` in node/ when node_modules is missing. It is skipped
// only when node or npm is not installed and the environment variable CI is
// not "true"; under CI=true it fails when it cannot run.
package conformance
