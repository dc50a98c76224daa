package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// historyCommand prints one execution's history: ReadHistoryWithExecutionID
// (the current execution, from LatestExecutionID, unless -execution).
// -json prints the events in duroxide's serde format, readable by the Rust
// runtime.
var historyCommand = command{
	name:     "history",
	synopsis: "<instance> [-execution N]",
	summary:  "one execution's history as a table (default: the current one)",
	setup: func(fs *flag.FlagSet) action {
		execution := fs.Uint64("execution", 0, "the execution to print (default: the current one)")
		return func(ctx context.Context, s *session, args []string) error {
			p, info, err := s.oneInstance(ctx, "history", "<instance> [-execution N]", args)
			if err != nil {
				return err
			}
			id := info.InstanceID
			exec := *execution
			if exec == 0 {
				exec = info.CurrentExecutionID
			} else if _, err := p.GetExecutionInfo(ctx, id, exec); err != nil {
				return notFoundf("instance %q has no execution %d (cdb-admin show %s lists its executions)", id, exec, id)
			}
			events, err := p.ReadHistoryWithExecutionID(ctx, id, exec)
			if err != nil {
				return fmt.Errorf("read the history of %q execution %d: %w", id, exec, err)
			}
			if s.flags.json {
				if events == nil {
					events = []duroxide.Event{}
				}
				return printJSON(s.io.stdout, events)
			}
			rows := make([][]string, len(events))
			for i, e := range events {
				source := "-"
				if e.SourceEventID != nil {
					source = strconv.FormatUint(*e.SourceEventID, 10)
				}
				rows[i] = []string{strconv.FormatUint(e.EventID, 10), source, formatMs(e.TimestampMs), string(e.Type()), truncate(eventDetail(e), 2*cellWidth)}
			}
			fmt.Fprintf(s.io.stdout, "%s, execution %d: %d events\n", id, exec, len(events))
			return printTable(s.io.stdout, []string{"ID", "SOURCE", "TIME", "TYPE", "DETAIL"}, rows)
		}
	},
}

// commonEventFields are the JSON fields every event has; eventDetail
// leaves them out.
var commonEventFields = map[string]bool{
	"event_id": true, "source_event_id": true, "instance_id": true, "execution_id": true,
	"timestamp_ms": true, "duroxide_version": true, "type": true,
}

// eventDetail renders an event's kind-specific fields as "name=value"
// pairs in name order, the values as their JSON (strings quoted).
func eventDetail(e duroxide.Event) string {
	raw, err := json.Marshal(e)
	if err != nil {
		return "(undecodable: " + err.Error() + ")"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "(undecodable: " + err.Error() + ")"
	}
	names := make([]string, 0, len(fields))
	for k, v := range fields {
		if !commonEventFields[k] && string(v) != "null" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		var b bytes.Buffer
		if json.Compact(&b, fields[k]) != nil {
			b.Reset()
			b.Write(fields[k])
		}
		parts[i] = k + "=" + b.String()
	}
	return strings.Join(parts, " ")
}
