package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/internal/testparallel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary serve as a multi-process child: the
// multi-process mode re-executes its own binary (os.Executable).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild(os.Stdout, os.Stderr))
	}
	// The stress runs last a set time and the chaos run mostly waits for
	// its children: 4 at a time unless -parallel says otherwise.
	if err := testparallel.Default(4); err != nil {
		fmt.Fprintln(os.Stderr, "cdb-stress tests:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestMultiProcessChaosRunVerifies runs 2 real processes against one
// emulator server with 4 physical partitions, kills one (and starts a
// replacement) and freezes one past its lock timeout and lease expiry:
// every orchestration completes exactly once with the expected output, no
// history event is duplicated, nothing stays locked or queued.
func TestMultiProcessChaosRunVerifies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts OS processes for several seconds")
	}
	t.Parallel()
	for _, mode := range []struct {
		leases     cdb.LeaseMode
		changeFeed bool
	}{{cdb.LeasesInContainer, true}, {cdb.LeasesInProcess, false}} {
		t.Run(string(mode.leases), func(t *testing.T) {
			t.Parallel()
			var out, errOut strings.Builder
			o := mpOptions{processes: []int{2}, orchestrations: 30, dispatchers: dispatchConfig{orchestration: 2, worker: 2},
				chaos: true, chaosEvery: 300 * time.Millisecond, maxKills: 1, timeout: 90 * time.Second, partitions: 4,
				leases: mode.leases, changeFeed: mode.changeFeed}
			code := runMultiProcess(context.Background(), o, nil, "", &out, &errOut)
			t.Log(out.String())
			require.Equal(t, exitOK, code, "report:\n%s\nstderr:\n%s", out.String(), errOut.String())
			assert.Contains(t, out.String(), "ok: every orchestration completed once")
			fields := strings.Fields(strings.Split(out.String(), "\n")[2])
			require.GreaterOrEqual(t, len(fields), 10)
			assert.NotEqual(t, "0", fields[8], "at least one process was killed")
			assert.NotEqual(t, "0", fields[9], "at least one process was frozen")
			assert.Regexp(t, `N=2 requests per orchestration by provider call \(the processes that stopped cleanly\): .*fetch_orchestration_item [0-9.]+`, out.String(),
				"the children report their requests by provider call")
		})
	}
}

// TestProcessesFlag checks -processes parsing and its bad input.
func TestProcessesFlag(t *testing.T) {
	o, err := parseOptions([]string{"-processes", "1,2,4", "-chaos", "-orchestrations", "7"}, &strings.Builder{})
	require.NoError(t, err)
	require.NotNil(t, o.mp)
	assert.Equal(t, []int{1, 2, 4}, o.mp.processes)
	assert.True(t, o.mp.chaos)
	assert.Equal(t, 7, o.mp.orchestrations)
	assert.Equal(t, mpLeaseHeartbeat, o.mp.leaseHeartbeat, "the short test heartbeat unless told")
	o, err = parseOptions([]string{"-processes", "4", "-lease-heartbeat", "5s", "-lease-expiry", "30s"}, &strings.Builder{})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, o.mp.leaseHeartbeat)
	assert.Equal(t, 30*time.Second, o.mp.leaseExpiry)
	for _, bad := range [][]string{{"-processes", "0"}, {"-processes", "x"}, {"-processes", "2", "-mp-dispatchers", "a"}, {"-processes", "2", "-orchestrations", "0"}, {"-processes", "2", "-lease-heartbeat", "5s", "-lease-expiry", "9s"}, {"-processes", "2", "-lease-heartbeat", "0s"}} {
		_, err := parseOptions(bad, &strings.Builder{})
		assert.Error(t, err, "%v", bad)
	}
}

// TestCallBreakdownSumsTheChildrensCallsPerOrchestration: the calls of
// several STATS lines add up, malformed parts are skipped, and the
// breakdown gives requests per orchestration, the largest first.
func TestCallBreakdownSumsTheChildrensCallsPerOrchestration(t *testing.T) {
	t.Parallel()
	calls := map[string]int64{}
	addCalls(calls, "fetch_work_item:30,lease_heartbeat:4")
	addCalls(calls, "fetch_work_item:10,new:8,bad,x:y")
	assert.Equal(t, map[string]int64{"fetch_work_item": 40, "lease_heartbeat": 4, "new": 8}, calls)
	assert.Equal(t, "fetch_work_item 2.00, new 0.40, lease_heartbeat 0.20", callBreakdown(calls, 20))
	assert.Empty(t, callBreakdown(nil, 20))
	round := map[string]int64{}
	addCalls(round, formatCalls(calls))
	assert.Equal(t, calls, round, "what a child formats, the parent reads back")
}
