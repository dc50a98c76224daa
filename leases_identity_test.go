package cdb_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/internal/childproc"
)

// A process restarted under its stable identity (Config.ProcessID) takes
// its dead predecessor's lease slots at once; two live processes never
// share an identity.

// leaseHolderEnv, when set, makes the test binary a lease holder
// (runLeaseHolder) instead of running the tests: the "crashed process"
// of TestARestartedProcessTakesItsPredecessorsSlotsAtOnce.
const leaseHolderEnv = "CDB_TEST_LEASE_HOLDER"

// Lease intervals under which a dead owner's slots are never taken, nor
// suspected, within a test: only the identity can hand them over.
const (
	hourHeartbeat = time.Hour
	hourExpiry    = 2 * time.Hour
)

// identityConfig is a config on container of account with container
// leases whose heartbeats never come in a test, and the ProcessID id.
func identityConfig(a *cdbtest.Account, container, id string) cdb.Config {
	cfg := a.Config()
	cfg.Container, cfg.ProcessID = container, id
	cfg.DisableReconciler, cfg.Leases = true, cdb.LeasesInContainer
	cfg.LeaseHeartbeatInterval, cfg.LeaseExpiry = hourHeartbeat, hourExpiry
	return cfg
}

// runLeaseHolder is the child process: it opens a provider on the
// container its environment names, claims every orchestration slot (one
// fetch), says so on standard output and waits to be killed.
func runLeaseHolder() int {
	var f struct{ endpoint, key, database, container, id string }
	if _, err := fmt.Sscanf(os.Getenv(leaseHolderEnv), "%s %s %s %s %s", &f.endpoint, &f.key, &f.database, &f.container, &f.id); err != nil {
		fmt.Fprintln(os.Stderr, "lease holder:", err)
		return 2
	}
	cfg := cdb.Config{Endpoint: f.endpoint, Key: f.key, Database: f.database, Container: f.container, ProcessID: f.id,
		DisableReconciler: true, Leases: cdb.LeasesInContainer, LeaseHeartbeatInterval: hourHeartbeat, LeaseExpiry: hourExpiry}
	ctx := context.Background()
	p, err := cdb.New(ctx, cfg)
	if err == nil {
		_, err = p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lease holder:", err)
		return 2
	}
	fmt.Printf("claimed %d\n", len(cdb.OwnedLeaseSlots(p, "orch")))
	time.Sleep(time.Hour)
	return 0
}

// A process killed with SIGKILL and started again with the same
// ProcessID takes its predecessor's slots at its first fetch: a turn
// waiting in them is fetched by a zero-timeout fetch, although the dead
// owner's lease would only expire in two hours (and be suspected in two).
func TestARestartedProcessTakesItsPredecessorsSlotsAtOnce(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	id := "restarting-" + strings.TrimPrefix(a.Config().Container, "t-")
	cfg := identityConfig(a, "restart", id)
	// The child is killed when the test ends, whatever happens (it would
	// otherwise hold its slots, asleep, for an hour).
	child := childproc.Start(t, "^$", leaseHolderEnv, strings.Join([]string{a.Endpoint(), a.Key(), a.Database(), cfg.Container, id}, " "))
	require.True(t, child.Lines.Scan(), "the lease holder did not claim its slots: %v", child.Lines.Err())
	require.Equal(t, "claimed 256", child.Lines.Text())

	ctx := context.Background()
	instance := "after-restart"
	require.NoError(t, child.Kill())

	core, logs := observer.New(zapcore.InfoLevel)
	cfg.Logger = zap.New(core)
	restarted := a.NewProvider(t, cfg)
	require.NoError(t, restarted.EnqueueForOrchestrator(ctx, startItem(instance), 0))
	start := time.Now()
	item, err := restarted.FetchOrchestrationItem(ctx, longLock, 0, nil)
	took := time.Since(start)
	require.NoError(t, err)
	require.NotNil(t, item, "the first fetch after the restart serves the predecessor's slots")
	assert.Equal(t, instance, item.Instance)
	assert.Len(t, cdb.OwnedLeaseSlots(restarted, "orch"), cdb.NumDispatchSlots)
	assert.Equal(t, id, restarted.ProcessID())
	assert.Equal(t, 1, logs.FilterMessageSnippet("taking over the dispatch slots of this process's predecessor").Len())
	t.Logf("restart to the first turn fetched: %v", took)
}

