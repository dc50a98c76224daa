package emulator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFaultRuleReadsEveryKeyAndNamesTheBadPair(t *testing.T) {
	t.Parallel()
	r, err := ParseFaultRule("op=batch, kind=TooManyRequests, pk=order-1, id=x, times=3, probability=0.5, seed=7, retry-after=100ms, delay=2s")
	require.NoError(t, err)
	pk, id := "order-1", "x"
	assert.Equal(t, FaultRule{Op: OpBatch, PartitionKey: &pk, ItemID: &id, Times: 3, Probability: 0.5, Seed: 7,
		Fault: Fault{Kind: FaultTooManyRequests, RetryAfter: 100 * time.Millisecond, Delay: 2 * time.Second}}, r)
	for spec, want := range map[string]string{
		"":                         "kind= is required",
		"op=Batch":                 "kind= is required",
		"kind=Sometimes":           "unknown kind",
		"kind=Delay,op=Teleport":   "unknown op",
		"kind=Delay,times=-1":      "times=-1",
		"kind=Delay,probability=2": "probability=2",
		"kind=Delay,delay=soon":    "delay=soon",
		"kind=Delay,color=red":     `unknown key "color"`,
		"kind=Delay,op":            `"op" is not key=value`,
	} {
		_, err := ParseFaultRule(spec)
		assert.ErrorContains(t, err, want, spec)
	}
}
