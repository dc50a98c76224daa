package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// options are the command line of cdb-stress.
type options struct {
	scenarios     []stress.StressScenario
	duration      time.Duration
	maxConcurrent int
	tasks         int
	activityDelay time.Duration
	waitTimeout   time.Duration
	pollInterval  time.Duration
	configs       []dispatchConfig
	providers     []string
	progress      bool
	record        string
	profiles      profileFlags
	// mp, when set (-processes), selects the multi-process mode.
	mp *mpOptions
	// latency is the embedded emulator's simulated per-request latency.
	latency emulator.Latency
	// dataDir is -data-dir: the embedded emulator of each cdb run keeps
	// its data in a fresh directory under it (emulator.Options.DataDir);
	// empty keeps it in memory.
	dataDir string
	// changeFeed is -change-feed: the cdb runs use change-feed wake-ups
	// (the provider's default; -change-feed=false disables them).
	changeFeed bool
	// sequential, when set (-sequential), selects the sequential mode:
	// one orchestration of N sequential activities per N.
	sequential []int
	// set holds the names of the flags given on the command line.
	set map[string]bool
}

// dispatchConfig is one "orchestration/worker" dispatcher configuration.
type dispatchConfig struct {
	orchestration, worker int
}

func (c dispatchConfig) String() string { return fmt.Sprintf("%d/%d", c.orchestration, c.worker) }

// Provider names of the -provider flag.
const (
	providerMemory = "memory"
	providerCDB    = "cdb"
	providerBoth   = "both"
)

// scenarioAliases maps the -scenario values to scenarios.
var scenarioAliases = map[string][]stress.StressScenario{
	"parallel":                {stress.ScenarioParallelOrchestrations},
	"parallel_orchestrations": {stress.ScenarioParallelOrchestrations},
	"large":                   {stress.ScenarioLargePayload},
	"large_payload":           {stress.ScenarioLargePayload},
	"all":                     stress.StressScenarios(),
}

