package main

import (
	"context"
	"flag"
	"strconv"
)

// listCommand lists instances, newest first, with their name, status,
// execution and times: ListInstances or ListInstancesByStatus, then
// GetInstanceInfo per instance (one point read each). Without -status the
// Pending instances (their start stored, not run yet: ListInstancesByStatus
// Pending) come first. Long ids and names are cut in the table (idCell)
// unless -v.
var listCommand = command{
	name:     "list",
	synopsis: "[-status Running|Completed|Failed|ContinuedAsNew|Pending] [-limit N]",
	summary:  "instances (Pending ones first), newest first, with name, status and times (-v: long ids whole)",
	setup: func(fs *flag.FlagSet) action {
		status := fs.String("status", "", "only instances with this status")
		limit := fs.Int("limit", 0, "print at most N instances (0: all)")
		return func(ctx context.Context, s *session, args []string) error {
			if err := requireArgs("list", args, 0, 0, "[-status S] [-limit N]"); err != nil {
				return err
			}
			if *limit < 0 {
				return usagef("list: -limit must not be negative, not %d", *limit)
			}
			want, err := parseStatus(*status, listStatuses)
			if err != nil {
				return err
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			ids, err := listInstances(ctx, p, want, true)
			if err != nil {
				return err
			}
			if *limit > 0 && len(ids) > *limit {
				ids = ids[:*limit]
			}
			rows := make([]instanceJSON, 0, len(ids))
			for _, id := range ids {
				info, err := instanceInfo(ctx, p, id)
				if exitCode(err) == exitNotFound {
					continue // deleted since the listing
				}
				if err != nil {
					return err
				}
				rows = append(rows, toInstanceJSON(info))
			}
			if s.flags.json {
				return printJSON(s.io.stdout, rows)
			}
			whole := s.flags.verbose
			table := make([][]string, len(rows))
			for i, r := range rows {
				parent := "-"
				if r.ParentInstanceID != nil {
					parent = idCell(*r.ParentInstanceID, whole)
				}
				table[i] = []string{idCell(r.InstanceID, whole), nameCell(r.OrchestrationName, whole), r.Status,
					strconv.FormatUint(r.CurrentExecutionID, 10), formatMs(r.CreatedAt), formatMs(r.UpdatedAt), parent}
			}
			return printTable(s.io.stdout, []string{"INSTANCE", "ORCHESTRATION", "STATUS", "EXECUTION", "CREATED", "UPDATED", "PARENT"}, table)
		}
	},
}
