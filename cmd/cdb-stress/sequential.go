package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// The sequential mode (-sequential N[,N...]): one orchestration that calls
// N activities one after the other, per provider and N, on one runtime
// with 2 orchestration and 2 worker dispatchers; it reports the wall time
// and the time per activity. Without the runtime's sticky cache every turn
// replays the history from its first event, so the time per activity grows
// with N; issue 26's target is N = 2,000 in 4 s or less, within 1.2x per
// activity of N = 200. DUROXIDE_STICKY=off turns the cache off for a
// before/after comparison.

// sequentialOrchestration is the sequential mode's workload.
const sequentialOrchestration = "Sequential"

// sequentialRegistry registers "Sequential" (input n: n calls of "Inc",
// each adding one to the previous result; output n) and "Inc".
func sequentialRegistry() (*runtime.Registry, error) {
	reg := runtime.NewRegistry()
	err := errors.Join(
		runtime.RegisterActivityTyped(reg, "Inc", func(_ *runtime.ActivityContext, i int) (int, error) { return i + 1, nil }),
		runtime.RegisterOrchestrationTyped(reg, sequentialOrchestration, func(ctx *runtime.OrchestrationContext, n int) (int, error) {
			x := 0
			for range n {
				f, err := runtime.ScheduleActivityTyped(ctx, "Inc", x)
				if err != nil {
					return 0, err
				}
				if x, err = runtime.Await[int](f); err != nil {
					return 0, err
				}
			}
			return x, nil
		}))
	return reg, err
}

// sequentialRow is one run of the sequential mode.
type sequentialRow struct {
	provider string
	n        int
	elapsed  time.Duration
	// eager is the provider's eager dispatch counts over the run (the
	// warm-up's included), nil for a provider without eager dispatch.
	eager *duroxide.EagerDispatchStats
}

// parseSequential parses "200,2000".
func parseSequential(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sequential: %q is not a positive activity count", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// runSequential runs the sequential mode of o on every provider and writes
// (and records, with -record) its table; it returns the exit status.
func runSequential(ctx context.Context, o options, args []string, stdout, stderr io.Writer) int {
	cdbT, targets := o.targets()
	sticky := os.Getenv(stickyEnv) != "off"
	loadAtStart := loadAverage()
	var rows []sequentialRow
	for _, t := range targets {
		for _, n := range o.sequential {
			elapsed, eager, err := runSequentialOnce(ctx, t, n, sticky, o.pollInterval)
			if err != nil {
				fmt.Fprintf(stderr, "cdb-stress: sequential %s N=%d: %v\n", t.name(), n, err)
				return exitFailures
			}
			if o.progress {
				fmt.Fprintf(stderr, "[sequential %s] N=%d in %.2fs\n", t.name(), n, elapsed.Seconds())
			}
			rows = append(rows, sequentialRow{provider: t.name(), n: n, elapsed: elapsed, eager: eager})
		}
	}
	report := sequentialReport(rows, sticky, eagerOn(), cdbT.store())
	_, _ = io.WriteString(stdout, report)
	if o.record != "" {
		if err := appendRecord(o.record, args, report, loadAtStart); err != nil {
			fmt.Fprintln(stderr, "cdb-stress: record:", err)
			return exitFailures
		}
	}
	return exitOK
}

// runSequentialOnce runs one orchestration of n sequential activities on a
// fresh provider of t and returns how long it took from start to
// completion.
func runSequentialOnce(ctx context.Context, t target, n int, sticky bool, poll time.Duration) (time.Duration, *duroxide.EagerDispatchStats, error) {
	reg, err := sequentialRegistry()
	if err != nil {
		return 0, nil, err
	}
	p, err := t.prepare().factory()(ctx, stress.StressRun{Scenario: "sequential", OrchestrationConcurrency: 2, WorkerConcurrency: 2})
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		if c, ok := p.(io.Closer); ok {
			_ = c.Close()
		}
	}()
	opts := runtime.Options{PollInterval: poll, OrchestrationConcurrency: 2, WorkerConcurrency: 2, Logger: slog.New(slog.DiscardHandler)}
	if !sticky {
		opts.StickyCacheSize = -1
	}
	rt, err := runtime.Start(ctx, p, reg, opts)
	if err != nil {
		return 0, nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	}()
	client := rt.Client()
	// One activity first, so that the provider's first-fetch work (lease
	// claims, the change-feed reader's start) is not counted.
	if err := runtime.StartOrchestrationTyped(ctx, client, "sequential-warm-up", sequentialOrchestration, 1); err != nil {
		return 0, nil, err
	}
	if _, err := runtime.WaitForOrchestrationTyped[int](ctx, client, "sequential-warm-up", time.Minute); err != nil {
		return 0, nil, err
	}
	instance := fmt.Sprintf("sequential-%d", n)
	start := time.Now()
	if err := runtime.StartOrchestrationTyped(ctx, client, instance, sequentialOrchestration, n); err != nil {
		return 0, nil, err
	}
	got, err := runtime.WaitForOrchestrationTyped[int](ctx, client, instance, 30*time.Minute)
	elapsed := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	if got != n {
		return 0, nil, fmt.Errorf("output %d, want %d", got, n)
	}
	var eager *duroxide.EagerDispatchStats
	if ed, ok := p.(duroxide.EagerDispatcher); ok {
		st := ed.EagerDispatch()
		eager = &st
	}
	return elapsed, eager, nil
}

// sequentialReport formats the sequential mode's table: per provider and
// N the wall time, the time per activity, and its ratio to the smallest
// N's on the same provider.
func sequentialReport(rows []sequentialRow, sticky, eager bool, store string) string {
	var b strings.Builder
	cache := "on (default)"
	if !sticky {
		cache = "off (DUROXIDE_STICKY=off)"
	}
	eagerState := "on (default)"
	if !eager {
		eagerState = "off (DUROXIDE_EAGER=off)"
	}
	fmt.Fprintf(&b, "Sequential activities: one orchestration calling N activities one after the other, 2/2 dispatchers; sticky cache %s; cdb eager dispatch %s\n", cache, eagerState)
	fmt.Fprintf(&b, "Store: %s\n\n", store)
	fmt.Fprintf(&b, "%-16s %8s %10s %12s %10s\n", "Provider", "N", "Total (s)", "ms/activity", "vs first N")
	base := map[string]float64{}
	for _, r := range rows {
		per := float64(r.elapsed.Microseconds()) / 1000 / float64(r.n)
		if _, ok := base[r.provider]; !ok {
			base[r.provider] = per
		}
		fmt.Fprintf(&b, "%-16s %8d %10.2f %12.3f %9.2fx\n", r.provider, r.n, r.elapsed.Seconds(), per, per/base[r.provider])
	}
	sep := "\n"
	for _, r := range rows {
		if r.eager != nil && r.eager.Enabled {
			fmt.Fprintf(&b, "%sEager dispatch, %s, N=%d (its warm-up included): turns %d handed, %d fallbacks; work items %d handed, %d fallbacks\n",
				sep, r.provider, r.n, r.eager.Orchestrator.Hits, r.eager.Orchestrator.Fallbacks, r.eager.Worker.Hits, r.eager.Worker.Fallbacks)
			sep = ""
		}
	}
	return b.String()
}
