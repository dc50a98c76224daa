package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The child side of the multi-process mode: cdb-stress re-executes itself
// with childEnv set; the child runs one duroxide runtime on a Cosmos DB
// provider with leases in the container and change-feed wake-ups, prints
// one line per activity execution ("ACT <instance> <step>") and, when told
// to stop (SIGTERM), its usage ("STATS ..."), then exits.

// Environment of a child process.
const (
	childEnv           = "CDB_STRESS_CHILD" // set: run as a child
	childEndpointEnv   = "CDB_STRESS_ENDPOINT"
	childKeyEnv        = "CDB_STRESS_KEY"
	childDatabaseEnv   = "CDB_STRESS_DATABASE"
	childContainerEnv  = "CDB_STRESS_CONTAINER"
	childOrchEnv       = "CDB_STRESS_ORCH_DISPATCHERS"
	childWorkerEnv     = "CDB_STRESS_WORKER_DISPATCHERS"
	childLeasesEnv     = "CDB_STRESS_LEASES"
	childChangeFeedEnv = "CDB_STRESS_CHANGE_FEED"
	childHeartbeatEnv  = "CDB_STRESS_LEASE_HEARTBEAT"
	childExpiryEnv     = "CDB_STRESS_LEASE_EXPIRY"
	// stickyEnv "off" turns the runtime's sticky cache off in every
	// process (children inherit it), as in the project's test suites.
	stickyEnv = "DUROXIDE_STICKY"
	// eagerEnv "off" turns the provider's eager dispatch off in every
	// process (children inherit it), as in the project's test suites.
	eagerEnv = "DUROXIDE_EAGER"
)

// eagerOn reports whether eager dispatch is on (DUROXIDE_EAGER is not
// "off").
func eagerOn() bool { return os.Getenv(eagerEnv) != "off" }

// Timings of the multi-process runs: short, so that a killed or frozen
// process's work moves within a run of a few seconds.
const (
	mpLockTimeout     = 2 * time.Second
	mpWorkerLock      = 3 * time.Second
	mpLeaseHeartbeat  = 250 * time.Millisecond
	mpLeaseExpiry     = 2 * time.Second
	mpActivitySteps   = 3
	mpActivityWorkDur = 5 * time.Millisecond
)

// chainOrchestration is the multi-process workload: mpActivitySteps
// activities in sequence, each appending its step number to the input, so
// the expected output of input "x" is "x-1-2-3".
const chainOrchestration = "Chain"

func expectedChainOutput(input string) string {
	out := input
	for i := 1; i <= mpActivitySteps; i++ {
		out += "-" + strconv.Itoa(i)
	}
	return out
}

// chainRegistry registers the workload; every activity execution is
// reported to report.
func chainRegistry(report func(instance, step string)) (*runtime.Registry, error) {
	reg := runtime.NewRegistry()
	if err := reg.RegisterActivity("Step", func(ctx *runtime.ActivityContext, input string) (string, error) {
		// input is "<value>#<step>"; the result appends "-<step>".
		at := strings.LastIndexByte(input, '#')
		if at < 0 {
			return "", fmt.Errorf("step input %q has no step number", input)
		}
		time.Sleep(mpActivityWorkDur)
		report(ctx.InstanceID(), input[at+1:])
		return input[:at] + "-" + input[at+1:], nil
	}); err != nil {
		return nil, err
	}
	if err := reg.RegisterOrchestration(chainOrchestration, func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		x := input
		for i := 0; i < mpActivitySteps; i++ {
			var err error
			if x, err = ctx.ScheduleActivity("Step", x+"#"+strconv.Itoa(i+1)).Get(); err != nil {
				return "", err
			}
		}
		return x, nil
	}); err != nil {
		return nil, err
	}
	return reg, nil
}

// mpProviderConfig is the provider configuration of every process of a
// multi-process run (-leases, -change-feed, -lease-heartbeat,
// -lease-expiry); a heartbeat or expiry of zero is mpLeaseHeartbeat or
// mpLeaseExpiry.
func mpProviderConfig(endpoint, key, database, container string, leases cdb.LeaseMode, changeFeed bool, heartbeat, expiry time.Duration) cdb.Config {
	if heartbeat <= 0 || expiry <= 0 {
		heartbeat, expiry = mpLeaseHeartbeat, mpLeaseExpiry
	}
	return cdb.Config{
		Endpoint: endpoint, Key: key, Database: database, Container: container,
		Leases: leases, LeaseHeartbeatInterval: heartbeat, LeaseExpiry: expiry,
		DisableChangeFeedWakeups: !changeFeed, DisableEagerDispatch: !eagerOn(),
	}
}

// runChild is main for a child process; it returns the exit status.
func runChild(stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	orch, _ := strconv.Atoi(os.Getenv(childOrchEnv))
	work, _ := strconv.Atoi(os.Getenv(childWorkerEnv))
	changeFeed, _ := strconv.ParseBool(os.Getenv(childChangeFeedEnv))
	heartbeat, _ := time.ParseDuration(os.Getenv(childHeartbeatEnv))
	expiry, _ := time.ParseDuration(os.Getenv(childExpiryEnv))
	cfg := mpProviderConfig(os.Getenv(childEndpointEnv), os.Getenv(childKeyEnv), os.Getenv(childDatabaseEnv), os.Getenv(childContainerEnv),
		cdb.LeaseMode(os.Getenv(childLeasesEnv)), changeFeed, heartbeat, expiry)
	cfg.OrchestrationLanes, cfg.WorkerLanes = max(orch, 1), max(work, 1)
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	p, err := cdb.New(startCtx, cfg)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "child:", err)
		return exitFailures
	}
	var mu sync.Mutex
	reg, err := chainRegistry(func(instance, step string) {
		mu.Lock()
		fmt.Fprintf(stdout, "ACT %s %s\n", instance, step)
		mu.Unlock()
	})
	if err != nil {
		fmt.Fprintln(stderr, "child:", err)
		return exitFailures
	}
	opts := runtime.Options{
		OrchestrationConcurrency: cfg.OrchestrationLanes, WorkerConcurrency: cfg.WorkerLanes,
		OrchestratorLockTimeout: mpLockTimeout, WorkerLockTimeout: mpWorkerLock,
		PollInterval: 10 * time.Millisecond, LongPollTimeout: 5 * time.Second,
	}
	if os.Getenv(stickyEnv) == "off" { // inherited from the parent
		opts.StickyCacheSize = -1
	}
	rt, err := runtime.Start(ctx, p, reg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "child:", err)
		return exitFailures
	}
	<-ctx.Done()
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_ = rt.Shutdown(shutCtx)
	cancel()
	u := p.Usage()
	moves := p.LeaseMoves()
	_ = p.Close()
	mu.Lock()
	fmt.Fprintf(stdout, "STATS requests=%d races=%d moves=%d calls=%s\n", u.Requests, u.LockRacesLost, moves, formatCalls(u.ByCall))
	mu.Unlock()
	return exitOK
}
