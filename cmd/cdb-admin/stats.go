package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// queuesJSON is duroxide's QueueDepths under -json, with the Pending
// instances (their start stored, not run yet; omitted when there are
// none), newest first.
type queuesJSON struct {
	OrchestratorQueue uint64 `json:"orchestrator_queue"`
	WorkerQueue       uint64 `json:"worker_queue"`
	TimerQueue        uint64 `json:"timer_queue"`
	// Orchestrator and Worker are the messages ready, locked and delayed
	// per queue when the provider reports them (duroxide.QueueStatsReporter:
	// cdb and the in-memory provider), as the dashboard's queues page shows
	// them; omitted otherwise.
	Orchestrator *queueCountsJSON `json:"orchestrator,omitempty"`
	Worker       *queueCountsJSON `json:"worker,omitempty"`
	Pending      []pendingJSON    `json:"pending_instances,omitempty"`
}

// queueCountsJSON is duroxide.QueueCounts under -json.
type queueCountsJSON struct {
	Ready            uint64 `json:"ready"`
	Locked           uint64 `json:"locked"`
	Delayed          uint64 `json:"delayed"`
	OldestReadyAgeMs uint64 `json:"oldest_ready_age_ms"`
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
	// PendingInstances counts the Pending instances (started, not run
	// yet), which GetSystemMetrics leaves out; TotalInstances includes
	// them, as list lists them.
	PendingInstances uint64 `json:"pending_instances"`
}

// queuesCommand prints, in the dashboard's terms, the messages ready,
// locked and delayed per queue and the oldest ready message's wait when
// the provider reports them (duroxide.QueueStatsReporter), else
// GetQueueDepths (the unlocked messages; timers wait in the orchestrator
// queue, so the timer queue is 0); then the Pending instances, whose start
// waits in the orchestrator queue and has not run (ListInstancesByStatus
// Pending and GetInstanceInfo each), with why when a runtime reported it.
// Delayed counts every timer not fired yet, a finished instance's too
// (it is dropped when it fires), as the dashboard does.
var queuesCommand = command{
	name:     "queues",
	synopsis: "",
	summary:  "messages ready, locked and delayed per queue, and the Pending instances (starts that have not run)",
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
			if reporter, ok := duroxide.ProviderAdmin(p).(duroxide.QueueStatsReporter); ok {
				qs, err := reporter.GetQueueStats(ctx)
				if err != nil {
					return fmt.Errorf("read the queue stats: %w", err)
				}
				out.Orchestrator, out.Worker = countsJSON(qs.Orchestrator), countsJSON(qs.Worker)
			}
			if out.Pending, err = pendingInstances(ctx, p); err != nil {
				return err
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			u := func(v uint64) string { return strconv.FormatUint(v, 10) }
			if out.Orchestrator != nil {
				rows := [][]string{}
				for _, r := range []struct {
					name string
					c    *queueCountsJSON
				}{{"orchestrator", out.Orchestrator}, {"worker", out.Worker}} {
					wait := "-"
					if r.c.Ready > 0 {
						wait = (time.Duration(r.c.OldestReadyAgeMs) * time.Millisecond).String()
					}
					rows = append(rows, []string{r.name, u(r.c.Ready), u(r.c.Locked), u(r.c.Delayed), wait})
				}
				if err := printTable(s.io.stdout, []string{"QUEUE", "READY", "LOCKED", "DELAYED", "OLDEST-READY-WAIT"}, rows); err != nil {
					return err
				}
				fmt.Fprintln(s.io.stdout, "\nReady: visible and unlocked, waiting for a dispatcher. Locked: held by a turn or an activity in progress.\nDelayed: timers not fired yet (a finished instance's too, dropped when it fires) and messages abandoned with a delay.")
			} else if err := printTable(s.io.stdout, []string{"QUEUE", "UNLOCKED MESSAGES"}, [][]string{
				{"orchestrator", u(out.OrchestratorQueue)},
				{"worker", u(out.WorkerQueue)},
				{"timer", u(out.TimerQueue)},
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
// their current execution, executions and history events; and the Pending
// instances (ListInstancesByStatus Pending), which GetSystemMetrics leaves
// out, counted in the instances as list and the dashboard count them.
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
			pending, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
			if err != nil {
				return fmt.Errorf("list the pending instances: %w", err)
			}
			out := metricsJSON{
				TotalInstances: m.TotalInstances + uint64(len(pending)), TotalExecutions: m.TotalExecutions, RunningInstances: m.RunningInstances,
				CompletedInstances: m.CompletedInstances, FailedInstances: m.FailedInstances, TotalEvents: m.TotalEvents,
				PendingInstances: uint64(len(pending)),
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			u := func(v uint64) string { return strconv.FormatUint(v, 10) }
			return printTable(s.io.stdout, []string{"METRIC", "VALUE"}, [][]string{
				{"instances", u(out.TotalInstances)},
				{"pending", u(out.PendingInstances)},
				{"running", u(out.RunningInstances)},
				{"completed", u(out.CompletedInstances)},
				{"failed", u(out.FailedInstances)},
				{"executions", u(out.TotalExecutions)},
				{"events", u(out.TotalEvents)},
			})
		}
	},
}

// countsJSON is c under -json.
func countsJSON(c duroxide.QueueCounts) *queueCountsJSON {
	return &queueCountsJSON{Ready: c.Ready, Locked: c.Locked, Delayed: c.Delayed, OldestReadyAgeMs: c.OldestReadyAgeMs}
}
