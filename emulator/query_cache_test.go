package emulator

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueryCacheParsesEachTextOnce(t *testing.T) {
	var qc queryCache
	a, err := qc.parse("SELECT * FROM c WHERE c.type = @t")
	require.NoError(t, err)
	b, err := qc.parse("SELECT * FROM c WHERE c.type = @t")
	require.NoError(t, err)
	require.Same(t, a, b, "the same text is parsed once")
	other, err := qc.parse("SELECT * FROM c WHERE c.type = @u")
	require.NoError(t, err)
	require.NotSame(t, a, other)

	_, err = qc.parse("SELECT * FROM c WHERE")
	require.Error(t, err)
	require.NotContains(t, qc.queries, "SELECT * FROM c WHERE", "errors are not cached")

	for i := range 2 * maxCachedQueries {
		_, err := qc.parse(fmt.Sprintf("SELECT VALUE %d FROM c", i))
		require.NoError(t, err)
		require.LessOrEqual(t, len(qc.queries), maxCachedQueries)
	}
}
