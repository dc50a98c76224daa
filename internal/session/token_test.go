package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseTokenForms checks both of the service's forms round-trip and
// that malformed tokens are refused.
func TestParseTokenForms(t *testing.T) {
	for _, s := range []string{"0:-1#42", "3:1#17#1=15#2=17", "12:99"} {
		tok, ok := ParseToken(s)
		require.True(t, ok, s)
		assert.Equal(t, s, tok.String())
	}
	tok, _ := ParseToken("3:1#17#1=15#2=17")
	assert.Equal(t, Token{Range: "3", Version: 1, LSN: 17, Regions: []RegionLSN{{1, 15}, {2, 17}}}, tok)
	simple, _ := ParseToken("12:99")
	assert.Equal(t, Token{Range: "12", Simple: true, LSN: 99}, simple)
	for _, bad := range []string{"", "42", ":1#2", "0:", "0:x#1", "0:1#y", "0:1#2#3", "0:1#2#a=1"} {
		_, ok := ParseToken(bad)
		assert.False(t, ok, "%q", bad)
	}
	got := ParseTokens("0:1#5, 1:1#7,garbage,2:9")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"0", "1", "2"}, []string{got[0].Range, got[1].Range, got[2].Range})
}

// TestTokenMergeKeepsTheNewest checks the merge of two tokens of one
// range: highest LSNs, the higher version's regions.
func TestTokenMergeKeepsTheNewest(t *testing.T) {
	merge := func(a, b string) string {
		ta, _ := ParseToken(a)
		tb, _ := ParseToken(b)
		m1, m2 := ta.Merge(tb).String(), tb.Merge(ta).String()
		require.Equal(t, m1, m2, "merge is symmetric")
		return m1
	}
	assert.Equal(t, "0:1#9", merge("0:1#5", "0:1#9"))
	assert.Equal(t, "0:1#9#1=7#2=8", merge("0:1#9#1=3#2=8", "0:1#6#1=7#2=2"))
	assert.Equal(t, "0:2#9#1=7", merge("0:1#9#1=7#2=8", "0:2#5#1=4"), "the higher version's regions (each at its highest LSN), the highest global LSN")
	assert.Equal(t, "0:9", merge("0:5", "0:9"))
	assert.Equal(t, "0:1#12", merge("0:12", "0:1#4"), "a vector token is kept at the higher LSN")
}
