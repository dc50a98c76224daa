package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// deleteResultJSON is duroxide's DeleteInstanceResult under -json.
type deleteResultJSON struct {
	InstancesDeleted     uint64 `json:"instances_deleted"`
	ExecutionsDeleted    uint64 `json:"executions_deleted"`
	EventsDeleted        uint64 `json:"events_deleted"`
	QueueMessagesDeleted uint64 `json:"queue_messages_deleted"`
}

// deleteCommand deletes root instances with their sub-orchestrations and
// every document they own. With ids: every id is checked first (unknown:
// exitNotFound; a sub-orchestration, or a Running instance in a tree
// without -force: exitFailed), then one DeleteInstancesAtomic over all the
// trees; a Pending instance (its start stored, not run yet) needs no
// -force and is purged with its queued start and every message for it. With -completed-before: DeleteInstanceBulk (terminal root
// instances only). Either way it asks first unless -yes.
var deleteCommand = command{
	name:     "delete",
	synopsis: "<instance>... [-force] [-yes] | -completed-before T [-limit N] [-yes]",
	summary:  "delete root instances with their sub-orchestrations and all their data",
	setup: func(fs *flag.FlagSet) action {
		force := fs.Bool("force", false, "also delete Running instances")
		yes := fs.Bool("yes", false, "do not ask for confirmation")
		before := fs.String("completed-before", "", "delete every terminal root instance completed before T (RFC 3339, or a duration ago: 720h)")
		limit := fs.Uint("limit", 0, "with -completed-before: delete at most N instances (0: no limit)")
		return func(ctx context.Context, s *session, args []string) error {
			if *before == "" {
				if len(args) == 0 {
					return usagef("delete: name the instances to delete, or pass -completed-before (usage: cdb-admin delete %s)", "<instance>... [-force] [-yes]")
				}
				if *limit != 0 {
					return usagef("delete: -limit applies only with -completed-before")
				}
				if err := requireArgs("delete", args, 1, -1, "<instance>..."); err != nil {
					return err
				}
				return deleteIDs(ctx, s, uniqueSorted(args), *force, *yes)
			}
			if len(args) > 0 {
				return usagef("delete: pass instance ids or -completed-before, not both")
			}
			if *force {
				return usagef("delete: -force does not apply to -completed-before (only terminal instances are deleted)")
			}
			ms, err := parseWhen("-completed-before", *before, time.Now())
			if err != nil {
				return err
			}
			filter := duroxide.InstanceFilter{CompletedBefore: &ms}
			question := fmt.Sprintf("Delete every terminal root instance completed before %s, with its sub-orchestrations", formatMs(ms))
			if *limit > 0 {
				if *limit > 1<<32-1 {
					return usagef("delete: -limit %d is too large", *limit)
				}
				l := uint32(*limit)
				filter.Limit = &l
				question += fmt.Sprintf(" (at most %d)", l)
			}
			p, err := s.provider(ctx)
			if err != nil {
				return err
			}
			if !*yes {
				if err := confirm(s, question+"?"); err != nil {
					return err
				}
			}
			res, err := p.DeleteInstanceBulk(ctx, filter)
			if err != nil {
				return fmt.Errorf("delete: %w", err)
			}
			return printDeleted(s, res)
		}
	},
}

// deleteIDs deletes the trees of the root instances ids in one
// DeleteInstancesAtomic, after checking every one of them.
func deleteIDs(ctx context.Context, s *session, ids []string, force, yes bool) error {
	p, err := s.provider(ctx)
	if err != nil {
		return err
	}
	var all []string
	for _, id := range ids {
		info, err := instanceInfo(ctx, p, id)
		if err != nil {
			return err
		}
		if info.ParentInstanceID != nil {
			return failedf("%s is a sub-orchestration of %s: delete its root instead; nothing was deleted", quoteIfNeeded(id), quoteIfNeeded(*info.ParentInstanceID))
		}
		tree, err := p.GetInstanceTree(ctx, id)
		if err != nil {
			return fmt.Errorf("read the instance tree of %s: %w", quoteIfNeeded(id), err)
		}
		all = append(all, tree.AllIDs...)
	}
	all = uniqueSorted(all)
	if !force {
		for _, id := range all {
			info, err := instanceInfo(ctx, p, id)
			if err != nil {
				return err
			}
			if info.Status == "Running" {
				return failedf("%s is Running: cancel it and wait for it to end, or pass -force; nothing was deleted", quoteIfNeeded(id))
			}
		}
	}
	if !yes {
		q := fmt.Sprintf("Delete %d instance(s) (%s) with all their history, messages and KV entries?", len(all), describeIDs(all))
		if err := confirm(s, q); err != nil {
			return err
		}
	}
	res, err := p.DeleteInstancesAtomic(ctx, all, force)
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return printDeleted(s, res)
}

// printDeleted reports a deletion's counts.
func printDeleted(s *session, r duroxide.DeleteInstanceResult) error {
	out := deleteResultJSON{InstancesDeleted: r.InstancesDeleted, ExecutionsDeleted: r.ExecutionsDeleted,
		EventsDeleted: r.EventsDeleted, QueueMessagesDeleted: r.QueueMessagesDeleted}
	if s.flags.json {
		return printJSON(s.io.stdout, out)
	}
	_, err := fmt.Fprintf(s.io.stdout, "deleted %d instance(s), %d execution(s), %d event(s), %d queue message(s)\n",
		out.InstancesDeleted, out.ExecutionsDeleted, out.EventsDeleted, out.QueueMessagesDeleted)
	return err
}
