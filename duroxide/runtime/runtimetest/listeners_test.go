package runtimetest_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime/runtimetest"
)

func TestListenersSeeActivitiesTimersAndEventsInHistoryOrder(t *testing.T) {
	t.Parallel()
	env := runtimetest.New(t, orders(t, "Reserve", "timer", "wait:approval", "Ship"))
	var mu sync.Mutex
	var seen []string
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf(format, args...))
	}
	env.Listen(runtimetest.Listeners{
		ActivityScheduled: func(inst, name, input string) { note("%s scheduled %s(%s)", inst, name, input) },
		ActivityCompleted: func(inst, name, result string, err error) { note("%s completed %s=%s err=%v", inst, name, result, err) },
		TimerCreated:      func(inst string, _ time.Time) { note("%s timer created", inst) },
		TimerFired:        func(inst string, _ time.Time) { note("%s timer fired", inst) },
		EventReceived:     func(inst, name, data string) { note("%s received %s=%s", inst, name, data) },
	})
	inst := env.Start("o-1", "ProcessOrder", "o1")
	inst.RaiseEvent("approval", "ann")
	inst.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"o-1 scheduled Reserve(o1)", "o-1 completed Reserve=Reserve err=<nil>",
		"o-1 timer created", "o-1 timer fired",
		"o-1 received approval=ann",
		"o-1 scheduled Ship(o1)", "o-1 completed Ship=Ship err=<nil>",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("seen\n%q\nwant\n%q", seen, want)
	}
}
