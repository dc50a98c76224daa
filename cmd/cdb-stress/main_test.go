package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// Short runs of the binary: cdb on the embedded emulator (or on
// COSMOS_ENDPOINT when set) and the in-memory reference. They fail on any
// lost, duplicated or failed orchestration, never on speed.

// shortArgs is a run of about a second per configuration.
var shortArgs = []string{
	"-duration", "1s", "-max-concurrent", "6", "-tasks", "3", "-activity-delay", "2ms",
	"-poll-interval", "10ms", "-progress=false",
}

// tableRows returns the fields of the comparison table's rows whose
// provider column starts with provider.
func tableRows(report, provider string) [][]string {
	var out [][]string
	inTable := false
	for _, line := range strings.Split(report, "\n") {
		switch {
		case strings.HasPrefix(line, "=== Comparison Table ==="):
			inTable = true
		case inTable && line == "":
			inTable = false
		case inTable && strings.HasPrefix(line, provider):
			out = append(out, strings.Fields(strings.TrimPrefix(line, provider)))
		}
	}
	return out
}

func TestRunPrintsTableForBothProviders(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"-configs", "1/1,2/2"}, shortArgs...), &out, &errb)
	report := out.String()
	require.Equal(t, exitOK, code, "report:\n%s\nstderr:\n%s", report, errb.String())
	for _, provider := range []string{"memory", newCDBTarget(emulator.Latency{}).name()} {
		rows := tableRows(report, provider)
		require.Len(t, rows, 2, "%s rows in:\n%s", provider, report)
		for i, config := range []string{"1/1", "2/2"} {
			f := rows[i]
			require.Equal(t, config, f[0])
			require.NotEqual(t, "0", f[1], "completed")
			require.Equal(t, []string{"0", "0", "0", "0", "100.00"}, f[2:7], "failed, infra, config, app, success %%")
		}
	}
	require.Contains(t, report, "=== Cosmos DB requests per provider call (budget), request units (RU) and mean call time ===")
	require.Regexp(t, `cdb \(emulator\) +1/1 +[0-9.]+ +[0-9.]+ +`, report, "requests and RU per orchestration")
	require.Contains(t, report, "[MET] 100% success on every config")
	require.Empty(t, errb.String())
}

