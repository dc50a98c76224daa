package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// queuesJSON is duroxide's QueueDepths under -json, with the Pending
// instances (their start stored, not run yet; omitted when there are
// none), newest first.
type queuesJSON struct {
	OrchestratorQueue uint64        `json:"orchestrator_queue"`
	WorkerQueue       uint64        `json:"worker_queue"`
	TimerQueue        uint64        `json:"timer_queue"`
	Pending           []pendingJSON `json:"pending_instances,omitempty"`
}

// pendingJSON is one Pending instance in queues' answer: its id, the
// orchestration its start names, when the start was stored (milliseconds
// since the Unix epoch) and why it has not run ("" when no runtime said).
type pendingJSON struct {
	InstanceID        string `json:"instance_id"`
	OrchestrationName string `json:"orchestration_name"`
	CreatedAt         uint64 `json:"created_at"`
	PendingReason     string `json:"pending_reason"`
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
// (timers wait in the orchestrator queue, so the timer queue is 0); then
// the Pending instances, whose start waits in the orchestrator queue and
// has not run (ListInstancesByStatus Pending and GetInstanceInfo each),
// with why when a runtime reported it.
var queuesCommand = command{
	name:     "queues",
	synopsis: "",
	summary:  "unlocked messages per queue, and the Pending instances (starts that have not run)",
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
			if out.Pending, err = pendingInstances(ctx, p); err != nil {
				return err
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			if err := printTable(s.io.stdout, []string{"QUEUE", "UNLOCKED MESSAGES"}, [][]string{
				{"orchestrator", strconv.FormatUint(out.OrchestratorQueue, 10)},
				{"worker", strconv.FormatUint(out.WorkerQueue, 10)},
				{"timer", strconv.FormatUint(out.TimerQueue, 10)},
			}); err != nil {
				return err
			}
			if len(out.Pending) == 0 {
				_, err = fmt.Fprintln(s.io.stdout, "\nPending instances (started, not run yet): none")
				return err
			}
			fmt.Fprintf(s.io.stdout, "\nPending instances (started, not run yet): %d\n", len(out.Pending))
			rows := make([][]string, len(out.Pending))
			for i, pi := range out.Pending {
				rows[i] = []string{idCell(pi.InstanceID, s.flags.verbose), nameCell(pi.OrchestrationName, s.flags.verbose),
					formatMs(pi.CreatedAt), orDash(pi.PendingReason)}
			}
			return printTable(s.io.stdout, []string{"INSTANCE", "ORCHESTRATION", "STORED", "REASON"}, rows)
		}
	},
}

// pendingInstances returns the Pending instances, newest first: their ids
// from ListInstancesByStatus(Pending), then GetInstanceInfo each (one that
// ran or was deleted since is left out).
func pendingInstances(ctx context.Context, admin duroxide.ProviderAdmin) ([]pendingJSON, error) {
	ids, err := admin.ListInstancesByStatus(ctx, duroxide.StatusPending)
	if err != nil {
		return nil, fmt.Errorf("list the pending instances: %w", err)
	}
	var out []pendingJSON
	for _, id := range ids {
		info, err := instanceInfo(ctx, admin, id)
		if exitCode(err) == exitNotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		if info.Status != duroxide.StatusPending {
			continue
		}
		out = append(out, pendingJSON{InstanceID: id, OrchestrationName: info.OrchestrationName, CreatedAt: info.CreatedAt, PendingReason: info.PendingReason})
	}
	return out, nil
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
