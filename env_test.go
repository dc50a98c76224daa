package cdb_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/internal/testparallel"
)

// testEnv is the Cosmos DB account the tests of this package use, from the
// project's test kit: the in-process emulator (one per test binary), or the
// account COSMOS_ENDPOINT and COSMOS_KEY name, in which every provider gets
// a container of its own that its test deletes.
type testEnv struct {
	*cdbtest.Account
	emu *emulator.Server // nil against a real account
}

var env *testEnv

func TestMain(m *testing.M) {
	if os.Getenv(leaseHolderEnv) != "" {
		os.Exit(runLeaseHolder()) // a child process of a test, not the tests
	}
	// The tests mostly wait (the package uses about 1.1 of the 2 cores at
	// 8 at a time): 16 at a time unless -parallel says otherwise (quiet:
	// 24 s against 28 s at 8; two copies at once pass); 4 under the race
	// detector, where they mostly compute (8 at once on 2 cores starved
	// the provider's lease heartbeats and fetches).
	parallel := 16
	if raceDetector {
		parallel = 4
	}
	if err := testparallel.Default(parallel); err != nil {
		fmt.Fprintln(os.Stderr, "cdb tests:", err)
		os.Exit(1)
	}
	account, err := cdbtest.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdb tests:", err)
		os.Exit(1)
	}
	env = &testEnv{Account: account, emu: account.Emulator()}
	code := m.Run()
	_ = account.Close()
	os.Exit(code)
}

// config returns a Config for a fresh container of this environment.
func (e *testEnv) config() cdb.Config { return e.Config() }

// newProvider starts a provider on a fresh container; adjust, when set,
// changes its config first. The provider is closed and, against a real
// account, its container deleted when t ends.
func newProvider(t testing.TB, adjust func(*cdb.Config)) *cdb.Provider {
	t.Helper()
	cfg := env.config()
	if adjust != nil {
		adjust(&cfg)
	}
	return startProvider(t, cfg)
}

// startProvider starts a provider on cfg and registers its cleanup (the
// test kit's: closed, and against a real account its container deleted).
func startProvider(t testing.TB, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	return env.NewProvider(t, cfg)
}

// newPrivateProvider starts a provider on an emulator of its own, for
// tests that count requests or inject faults (which are per emulator); it
// runs on the emulator even when COSMOS_ENDPOINT is set.
func newPrivateProvider(t testing.TB, adjust func(*cdb.Config)) (*cdb.Provider, *emulator.Server) {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	cfg := a.Config()
	cfg.Container = "private"
	if adjust != nil {
		adjust(&cfg)
	}
	return a.NewProvider(t, cfg), a.Emulator()
}

// clientOptions returns client options that reach emulator s.
func clientOptions(s *emulator.Server) *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: s.HTTPClient()}}
}

// cdbConfig is cdb.Config, for adjust functions.
type cdbConfig = cdb.Config
