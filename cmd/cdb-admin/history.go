package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// historyCommand prints one execution's history: ReadHistoryWithExecutionID
// (the current execution, from LatestExecutionID, unless -execution).
// -json prints the events in duroxide's serde format, readable by the Rust
// runtime. The table marks an ExternalEvent the orchestration never
// received "(dropped: no wait was pending)" (runtime.DroppedExternalEvents).
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
			if info.Status == duroxide.StatusPending && *execution == 0 {
				// No execution yet: nothing to read.
				if s.flags.json {
					return printJSON(s.io.stdout, []duroxide.Event{})
				}
				_, err := fmt.Fprintf(s.io.stdout, "%s is Pending: its start has not run yet, so it has no history\n", quoteIfNeeded(id))
				return err
			}
			exec := *execution
			if exec == 0 {
				exec = info.CurrentExecutionID
			} else if _, err := p.GetExecutionInfo(ctx, id, exec); err != nil {
				return notFoundf("instance %s has no execution %d (cdb-admin show lists its executions)", quoteIfNeeded(id), exec)
			}
			events, err := p.ReadHistoryWithExecutionID(ctx, id, exec)
			if err != nil {
				return fmt.Errorf("read the history of %s execution %d: %w", quoteIfNeeded(id), exec, err)
			}
			if s.flags.json {
				if events == nil {
					events = []duroxide.Event{}
				}
				return printJSON(s.io.stdout, events)
			}
			dropped := map[uint64]string{}
			for _, de := range runtime.DroppedExternalEvents(events) {
				dropped[de.EventID] = de.Reason
			}
			rows := make([][]string, len(events))
			for i, e := range events {
				source := "-"
				if e.SourceEventID != nil {
					source = strconv.FormatUint(*e.SourceEventID, 10)
				}
				detail := eventDetail(e)
				if why := dropped[e.EventID]; why != "" {
					detail = "(" + why + ") " + detail // first, so that a cut never hides it
				}
				rows[i] = []string{strconv.FormatUint(e.EventID, 10), source, formatMs(e.TimestampMs), string(e.Type()), truncate(detail, 2*cellWidth)}
			}
			fmt.Fprintf(s.io.stdout, "%s, execution %d: %d events\n", quoteIfNeeded(id), exec, len(events))
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

// leadingEventFields are the fields that name what an event is about,
// printed first in this order so that a long input or result cut off at
// the end of the row never hides them.
var leadingEventFields = []string{"name", "version", "instance", "key"}

// detailValueWidth is the widest one field's value is printed in an
// event's detail; longer values (inputs, results, payloads) are cut with
// "…". -json prints them whole.
const detailValueWidth = 40

// eventDetail renders an event's kind-specific fields as "name=value"
// pairs, the values as their JSON (strings quoted, so control characters
// are escaped), each cut to detailValueWidth: first the leadingEventFields,
// then the others in name order.
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
	rank := func(name string) int {
		if i := slices.Index(leadingEventFields, name); i >= 0 {
			return i
		}
		return len(leadingEventFields)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, k := range names {
		var b bytes.Buffer
		if json.Compact(&b, fields[k]) != nil {
			b.Reset()
			b.Write(fields[k])
		}
		parts[i] = k + "=" + cutJSON(b.String(), detailValueWidth)
	}
	return strings.Join(parts, " ")
}

// cutJSON cuts a compact JSON value to n runes with "…". A string is cut
// between its characters, never inside an escape, and keeps its closing
// quote ("abc…").
func cutJSON(v string, n int) string {
	if utf8.RuneCountInString(v) <= n {
		return v
	}
	var s string
	if json.Unmarshal([]byte(v), &s) != nil { // an object, an array
		return string([]rune(v)[:n-1]) + "…"
	}
	cut := `"`
	for end := 0; end < len(s); {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
		b, _ := json.Marshal(s[:end])
		next := strings.TrimSuffix(string(b), `"`)
		if utf8.RuneCountInString(next)+2 > n {
			break
		}
		cut = next
	}
	return cut + `…"`
}