// parseOptions parses args; usage and errors go to out. flag.ErrHelp is
// returned for -h.
func parseOptions(args []string, out io.Writer) (options, error) {
	fs := flag.NewFlagSet("cdb-stress", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageText)
		fs.PrintDefaults()
	}
	scenario := fs.String("scenario", "parallel", "workload: parallel (parallel_orchestrations), large (large_payload) or all")
	duration := fs.Duration("duration", 10*time.Second, "how long each run launches orchestrations")
	maxConcurrent := fs.Int("max-concurrent", 20, "orchestrations in flight (large_payload default: 5)")
	tasks := fs.Int("tasks", 5, "activities per orchestration of the parallel scenario")
	delay := fs.Duration("activity-delay", 10*time.Millisecond, "simulated work of each activity (large_payload default: 5ms)")
	wait := fs.Duration("wait-timeout", 0, "longest wait for one orchestration (0: 60s, large_payload 120s)")
	poll := fs.Duration("poll-interval", 100*time.Millisecond, "the runtime's minimum idle polling cycle")
	configs := fs.String("configs", "1/1,2/2,4/4", "comma-separated orchestration/worker dispatcher counts")
	provider := fs.String("provider", providerBoth, "provider(s) to run: cdb, memory or both")
	progress := fs.Bool("progress", true, "print a progress line while running (on stderr)")
	record := fs.String("record", "", "append this run, in RESULTS.md's format, to the given file")
	sequential := fs.String("sequential", "", "sequential mode: comma-separated activity counts, e.g. 200,2000: one orchestration calling N activities one after the other, per N and provider (DUROXIDE_STICKY=off turns the sticky cache off, DUROXIDE_EAGER=off the cdb provider's eager dispatch)")
	processes := fs.String("processes", "", "multi-process mode: comma-separated process counts, e.g. 1,2,4 (each a real OS process)")
	orchestrations := fs.Int("orchestrations", 100, "multi-process mode: orchestrations per process count")
	mpDispatchers := fs.String("mp-dispatchers", "4/4", "multi-process mode: orchestration/worker dispatchers in total, split across the processes")
	chaos := fs.Bool("chaos", false, "multi-process mode: SIGKILL a random process every -chaos-every (and start a replacement), SIGSTOP one past its lock timeout once")
	chaosEvery := fs.Duration("chaos-every", 3*time.Second, "multi-process mode: pause between chaos events")
	mpTimeout := fs.Duration("mp-timeout", 2*time.Minute, "multi-process mode: longest wait for all orchestrations of one process count")
	partitions := fs.Int("partitions", 4, "multi-process mode: physical partitions of the embedded emulator")
	leases := fs.String("leases", string(cdb.LeasesInContainer), "multi-process mode: where the dispatch-slot leases live, in-process or container (cdb.Config.Leases)")
	leaseHeartbeat := fs.Duration("lease-heartbeat", mpLeaseHeartbeat, "multi-process mode: the processes' cdb.Config.LeaseHeartbeatInterval (short, so that a killed process's slots move within a run; the provider's default is 5s)")
	leaseExpiry := fs.Duration("lease-expiry", mpLeaseExpiry, "multi-process mode: the processes' cdb.Config.LeaseExpiry, at least 2 heartbeats (the provider's default is 30s)")
	changeFeed := fs.Bool("change-feed", true, "change-feed wake-ups in every cdb provider (the default; -change-feed=false sets cdb.Config.DisableChangeFeedWakeups)")
	dataDir := fs.String("data-dir", "", "the embedded emulator keeps each cdb run's data in a fresh directory under this one (emulator.Options.DataDir: every write fsynced before it is acknowledged), removed after the run; empty: in memory; ignored with COSMOS_ENDPOINT")
	latency := fs.String("latency", "", "simulated per-request latency of the embedded emulator, e.g. 5ms or 5ms±2ms (also 5ms+-2ms); ignored with COSMOS_ENDPOINT")
	var prof profileFlags
	fs.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the whole command to this file (go tool pprof)")
	fs.StringVar(&prof.mem, "memprofile", "", "write a heap profile, taken at the end, to this file")
	fs.StringVar(&prof.mutex, "mutexprofile", "", "write a mutex contention profile to this file")
	fs.StringVar(&prof.block, "blockprofile", "", "write a blocking profile (events of 10µs or more) to this file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	o := options{
		duration: *duration, maxConcurrent: *maxConcurrent, tasks: *tasks, activityDelay: *delay,
		waitTimeout: *wait, pollInterval: *poll, progress: *progress, record: *record, profiles: prof, set: map[string]bool{},
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.changeFeed = *changeFeed
	o.dataDir = *dataDir
	var errs []error
	var ok bool
	if o.scenarios, ok = scenarioAliases[*scenario]; !ok {
		errs = append(errs, fmt.Errorf("-scenario %q: want parallel, large or all", *scenario))
	}
	switch *provider {
	case providerMemory, providerCDB:
		o.providers = []string{*provider}
	case providerBoth:
		o.providers = []string{providerMemory, providerCDB}
	default:
		errs = append(errs, fmt.Errorf("-provider %q: want cdb, memory or both", *provider))
	}
	var err error
	if o.latency, err = emulator.ParseLatency(*latency); err != nil {
		errs = append(errs, fmt.Errorf("-latency: %w", err))
	}
	if o.configs, err = parseConfigs(*configs); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"-duration must be positive", o.duration <= 0},
		{"-max-concurrent must be positive", o.maxConcurrent <= 0},
		{"-tasks must be positive", o.tasks <= 0},
		{"-activity-delay must not be negative", o.activityDelay < 0},
		{"-wait-timeout must not be negative", o.waitTimeout < 0},
		{"-poll-interval must be positive", o.pollInterval <= 0},
	} {
		if f.bad {
			errs = append(errs, errors.New(f.name))
		}
	}
	if *sequential != "" {
		if o.sequential, err = parseSequential(*sequential); err != nil {
			errs = append(errs, err)
		}
		if !o.set["poll-interval"] {
			o.pollInterval = 10 * time.Millisecond // the e2e benchmark's
		}
	}
	if *processes != "" {
		mp := &mpOptions{orchestrations: *orchestrations, chaos: *chaos, chaosEvery: *chaosEvery, timeout: *mpTimeout, partitions: *partitions,
			leases: cdb.LeaseMode(*leases), changeFeed: *changeFeed, leaseHeartbeat: *leaseHeartbeat, leaseExpiry: *leaseExpiry}
		if mp.leaseHeartbeat <= 0 || mp.leaseExpiry < 2*mp.leaseHeartbeat {
			errs = append(errs, errors.New("-lease-heartbeat must be positive and -lease-expiry at least twice it"))
		}
		if mp.leases != cdb.LeasesInContainer && mp.leases != cdb.LeasesInProcess {
			errs = append(errs, fmt.Errorf("-leases %q: want %s or %s", *leases, cdb.LeasesInProcess, cdb.LeasesInContainer))
		}
		if mp.processes, err = parseProcesses(*processes); err != nil {
			errs = append(errs, err)
		}
		if d, err := parseConfigs(*mpDispatchers); err != nil {
			errs = append(errs, fmt.Errorf("-mp-dispatchers: %w", err))
		} else {
			mp.dispatchers = d[0]
		}
		if mp.orchestrations <= 0 || mp.chaosEvery <= 0 || mp.timeout <= 0 || mp.partitions < 1 || mp.partitions > emulator.MaxPhysicalPartitions {
			errs = append(errs, errors.New("-orchestrations, -chaos-every and -mp-timeout must be positive, -partitions 1..64"))
		}
		o.mp = mp
	}
	if len(errs) > 0 {
		return options{}, errors.Join(errs...)
	}
	return o, nil
}

