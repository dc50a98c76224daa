package stress

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// The results table of the stress harness, in the layout of duroxide's
// print_comparison_table (src/provider_stress_test/core.rs) and of its
// stress-test-results.md, with four columns appended: p95 latency, failed
// history verifications, storage requests per completed orchestration and
// peak heap.

// StressRow is one line of the results table: a result and the name of
// the provider it ran on.
type StressRow struct {
	Provider string
	Result   StressResult
}

// stressTableRule is the width of duroxide's separator line.
const stressTableRule = 150

// WriteStressTable writes rows as duroxide's comparison table: a header, a
// rule, and one line per row. Latencies are in milliseconds, Req/orch is
// "-" when requests were not counted, and Peak heap is in MiB.
func WriteStressTable(w io.Writer, rows []StressRow) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %-10s %-10s %-10s %-8s %-8s %-8s %-10s %-15s %-15s %-15s %-15s %-8s %-10s %-10s\n",
		"Provider", "Config", "Completed", "Failed", "Infra", "Config", "App", "Success %", "Orch/sec",
		"Activity/sec", "Avg Latency", "P95 Latency", "Verify", "Req/orch", "Peak heap")
	b.WriteString(strings.Repeat("-", stressTableRule) + "\n")
	for _, row := range rows {
		r := row.Result
		reqs := "-"
		if v := r.RequestsPerOrchestration(); v >= 0 {
			reqs = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(&b, "%-20s %-10s %-10d %-10d %-8d %-8d %-8d %-10.2f %-15.2f %-15.2f %-15s %-15s %-8d %-10s %-10s\n",
			row.Provider, r.Run.Label(), r.Completed, r.Failed, r.FailedInfrastructure, r.FailedConfiguration,
			r.FailedApplication, r.SuccessRate(), r.OrchestrationsPerSecond, r.ActivitiesPerSecond,
			millis(r.AverageLatency), millis(r.P95Latency), r.FailedVerification, reqs, mebibytes(r.PeakHeapBytes))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// millis formats d as milliseconds with two decimals and a unit, e.g.
// "160.78ms".
func millis(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// mebibytes formats a byte count in MiB with one decimal, e.g. "12.5MiB".
func mebibytes(n uint64) string {
	return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
}
