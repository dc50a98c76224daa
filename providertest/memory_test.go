package providertest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryProviderValidation runs the whole validation suite against the
// reference in-memory provider; every case must pass, none may be skipped.
func TestMemoryProviderValidation(t *testing.T) {
	tally := RunAll(t, MemoryFactory{})
	require.Zero(t, tally.Failed(), "validation: %s", tally)
	require.Zero(t, tally.Skipped(), "validation: %s", tally)
}
