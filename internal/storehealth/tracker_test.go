package storehealth

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTracker() (*Tracker, *observer.ObservedLogs, *fakeClock) {
	core, logs := observer.New(zapcore.DebugLevel)
	tr := New(zap.New(core))
	clock := &fakeClock{t: time.Unix(1000, 0)}
	tr.now = clock.now
	return tr, logs, clock
}

var errRefused = fmt.Errorf("dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED)

// An outage's failures are logged at the 1st, 2nd, 4th, 8th ... failure,
// whichever call failed.
func TestAnOutageIsLoggedOnABackoff(t *testing.T) {
	t.Parallel()
	tr, logs, clock := newTracker()
	for i := range 20 {
		clock.t = clock.t.Add(time.Second)
		tr.Failed(fmt.Sprint("call", i%3), errRefused)
	}
	var counts []int64
	for _, e := range logs.All() {
		assert.Equal(t, zapcore.WarnLevel, e.Level)
		assert.Contains(t, e.ContextMap()["cause"], "connection refused")
		counts = append(counts, e.ContextMap()["failed_requests"].(int64))
	}
	assert.Equal(t, []int64{1, 2, 4, 8, 16}, counts)
	assert.Equal(t, "call0", logs.All()[0].ContextMap()["call"])
	assert.Equal(t, 15*time.Second, logs.All()[4].ContextMap()["failing_for"])
	assert.True(t, errors.Is(tr.LastCause(), syscall.ECONNREFUSED))
}

// Only a request sent after the outage began ends it: one in flight
// before says nothing of the store now. The end is logged once, with the
// outage's length, its failed requests and its first cause.
func TestAnOutageEndsAtTheFirstSuccessSentDuringIt(t *testing.T) {
	t.Parallel()
	tr, logs, clock := newTracker()
	before := clock.t
	tr.Succeeded(before) // healthy: nothing to say
	require.Zero(t, logs.Len())
	clock.t = clock.t.Add(time.Second)
	tr.Failed("fetch", errRefused)
	clock.t = clock.t.Add(time.Second)
	tr.Failed("ack", errors.New("connection reset"))
	tr.Succeeded(before) // sent before the outage
	require.NotNil(t, tr.LastCause(), "a request sent before the outage does not end it")

	sent := clock.t
	clock.t = clock.t.Add(20 * time.Second)
	tr.Succeeded(sent)
	tr.Succeeded(clock.t)
	ends := logs.FilterMessage("store reachable again").All()
	require.Len(t, ends, 1)
	assert.Equal(t, zapcore.InfoLevel, ends[0].Level)
	assert.Equal(t, 21*time.Second, ends[0].ContextMap()["after"])
	assert.Equal(t, int64(2), ends[0].ContextMap()["failed_requests"])
	assert.Contains(t, ends[0].ContextMap()["first_cause"], "connection refused")
	assert.Nil(t, tr.LastCause())
}