// Two live processes with one ProcessID on one host (two replicas of a
// program): the second sees the first's pid alive, takes a random id and
// warns; they split the slots as any two processes do.
func TestALiveTwinOnTheSameHostMakesTheSecondTakeARandomID(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.ProcessID = "replica"
	alive := func(int) bool { return true }
	first := cfg
	cdb.SetLeaseSelf(&first, "host-a", 100, "run-1", alive)
	second := cfg
	cdb.SetLeaseSelf(&second, "host-a", 200, "run-2", alive)
	core, logs := observer.New(zapcore.InfoLevel)
	second.Logger = zap.New(core)
	a := startServingProvider(t, first)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), a))
	b := startServingProvider(t, second)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), b))
	assert.Equal(t, "replica", a.ProcessID())
	assert.NotEqual(t, "replica", b.ProcessID())
	warned := logs.FilterMessageSnippet("a live process on this host has the same ProcessID").All()
	require.Len(t, warned, 1)
	assert.Equal(t, zapcore.WarnLevel, warned[0].Level)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })
}

// Two live processes with one ProcessID on two hosts (a host name shared
// by two machines): the second takes the first's identity for a dead
// predecessor's, and the first, whose next renewal finds its owner
// document written by another, takes a random id and warns; then they
// split the slots.
func TestALiveTwinOnAnotherHostIsFoundAtItsNextRenewal(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.ProcessID = "shared-name"
	first := cfg
	cdb.SetLeaseSelf(&first, "host-a", 100, "run-1", nil)
	core, logs := observer.New(zapcore.InfoLevel)
	first.Logger = zap.New(core)
	second := cfg
	cdb.SetLeaseSelf(&second, "host-b", 100, "run-2", nil)
	a := startServingProvider(t, first)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), a))
	b := startServingProvider(t, second)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), b))
	assert.Equal(t, "shared-name", b.ProcessID())
	eventually(t, "the first moves to a random id", func() bool { return a.ProcessID() != "shared-name" })
	assert.Equal(t, 1, logs.FilterMessageSnippet("another live process renews the owner document").Len())
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })
}

// Providers of one process on one container (a test's, or a service that
// opens two): the second takes a random id without warning.
func TestTwoProvidersOfOneProcessDoNotShareAnIdentity(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	cfg.ProcessID = "one-process"
	core, logs := observer.New(zapcore.InfoLevel)
	cfg.Logger = zap.New(core)
	a := startServingProvider(t, cfg)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), a))
	b := startServingProvider(t, cfg)
	require.NoError(t, cdb.LeaseHeartbeat(context.Background(), b))
	assert.NotEqual(t, a.ProcessID(), b.ProcessID())
	assert.Zero(t, logs.Filter(func(e observer.LoggedEntry) bool { return e.Level >= zapcore.WarnLevel }).Len())
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, a, b) })
}

// An owner that stops renewing (crashed) is named in a warning once its
// slots are suspected: what this process waits for and for how long.
func TestWaitingForACrashedOwnersSlotsIsLogged(t *testing.T) {
	t.Parallel()
	cfg := containerLeaseConfig()
	core, logs := observer.New(zapcore.InfoLevel)
	waiting := cfg
	waiting.Logger = zap.New(core)
	crashed, survivor := startServingProvider(t, cfg), startServingProvider(t, waiting)
	eventually(t, "two owners split the slots", func() bool { return disjointCover(128, crashed, survivor) })
	cdb.FreezeLeases(crashed, true)
	eventually(t, "the wait is logged", func() bool {
		return logs.FilterMessageSnippet("waiting for the dispatch slots of an owner that stopped renewing").Len() == 1
	})
	e := logs.FilterMessageSnippet("waiting for the dispatch slots").All()[0]
	assert.Equal(t, zapcore.WarnLevel, e.Level)
	assert.Equal(t, crashed.ProcessID(), e.ContextMap()["owner"])
	// The slot documents that still name it: at least its 128 of each
	// queue, more when it was frozen before the documents of slots it had
	// just given up were written (284 once, under load).
	held := e.ContextMap()["slots"].(int64)
	assert.True(t, held >= 256 && held <= 2*cdb.NumDispatchSlots, "slots %d: at least 128 of each queue", held)
	assert.Positive(t, int64(e.ContextMap()["taken_in"].(time.Duration)))
	eventually(t, "the takeover is logged", func() bool {
		return logs.FilterMessageSnippet("taking over the dispatch slots of an owner whose lease expired").Len() == 1
	})
}
