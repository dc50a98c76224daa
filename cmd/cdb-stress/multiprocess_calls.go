package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Requests by provider call in the multi-process mode: each child reports
// its provider's requests by the provider method they belong to
// (cdb.Usage.ByCall, the call label of the provider's request metrics) in
// its STATS line ("calls=fetch_orchestration_item:812,lease_heartbeat:9"), so
// that the report says which of the provider's calls an N's extra
// requests come from (the emulator's split by operation kind does not tell a
// candidate query from the lease heartbeat's).

// formatCalls formats requests by provider call (cdb.Usage.ByCall) as the
// STATS line's calls value: "call:count,...", sorted by call.
func formatCalls(calls map[string]int64) string {
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+":"+strconv.FormatInt(calls[k], 10))
	}
	return strings.Join(parts, ",")
}

// addCalls adds a STATS line's calls value to into.
func addCalls(into map[string]int64, v string) {
	for _, part := range strings.Split(v, ",") {
		k, n, ok := strings.Cut(part, ":")
		if !ok {
			continue
		}
		x, err := strconv.ParseInt(n, 10, 64)
		if err == nil {
			into[k] += x
		}
	}
}

// callBreakdown formats requests per orchestration by provider call, the
// largest first ("fetch_orchestration_item 4.10, ..."); "" for no counts.
func callBreakdown(calls map[string]int64, orchestrations int) string {
	keys := make([]string, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if calls[a] != calls[b] {
			return int(calls[b] - calls[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(calls[k])/float64(max(orchestrations, 1))))
	}
	return strings.Join(parts, ", ")
}
