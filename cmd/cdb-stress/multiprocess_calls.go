package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
)

// Requests by provider call in the multi-process mode: each child counts
// its requests by the provider method they belong to (the call label of
// the provider's request metrics, internal/cosmos) and reports them in its
// STATS line ("calls=fetch_orchestration_item:812,lease_heartbeat:9"), so
// that the report says which of the provider's calls an N's extra
// requests come from (the emulator's split by operation kind does not tell a
// candidate query from the lease heartbeat's).

// callCounter is an azcore per-retry policy that counts every attempt's
// answer (or failure) by the provider call of its request.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

func newCallCounter() *callCounter { return &callCounter{counts: map[string]int64{}} }

// Do counts the request and sends it on.
func (c *callCounter) Do(req *policy.Request) (*http.Response, error) {
	call := cosmos.CallOf(req.Raw().Context())
	c.mu.Lock()
	c.counts[call]++
	c.mu.Unlock()
	return req.Next()
}

// String formats the counts as the STATS line's calls value:
// "call:count,...", sorted by call.
func (c *callCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := make([]string, 0, len(c.counts))
	for k := range c.counts {
		calls = append(calls, k)
	}
	slices.Sort(calls)
	parts := make([]string, 0, len(calls))
	for _, k := range calls {
		parts = append(parts, k+":"+strconv.FormatInt(c.counts[k], 10))
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
