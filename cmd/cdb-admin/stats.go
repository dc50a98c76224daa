package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
)

// queuesJSON is duroxide's QueueDepths under -json.
type queuesJSON struct {
	OrchestratorQueue uint64 `json:"orchestrator_queue"`
	WorkerQueue       uint64 `json:"worker_queue"`
	TimerQueue        uint64 `json:"timer_queue"`
}

// metricsJSON is duroxide's SystemMetrics under -json.
type metricsJSON struct {
	TotalInstances     uint64 `json:"total_instances"`
	TotalExecutions    uint64 `json:"total_executions"`
	RunningInstances   uint64 `json:"running_instances"`
	CompletedInstances uint64 `json:"completed_instances"`
	FailedInstances    uint64 `json:"failed_instances"`
	TotalEvents        uint64 `json:"total_events"`
}

// queuesCommand prints GetQueueDepths: the unlocked messages per queue
// (timers wait in the orchestrator queue, so the timer queue is 0).
var queuesCommand = command{
	name:     "queues",
	synopsis: "",
	summary:  "unlocked messages per queue",
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, s *session, args []string) error {
			if err := requireArgs("queues", args, 0, 0, ""); err != nil {
				return err
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			q, err := p.GetQueueDepths(ctx)
			if err != nil {
				return fmt.Errorf("read the queue depths: %w", err)
			}
			out := queuesJSON{OrchestratorQueue: q.OrchestratorQueue, WorkerQueue: q.WorkerQueue, TimerQueue: q.TimerQueue}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			return printTable(s.io.stdout, []string{"QUEUE", "UNLOCKED MESSAGES"}, [][]string{
				{"orchestrator", strconv.FormatUint(out.OrchestratorQueue, 10)},
				{"worker", strconv.FormatUint(out.WorkerQueue, 10)},
				{"timer", strconv.FormatUint(out.TimerQueue, 10)},
			})
		}
	},
}

// metricsCommand prints GetSystemMetrics: instance counts by the status of
// their current execution, executions and history events.
var metricsCommand = command{
	name:     "metrics",
	synopsis: "",
	summary:  "instance, execution and event counts over the container",
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, s *session, args []string) error {
			if err := requireArgs("metrics", args, 0, 0, ""); err != nil {
				return err
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			m, err := p.GetSystemMetrics(ctx)
			if err != nil {
				return fmt.Errorf("read the system metrics: %w", err)
			}
			out := metricsJSON{
				TotalInstances: m.TotalInstances, TotalExecutions: m.TotalExecutions, RunningInstances: m.RunningInstances,
				CompletedInstances: m.CompletedInstances, FailedInstances: m.FailedInstances, TotalEvents: m.TotalEvents,
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			u := func(v uint64) string { return strconv.FormatUint(v, 10) }
			return printTable(s.io.stdout, []string{"METRIC", "VALUE"}, [][]string{
				{"instances", u(out.TotalInstances)},
				{"running", u(out.RunningInstances)},
				{"completed", u(out.CompletedInstances)},
				{"failed", u(out.FailedInstances)},
				{"executions", u(out.TotalExecutions)},
				{"events", u(out.TotalEvents)},
			})
		}
	},
}
