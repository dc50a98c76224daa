package e2e_test

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

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// account is the Cosmos DB account the samples run on: the account named
// by COSMOS_ENDPOINT and COSMOS_KEY when set, otherwise one in-process
// emulator for the whole test binary. Every test gets a fresh container.
var account struct {
	emu      *emulator.Server
	endpoint string
	key      string
	database string
}

func TestMain(m *testing.M) {
	account.database = "e2e-" + uuid.NewString()[:8]
	if db := os.Getenv(cdb.EnvDatabase); db != "" {
		account.database = db
	}
	if ep := os.Getenv(cdb.EnvEndpoint); ep != "" {
		account.endpoint, account.key = ep, os.Getenv(cdb.EnvKey)
	} else {
		s, err := emulator.Start(emulator.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: start emulator:", err)
			os.Exit(1)
		}
		account.emu, account.endpoint, account.key = s, s.Endpoint(), s.Key()
	}
	code := m.Run()
	if account.emu != nil {
		_ = account.emu.Close()
	}
	os.Exit(code)
}

// providerConfig returns the config of a fresh container in the account.
func providerConfig() cdb.Config {
	cfg := cdb.Config{
		Endpoint:  account.endpoint,
		Key:       account.key,
		Database:  account.database,
		Container: "c-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20],
	}
	if account.emu != nil {
		cfg.ClientOptions = &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: account.emu.HTTPClient()}}
	}
	return cfg
}

// newProvider returns a Cosmos DB provider on a fresh container, closed
// (and, on a real account, its container deleted) when the test ends.
func newProvider(t testing.TB) duroxide.Provider {
	t.Helper()
	return openProvider(t, providerConfig())
}

func openProvider(t testing.TB, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Close()
		if account.emu == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, _ = p.Container().Delete(ctx, nil)
		}
	})
	return p
}
