package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/providertest/stress"
)

// The report cdb-stress prints: per scenario duroxide's header and
// comparison table, then for cdb the Cosmos DB requests per completed
// orchestration and per provider call against the provider's budget, then
// the targets of issue 7 with a verdict each.

// row is one run's result.
type row struct {
	provider string
	cdb      bool
	res      stress.StressResult
	// kinds are the emulator's requests per operation kind (nil when not
	// on the emulator).
	kinds map[emulator.OpKind]int64
	// persist is the work of the emulator's data directory (nil without
	// -data-dir).
	persist *emulator.PersistenceStats
}

// scenarioReport holds the runs of one scenario.
type scenarioReport struct {
	scenario stress.StressScenario
	rows     []row
}

// requestBudget is the provider issue's request budget per call (issue 4:
// "aim for 4, 1, 2 and 1"), plus the single request of a start.
var requestBudget = []struct {
	op     string
	label  string
	budget float64
}{
	{stress.OpFetchOrchestrationItem, "Orch fetch", 4},
	{stress.OpAckOrchestrationItem, "Orch ack", 1},
	{stress.OpFetchWorkItem, "Work fetch", 2},
	{stress.OpAckWorkItem, "Work ack", 1},
	{stress.OpEnqueueForOrchestrator, "Start", 1},
}

// scenarioTitle is the scenario's name in the header.
func scenarioTitle(s stress.StressScenario) string {
	switch s {
	case stress.ScenarioParallelOrchestrations:
		return "Parallel Orchestrations"
	case stress.ScenarioLargePayload:
		return "Large Payload"
	}
	return string(s)
}

// writeScenario writes one scenario's header, table and request tables.
func writeScenario(w io.Writer, rep scenarioReport, store string) {
	if len(rep.rows) == 0 {
		return
	}
	cfg := rep.rows[0].res.Config
	fmt.Fprintf(w, "=== Duroxide Stress Test Results ===\n\n")
	fmt.Fprintf(w, "Test Scenario: %s\n", scenarioTitle(rep.scenario))
	fmt.Fprintf(w, "Duration: %v\n", cfg.Duration)
	fmt.Fprintf(w, "Max Concurrent Instances: %d\n", cfg.MaxConcurrent)
	if rep.scenario == stress.ScenarioParallelOrchestrations {
		fmt.Fprintf(w, "Tasks per Instance: %d\n", cfg.TasksPerInstance)
	} else {
		lp := cfg.LargePayload
		fmt.Fprintf(w, "Payloads: %d/%d/%d KB, %d activities + %d sub-orchestrations per instance\n",
			lp.SmallPayloadKB, lp.MediumPayloadKB, lp.LargePayloadKB, lp.ActivityCount, lp.SubOrchestrationCount)
	}
	fmt.Fprintf(w, "Activity Delay: %v\n", cfg.ActivityDelay)
	fmt.Fprintf(w, "Store: %s\n\n", store)
	fmt.Fprintf(w, "=== Comparison Table ===\n")
	table := make([]stress.StressRow, len(rep.rows))
	for i, r := range rep.rows {
		table[i] = stress.StressRow{Provider: r.provider, Result: r.res}
	}
	_ = stress.WriteStressTable(w, table)
	writeRequests(w, rep.rows)
	writeProblems(w, rep.rows)
	fmt.Fprintln(w)
}