// parseConfigs parses "1/1,2/2,4/4".
func parseConfigs(s string) ([]dispatchConfig, error) {
	var out []dispatchConfig
	for _, part := range strings.Split(s, ",") {
		o, w, found := strings.Cut(strings.TrimSpace(part), "/")
		on, err1 := strconv.Atoi(o)
		wn, err2 := strconv.Atoi(w)
		if !found || err1 != nil || err2 != nil || on <= 0 || wn <= 0 {
			return nil, fmt.Errorf("-configs: %q is not orchestration/worker (e.g. 2/2)", part)
		}
		out = append(out, dispatchConfig{orchestration: on, worker: wn})
	}
	return out, nil
}

// stressConfig is the harness configuration of scenario on c. Flags left
// at their defaults let the harness pick the scenario's own (duroxide's
// large-payload defaults differ).
func (o options) stressConfig(scenario stress.StressScenario, c dispatchConfig) stress.StressConfig {
	cfg := stress.StressConfig{
		Scenario: scenario, Duration: o.duration, TasksPerInstance: o.tasks,
		OrchestrationConcurrency: c.orchestration, WorkerConcurrency: c.worker,
		WaitTimeout: o.waitTimeout, PollInterval: o.pollInterval,
	}
	if scenario != stress.ScenarioLargePayload || o.set["max-concurrent"] {
		cfg.MaxConcurrent = o.maxConcurrent
	}
	if scenario != stress.ScenarioLargePayload || o.set["activity-delay"] {
		cfg.ActivityDelay = o.activityDelay
		if cfg.ActivityDelay == 0 {
			cfg.ActivityDelay = -1 // the harness reads a negative delay as none
		}
	}
	return cfg
}

const usageText = `cdb-stress runs duroxide's provider stress tests (parallel orchestrations,
large payloads) on the Cosmos DB provider and on the in-memory reference
provider, and prints duroxide's results table.

Without COSMOS_ENDPOINT it runs on a fresh embedded emulator per run; with
COSMOS_ENDPOINT and COSMOS_KEY (and optionally COSMOS_DATABASE and
COSMOS_CONTAINER) it runs against that account.

Usage:

	cdb-stress [flags]

Flags:
`