// TestCDBStress runs both scenarios on cdb directly (on the embedded
// emulator, or on COSMOS_ENDPOINT when set) and checks what the table
// summarizes: every orchestration verified, every activity fetched and
// acknowledged exactly once, and no more requests attributed to provider
// calls than were counted; on the emulator, its per-kind counts add up to
// the run's requests.
func TestCDBStress(t *testing.T) {
	t.Parallel()
	target := newCDBTarget(emulator.Latency{})
	o, err := parseOptions(shortArgs, &bytes.Buffer{})
	require.NoError(t, err)
	for _, sc := range stress.StressScenarios() {
		cfg := o.stressConfig(sc, dispatchConfig{2, 2})
		cfg.LargePayload = stress.LargePayloadConfig{SmallPayloadKB: 5, MediumPayloadKB: 10, LargePayloadKB: 20, ActivityCount: 6, SubOrchestrationCount: 2}
		cfg.MaxConcurrent = map[stress.StressScenario]int{sc: 6, stress.ScenarioLargePayload: 2}[sc]
		tr := target.prepare().(*cdbRun)
		cfg.RequestCount = tr.requestCount()
		cfg.RequestCharge = tr.requestCharge()
		res, err := stress.RunStress(t.Context(), tr.factory(), cfg)
		require.NoError(t, err)
		require.Positive(t, res.Launched, sc)
		require.Empty(t, res.Problems, sc)
		require.Equal(t, res.Launched, res.Completed, sc)
		perInstance := cfg.TasksPerInstance
		if sc == stress.ScenarioLargePayload {
			lp := cfg.LargePayload
			perInstance = lp.ActivityCount + 10 + 2*lp.SubOrchestrationCount
		}
		for _, op := range []string{stress.OpFetchWorkItem, stress.OpAckWorkItem} {
			s, ok := res.Operation(op)
			require.True(t, ok)
			require.Equal(t, int64(res.Completed*perInstance), s.Calls, "%s %s", sc, op)
		}
		require.Positive(t, res.Requests)
		split := splitRequests(res)
		require.GreaterOrEqual(t, split.other, int64(0), "attributed requests cannot exceed the emulator's count")
		if target.onEmulator() {
			var fromKinds int64
			for _, n := range tr.opKinds() {
				fromKinds += n
			}
			require.Equal(t, res.Requests, fromKinds, "the per-kind counts add up to the run's requests")
		} else {
			require.Nil(t, tr.opKinds(), "per-kind counts exist only on the emulator")
		}
		require.GreaterOrEqual(t, tr.transport.total.Load(), res.Requests, "the transport saw every request the emulator counted in the run")

		require.GreaterOrEqual(t, res.RequestCharge, float64(res.Requests), "every request is charged at least 1 RU")
		var attributed float64
		for _, s := range res.Operations {
			attributed += s.RequestCharge + s.EmptyRequestCharge + s.FailedRequestCharge
		}
		require.LessOrEqual(t, attributed, res.RequestCharge+1e-6, "attributed charges cannot exceed the run's")
		ack, _ := res.Operation(stress.OpAckWorkItem)
		require.GreaterOrEqual(t, ack.RequestChargePerCall(), 5.5, "a work-item ack writes at least one document")
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, []stress.StressScenario{stress.ScenarioParallelOrchestrations}, o.scenarios)
	require.Equal(t, 10*time.Second, o.duration)
	require.Equal(t, []dispatchConfig{{1, 1}, {2, 2}, {4, 4}}, o.configs)
	require.Equal(t, []string{providerMemory, providerCDB}, o.providers)
	par := o.stressConfig(stress.ScenarioParallelOrchestrations, dispatchConfig{2, 2})
	require.Equal(t, 20, par.MaxConcurrent)
	require.Equal(t, 5, par.TasksPerInstance)
	require.Equal(t, 10*time.Millisecond, par.ActivityDelay)
	large := o.stressConfig(stress.ScenarioLargePayload, dispatchConfig{1, 1})
	require.Zero(t, large.MaxConcurrent, "the large-payload scenario keeps duroxide's own default")
	require.Zero(t, large.ActivityDelay)

	o, err = parseOptions([]string{"-scenario", "all", "-max-concurrent", "7", "-activity-delay", "0s", "-provider", "cdb", "-configs", " 3/1 "}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, stress.StressScenarios(), o.scenarios)
	require.Equal(t, []string{providerCDB}, o.providers)
	require.Equal(t, []dispatchConfig{{3, 1}}, o.configs)
	large = o.stressConfig(stress.ScenarioLargePayload, dispatchConfig{3, 1})
	require.Equal(t, 7, large.MaxConcurrent, "an explicit flag applies to every scenario")
	o, err = parseOptions([]string{"-latency", "5ms±2ms"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, emulator.Latency{Fixed: 5 * time.Millisecond, Jitter: 2 * time.Millisecond}, o.latency)
	if tg := newCDBTarget(o.latency); tg.onEmulator() {
		require.Contains(t, tg.store(), "simulated latency 5ms±2ms per request")
	}
	require.Negative(t, large.ActivityDelay, "an explicit zero delay means none")
	require.Equal(t, 3, large.OrchestrationConcurrency)
	require.Equal(t, 1, large.WorkerConcurrency)

	for _, bad := range [][]string{
		{"-scenario", "x"}, {"-provider", "sqlite"}, {"-configs", "2x2"}, {"-configs", "0/1"},
		{"-duration", "0s"}, {"-tasks", "0"}, {"-latency", "5"}, {"-latency", "-1ms"}, {"-max-concurrent", "-1"}, {"extra"},
	} {
		_, err := parseOptions(bad, &bytes.Buffer{})
		require.Error(t, err, "%q", bad)
	}
}

func TestRunExitStatusForUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, exitUsage, run(context.Background(), []string{"-provider", "nope"}, &out, &errb))
	require.Contains(t, errb.String(), `-provider "nope"`)
	errb.Reset()
	require.Equal(t, exitOK, run(context.Background(), []string{"-h"}, &out, &errb))
	require.Contains(t, errb.String(), "-configs")
	require.Empty(t, out.String())
}

// result builds a parallel-scenario result for the target checks.
func result(config string, launched, completed int, orchPerSec float64, ops ...stress.OperationStats) stress.StressResult {
	o, w := 2, 2
	if config == "1/1" {
		o, w = 1, 1
	}
	return stress.StressResult{
		Run:      stress.StressRun{Scenario: stress.ScenarioParallelOrchestrations, OrchestrationConcurrency: o, WorkerConcurrency: w},
		Launched: launched, Completed: completed, Failed: launched - completed,
		OrchestrationsPerSecond: orchPerSec, Requests: 1000, Operations: ops,
	}
}