// writeRequests writes, for the cdb rows, the requests per completed
// orchestration by provider call and the requests per call against the
// budget.
func writeRequests(w io.Writer, rows []row) {
	var cdbRows []row
	for _, r := range rows {
		if r.cdb && r.res.Requests >= 0 && r.res.Completed > 0 {
			cdbRows = append(cdbRows, r)
		}
	}
	if len(cdbRows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n=== Cosmos DB requests per completed orchestration ===\n")
	fmt.Fprintf(w, "%-20s %-8s %-8s %-8s", "Provider", "Config", "Total", "RU")
	for _, b := range requestBudget {
		fmt.Fprintf(w, " %-11s", b.label)
	}
	fmt.Fprintf(w, " %-11s %-14s %-8s %s\n", "Idle polls", "Client status", "Other", "Dispatch (budget)")
	for _, r := range cdbRows {
		n := float64(r.res.Completed)
		fmt.Fprintf(w, "%-20s %-8s %-8.1f %-8s", r.provider, r.res.Run.Label(), float64(r.res.Requests)/n, chargePer(r.res.RequestCharge, n))
		split := splitRequests(r.res)
		for _, b := range requestBudget {
			s, _ := r.res.Operation(b.op)
			fmt.Fprintf(w, " %-11.2f", float64(s.Requests)/n)
		}
		fmt.Fprintf(w, " %-11.2f %-14.2f %-8.2f %.2f (%.2f)\n", float64(split.idle)/n, float64(split.client)/n,
			float64(split.other)/n, float64(split.dispatch)/n, split.budget/n)
	}
	fmt.Fprintf(w, "\n=== Cosmos DB requests per provider call (budget), request units (RU) and mean call time ===\n")
	fmt.Fprintf(w, "%-20s %-8s", "Provider", "Config")
	for _, b := range requestBudget {
		fmt.Fprintf(w, " %-24s", fmt.Sprintf("%s (%g)", b.label, b.budget))
	}
	fmt.Fprintf(w, " %s\n", "Emulator requests per orchestration by kind")
	for _, r := range cdbRows {
		fmt.Fprintf(w, "%-20s %-8s", r.provider, r.res.Run.Label())
		for _, b := range requestBudget {
			s, _ := r.res.Operation(b.op)
			fmt.Fprintf(w, " %-24s", fmt.Sprintf("%.2f %.2fRU %.2fms", s.RequestsPerCall(), s.RequestChargePerCall(), float64(s.MeanTime())/float64(time.Millisecond)))
		}
		fmt.Fprintf(w, " %s\n", kindsPerOrchestration(r.kinds, r.res.Completed))
	}
	for _, r := range cdbRows {
		if r.persist == nil || r.res.Completed == 0 {
			continue
		}
		n := float64(r.res.Completed)
		perSync := 0.0
		if r.persist.Syncs > 0 {
			perSync = float64(r.persist.Records) / float64(r.persist.Syncs)
		}
		fmt.Fprintf(w, "Data directory %-8s fsyncs %.2f, log records %.2f, log KB %.1f per orchestration (%.2f records per fsync), %d compactions\n",
			r.res.Run.Label(), float64(r.persist.Syncs)/n, float64(r.persist.Records)/n, float64(r.persist.LogBytes)/n/1024, perSync, r.persist.Compactions)
	}
}

// chargePer formats charge / n request units, or "-" when the run had no
// charge counter.
func chargePer(charge, n float64) string {
	if charge < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", charge/n)
}

// requestSplit divides a run's requests: the dispatch path the budget
// covers, fetches that found no work, the client's status polling
// (read + get_custom_status), and the rest (failed calls, renewals,
// the outbox reconciler, SDK metadata lookups).
type requestSplit struct {
	dispatch, idle, client, other int64
	// budget is the requests the dispatch calls were allowed.
	budget float64
}

func splitRequests(res stress.StressResult) requestSplit {
	var s requestSplit
	for _, b := range requestBudget {
		op, _ := res.Operation(b.op)
		s.dispatch += op.Requests
		s.budget += b.budget * float64(op.Calls)
	}
	for _, op := range []string{stress.OpFetchOrchestrationItem, stress.OpFetchWorkItem} {
		st, _ := res.Operation(op)
		s.idle += st.EmptyRequests
	}
	for _, op := range []string{stress.OpGetInstanceInfo, stress.OpRead, stress.OpGetCustomStatus} {
		// Failed calls included: the metadata read of an instance whose
		// first turn is not committed yet fails (not found).
		st, _ := res.Operation(op)
		s.client += st.Requests + st.EmptyRequests + st.FailedRequests
	}
	s.other = res.Requests - s.dispatch - s.idle - s.client
	return s
}

// kindsPerOrchestration formats the emulator's requests per operation kind
// per completed orchestration, e.g. "Batch 7.0, Query 12.1".
func kindsPerOrchestration(kinds map[emulator.OpKind]int64, completed int) string {
	if len(kinds) == 0 || completed == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(kinds[k])/float64(completed)))
	}
	return strings.Join(parts, ", ")
}

// maxProblemsShown caps the failures listed per run.
const maxProblemsShown = 5

