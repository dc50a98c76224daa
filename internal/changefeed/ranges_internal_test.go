package changefeed

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRangesOfCountsTheCompositeTokensRanges: the number of ranges of the
// SDK's composite continuation token, 1 when it is not one.
func TestRangesOfCountsTheCompositeTokensRanges(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 3, rangesOf(`{"version":1,"resourceId":"x","continuation":[{"minInclusive":"","maxExclusive":"55"},{"minInclusive":"55","maxExclusive":"AA"},{"minInclusive":"AA","maxExclusive":"FF"}]}`))
	assert.Equal(t, 1, rangesOf(`{"version":1,"continuation":[]}`))
	assert.Equal(t, 1, rangesOf(`"etag"`))
	assert.Equal(t, 1, rangesOf(""))
}
