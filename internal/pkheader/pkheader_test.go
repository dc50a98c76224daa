package pkheader

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSONPartitionKey checks that the header the SDK writes with Go
// quoting becomes JSON that decodes to the same values.
func TestJSONPartitionKey(t *testing.T) {
	for _, v := range []string{"plain", "ünïcødé-订单-🚀", "\x00\a\v\x7f\t\n", `q"uote\back`, "𝄞 music"} {
		header := "[" + strconv.QuoteToASCII(v) + "]" // what azcosmos v1.5.0 sends
		fixed, err := jsonPartitionKey(header)
		require.NoError(t, err)
		var got []string
		require.NoError(t, json.Unmarshal([]byte(fixed), &got), "header %s", fixed)
		assert.Equal(t, []string{v}, got)
		for _, c := range []byte(fixed) {
			assert.Less(t, c, byte(0x80), "the header is ASCII")
		}
	}
	fixed, err := jsonPartitionKey(`["a",1,true,null,{}]`)
	require.NoError(t, err)
	assert.Equal(t, `["a",1,true,null,{}]`, fixed, "other components pass through")
	_, err = jsonPartitionKey(`["unterminated]`)
	assert.Error(t, err)
	_, err = jsonPartitionKey(`"not an array"`)
	assert.Error(t, err)
}
