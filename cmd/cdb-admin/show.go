package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// showJSON is show's answer under -json.
type showJSON struct {
	Instance     instanceJSON      `json:"instance"`
	CustomStatus *customStatusJSON `json:"custom_status"`
	Executions   []executionJSON   `json:"executions"`
}

// customStatusJSON is duroxide's custom status and its version (a counter
// incremented on every change).
type customStatusJSON struct {
	Status  *string `json:"status"`
	Version uint64  `json:"version"`
}

// showCommand prints one instance: GetInstanceInfo, GetCustomStatus, and
// ListExecutions with GetExecutionInfo per execution. A Pending instance
// (its start stored, not run yet) has no execution; show prints why it has
// not run when a runtime reported it.
var showCommand = command{
	name:     "show",
	synopsis: "<instance>",
	summary:  "status, output, custom status, parent and every execution",
	setup: func(fs *flag.FlagSet) action {
		return func(ctx context.Context, s *session, args []string) error {
			p, info, err := s.oneInstance(ctx, "show", "<instance>", args)
			if err != nil {
				return err
			}
			id := info.InstanceID
			out := showJSON{Instance: toInstanceJSON(info), Executions: []executionJSON{}}
			cs, err := p.GetCustomStatus(ctx, id, 0)
			if err != nil {
				return fmt.Errorf("read the custom status of %s: %w", quoteIfNeeded(id), err)
			}
			if cs != nil {
				out.CustomStatus = &customStatusJSON{Status: cs.Status, Version: cs.Version}
			}
			execs, err := p.ListExecutions(ctx, id)
			if err != nil {
				return fmt.Errorf("list the executions of %s: %w", quoteIfNeeded(id), err)
			}
			for _, e := range execs {
				ei, err := p.GetExecutionInfo(ctx, id, e)
				if err != nil {
					return fmt.Errorf("read execution %d of %s: %w", e, quoteIfNeeded(id), err)
				}
				out.Executions = append(out.Executions, executionJSON{
					ExecutionID: ei.ExecutionID, Status: ei.Status, Output: ei.Output,
					StartedAt: ei.StartedAt, CompletedAt: ei.CompletedAt, EventCount: ei.EventCount,
				})
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			return printShow(s, out)
		}
	},
}

// printShow writes show's answer for people: one field per line (the
// output in full), then the executions as a table.
func printShow(s *session, out showJSON) error {
	in := out.Instance
	tw := tabwriter.NewWriter(s.io.stdout, 0, 0, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("Instance", quoteIfNeeded(in.InstanceID))
	line("Orchestration", nameCell(in.OrchestrationName, true)+" (version "+orDash(in.OrchestrationVersion)+")")
	if in.Status == duroxide.StatusPending {
		line("Status", in.Status+" (its start is stored and has not run yet)")
		if in.PendingReason != "" {
			line("Pending reason", in.PendingReason)
		} else {
			line("Pending reason", "- (no runtime has reported one: is a runtime running?)")
		}
	} else {
		line("Status", in.Status)
	}
	line("Execution", strconv.FormatUint(in.CurrentExecutionID, 10))
	switch {
	case in.Output == nil:
		line("Output", "-")
	case in.Status == duroxide.StatusFailed:
		line("Error", *in.Output) // a failed instance's "output" is its error
	case in.Status == duroxide.StatusContinuedAsNew:
		line("Next input", *in.Output)
	default:
		line("Output", *in.Output)
	}
	switch {
	case out.CustomStatus == nil:
		line("Custom status", "- (never set)")
	case out.CustomStatus.Status == nil:
		line("Custom status", fmt.Sprintf("- (cleared, version %d)", out.CustomStatus.Version))
	default:
		line("Custom status", fmt.Sprintf("%s (version %d)", *out.CustomStatus.Status, out.CustomStatus.Version))
	}
	if in.ParentInstanceID != nil {
		line("Parent", quoteIfNeeded(*in.ParentInstanceID))
	} else {
		line("Parent", "- (a root instance)")
	}
	line("Created", formatMs(in.CreatedAt))
	line("Updated", formatMs(in.UpdatedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(s.io.stdout, "\nExecutions:")
	rows := make([][]string, len(out.Executions))
	for i, e := range out.Executions {
		completed := "-"
		if e.CompletedAt != nil {
			completed = formatMs(*e.CompletedAt)
		}
		rows[i] = []string{strconv.FormatUint(e.ExecutionID, 10), e.Status, formatMs(e.StartedAt), completed,
			strconv.FormatUint(e.EventCount, 10), cell(e.Output)}
	}
	return printTable(s.io.stdout, []string{"EXECUTION", "STATUS", "STARTED", "COMPLETED", "EVENTS", "OUTPUT"}, rows)
}
