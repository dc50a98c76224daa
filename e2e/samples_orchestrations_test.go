package e2e_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Samples of duroxide's tests/e2e_samples.rs: sub-orchestrations, detached
// starts, continue-as-new, versioning, cancellation, pruning.

// sample_sub_orchestration_basic_fs.
func TestSampleSubOrchestrationBasic(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Upper", func(_ *runtime.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil }),
		reg.RegisterOrchestration("ChildUpper", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Upper", in).Get()
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			r, err := ctx.ScheduleSubOrchestration("ChildUpper", in).Get()
			return "parent:" + r, err
		}))
	s.start(reg, options())
	s.expectOutput("inst-sub-basic", "Parent", "hi", "parent:HI")
}

// sample_sub_orchestration_fanout_fs.
func TestSampleSubOrchestrationFanOut(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Add", func(_ *runtime.ActivityContext, in string) (string, error) {
			a, b, _ := strings.Cut(in, ",")
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return strconv.Itoa(x + y), nil
		}),
		reg.RegisterOrchestration("ChildSum", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("Add", in).Get()
		}),
		reg.RegisterOrchestration("ParentFan", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			total := 0
			for _, r := range ctx.Join(ctx.ScheduleSubOrchestration("ChildSum", "1,2"), ctx.ScheduleSubOrchestration("ChildSum", "3,4")) {
				if r.Err != nil {
					return "", r.Err
				}
				n, _ := strconv.Atoi(r.Value)
				total += n
			}
			return fmt.Sprintf("total=%d", total), nil
		}))
	s.start(reg, options())
	s.expectOutput("inst-sub-fan", "ParentFan", "", "total=10")
}

// sample_sub_orchestration_chained_fs: root -> mid -> leaf.
func TestSampleSubOrchestrationChained(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	child := func(name, format string) runtime.OrchestrationFunc {
		return func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			r, err := ctx.ScheduleSubOrchestration(name, in).Get()
			return fmt.Sprintf(format, r), err
		}
	}
	must(t,
		reg.RegisterActivity("AppendX", func(_ *runtime.ActivityContext, in string) (string, error) { return in + "x", nil }),
		reg.RegisterOrchestration("Leaf", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return ctx.ScheduleActivity("AppendX", in).Get()
		}),
		reg.RegisterOrchestration("Mid", child("Leaf", "%s-mid")),
		reg.RegisterOrchestration("Root", child("Mid", "root:%s")))
	s.start(reg, options())
	s.expectOutput("inst-sub-chain", "Root", "a", "root:ax-mid")
}

// sample_detached_orchestration_scheduling_fs: fire-and-forget starts.
func TestSampleDetachedOrchestrationScheduling(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Echo", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterOrchestration("Chained", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if _, err := ctx.ScheduleTimer(5 * time.Millisecond).Get(); err != nil {
				return "", err
			}
			return ctx.ScheduleActivity("Echo", in).Get()
		}),
		reg.RegisterOrchestration("Coordinator", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.ScheduleOrchestration("Chained", "W1", "A")
			ctx.ScheduleOrchestration("Chained", "W2", "B")
			return "scheduled", nil
		}))
	s.start(reg, options())
	s.expectOutput("CoordinatorRoot", "Coordinator", "", "scheduled")
	wantEqual(t, "W1", s.completed("W1"), "A")
	wantEqual(t, "W2", s.completed("W2"), "B")
}

// sample_detached_then_activity_fs.
func TestSampleDetachedThenActivity(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Echo", func(_ *runtime.ActivityContext, in string) (string, error) { return in, nil }),
		reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			if _, err := ctx.ScheduleTimer(5 * time.Millisecond).Get(); err != nil {
				return "", err
			}
			return "child-" + in, nil
		}),
		reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.ScheduleOrchestration("Child", "detached-child", "payload")
			return ctx.ScheduleActivity("Echo", "hello").Get()
		}))
	s.start(reg, options())
	s.startOrchestration("ParentInstance", "Parent", "")
	wantEqual(t, "parent", s.completed("ParentInstance"), "hello")
	wantEqual(t, "child", s.completed("detached-child"), "child-payload")
}

