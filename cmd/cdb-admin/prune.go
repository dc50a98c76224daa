package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// pruneResultJSON is duroxide's PruneResult under -json.
type pruneResultJSON struct {
	InstancesProcessed uint64 `json:"instances_processed"`
	ExecutionsDeleted  uint64 `json:"executions_deleted"`
	EventsDeleted      uint64 `json:"events_deleted"`
}

// pruneCommand deletes old executions (of instances that continued as new):
// PruneExecutions per id, or PruneExecutionsBulk over every instance with
// -all. The current execution, Running executions and KV entries are never
// touched. It asks first unless -yes.
var pruneCommand = command{
	name:     "prune",
	synopsis: "<instance>... | -all  [-keep-last N] [-completed-before T] [-yes]",
	summary:  "delete old executions (never the current one)",
	setup: func(fs *flag.FlagSet) action {
		all := fs.Bool("all", false, "prune every instance")
		keepLast := fs.Uint("keep-last", 0, "keep the N most recent executions, the current one included (0: keep only the current one)")
		before := fs.String("completed-before", "", "prune only executions completed before T (RFC 3339, or a duration ago: 720h)")
		yes := fs.Bool("yes", false, "do not ask for confirmation")
		return func(ctx context.Context, s *session, args []string) error {
			switch {
			case *all && len(args) > 0:
				return usagef("prune: pass instance ids or -all, not both")
			case !*all && len(args) == 0:
				return usagef("prune: name the instances to prune, or pass -all (usage: cdb-admin prune %s)", "<instance>... | -all [-keep-last N] [-completed-before T] [-yes]")
			}
			if err := requireArgs("prune", args, 0, -1, "<instance>..."); err != nil {
				return err
			}
			var opts duroxide.PruneOptions
			what := "every execution but the current one"
			if *keepLast > 0 {
				if *keepLast > 1<<32-1 {
					return usagef("prune: -keep-last %d is too large", *keepLast)
				}
				k := uint32(*keepLast)
				opts.KeepLast = &k
				what = fmt.Sprintf("every execution but the %d most recent", k)
			}
			if *before != "" {
				ms, err := parseWhen("-completed-before", *before, time.Now())
				if err != nil {
					return err
				}
				opts.CompletedBefore = &ms
				what += " completed before " + formatMs(ms)
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			ids := uniqueSorted(args)
			for _, id := range ids {
				info, err := instanceInfo(ctx, p, id)
				if err != nil {
					return err
				}
				if info.Status == duroxide.StatusPending {
					return failedf("%s is Pending: its start has not run, so it has no execution to prune (cdb-admin delete removes it); nothing was pruned", quoteIfNeeded(id))
				}
			}
			if !*yes {
				target := "of every instance"
				if !*all {
					target = "of " + describeIDs(ids)
				}
				if err := confirm(s, fmt.Sprintf("Delete %s %s?", what, target)); err != nil {
					return err
				}
			}
			var res duroxide.PruneResult
			if *all {
				res, err = p.PruneExecutionsBulk(ctx, duroxide.InstanceFilter{}, opts)
				if err != nil {
					return fmt.Errorf("prune: %w", err)
				}
			}
			for _, id := range ids {
				r, err := p.PruneExecutions(ctx, id, opts)
				if err != nil {
					return fmt.Errorf("prune %s (the instances before it are pruned): %w", quoteIfNeeded(id), err)
				}
				res.InstancesProcessed += r.InstancesProcessed
				res.ExecutionsDeleted += r.ExecutionsDeleted
				res.EventsDeleted += r.EventsDeleted
			}
			out := pruneResultJSON{InstancesProcessed: res.InstancesProcessed, ExecutionsDeleted: res.ExecutionsDeleted, EventsDeleted: res.EventsDeleted}
			if s.flags.json {
				return printJSON(s.io.stdout, out)
			}
			_, err = fmt.Fprintf(s.io.stdout, "pruned %d execution(s) and %d event(s) of %d instance(s)\n",
				out.ExecutionsDeleted, out.EventsDeleted, out.InstancesProcessed)
			return err
		}
	},
}
