package cdb_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/internal/testparallel"
)

// testEnv is the Cosmos DB account the tests of this package use: the
// in-process emulator (one per test binary), or the account COSMOS_ENDPOINT
// and COSMOS_KEY name, in which every provider gets a container of its own
// that its test deletes.
type testEnv struct {
	emu      *emulator.Server // nil against a real account
	endpoint string
	key      string
	database string
	client   *azcosmos.Client
}

var env *testEnv

func TestMain(m *testing.M) {
	// The tests mostly wait: 8 at a time unless -parallel says otherwise.
	if err := testparallel.Default(8); err != nil {
		fmt.Fprintln(os.Stderr, "cdb tests:", err)
		os.Exit(1)
	}
	var err error
	env, err = startEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdb tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	env.close()
	os.Exit(code)
}

func startEnv() (*testEnv, error) {
	e := &testEnv{database: "cdbtest-" + uuid.NewString()[:8]}
	var opts azcosmos.ClientOptions
	if ep := os.Getenv(cdb.EnvEndpoint); ep != "" {
		e.endpoint, e.key = ep, os.Getenv(cdb.EnvKey)
		if db := os.Getenv(cdb.EnvDatabase); db != "" {
			e.database = db
		}
	} else {
		s, err := emulator.Start(emulator.Options{})
		if err != nil {
			return nil, err
		}
		e.emu, e.endpoint, e.key = s, s.Endpoint(), s.Key()
		opts.Transport = s.HTTPClient()
	}
	cred, err := azcosmos.NewKeyCredential(e.key)
	if err != nil {
		return nil, err
	}
	e.client, err = azcosmos.NewClientWithKey(e.endpoint, cred, &opts)
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *testEnv) close() {
	if e.emu != nil {
		_ = e.emu.Close()
		return
	}
	if db, err := e.client.NewDatabase(e.database); err == nil && os.Getenv(cdb.EnvDatabase) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = db.Delete(ctx, nil)
	}
}

// config returns a Config for a fresh container of this environment.
func (e *testEnv) config() cdb.Config {
	cfg := cdb.Config{
		Endpoint:  e.endpoint,
		Key:       e.key,
		Database:  e.database,
		Container: "c-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20],
	}
	if e.emu != nil {
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: e.emu.HTTPClient()}}
	}
	return cfg
}

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

// startProvider starts a provider on cfg and registers its cleanup.
func startProvider(t testing.TB, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.Close()
		if env.emu == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = p.Container().Delete(ctx, nil)
		}
	})
	return p
}

// newPrivateProvider starts a provider on an emulator of its own, for
// tests that count requests or inject faults (which are per emulator); it
// runs on the emulator even when COSMOS_ENDPOINT is set.
func newPrivateProvider(t testing.TB, adjust func(*cdb.Config)) (*cdb.Provider, *emulator.Server) {
	t.Helper()
	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	cfg := cdb.Config{Endpoint: s.Endpoint(), Key: s.Key(), Container: "private", ClientOptions: clientOptions(s)}
	if adjust != nil {
		adjust(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p, s
}

// clientOptions returns client options that reach emulator s.
func clientOptions(s *emulator.Server) *azcosmos.ClientOptions {
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: s.HTTPClient()}}
}

// cdbConfig is cdb.Config, for adjust functions.
type cdbConfig = cdb.Config