// sample_continue_as_new_fs: four executions.
func TestSampleContinueAsNew(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t, reg.RegisterOrchestration("CanSample", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}
		return fmt.Sprintf("final:%d", n), nil
	}))
	s.start(reg, options())
	s.expectOutput("inst-sample-can", "CanSample", "0", "final:3")
	execs, err := s.client.ListExecutions(s.ctx, "inst-sample-can")
	if err != nil || !slices.Equal(execs, []uint64{1, 2, 3, 4}) {
		t.Fatalf("executions = %v, %v", execs, err)
	}
}

func constant(out string) runtime.OrchestrationFunc {
	return func(*runtime.OrchestrationContext, string) (string, error) { return out, nil }
}

// sample_versioning_start_latest_vs_exact_fs.
func TestSampleVersioningStartLatestVsExact(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterOrchestration("Versioned", constant("v1")),
		reg.RegisterOrchestrationVersion("Versioned", "2.0.0", constant("v2")))
	s.start(reg, options())
	s.startOrchestration("inst-vers-latest", "Versioned", "")
	wantEqual(t, "latest", s.completed("inst-vers-latest"), "v2")
	reg.SetVersionPolicy("Versioned", runtime.ExactVersion(duroxide.MustParseVersion("1.0.0")))
	s.startOrchestration("inst-vers-exact", "Versioned", "")
	wantEqual(t, "exact", s.completed("inst-vers-exact"), "v1")
}

// sample_versioning_sub_orchestration_explicit_vs_policy_fs.
func TestSampleVersioningSubOrchestrationExplicitVsPolicy(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterOrchestration("ParentVers", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			a, err := ctx.ScheduleSubOrchestrationWith("Child", "exp", runtime.SubOrchestrationOptions{Version: "1.0.0"}).Get()
			if err != nil {
				return "", err
			}
			b, err := ctx.ScheduleSubOrchestration("Child", "pol").Get()
			return a + "-" + b, err
		}),
		reg.RegisterOrchestration("Child", constant("c1")),
		reg.RegisterOrchestrationVersion("Child", "2.0.0", constant("c2")))
	s.start(reg, options())
	s.expectOutput("inst-sub-vers", "ParentVers", "", "c1-c2")
}

// sample_versioning_continue_as_new_upgrade_fs: v1 continues as new into
// the latest version.
func TestSampleVersioningContinueAsNewUpgrade(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterOrchestration("LongRunner", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			return "", ctx.ContinueAsNew("v1:" + in)
		}),
		reg.RegisterOrchestrationVersion("LongRunner", "2.0.0", func(_ *runtime.OrchestrationContext, in string) (string, error) {
			return "upgraded:" + in, nil
		}))
	s.start(reg, options())
	must(t, s.client.StartOrchestrationVersioned(s.ctx, "inst-can-upgrade", "LongRunner", "1.0.0", "state"))
	wantEqual(t, "output", s.completed("inst-can-upgrade"), "upgraded:v1:state")
	execs, err := s.client.ListExecutions(s.ctx, "inst-can-upgrade")
	if err != nil || !slices.Equal(execs, []uint64{1, 2}) {
		t.Fatalf("executions = %v, %v", execs, err)
	}
	e1, err := s.client.ReadExecutionHistory(s.ctx, "inst-can-upgrade", 1)
	must(t, err)
	if !slices.ContainsFunc(e1, func(e duroxide.Event) bool { return e.Type() == duroxide.EventTypeOrchestrationContinuedAsNew }) {
		t.Fatalf("execution 1 = %v", e1)
	}
	e2, err := s.client.ReadExecutionHistory(s.ctx, "inst-can-upgrade", 2)
	must(t, err)
	st, ok := e2[0].Kind.(duroxide.OrchestrationStarted)
	if !ok || st.Input != "v1:state" || st.Version != "2.0.0" {
		t.Fatalf("execution 2 starts with %+v", e2[0])
	}
}

