package e2e_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Samples of duroxide's tests/e2e_samples.rs: persistent events, activity
// tags, KV.

// drainQueue applies every ConfigUpdate already queued, stopping when none
// arrives within 100ms (the select of a dequeue against a timer).
func drainQueue(ctx *runtime.OrchestrationContext, log *[]string) error {
	for {
		winner, cfg, _ := ctx.Select(ctx.DequeueEvent("ConfigUpdate"), ctx.ScheduleTimer(100*time.Millisecond))
		if winner == 1 {
			return nil
		}
		res, err := ctx.ScheduleActivity("ApplyConfig", cfg).Get()
		if err != nil {
			return err
		}
		*log = append(*log, res)
	}
}

// sample_config_hot_reload_persistent_events_fs: queued config updates are
// drained FIFO between work cycles, including one enqueued mid-flight.
func TestSampleConfigHotReloadPersistentEvents(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ApplyConfig", func(_ *runtime.ActivityContext, cfg string) (string, error) { return "applied:" + cfg, nil }),
		reg.RegisterOrchestration("ConfigHotReload", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			var log []string
			for cycle := range 3 {
				if err := drainQueue(ctx, &log); err != nil {
					return "", err
				}
				if _, err := ctx.ScheduleTimer(time.Second).Get(); err != nil {
					return "", err
				}
				if _, err := ctx.ScheduleActivity("ApplyConfig", fmt.Sprintf("cycle_%d", cycle)).Get(); err != nil {
					return "", err
				}
				log = append(log, fmt.Sprintf("cycle:%d", cycle))
			}
			if err := drainQueue(ctx, &log); err != nil {
				return "", err
			}
			return strings.Join(log, ","), nil
		}))
	s.start(reg, options())
	s.startOrchestration("inst-hot-reload", "ConfigHotReload", "")
	// Queue messages must follow the start (a provider drops them for an
	// instance that does not exist yet).
	s.waitForHistory("inst-hot-reload", waitTimeout, func(h []duroxide.Event) bool { return len(h) > 0 })
	must(t,
		s.client.EnqueueEvent(s.ctx, "inst-hot-reload", "ConfigUpdate", "v1"),
		s.client.EnqueueEvent(s.ctx, "inst-hot-reload", "ConfigUpdate", "v2"))
	cycle0 := s.waitForHistory("inst-hot-reload", waitTimeout, func(h []duroxide.Event) bool {
		return slices.ContainsFunc(h, func(e duroxide.Event) bool {
			k, ok := e.Kind.(duroxide.ActivityScheduled)
			return ok && k.Input == "cycle_0"
		})
	})
	if !cycle0 {
		t.Fatal("timed out waiting for cycle:0 to progress past its drain phase")
	}
	must(t, s.client.EnqueueEvent(s.ctx, "inst-hot-reload", "ConfigUpdate", "v3"))
	out := s.completed("inst-hot-reload")
	entries := strings.Split(out, ",")
	pos := func(e string) int {
		i := slices.Index(entries, e)
		if i < 0 {
			t.Fatalf("%s missing from output: %s", e, out)
		}
		return i
	}
	v1, v2, v3, c0 := pos("applied:v1"), pos("applied:v2"), pos("applied:v3"), pos("cycle:0")
	if v1 >= v2 || v2 >= v3 {
		t.Fatalf("updates out of FIFO order: %s", out)
	}
	if v3 <= c0 {
		t.Fatalf("v3 arrived mid-flight and must be drained after cycle:0: %s", out)
	}
}

func tagsOf(h []duroxide.Event) []string {
	var out []string
	for _, e := range h {
		if k, ok := e.Kind.(duroxide.ActivityScheduled); ok {
			tag := "<none>"
			if k.Tag != nil {
				tag = *k.Tag
			}
			out = append(out, k.Name+":"+tag)
		}
	}
	return out
}

func echoActivity(prefix string) runtime.ActivityFunc {
	return func(_ *runtime.ActivityContext, in string) (string, error) { return prefix + in, nil }
}

// sample_heterogeneous_workers_with_tags: one runtime serves untagged,
// "gpu" and "cpu" activities.
func TestSampleHeterogeneousWorkersWithTags(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("Render", echoActivity("rendered:")),
		reg.RegisterActivity("Encode", echoActivity("encoded:")),
		reg.RegisterActivity("Upload", echoActivity("uploaded:")),
		reg.RegisterOrchestration("VideoPipeline", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			rendered, err := ctx.ScheduleActivityWith("Render", "frame42", runtime.ActivityOptions{Tag: "gpu"}).Get()
			if err != nil {
				return "", err
			}
			encoded, err := ctx.ScheduleActivityWith("Encode", rendered, runtime.ActivityOptions{Tag: "cpu"}).Get()
			if err != nil {
				return "", err
			}
			return ctx.ScheduleActivity("Upload", encoded).Get()
		}))
	opts := options()
	var err error
	opts.TagFilter, err = duroxide.TagFilterDefaultAnd("gpu", "cpu")
	must(t, err)
	s.start(reg, opts)
	s.expectOutput("video-1", "VideoPipeline", "", "uploaded:encoded:rendered:frame42")
	wantEqual(t, "tags", strings.Join(tagsOf(s.history("video-1")), " "), "Render:gpu Encode:cpu Upload:<none>")
}