func TestEvaluateTargets(t *testing.T) {
	within := []stress.OperationStats{
		{Operation: stress.OpFetchOrchestrationItem, Calls: 100, Requests: 400},
		{Operation: stress.OpAckOrchestrationItem, Calls: 100, Requests: 100},
		{Operation: stress.OpFetchWorkItem, Calls: 100, Requests: 200},
	}
	reps := []scenarioReport{{scenario: stress.ScenarioParallelOrchestrations, rows: []row{
		{provider: "memory", res: result("2/2", 100, 100, 60)},
		{provider: "cdb", cdb: true, res: result("2/2", 80, 80, 31, within...)},
	}}}
	vs := evaluateTargets(reps)
	require.Len(t, vs, 4)
	for _, v := range vs {
		require.True(t, v.known && v.met, "%s", v)
	}
	require.Contains(t, vs[1].detail, "31.00/s vs 60.00/s (52%)")

	over := append(within, stress.OperationStats{Operation: stress.OpAckWorkItem, Calls: 10, Requests: 20})
	reps[0].rows[1].res = result("2/2", 80, 79, 29, over...)
	vs = evaluateTargets(reps)
	require.False(t, vs[0].met)
	require.Contains(t, vs[0].detail, "cdb 2/2 98.75%")
	require.False(t, vs[1].met, "29 < 50%% of 60")
	require.False(t, vs[2].met, "29 < 30")
	require.False(t, vs[3].met)
	require.Contains(t, vs[3].detail, "ack_work_item 2.000 > 1")

	vs = evaluateTargets([]scenarioReport{{scenario: stress.ScenarioParallelOrchestrations, rows: []row{
		{provider: "memory", res: result("1/1", 10, 10, 20)},
	}}})
	require.True(t, vs[0].met)
	for _, v := range vs[1:] {
		require.False(t, v.known, "%s", v)
		require.Contains(t, v.String(), "[NOT MEASURED]")
	}
}

func TestRecordEntry(t *testing.T) {
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	e := recordEntry("abc1234", at, "2 cores, 24 GiB", "def5678 a change", []string{"-duration", "10s", "-configs", "2/2"}, "TABLE\n")
	require.True(t, strings.HasPrefix(e, "## Commit: abc1234 - Timestamp: 2026-11-21 09:30:00 UTC\n"), e)
	require.Contains(t, e, "### Changes Since Last Test\n```\ndef5678 a change\n```\n")
	require.Contains(t, e, "- Machine: 2 cores, 24 GiB\n")
	require.Contains(t, e, "- Command: `go run ./cmd/cdb-stress -duration 10s -configs 2/2`\n")
	require.Contains(t, e, "```\nTABLE\n```\n")
	require.Equal(t, `go run ./cmd/cdb-stress -x "a b"`, commandLine([]string{"-x", "a b"}))
	require.Equal(t, "go run ./cmd/cdb-stress -configs 2/2 -scenario large", commandLine([]string{
		"-record", "RESULTS.md", "-configs", "2/2", "--record=x.md", "-scenario", "large", "-record=y.md"}), "where the run is recorded is not part of the command")
	require.Regexp(t, `^(unknown|[0-9.]+ [0-9.]+ [0-9.]+)$`, loadAverage())
	require.Regexp(t, `^[0-9]+ cores, `, machine())
}

func TestAppendRecordPutsNewestFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	require.NoError(t, os.WriteFile(path, []byte("# Results\n\nIntro.\n"), 0o644))
	require.NoError(t, appendRecord(path, []string{"-configs", "1/1"}, "FIRST\n", "0.1 0.1 0.1"))
	require.NoError(t, appendRecord(path, []string{"-configs", "2/2"}, "SECOND\n", "0.2 0.2 0.2"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(b)
	require.True(t, strings.HasPrefix(text, "# Results\n\nIntro.\n## Commit: "), text)
	require.Less(t, strings.Index(text, "SECOND"), strings.Index(text, "FIRST"), "newest entry first")
	require.Equal(t, 2, strings.Count(text, "\n## Commit: "))
	require.Contains(t, text, "load average 0.2 0.2 0.2 at the start")
	require.Equal(t, "abc1234", previousCommit("intro\n## Commit: abc1234-dirty - Timestamp: x\n## Commit: old"))
	require.Empty(t, previousCommit("no entries"))
}

func TestKindsPerOrchestration(t *testing.T) {
	require.Equal(t, "Batch 2.00, Query 3.50", kindsPerOrchestration(map[emulator.OpKind]int64{emulator.OpQuery: 7, emulator.OpBatch: 4}, 2))
	require.Equal(t, "-", kindsPerOrchestration(nil, 2))
}

func TestProfilesAreWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{}
	args := []string{"-provider", "memory", "-configs", "1/1"}
	for _, name := range []string{"cpuprofile", "memprofile", "mutexprofile", "blockprofile"} {
		files[name] = filepath.Join(dir, name+".pb.gz")
		args = append(args, "-"+name, files[name])
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), append(args, shortArgs...), &out, &errb)
	require.Equal(t, exitOK, code, "stderr:\n%s", errb.String())
	for name, path := range files {
		b, err := os.ReadFile(path)
		require.NoError(t, err, name)
		require.True(t, bytes.HasPrefix(b, []byte{0x1f, 0x8b}), "%s is a gzipped pprof profile", name)
	}

	errb.Reset()
	bad := filepath.Join(dir, "missing", "cpu.pb.gz")
	require.Equal(t, exitUsage, run(t.Context(), []string{"-cpuprofile", bad}, &out, &errb))
	require.Contains(t, errb.String(), "-cpuprofile")
}
