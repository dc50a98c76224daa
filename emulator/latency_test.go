package emulator

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLatencyReadsFixedAndJitter(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]Latency{
		"":            {},
		"5ms":         {Fixed: 5 * time.Millisecond},
		"5ms±2ms":     {Fixed: 5 * time.Millisecond, Jitter: 2 * time.Millisecond},
		" 5ms +- 2ms": {Fixed: 5 * time.Millisecond, Jitter: 2 * time.Millisecond},
		"1.5ms":       {Fixed: 1500 * time.Microsecond},
	} {
		got, err := ParseLatency(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
	assert.Equal(t, "5ms±2ms", Latency{Fixed: 5 * time.Millisecond, Jitter: 2 * time.Millisecond}.String())
	assert.Equal(t, "5ms", Latency{Fixed: 5 * time.Millisecond}.String())
}

func TestParseLatencyRejectsBadText(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"5", "fast", "5ms±", "5ms±x", "-5ms", "5ms±-1ms"} {
		_, err := ParseLatency(text)
		assert.Error(t, err, text)
	}
}

func TestLatencyDrawsStayWithinFixedPlusMinusJitter(t *testing.T) {
	t.Parallel()
	ls := newLatencySim(Latency{Fixed: 5 * time.Millisecond, Jitter: 2 * time.Millisecond},
		map[OpKind]Latency{OpQuery: {Fixed: 9 * time.Millisecond}}, 1)
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := ls.draw(OpReadItem)
		require.GreaterOrEqual(t, d, 3*time.Millisecond)
		require.LessOrEqual(t, d, 7*time.Millisecond)
		seen[d] = true
	}
	assert.Greater(t, len(seen), 100, "jitter spreads the draws")
	assert.Equal(t, 9*time.Millisecond, ls.draw(OpQuery), "a per-kind latency overrides the default")

	var none *latencySim
	assert.Equal(t, time.Duration(0), none.draw(OpReadItem))
	assert.Nil(t, newLatencySim(Latency{}, nil, 0), "no latency configured: nothing drawn")
	clamped := newLatencySim(Latency{Fixed: time.Millisecond, Jitter: 5 * time.Millisecond}, nil, 2)
	for range 100 {
		require.GreaterOrEqual(t, clamped.draw(OpBatch), time.Duration(0))
	}
}

func TestLatencyServerAnswersRequestsNormally(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Latency: Latency{Fixed: time.Millisecond, Jitter: time.Millisecond}})
	c := e.container("lat", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	_, err := c.CreateItem(e.ctx, pk, doc(t, "a"), nil)
	require.NoError(t, err)
	got, err := c.ReadItem(e.ctx, pk, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, "a", decodeMap(t, got.Value)["id"])
}
