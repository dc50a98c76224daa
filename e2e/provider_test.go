package e2e_test

import (
	"fmt"
	"os"
	"testing"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/testparallel"
)

// account is the Cosmos DB account the samples run on, from the project's
// test kit: the account named by COSMOS_ENDPOINT and COSMOS_KEY when set,
// otherwise one in-process emulator for the whole test binary. Every test
// gets a fresh container.
var account *cdbtest.Account

func TestMain(m *testing.M) {
	// The samples mostly wait (timers, polls, lock expiries): 8 at a time
	// unless -parallel says otherwise.
	if err := testparallel.Default(8); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	a, err := cdbtest.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	account = a
	code := m.Run()
	_ = account.Close()
	os.Exit(code)
}

// providerConfig returns the config of a fresh container in the account.
func providerConfig() cdb.Config { return account.Config() }

// newProvider returns a Cosmos DB provider on a fresh container, closed
// (and, on a real account, its container deleted) when the test ends.
func newProvider(t testing.TB) duroxide.Provider {
	t.Helper()
	return openProvider(t, providerConfig())
}

// openProvider opens a provider on cfg (several may share a container),
// closed when the test ends.
func openProvider(t testing.TB, cfg cdb.Config) *cdb.Provider {
	t.Helper()
	return account.NewProvider(t, cfg)
}