// writeProblems lists the first failures of each run that had some.
func writeProblems(w io.Writer, rows []row) {
	for _, r := range rows {
		if len(r.res.Problems) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nFailures of %s %s:\n", r.provider, r.res.Run.Label())
		for i, p := range r.res.Problems {
			if i == maxProblemsShown {
				fmt.Fprintf(w, "  ... and %d more\n", len(r.res.Problems)-i)
				break
			}
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// Throughput targets of issue 7 for cdb at 2/2 in the parallel scenario.
const (
	targetConfig           = "2/2"
	targetMinOrchPerSecond = 30.0
	targetMinShareOfMemory = 0.5
)

// verdict is one target's outcome.
type verdict struct {
	met    bool
	known  bool
	target string
	detail string
}

func (v verdict) String() string {
	mark := "NOT MEASURED"
	if v.known {
		mark = map[bool]string{true: "MET", false: "NOT MET"}[v.met]
	}
	return fmt.Sprintf("[%s] %s: %s", mark, v.target, v.detail)
}

// evaluateTargets judges the runs against issue 7's targets.
func evaluateTargets(reps []scenarioReport) []verdict {
	var out []verdict
	success := verdict{known: true, met: true, target: "100% success on every config, no lost or duplicated result"}
	var failing []string
	for _, rep := range reps {
		for _, r := range rep.rows {
			if r.res.Launched == 0 || r.res.Failed > 0 || r.res.Completed != r.res.Launched {
				failing = append(failing, fmt.Sprintf("%s %s %s %.2f%% (%d failed, %d failed verification)",
					rep.scenario, r.provider, r.res.Run.Label(), r.res.SuccessRate(), r.res.Failed, r.res.FailedVerification))
			}
		}
	}
	if len(failing) > 0 {
		success.met, success.detail = false, strings.Join(failing, "; ")
	} else {
		success.detail = "every run completed and verified every orchestration"
	}
	out = append(out, success)

	var memRow, cdbRow *row
	for _, rep := range reps {
		if rep.scenario != stress.ScenarioParallelOrchestrations {
			continue
		}
		for i := range rep.rows {
			r := &rep.rows[i]
			if r.res.Run.Label() != targetConfig {
				continue
			}
			if r.cdb {
				cdbRow = r
			} else {
				memRow = r
			}
		}
	}
	share := verdict{target: fmt.Sprintf("cdb at %s >= %.0f%% of the in-memory orchestrations/s in the same run", targetConfig, targetMinShareOfMemory*100)}
	floor := verdict{target: fmt.Sprintf("cdb at %s >= %.0f orchestrations/s", targetConfig, targetMinOrchPerSecond)}
	if cdbRow != nil {
		c := cdbRow.res.OrchestrationsPerSecond
		floor.known, floor.met, floor.detail = true, c >= targetMinOrchPerSecond, fmt.Sprintf("%.2f/s", c)
		if memRow != nil {
			m := memRow.res.OrchestrationsPerSecond
			share.known, share.met = true, c >= targetMinShareOfMemory*m
			share.detail = fmt.Sprintf("%.2f/s vs %.2f/s (%.0f%%)", c, m, 100*c/m)
		} else {
			share.detail = "needs -provider both"
		}
	} else {
		floor.detail = fmt.Sprintf("needs cdb, config %s and the parallel scenario", targetConfig)
		share.detail = floor.detail
	}
	out = append(out, share, floor)

	budget := verdict{target: "Cosmos DB requests per provider call within budget (orchestration fetch 4, ack 1, work item fetch 2, ack 1, start 1)"}
	var over, seen []string
	for _, rep := range reps {
		if rep.scenario != stress.ScenarioParallelOrchestrations {
			continue
		}
		for _, r := range rep.rows {
			if !r.cdb || r.res.Requests < 0 {
				continue
			}
			budget.known = true
			split := splitRequests(r.res)
			seen = append(seen, fmt.Sprintf("%s: %.2f dispatch requests/orch (budget %.2f)", r.res.Run.Label(),
				float64(split.dispatch)/float64(max(r.res.Completed, 1)), split.budget/float64(max(r.res.Completed, 1))))
			for _, b := range requestBudget {
				s, _ := r.res.Operation(b.op)
				if v := s.RequestsPerCall(); v > b.budget {
					over = append(over, fmt.Sprintf("%s %s %.3f > %g", r.res.Run.Label(), b.op, v, b.budget))
				}
			}
		}
	}
	if budget.known {
		budget.met = len(over) == 0
		budget.detail = strings.Join(append(over, seen...), "; ")
	} else {
		budget.detail = "needs cdb in the parallel scenario"
	}
	return append(out, budget)
}

// writeTargets writes the verdicts.
func writeTargets(w io.Writer, vs []verdict) {
	fmt.Fprintf(w, "=== Targets (issue 7) ===\n")
	for _, v := range vs {
		fmt.Fprintln(w, v)
	}
}
