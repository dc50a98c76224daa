// Package conformance holds no code: its tests run scenarios through official
// Cosmos DB SDKs other than Go's against the emulator served over HTTPS on
// loopback, as cmd/cdb-emulator serves it, and report each scenario as a
// subtest:
//
//   - the Node SDK @azure/cosmos, pinned in node/package.json and
//     node/package-lock.json, scenarios in node/scenarios.js;
//   - the Python SDK azure-cosmos 3.x (Debian's python3-azure-cosmos 3.1.1),
//     scenarios in python/scenarios.py.
//
// The Node test installs @azure/cosmos with `npm ci` into the user cache
// (os.UserCacheDir()/duroxide-cdb/conformance-node/<hash of the package
// files>), once per lock file, never into the checkout. Each test is
// skipped, with one line, when its tool is missing: node or npm (or the npm
// registry, for the first install), or a python3 that imports azure-cosmos
// 3.x.
package conformance
