package stress

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The two workloads of duroxide's provider stress tests: the orchestrations
// and activities each registers, the input the pump starts them with, and
// what a correct run leaves in history.

// stressWorkload is one scenario's orchestrations and expectations.
type stressWorkload interface {
	// orchestrationName is the orchestration the pump starts.
	orchestrationName() string
	// input is the input of every started orchestration.
	input() string
	// register adds the scenario's orchestrations and activities to r; the
	// activities record their executions in log.
	register(r *runtime.Registry, log *executionLog) error
	// activitiesPerInstance is the number of activities one completed
	// orchestration ran, its sub-orchestrations' included.
	activitiesPerInstance() int
	// verify checks a completed orchestration's output and histories and
	// returns what is wrong (nothing when all is right).
	verify(ctx context.Context, p duroxide.Provider, instance string, status runtime.OrchestrationStatus) []string
}

// newStressWorkload returns cfg's scenario, or an error for an unknown one.
func newStressWorkload(cfg StressConfig) (stressWorkload, error) {
	switch cfg.Scenario {
	case ScenarioParallelOrchestrations:
		return parallelWorkload{tasks: cfg.TasksPerInstance, delay: cfg.ActivityDelay}, nil
	case ScenarioLargePayload:
		return largePayloadWorkload{LargePayloadConfig: cfg.LargePayload, delay: cfg.ActivityDelay}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q (want %q or %q)", cfg.Scenario, ScenarioParallelOrchestrations, ScenarioLargePayload)
}

// Names registered by the workloads (duroxide's names).
const (
	fanoutOrchestrationName       = "FanoutOrchestration"
	processTaskActivity           = "ProcessTask"
	largePayloadOrchestrationName = "LargePayloadOrchestration"
	largePayloadSubOrchestration  = "LargePayloadSubOrchestration"
	smallPayloadActivity          = "SmallPayloadTask"
	mediumPayloadActivity         = "MediumPayloadTask"
	largePayloadActivity          = "LargePayloadTask"
	// largePayloadFinalTasks is the number of small activities the parent
	// runs after its sub-orchestrations (duroxide's phase 5).
	largePayloadFinalTasks = 10
	// largePayloadSubActivities is the number of activities of one
	// sub-orchestration.
	largePayloadSubActivities = 2
)

// sleepActivity waits d, or until the activity is cancelled.
func sleepActivity(ctx *runtime.ActivityContext, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// parallelWorkload is parallel_orchestrations.rs: FanoutOrchestration
// schedules tasks ProcessTask activities at once and joins them.
type parallelWorkload struct {
	tasks int
	delay time.Duration
}

func (w parallelWorkload) orchestrationName() string { return fanoutOrchestrationName }

func (w parallelWorkload) input() string {
	return fmt.Sprintf(`{"task_count":%d}`, w.tasks)
}

func (w parallelWorkload) activitiesPerInstance() int { return w.tasks }

func (w parallelWorkload) register(r *runtime.Registry, log *executionLog) error {
	if err := r.RegisterActivity(processTaskActivity, log.wrap(func(ctx *runtime.ActivityContext, input string) (string, error) {
		if err := sleepActivity(ctx, w.delay); err != nil {
			return "", err
		}
		return "processed: " + input, nil
	})); err != nil {
		return err
	}
	return r.RegisterOrchestration(fanoutOrchestrationName, fanoutOrchestration)
}

// fanoutOrchestration fans out to task_count activities and waits for all
// of them (duroxide's fanout_orchestration).
func fanoutOrchestration(ctx *runtime.OrchestrationContext, input string) (string, error) {
	var in struct {
		TaskCount *int `json:"task_count"`
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("invalid input: %w", err)
	}
	n := defaultStressTasksPerInstance
	if in.TaskCount != nil {
		n = *in.TaskCount
	}
	futures := make([]*runtime.Future, n)
	for i := range futures {
		futures[i] = ctx.ScheduleActivity(processTaskActivity, fmt.Sprintf("task-%d", i))
	}
	succeeded := 0
	for _, r := range ctx.Join(futures...) {
		if r.Err == nil {
			succeeded++
		}
	}
	return fanoutOutput(n, succeeded), nil
}

// fanoutOutput is FanoutOrchestration's output.
func fanoutOutput(tasks, succeeded int) string {
	return fmt.Sprintf("Completed %d tasks (%d succeeded)", tasks, succeeded)
}

func (w parallelWorkload) verify(ctx context.Context, p duroxide.Provider, instance string, status runtime.OrchestrationStatus) []string {
	var problems []string
	if want := fanoutOutput(w.tasks, w.tasks); status.Output != want {
		problems = append(problems, fmt.Sprintf("%s: output %q, want %q", instance, status.Output, want))
	}
	h, err := readStressHistory(ctx, p, instance)
	if err != nil {
		return append(problems, err.Error())
	}
	problems = append(problems, h.problems...)
	problems = append(problems, h.expectActivities(processTaskActivity, w.tasks, func(input, result string) bool {
		return result == "processed: "+input
	})...)
	return append(problems, h.expectSubOrchestrations(0)...)
}

// largePayloadWorkload is large_payload.rs: LargePayloadOrchestration runs
// sequential small, medium and large payload activities, then
// sub-orchestrations in parallel, then ten more small activities, and
// returns a large output.
type largePayloadWorkload struct {
	LargePayloadConfig
	delay time.Duration
}

// withDefaults fills the zero fields with duroxide's LargePayloadConfig
// defaults.
func (c LargePayloadConfig) withDefaults() LargePayloadConfig {
	setDefault(&c.SmallPayloadKB, 10)
	setDefault(&c.MediumPayloadKB, 50)
	setDefault(&c.LargePayloadKB, 100)
	setDefault(&c.ActivityCount, 20)
	setDefault(&c.SubOrchestrationCount, 5)
	return c
}

func (w largePayloadWorkload) orchestrationName() string { return largePayloadOrchestrationName }

func (w largePayloadWorkload) input() string { return `{"test":"large_payload"}` }

func (w largePayloadWorkload) activitiesPerInstance() int {
	return w.ActivityCount + largePayloadFinalTasks + w.SubOrchestrationCount*largePayloadSubActivities
}

// payloadResult is the output of the payload activities.
type payloadResult struct {
	Input   string `json:"input"`
	Payload string `json:"payload"`
	SizeKB  int    `json:"size_kb"`
}

func (w largePayloadWorkload) register(r *runtime.Registry, log *executionLog) error {
	for _, a := range []struct {
		name string
		kb   int
	}{{smallPayloadActivity, w.SmallPayloadKB}, {mediumPayloadActivity, w.MediumPayloadKB}, {largePayloadActivity, w.LargePayloadKB}} {
		kb := a.kb
		err := r.RegisterActivity(a.name, log.wrap(func(ctx *runtime.ActivityContext, input string) (string, error) {
			if err := sleepActivity(ctx, w.delay); err != nil {
				return "", err
			}
			out, err := json.Marshal(payloadResult{Input: input, Payload: generatePayload(kb), SizeKB: kb})
			return string(out), err
		}))
		if err != nil {
			return err
		}
	}
	if err := r.RegisterOrchestration(largePayloadOrchestrationName, w.orchestration); err != nil {
		return err
	}
	return r.RegisterOrchestration(largePayloadSubOrchestration, w.subOrchestration)
}

// largePayloadOutput is the parent orchestration's output.
type largePayloadOutput struct {
	ActivitiesCompleted       int    `json:"activities_completed"`
	SubOrchestrationsComplete int    `json:"sub_orchestrations_completed"`
	EstimatedEventCount       int    `json:"estimated_event_count"`
	ResultPayload             string `json:"result_payload"`
	ResultSizeKB              int    `json:"result_size_kb"`
}

// payloadInput is the input of a payload activity or sub-orchestration.
type payloadInput struct {
	Index int    `json:"index"`
	Data  string `json:"data,omitempty"`
	// Payload is set instead of Data for sub-orchestrations, as in duroxide.
	Payload string `json:"payload,omitempty"`
}

// orchestration is duroxide's large_payload_orchestration.
func (w largePayloadWorkload) orchestration(ctx *runtime.OrchestrationContext, input string) (string, error) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(input), &cfg); err != nil {
		return "", fmt.Errorf("invalid input: %w", err)
	}
	succeeded, events := 0, 0
	run := func(activity string, index int, data string) error {
		in, err := json.Marshal(payloadInput{Index: index, Data: data})
		if err != nil {
			return err
		}
		if _, err := ctx.ScheduleActivity(activity, string(in)).Get(); err == nil {
			succeeded++
		}
		events += 2
		return nil
	}
	small := w.ActivityCount / 3
	medium := w.ActivityCount / 3
	phases := []struct {
		activity string
		count    int
		inputKB  int
	}{
		{smallPayloadActivity, small, w.SmallPayloadKB},
		{mediumPayloadActivity, medium, w.MediumPayloadKB / 2},
		{largePayloadActivity, w.ActivityCount - small - medium, w.LargePayloadKB / 4},
	}
	for _, ph := range phases {
		for i := range ph.count {
			if err := run(ph.activity, i, generatePayload(ph.inputKB)); err != nil {
				return "", err
			}
		}
	}
	subs := make([]*runtime.Future, w.SubOrchestrationCount)
	for i := range subs {
		in, err := json.Marshal(payloadInput{Index: i, Payload: generatePayload(w.MediumPayloadKB)})
		if err != nil {
			return "", err
		}
		subs[i] = ctx.ScheduleSubOrchestration(largePayloadSubOrchestration, string(in))
		events += 4
	}
	subSucceeded := 0
	for _, r := range ctx.Join(subs...) {
		if r.Err == nil {
			subSucceeded++
		}
	}
	for i := range largePayloadFinalTasks {
		if _, err := ctx.ScheduleActivity(smallPayloadActivity, fmt.Sprintf("final-task-%d", i)).Get(); err == nil {
			succeeded++
		}
		events += 2
	}
	out, err := json.Marshal(largePayloadOutput{
		ActivitiesCompleted: succeeded, SubOrchestrationsComplete: subSucceeded, EstimatedEventCount: events,
		ResultPayload: generatePayload(w.LargePayloadKB), ResultSizeKB: w.LargePayloadKB,
	})
	return string(out), err
}

