package cdbtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// DefaultDatabase is the database an Account on a real Cosmos DB account
// uses when COSMOS_DATABASE is not set. On the embedded emulator every
// Account has a database of this name.
const DefaultDatabase = "cdbtest"

// cleanupTimeout bounds the deletion of a test's container on a real account.
const cleanupTimeout = time.Minute

// Account is a Cosmos DB account for tests: an embedded emulator started
// for it, or the account named by COSMOS_ENDPOINT and COSMOS_KEY. It hands
// out configurations of fresh containers. Its methods are safe for
// concurrent use.
type Account struct {
	emu      *emulator.Server
	endpoint string
	key      string
	database string
}

// Open returns an Account: the one COSMOS_ENDPOINT and COSMOS_KEY name
// (database COSMOS_DATABASE, default DefaultDatabase) when COSMOS_ENDPOINT
// is set, otherwise a newly started embedded emulator serving plain HTTP on
// a random loopback port. The caller must Close it. Open is for TestMain and
// other code without a testing.TB; tests use NewAccount. It fails when
// COSMOS_ENDPOINT is set without COSMOS_KEY, or when the emulator cannot
// start (no loopback port to listen on).
func Open() (*Account, error) {
	a := &Account{database: DefaultDatabase}
	if ep := os.Getenv(cdb.EnvEndpoint); ep != "" {
		key := os.Getenv(cdb.EnvKey)
		if key == "" {
			return nil, fmt.Errorf("cdbtest: %s is set but %s is not", cdb.EnvEndpoint, cdb.EnvKey)
		}
		a.endpoint, a.key = ep, key
		if db := os.Getenv(cdb.EnvDatabase); db != "" {
			a.database = db
		}
		return a, nil
	}
	return OpenEmulator(emulator.Options{})
}

// TB is the part of testing.TB the helpers use (*testing.T, *testing.B and
// *testing.F satisfy it).
type TB interface {
	// Helper marks the caller as a test helper (testing.TB.Helper).
	Helper()
	// Fatalf reports a failure and stops the test (testing.TB.Fatalf).
	Fatalf(format string, args ...any)
	// Cleanup registers f to run when the test ends (testing.TB.Cleanup).
	Cleanup(f func())
}

// OpenEmulator returns an Account on a newly started embedded emulator
// with opts (simulated latency, several physical partitions, TLS, ...),
// whatever the environment says: for tests that need the emulator's own
// features (its request counters, fault injection, a private server). The
// caller must Close it. It fails when the emulator cannot start (an invalid
// option, no loopback port).
func OpenEmulator(opts emulator.Options) (*Account, error) {
	srv, err := emulator.Start(opts)
	if err != nil {
		return nil, fmt.Errorf("cdbtest: start the embedded emulator: %w", err)
	}
	return &Account{database: DefaultDatabase, emu: srv, endpoint: srv.Endpoint(), key: srv.Key()}, nil
}

// NewEmulatorAccount is OpenEmulator for a test: it fails the test when
// the emulator cannot start (returning nil if tb's Fatalf returns) and
// closes the account when the test ends.
func NewEmulatorAccount(tb TB, opts emulator.Options) *Account {
	tb.Helper()
	a, err := OpenEmulator(opts)
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	tb.Cleanup(func() { _ = a.Close() })
	return a
}

// NewAccount is Open for a test: it fails the test when the account cannot
// be opened (returning nil if tb's Fatalf returns) and closes the account
// when the test (and its subtests) end.
func NewAccount(tb TB) *Account {
	tb.Helper()
	a, err := Open()
	if err != nil {
		tb.Fatalf("%v", err)
		return nil
	}
	tb.Cleanup(func() { _ = a.Close() })
	return a
}

// Emulator returns the embedded emulator, for its request counters
// (Counters) and fault injection (InjectFault), or nil when the Account is
// a real Cosmos DB account named by COSMOS_ENDPOINT.
func (a *Account) Emulator() *emulator.Server { return a.emu }

// Endpoint returns the account endpoint, e.g. "http://127.0.0.1:34567/".
func (a *Account) Endpoint() string { return a.endpoint }

// Key returns the account's master key (base64).
func (a *Account) Key() string { return a.key }

// Database returns the database the Account's containers are created in.
func (a *Account) Database() string { return a.database }

// ClientOptions returns the azcosmos client options that reach the
// account: the emulator's HTTP client as the transport, or nil for a real
// account (the SDK's defaults).
func (a *Account) ClientOptions() *azcosmos.ClientOptions {
	if a.emu == nil {
		return nil
	}
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: a.emu.HTTPClient()}}
}

// Client returns a new azcosmos client for the account, authenticated with
// its key. It fails only when the key is not valid base64.
func (a *Account) Client() (*azcosmos.Client, error) {
	cred, err := azcosmos.NewKeyCredential(a.key)
	if err != nil {
		return nil, fmt.Errorf("cdbtest: account key: %w", err)
	}
	c, err := azcosmos.NewClientWithKey(a.endpoint, cred, a.ClientOptions())
	if err != nil {
		return nil, fmt.Errorf("cdbtest: client: %w", err)
	}
	return c, nil
}

// Config returns the configuration of a provider on a new, uniquely named
// container ("t-" and 20 random hexadecimal digits) in the Account's
// database; cdb.New creates the container. Every other field is zero, so
// cdb's documented defaults apply; set any before opening the provider.
// Providers opened on one Config share its container, as replicas of a
// service do.
func (a *Account) Config() cdb.Config {
	return cdb.Config{
		Endpoint:      a.endpoint,
		Key:           a.key,
		Database:      a.database,
		Container:     "t-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20],
		ClientOptions: a.ClientOptions(),
	}
}

// NewProvider opens a provider with cfg (typically from Config) and
// registers its cleanup with tb: the provider is closed when the test ends
// and, on a real account, its container deleted. It fails the test when
// cdb.New fails (for instance on an invalid cfg), returning nil if tb's
// Fatalf returns.
//
// With the environment variable DUROXIDE_EAGER set to "off" it sets
// cfg.DisableEagerDispatch, so that a test suite can run with eager
// dispatch off (docs/TESTING.md).
func (a *Account) NewProvider(tb TB, cfg cdb.Config) *cdb.Provider {
	tb.Helper()
	if os.Getenv(EagerEnv) == "off" {
		cfg.DisableEagerDispatch = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cfg)
	if err != nil {
		tb.Fatalf("cdbtest: open the provider on container %q: %v", cfg.Container, err)
		return nil
	}
	tb.Cleanup(func() {
		_ = p.Close()
		if a.emu == nil {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			_, _ = p.Container().Delete(ctx, nil)
		}
	})
	return p
}

// Close stops the embedded emulator (discarding its data); on a real
// account it does nothing, since each container is deleted by its own
// test's cleanup. It is idempotent.
func (a *Account) Close() error {
	if a.emu == nil {
		return nil
	}
	return a.emu.Close()
}

// EagerEnv is the environment variable that turns the provider's eager
// dispatch off in the providers NewProvider opens when it is "off"
// (cdb.Config.DisableEagerDispatch), for running a test suite both ways.
const EagerEnv = "DUROXIDE_EAGER"
