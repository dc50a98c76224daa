// Command cdb-stress runs duroxide's provider stress tests (parallel
// orchestrations: a fan-out of N activities then a fan-in; large payloads:
// 10/50/100 KB payloads, sub-orchestrations, about 100 events of history)
// on the Cosmos DB provider and on the in-memory reference provider, on the
// dispatcher configurations 1/1, 2/2 and 4/4, and prints duroxide's results
// table, the Cosmos DB requests per completed orchestration and per
// provider call, the peak heap, and whether issue 7's targets are met.
//
// Usage:
//
//	go run ./cmd/cdb-stress [-scenario parallel|large|all] [-duration 10s]
//	    [-max-concurrent 20] [-tasks 5] [-activity-delay 10ms]
//	    [-configs 1/1,2/2,4/4] [-provider both|cdb|memory] [-record file]
//	go run ./cmd/cdb-stress -sequential 200,2000 [-provider cdb]
//
// -sequential runs one orchestration calling N activities one after the
// other per N and provider and prints the time per activity (sequential.go).
// -data-dir DIR runs each embedded emulator on a fresh data directory under
// DIR (every write fsynced before it is acknowledged) and prints the log's
// fsyncs, records and bytes per orchestration.
// With no environment set, every cdb run gets a fresh embedded emulator
// (emulator); with COSMOS_ENDPOINT and COSMOS_KEY it runs against
// that account. At the end of each run every orchestration's history is
// checked (each activity result exactly once, terminal status and output
// right); the exit status is 1 when any orchestration failed or was lost,
// 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailures = 1
	exitUsage    = 2
)

func main() {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild(os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole command: it parses args, runs every scenario on every
// provider and configuration, writes the report to stdout and progress
// and errors to stderr, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "cdb-stress:", err)
		return exitUsage
	}
	stopProfiles, err := startProfiles(o.profiles)
	if err != nil {
		fmt.Fprintln(stderr, "cdb-stress:", err)
		return exitUsage
	}
	var code int
	if len(o.sequential) > 0 {
		code = runSequential(ctx, o, args, stdout, stderr)
	} else if o.mp != nil {
		mp := *o.mp
		mp.latency = o.latency
		code = runMultiProcess(ctx, mp, args, o.record, stdout, stderr)
	} else {
		code = runAll(ctx, o, args, stdout, stderr)
	}
	if err := stopProfiles(); err != nil {
		fmt.Fprintln(stderr, "cdb-stress: profiles:", err)
		code = max(code, exitFailures)
	}
	return code
}

// runAll runs every scenario of o on every provider and configuration,
// writes the report and records it when asked; it returns the exit status.
func runAll(ctx context.Context, o options, args []string, stdout, stderr io.Writer) int {
	cdbT, targets := o.targets()
	runID := time.Now().UTC().Format("20060102T150405")
	loadAtStart := loadAverage()
	var reps []scenarioReport
	for _, sc := range o.scenarios {
		rep := scenarioReport{scenario: sc}
		for _, t := range targets {
			for _, c := range o.configs {
				r, err := runOne(ctx, o, t, sc, c, runID, stderr)
				if err != nil {
					fmt.Fprintf(stderr, "cdb-stress: %s %s %s: %v\n", sc, t.name(), c, err)
					return exitFailures
				}
				rep.rows = append(rep.rows, r)
			}
		}
		reps = append(reps, rep)
	}
	var report strings.Builder
	store := "memory: memory.MemoryProvider"
	if len(o.providers) > 1 || o.providers[0] == providerCDB {
		store = cdbT.store() + "; " + store
	}
	for _, rep := range reps {
		writeScenario(&report, rep, store)
	}
	verdicts := evaluateTargets(reps)
	writeTargets(&report, verdicts)
	_, _ = io.WriteString(stdout, report.String())
	if o.record != "" {
		if err := appendRecord(o.record, args, report.String(), loadAtStart); err != nil {
			fmt.Fprintln(stderr, "cdb-stress: record:", err)
			return exitFailures
		}
	}
	if !verdicts[0].met {
		return exitFailures
	}
	return exitOK
}

// targets returns the providers of -provider, in order, and the cdb
// target (with -latency and -change-feed) whether or not it is one of them.
func (o options) targets() (cdbTarget, []target) {
	cdbT := newCDBTarget(o.latency)
	cdbT.env.DisableChangeFeedWakeups = !o.changeFeed
	cdbT.dataDir = o.dataDir
	var targets []target
	for _, p := range o.providers {
		if p == providerMemory {
			targets = append(targets, memoryTarget{})
		} else {
			targets = append(targets, cdbT)
		}
	}
	return cdbT, targets
}

// runOne runs scenario on target t with configuration c.
func runOne(ctx context.Context, o options, t target, sc stress.StressScenario, c dispatchConfig, runID string, stderr io.Writer) (row, error) {
	cfg := o.stressConfig(sc, c)
	tr := t.prepare()
	cfg.RequestCount = tr.requestCount()
	cfg.RequestCharge = tr.requestCharge()
	cfg.InstancePrefix = fmt.Sprintf("stress-%s-%s-%dx%d-", runID, sc, c.orchestration, c.worker)
	tty := isTerminal(stderr)
	if o.progress {
		cfg.Progress = progressPrinter(stderr, t.name(), sc, tty)
	}
	res, err := stress.RunStress(ctx, tr.factory(), cfg)
	if o.progress && tty {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return row{}, err
	}
	_, isCDB := t.(cdbTarget)
	return row{provider: t.name(), cdb: isCDB, res: res, kinds: tr.opKinds(), persist: tr.persistence()}, nil
}

// progressPrinter returns a StressConfig.Progress that prints one line per
// report: rewritten in place on a terminal, one line each otherwise.
func progressPrinter(w io.Writer, provider string, sc stress.StressScenario, tty bool) func(stress.StressProgress) {
	return func(p stress.StressProgress) {
		start, end := "", "\n"
		if tty {
			start, end = "\r\x1b[K", ""
		}
		fmt.Fprintf(w, "%s[%s %s %s] %5.1fs launched %d completed %d failed %d active %d%s",
			start, sc, provider, p.Run.Label(), p.Elapsed.Seconds(), p.Launched, p.Completed, p.Failed, p.Active, end)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