// subOutput is the sub-orchestration's output.
type subOutput struct {
	Success       bool   `json:"success"`
	ResultPayload string `json:"result_payload"`
	SizeKB        int    `json:"size_kb"`
}

// subOrchestration is duroxide's large_payload_sub_orchestration: two
// sequential activities and a medium output.
func (w largePayloadWorkload) subOrchestration(ctx *runtime.OrchestrationContext, input string) (string, error) {
	var in payloadInput
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", fmt.Errorf("invalid input: %w", err)
	}
	_, err1 := ctx.ScheduleActivity(smallPayloadActivity, generatePayload(w.SmallPayloadKB)).Get()
	_, err2 := ctx.ScheduleActivity(mediumPayloadActivity, generatePayload(w.MediumPayloadKB/2)).Get()
	out, err := json.Marshal(subOutput{Success: err1 == nil && err2 == nil, ResultPayload: generatePayload(w.MediumPayloadKB), SizeKB: w.MediumPayloadKB})
	return string(out), err
}

func (w largePayloadWorkload) verify(ctx context.Context, p duroxide.Provider, instance string, status runtime.OrchestrationStatus) []string {
	var problems []string
	var out largePayloadOutput
	wantActivities := w.ActivityCount + largePayloadFinalTasks
	if err := json.Unmarshal([]byte(status.Output), &out); err != nil {
		problems = append(problems, fmt.Sprintf("%s: output is not the expected JSON: %v", instance, err))
	} else if out.ActivitiesCompleted != wantActivities || out.SubOrchestrationsComplete != w.SubOrchestrationCount ||
		len(out.ResultPayload) != w.LargePayloadKB*1024 {
		problems = append(problems, fmt.Sprintf("%s: output reports %d activities, %d sub-orchestrations, a %d-byte payload; want %d, %d, %d",
			instance, out.ActivitiesCompleted, out.SubOrchestrationsComplete, len(out.ResultPayload), wantActivities, w.SubOrchestrationCount, w.LargePayloadKB*1024))
	}
	h, err := readStressHistory(ctx, p, instance)
	if err != nil {
		return append(problems, err.Error())
	}
	problems = append(problems, h.problems...)
	resultHasInput := func(input, result string) bool { return payloadResultOf(result, input) }
	problems = append(problems, h.expectActivities("", wantActivities, resultHasInput)...)
	problems = append(problems, h.expectSubOrchestrations(w.SubOrchestrationCount)...)
	for _, child := range h.children() {
		ch, err := readStressHistory(ctx, p, child)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		problems = append(problems, ch.problems...)
		problems = append(problems, ch.expectActivities("", largePayloadSubActivities, resultHasInput)...)
		var so subOutput
		if err := json.Unmarshal([]byte(ch.output), &so); err != nil || !so.Success || len(so.ResultPayload) != w.MediumPayloadKB*1024 {
			problems = append(problems, fmt.Sprintf("%s: unexpected output (%d bytes)", child, len(ch.output)))
		}
		if res, ok := h.subResult(child); !ok || res != ch.output {
			problems = append(problems, fmt.Sprintf("%s: the parent's SubOrchestrationCompleted result differs from the child's output", child))
		}
	}
	return problems
}

// payloadResultOf reports whether result is a payload activity's output for
// input.
func payloadResultOf(result, input string) bool {
	var r payloadResult
	if err := json.Unmarshal([]byte(result), &r); err != nil {
		return false
	}
	return r.Input == input && len(r.Payload) == r.SizeKB*1024
}

// payloadPattern is the repeating text of generatePayload (duroxide's).
const payloadPattern = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!@#$%^&*()"

// generatePayload returns a string of exactly kb KiB (duroxide's
// generate_payload).
func generatePayload(kb int) string {
	n := kb * 1024
	if n <= 0 {
		return ""
	}
	return strings.Repeat(payloadPattern, n/len(payloadPattern)+1)[:n]
}
