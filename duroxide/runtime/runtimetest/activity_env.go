package runtimetest

// Activities tested alone (Temporal's TestActivityEnvironment).

import (
	"cmp"
	"context"
	"testing"

	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
	"github.com/duroxide-go/duroxide-cdb/providertest/memory"
)

// NewActivityContext returns an ActivityContext for calling an activity
// function directly in a unit test, and the function that cancels it (as
// the runtime does when the result is no longer wanted: IsCancelled turns
// true and Done closes). info's zero fields get test defaults: instance
// "test-instance", execution 1, activity "test-activity" with id 1,
// attempt 1 (AttemptCount), worker "runtimetest", orchestration
// "test-orchestration" 1.0.0; Client, when nil, is a client on a fresh
// in-memory provider (for activities that start or signal instances). The
// context ends with the test (t.Context).
//
//	ctx, cancel := runtimetest.NewActivityContext(t, runtime.ActivityInfo{ActivityName: "Charge", AttemptCount: 2})
//	defer cancel()
//	out, err := charge(ctx, `{"cents":500}`)
func NewActivityContext(t testing.TB, info runtime.ActivityInfo) (*runtime.ActivityContext, context.CancelFunc) {
	t.Helper()
	info.InstanceID = cmp.Or(info.InstanceID, "test-instance")
	info.ExecutionID = cmp.Or(info.ExecutionID, 1)
	info.ActivityName = cmp.Or(info.ActivityName, "test-activity")
	info.ActivityID = cmp.Or(info.ActivityID, 1)
	info.AttemptCount = cmp.Or(info.AttemptCount, 1)
	info.WorkerID = cmp.Or(info.WorkerID, "runtimetest")
	info.OrchestrationName = cmp.Or(info.OrchestrationName, "test-orchestration")
	info.OrchestrationVersion = cmp.Or(info.OrchestrationVersion, runtime.DefaultVersion)
	if info.Client == nil {
		info.Client = runtime.NewClient(memory.NewMemoryProvider(memory.MemoryOptions{}))
	}
	ctx, cancel := context.WithCancel(t.Context())
	return runtime.NewActivityContext(ctx, info), cancel
}
