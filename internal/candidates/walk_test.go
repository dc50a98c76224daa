package candidates

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWalkOnAFreshEmptyViewQueriesOnlyWhenTheFetchMustAnswer(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.Refreshed(v, p.BeginRefresh(), time.Now(), 0, nil, false, nil, nil)
	assert.Equal(t, Step{}, p.Walk(v, "", nil, nil, false, 4).Next(0), "a waiting fetch trusts a fresh empty view")
	w := p.Walk(v, "", nil, nil, true, 4)
	assert.Equal(t, Step{Refresh: true}, w.Next(0), "a final fetch queries one page")
	assert.Equal(t, Step{}, w.Next(0), "and only once")
}

func TestWalkTriesCandidatesOldestFirstUpToMax(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.Refreshed(v, p.BeginRefresh(), time.Now(), 0, []Entry{orchEntry("b", 20), orchEntry("a", 10), orchEntry("c", 30)}, false, nil, nil)
	w := p.Walk(v, "", nil, nil, false, 2)
	s := w.Next(100)
	require.True(t, s.Try)
	assert.Equal(t, "a", s.Candidate.Instance)
	p.Release(s.Candidate, true)
	s = w.Next(100)
	require.True(t, s.Try)
	assert.Equal(t, "b", s.Candidate.Instance)
	p.Release(s.Candidate, true)
	assert.Equal(t, Step{}, w.Next(100), "max candidates tried")
}

func TestWalkReadsEveryPageWhenTheLastQueryStoppedAtAFullOne(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	p.Refreshed(v, p.BeginRefresh(), time.Now(), 0, nil, true, nil, nil)
	w := p.Walk(v, "", nil, nil, false, 4)
	assert.Equal(t, Step{Refresh: true, All: true}, w.Next(0))
	assert.Equal(t, Step{}, w.Next(0), "every page was read: nothing more to query")
}

func TestWalkOnAnUnqueriedViewQueriesFirst(t *testing.T) {
	t.Parallel()
	p, v := testPool(t)
	w := p.Walk(v, "", nil, nil, false, 4)
	s := w.Next(0)
	assert.True(t, s.Refresh, "a view never queried is not fresh")
	assert.False(t, s.All)
}