// sample_starvation_safe_tagged_activity: no worker serves "gpu", so the
// timer wins and a CPU fallback runs.
func TestSampleStarvationSafeTaggedActivity(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("GpuInference", echoActivity("inference:")),
		reg.RegisterActivity("CpuFallback", echoActivity("cpu_fallback:")),
		reg.RegisterOrchestration("InferenceWithFallback", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			gpu := ctx.ScheduleActivityWith("GpuInference", in, runtime.ActivityOptions{Tag: "gpu"})
			winner, out, err := ctx.Select(gpu, ctx.ScheduleTimer(500*time.Millisecond))
			if winner == 0 {
				return out, err
			}
			return ctx.ScheduleActivity("CpuFallback", in).Get()
		}))
	s.start(reg, options()) // default filter: untagged only
	s.expectOutput("infer-1", "InferenceWithFallback", "model-v3", "cpu_fallback:model-v3")
}

// sample_dual_runtime_tag_cooperation: an orchestrating runtime and a
// worker-only "gpu" runtime share the work.
func TestSampleDualRuntimeTagCooperation(t *testing.T) {
	s := newSample(t)
	registry := func() *runtime.Registry {
		reg := runtime.NewRegistry()
		must(t,
			reg.RegisterActivity("PreProcess", echoActivity("preprocessed:")),
			reg.RegisterActivity("GpuTrain", echoActivity("trained:")),
			reg.RegisterActivity("SaveModel", echoActivity("saved:")),
			reg.RegisterOrchestration("MLPipeline", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
				pre, err := ctx.ScheduleActivity("PreProcess", in).Get()
				if err != nil {
					return "", err
				}
				model, err := ctx.ScheduleActivityWith("GpuTrain", pre, runtime.ActivityOptions{Tag: "gpu"}).Get()
				if err != nil {
					return "", err
				}
				return ctx.ScheduleActivity("SaveModel", model).Get()
			}))
		return reg
	}
	s.start(registry(), options())
	gpu := options()
	gpu.OrchestrationConcurrency = -1 // worker-only node
	var err error
	gpu.TagFilter, err = duroxide.TagFilterTags("gpu")
	must(t, err)
	s.start(registry(), gpu)
	s.expectOutput("ml-1", "MLPipeline", "dataset-v5", "saved:trained:preprocessed:dataset-v5")
	wantEqual(t, "tags", strings.Join(tagsOf(s.history("ml-1")), " "), "PreProcess:<none> GpuTrain:gpu SaveModel:<none>")
}

// sample_kv_request_response: a server orchestration answers requests
// through its KV store.
func TestSampleKVRequestResponse(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ProcessCommand", func(_ *runtime.ActivityContext, in string) (string, error) {
			r := []rune(in)
			slices.Reverse(r)
			return string(r), nil
		}),
		reg.RegisterOrchestration("RequestServer", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			ctx.SetKVValue("status", "ready")
			for range 3 {
				raw, err := ctx.ScheduleWait("request").Get()
				if err != nil {
					return "", err
				}
				var req struct {
					OpID    string `json:"op_id"`
					Command string `json:"command"`
				}
				if err := json.Unmarshal([]byte(raw), &req); err != nil {
					return "", err
				}
				ctx.SetKVValue("status", "processing")
				result, err := ctx.ScheduleActivity("ProcessCommand", req.Command).Get()
				if err != nil {
					result = "error: " + err.Error()
				}
				ctx.SetKVValue("response:"+req.OpID, result)
				ctx.SetKVValue("status", "ready")
			}
			ctx.SetKVValue("status", "shutdown")
			return "served 3 requests", nil
		}))
	s.start(reg, options())
	s.startOrchestration("req-resp-server", "RequestServer", "")
	status, err := s.client.WaitForKVValue(s.ctx, "req-resp-server", "status", waitTimeout)
	must(t, err)
	wantEqual(t, "status", status, "ready")
	for _, r := range [][2]string{{"op-1", "hello"}, {"op-2", "world"}, {"op-3", "rust"}} {
		data, _ := json.Marshal(map[string]string{"op_id": r[0], "command": r[1]})
		must(t, s.client.RaiseEvent(s.ctx, "req-resp-server", "request", string(data)))
		resp, err := s.client.WaitForKVValue(s.ctx, "req-resp-server", "response:"+r[0], waitTimeout)
		must(t, err)
		rev := []rune(r[1])
		slices.Reverse(rev)
		wantEqual(t, "response "+r[0], resp, string(rev))
	}
	wantEqual(t, "output", s.completed("req-resp-server"), "served 3 requests")
	for key, want := range map[string]string{"status": "shutdown", "response:op-1": "olleh", "response:op-2": "dlrow", "response:op-3": "tsur"} {
		v, ok, err := s.client.GetKVValue(s.ctx, "req-resp-server", key)
		if err != nil || !ok || v != want {
			t.Fatalf("kv %s = %q %v %v, want %q", key, v, ok, err, want)
		}
	}
}