// sample_cancellation_parent_cascades_to_children_fs.
func TestSampleCancellationParentCascadesToChildren(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterOrchestration("ChildSample", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			_, _ = ctx.ScheduleWait("Go").Get()
			return "done", nil
		}),
		reg.RegisterOrchestration("ParentSample", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			if _, err := ctx.ScheduleSubOrchestration("ChildSample", "seed").Get(); err != nil {
				return "", err
			}
			return "parent_done", nil
		}))
	s.start(reg, options())
	s.startOrchestration("inst-sample-cancel", "ParentSample", "")
	s.waitForSubscription("inst-sample-cancel::sub::2", "Go")
	must(t, s.client.CancelInstance(s.ctx, "inst-sample-cancel", "user_request"))

	cancelledWith := func(reason string) func([]duroxide.Event) bool {
		return func(h []duroxide.Event) bool {
			return slices.ContainsFunc(h, func(e duroxide.Event) bool {
				f, ok := e.Kind.(duroxide.OrchestrationFailed)
				a := f.Details.Application
				return ok && a != nil && a.Kind.Name == duroxide.AppErrorCancelled && a.Kind.Reason == reason
			})
		}
	}
	if !s.waitForHistory("inst-sample-cancel", waitTimeout, cancelledWith("user_request")) {
		t.Fatal("timeout waiting for parent cancel failure")
	}
	all, err := s.client.ListAllInstances(s.ctx)
	must(t, err)
	var children []string
	for _, id := range all {
		if strings.HasPrefix(id, "inst-sample-cancel::") {
			children = append(children, id)
		}
	}
	if len(children) == 0 {
		t.Fatal("no child instance")
	}
	for _, child := range children {
		ok := s.waitForHistory(child, waitTimeout, func(h []duroxide.Event) bool {
			return slices.ContainsFunc(h, func(e duroxide.Event) bool { return e.Type() == duroxide.EventTypeOrchestrationCancelRequested }) &&
				cancelledWith("parent canceled")(h)
		})
		if !ok {
			t.Fatalf("timeout waiting for child cancel for %s", child)
		}
	}
}

// sample_self_pruning_eternal_orchestration: an eternal orchestration prunes
// its own old executions from an activity.
func TestSampleSelfPruningEternalOrchestration(t *testing.T) {
	s := newSample(t)
	var prunes atomic.Int32
	var pruned atomic.Uint64
	type state struct {
		BatchNum     uint32 `json:"batch_num"`
		TotalBatches uint32 `json:"total_batches"`
	}
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ProcessBatch", func(_ *runtime.ActivityContext, n string) (string, error) { return "Processed batch " + n, nil }),
		reg.RegisterActivity("PruneSelf", func(ctx *runtime.ActivityContext, _ string) (string, error) {
			res, err := ctx.Client().PruneExecutions(ctx, ctx.InstanceID(), duroxide.PruneOptions{KeepLast: ptr[uint32](1)})
			if err != nil {
				return "", err
			}
			prunes.Add(1)
			pruned.Add(res.ExecutionsDeleted)
			return fmt.Sprintf("Pruned %d executions", res.ExecutionsDeleted), nil
		}),
		reg.RegisterOrchestration("SelfPruningOrch", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			st := state{TotalBatches: 5}
			if err := json.Unmarshal([]byte(in), &st); err != nil || st.TotalBatches == 0 {
				st = state{TotalBatches: 5}
			}
			if _, err := ctx.ScheduleActivity("ProcessBatch", strconv.Itoa(int(st.BatchNum))).Get(); err != nil {
				return "", err
			}
			if _, err := ctx.ScheduleActivity("PruneSelf", "").Get(); err != nil {
				return "", err
			}
			if st.BatchNum >= st.TotalBatches-1 {
				return fmt.Sprintf("Completed %d batches", st.TotalBatches), nil
			}
			next, _ := json.Marshal(state{BatchNum: st.BatchNum + 1, TotalBatches: st.TotalBatches})
			return "", ctx.ContinueAsNew(string(next))
		}))
	s.start(reg, options())
	s.startOrchestration("inst-self-prune", "SelfPruningOrch", "{}")
	if out := s.completed("inst-self-prune"); !strings.Contains(out, "Completed 5 batches") {
		t.Fatalf("output = %q", out)
	}
	if prunes.Load() < 4 || pruned.Load() < 3 {
		t.Fatalf("prunes = %d, executions pruned = %d", prunes.Load(), pruned.Load())
	}
	execs, err := s.client.ListExecutions(s.ctx, "inst-self-prune")
	if err != nil || len(execs) != 1 {
		t.Fatalf("executions left = %v, %v", execs, err)
	}
}

func ptr[T any](v T) *T { return &v }
