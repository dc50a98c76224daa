package e2e_test

import (
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/providertest"
)

// newProvider returns the provider the samples run on: the reference
// in-memory provider until the Cosmos DB provider is wired in.
func newProvider(t *testing.T) duroxide.Provider {
	t.Helper()
	return providertest.NewMemoryProvider(providertest.MemoryOptions{})
}