// sample_kv_cross_orchestration_read: a consumer polls a producer's KV
// store through the get_kv_value system activity.
func TestSampleKVCrossOrchestrationRead(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ComputeResult", func(_ *runtime.ActivityContext, in string) (string, error) {
			n, err := strconv.ParseInt(in, 10, 64)
			if err != nil {
				return "", fmt.Errorf("parse: %w", err)
			}
			return strconv.FormatInt(n*n, 10), nil
		}),
		reg.RegisterOrchestration("Producer", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
			ctx.SetKVValue("status", "computing")
			sq, err := ctx.ScheduleActivity("ComputeResult", in).Get()
			if err != nil {
				return "", err
			}
			ctx.SetKVValue("result", sq)
			ctx.SetKVValue("status", "done")
			_, _ = ctx.ScheduleWait("ack").Get()
			return "produced:" + sq, nil
		}),
		reg.RegisterOrchestration("Consumer", func(ctx *runtime.OrchestrationContext, producer string) (string, error) {
			read := func(key string) (string, bool, error) {
				raw, err := ctx.GetKVValueFromInstance(producer, key).Get()
				if err != nil {
					return "", false, fmt.Errorf("read %s: %w", key, err)
				}
				return runtime.DecodeKVValue(raw)
			}
			for attempts := 0; ; attempts++ {
				status, _, err := read("status")
				if err != nil {
					return "", err
				}
				if status == "done" {
					break
				}
				if attempts >= 20 {
					return "", fmt.Errorf("producer never finished")
				}
				if _, err := ctx.ScheduleTimer(100 * time.Millisecond).Get(); err != nil {
					return "", err
				}
			}
			result, ok, err := read("result")
			if err != nil {
				return "", err
			}
			if !ok {
				return "", fmt.Errorf("result key missing")
			}
			return "consumed:" + result, nil
		}))
	s.start(reg, options())
	s.startOrchestration("producer-1", "Producer", "7")
	result, err := s.client.WaitForKVValue(s.ctx, "producer-1", "result", waitTimeout)
	must(t, err)
	wantEqual(t, "result", result, "49")
	s.startOrchestration("consumer-1", "Consumer", "producer-1")
	wantEqual(t, "consumer", s.completed("consumer-1"), "consumed:49")
	must(t, s.client.RaiseEvent(s.ctx, "producer-1", "ack", ""))
	wantEqual(t, "producer", s.completed("producer-1"), "produced:49")
	for key, want := range map[string]string{"result": "49", "status": "done"} {
		v, ok, err := s.client.GetKVValue(s.ctx, "producer-1", key)
		if err != nil || !ok || v != want {
			t.Fatalf("kv %s = %q %v %v, want %q", key, v, ok, err, want)
		}
	}
}

// sample_kv_read_modify_write_counter: read-modify-write of a KV counter
// across turns replays deterministically.
func TestSampleKVReadModifyWriteCounter(t *testing.T) {
	s := newSample(t)
	reg := runtime.NewRegistry()
	must(t,
		reg.RegisterActivity("ProcessBatch", echoActivity("processed:")),
		reg.RegisterOrchestration("BatchProcessor", func(ctx *runtime.OrchestrationContext, _ string) (string, error) {
			for _, batch := range []string{"alpha", "beta", "gamma"} {
				processed, ok := ctx.KVValue("batches_processed")
				if !ok {
					processed = "0"
				}
				count, err := strconv.Atoi(processed)
				if err != nil {
					return "", err
				}
				result, err := ctx.ScheduleActivity("ProcessBatch", batch).Get()
				if err != nil {
					return "", err
				}
				ctx.SetKVValue("batches_processed", strconv.Itoa(count+1))
				ctx.SetKVValue("last_result", result)
			}
			v, _ := ctx.KVValue("batches_processed")
			return v, nil
		}))
	s.start(reg, options())
	s.expectOutput("batch-proc", "BatchProcessor", "", "3")
	for key, want := range map[string]string{"batches_processed": "3", "last_result": "processed:gamma"} {
		v, ok, err := s.client.GetKVValue(s.ctx, "batch-proc", key)
		if err != nil || !ok || v != want {
			t.Fatalf("kv %s = %q %v %v, want %q", key, v, ok, err, want)
		}
	}
}
