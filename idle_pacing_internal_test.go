package cdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// simulateIdle runs an idle reader at interval against a pacer for d of
// simulated time, with other requests every `every` (0: none), and returns
// the requests (reads and others) per interval and the largest stretch.
func simulateIdle(interval, every, d time.Duration) (perInterval, largest float64) {
	var ip idlePacer
	start := time.Unix(0, 0)
	now, nextOther := start, start.Add(every)
	var reads, others int
	largest = 1
	for now.Sub(start) < d {
		reads++
		s := ip.stretch()
		largest = max(largest, s)
		now = now.Add(time.Duration(float64(interval) * s))
		for every > 0 && !nextOther.After(now) {
			ip.add(1)
			others++
			nextOther = nextOther.Add(every)
		}
	}
	return float64(reads+others) / (float64(d) / float64(interval)), largest
}

// TestIdlePacerKeepsAnIdleProcessWithinOneRequestPerInterval: with the
// other requests of an idle process (2 per 5 s heartbeat and about 0.25
// safety queries per second: one every 1.54 s on average), the lengthened
// pauses and those requests make at most one request per interval, and no
// pause is more than a tenth longer.
func TestIdlePacerKeepsAnIdleProcessWithinOneRequestPerInterval(t *testing.T) {
	t.Parallel()
	per, largest := simulateIdle(80*time.Millisecond, 1540*time.Millisecond, 10*time.Minute)
	assert.LessOrEqual(t, per, 1.0)
	assert.Greater(t, per, 0.99, "not slower than the requests need")
	assert.Equal(t, 1+idlePayStep, largest)
}

// TestIdlePacerStretchIsOneWithoutOtherRequestsAndBounded: no other
// request, no stretch; other requests too fast for an idle process
// lengthen each pause by idlePayStep at most, and the debt stays bounded.
func TestIdlePacerStretchIsOneWithoutOtherRequestsAndBounded(t *testing.T) {
	t.Parallel()
	per, largest := simulateIdle(80*time.Millisecond, 0, time.Minute)
	assert.Equal(t, 1.0, largest)
	assert.InDelta(t, 1.0, per, 0.01)
	_, largest = simulateIdle(80*time.Millisecond, 10*time.Millisecond, time.Minute)
	assert.Equal(t, 1+idlePayStep, largest)
	var ip idlePacer
	ip.add(1000)
	assert.Equal(t, float64(maxIdleDebt), ip.owed)
}
