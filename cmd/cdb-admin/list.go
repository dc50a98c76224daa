package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// listRowJSON is one instance of list under -json: the listing's summary
// (duroxide.InstanceSummary), without the output, which show prints.
type listRowJSON struct {
	InstanceID           string  `json:"instance_id"`
	OrchestrationName    string  `json:"orchestration_name"`
	OrchestrationVersion string  `json:"orchestration_version"`
	CurrentExecutionID   uint64  `json:"current_execution_id"`
	Status               string  `json:"status"`
	CreatedAt            uint64  `json:"created_at"`
	UpdatedAt            uint64  `json:"updated_at"`
	CompletedAt          *uint64 `json:"completed_at,omitempty"`
	ParentInstanceID     *string `json:"parent_instance_id"`
	PendingReason        string  `json:"pending_reason,omitempty"`
	// Error is a Failed instance's error, its first line (at most 200
	// bytes).
	Error string `json:"error,omitempty"`
	// CustomStatus is the custom status, its first line (at most 200
	// bytes); omitted when none is set.
	CustomStatus *string `json:"custom_status,omitempty"`
}

// listCommand lists instances, newest first, with their name, status,
// execution, times and a detail (a Failed instance's error, a Pending
// one's reason, else the custom status): through the provider's
// duroxide.InstancePager (cdb: 1 request per page of up to 1,000 while the
// instances fit in a response, as the dashboard's list) when it has one;
// else ListInstances or ListInstancesByStatus (the Pending instances
// first), then GetInstanceInfo per instance. Long ids and names are cut
// in the table (idCell) unless -v.
var listCommand = command{
	name:     "list",
	synopsis: "[-status Running|Completed|Failed|ContinuedAsNew|Pending] [-limit N]",
	summary:  "instances, newest first, with name, status, times and error or custom status (-v: long ids whole)",
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
			rows, err := listSummaries(ctx, p, want, *limit)
			if err != nil {
				return err
			}
			out := make([]listRowJSON, len(rows))
			for i, r := range rows {
				out[i] = listRowJSON{InstanceID: r.InstanceID, OrchestrationName: r.OrchestrationName, OrchestrationVersion: r.OrchestrationVersion,
					CurrentExecutionID: r.CurrentExecutionID, Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
					CompletedAt: r.CompletedAt, ParentInstanceID: r.ParentInstanceID, PendingReason: r.PendingReason,
					Error: r.ErrorLine, CustomStatus: r.CustomStatus}
			}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			whole := s.flags.verbose
			table := make([][]string, len(out))
			for i, r := range out {
				parent, ended := "-", "-"
				if r.ParentInstanceID != nil {
					parent = idCell(*r.ParentInstanceID, whole)
				}
				if r.CompletedAt != nil {
					ended = formatMs(*r.CompletedAt)
				}
				detail := r.Error
				if detail != "" {
					detail = quoteIfNeeded(detail)
				}
				switch {
				case r.PendingReason != "":
					detail = quoteIfNeeded(r.PendingReason)
				case detail == "" && r.CustomStatus != nil:
					detail = "status: " + quoteIfNeeded(*r.CustomStatus)
				}
				table[i] = []string{idCell(r.InstanceID, whole), nameCell(r.OrchestrationName, whole), r.Status,
					strconv.FormatUint(r.CurrentExecutionID, 10), formatMs(r.CreatedAt), ended, parent, orDash(detail)}
			}
			return printTable(s.io.stdout, []string{"INSTANCE", "ORCHESTRATION", "STATUS", "EXECUTION", "CREATED", "ENDED", "PARENT", "DETAIL"}, table)
		}
	},
}

// listSummaries returns the instances with status ("" for every one),
// newest first, at most limit (0: all): a page at a time from the
// provider's duroxide.InstancePager, else from the id listing and
// GetInstanceInfo per instance.
func listSummaries(ctx context.Context, admin duroxide.ProviderAdmin, status string, limit int) ([]duroxide.InstanceSummary, error) {
	var out []duroxide.InstanceSummary
	if pager, ok := admin.(duroxide.InstancePager); ok {
		q := duroxide.InstancePageQuery{Status: status, Order: duroxide.OrderNewestFirst, PageSize: duroxide.MaxInstancePageSize}
		for {
			page, err := pager.ListInstancesPage(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("list instances: %w", err)
			}
			out = append(out, page.Instances...)
			if page.Continuation == "" || limit > 0 && len(out) >= limit {
				break
			}
			q.Continuation = page.Continuation
		}
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
		return out, nil
	}
	ids, err := listInstances(ctx, admin, status, true)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	for _, id := range ids {
		info, err := instanceInfo(ctx, admin, id)
		if exitCode(err) == exitNotFound {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info.Summary())
	}
	return out, nil
}
