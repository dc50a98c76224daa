package runtimetest_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

// chainHistory is the history of an orchestration that called activity
// "Step" n times in a row and completed: 2n+2 events.
func chainHistory(instance string, n int) runtimetest.History {
	var events []duroxide.Event
	add := func(source *uint64, kind duroxide.EventKind) {
		events = append(events, duroxide.NewEvent(uint64(len(events)+1), instance, 1, source, kind))
	}
	add(nil, duroxide.OrchestrationStarted{Name: "Chain", Version: "1.0.0", Input: strconv.Itoa(n)})
	for i := range n {
		add(nil, duroxide.ActivityScheduled{Name: "Step", Input: strconv.Itoa(i)})
		add(duroxide.Uint64Ptr(uint64(len(events))), duroxide.ActivityCompleted{Result: strconv.Itoa(i)})
	}
	add(nil, duroxide.OrchestrationCompleted{Output: "done"})
	return runtimetest.History{InstanceID: instance, Executions: []runtimetest.Execution{{ExecutionID: 1, Events: events}}}
}

func chainRegistry(b *testing.B) *runtime.Registry {
	reg := runtime.NewRegistry()
	must(b, reg.RegisterActivity("Step", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }))
	must(b, reg.RegisterOrchestration("Chain", func(ctx *runtime.OrchestrationContext, input string) (string, error) {
		n, err := strconv.Atoi(input)
		if err != nil {
			return "", err
		}
		for i := range n {
			if _, err := ctx.ScheduleActivity("Step", strconv.Itoa(i)).Get(); err != nil {
				return "", err
			}
		}
		return "done", nil
	}))
	return reg
}

// BenchmarkReplay1000Histories replays 1,000 histories of 50 events each
// (24 activities in a row) per iteration: the cost of checking a directory
// of exported histories.
func BenchmarkReplay1000Histories(b *testing.B) {
	reg := chainRegistry(b)
	histories := make([]runtimetest.History, 1000)
	for i := range histories {
		histories[i] = chainHistory(fmt.Sprintf("chain-%d", i), 24)
	}
	if n := len(histories[0].Events()); n != 50 {
		b.Fatalf("%d events", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := runtimetest.Replay(reg, histories...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(histories)), "µs/history")
}
