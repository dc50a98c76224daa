package cdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompleteHistory(t *testing.T) {
	docs := func(ids ...uint64) []historyDoc {
		var out []historyDoc
		for _, id := range ids {
			out = append(out, historyDoc{EventID: id})
		}
		return out
	}
	assert.True(t, completeHistory(nil, 0, 0))
	assert.True(t, completeHistory(docs(1, 2, 3), 0, 3))
	assert.True(t, completeHistory(docs(4, 5), 3, 5), "the events above what is held")
	assert.True(t, completeHistory(docs(3, 1, 2, 4), 0, 3), "staged events above the watermark do not count")
	assert.False(t, completeHistory(docs(1, 3), 0, 3), "a missing event")
	assert.False(t, completeHistory(docs(5, 6), 0, 6), "ids that do not start at 1 (an append with gaps) are read again")
}
