package runtimetest

// Histories printed for people: what a failed test shows.

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// formatValueLimit is how many bytes of an input, result or error message
// FormatHistory prints before cutting it with "…".
const formatValueLimit = 60

// FormatHistory prints events as a table, one event a line: its id, the
// event it completes, its type and what it says (names, inputs, results
// and error messages cut at 60 bytes). The event at index mark (from 0) is
// marked with ">"; pass -1 to mark none.
func FormatHistory(events []duroxide.Event, mark int) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\tid\tof\ttype\tdetails")
	for i, ev := range events {
		m := ""
		if i == mark {
			m = ">"
		}
		of := ""
		if ev.SourceEventID != nil {
			of = strconv.FormatUint(*ev.SourceEventID, 10)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", m, ev.EventID, of, ev.Type(), eventDetails(ev.Kind))
	}
	_ = w.Flush()
	return b.String()
}

// eventDetails says what an event holds, briefly.
func eventDetails(kind duroxide.EventKind) string {
	switch k := kind.(type) {
	case duroxide.OrchestrationStarted:
		return fmt.Sprintf("%s@%s input %s", quote(k.Name), k.Version, cut(k.Input))
	case duroxide.OrchestrationCompleted:
		return "output " + cut(k.Output)
	case duroxide.OrchestrationFailed:
		return cut(k.Details.DisplayMessage())
	case duroxide.OrchestrationContinuedAsNew:
		return "input " + cut(k.Input)
	case duroxide.ActivityScheduled:
		s := quote(k.Name) + " input " + cut(k.Input)
		if k.SessionID != nil {
			s += " session " + quote(*k.SessionID)
		}
		if k.Tag != nil {
			s += " tag " + quote(*k.Tag)
		}
		return s
	case duroxide.ActivityCompleted:
		return "result " + cut(k.Result)
	case duroxide.ActivityFailed:
		return cut(k.Details.DisplayMessage())
	case duroxide.TimerCreated:
		return "fires at " + msTime(k.FireAtMs)
	case duroxide.TimerFired:
		return "at " + msTime(k.FireAtMs)
	case duroxide.ExternalSubscribed:
		return quote(k.Name)
	case duroxide.ExternalEvent:
		return quote(k.Name) + " data " + cut(k.Data)
	case duroxide.QueueSubscribed:
		return quote(k.Name)
	case duroxide.QueueEventDelivered:
		return quote(k.Name) + " data " + cut(k.Data)
	case duroxide.SubOrchestrationScheduled:
		return fmt.Sprintf("%s instance %s input %s", quote(k.Name), quote(k.Instance), cut(k.Input))
	case duroxide.SubOrchestrationCompleted:
		return "result " + cut(k.Result)
	case duroxide.SubOrchestrationFailed:
		return cut(k.Details.DisplayMessage())
	case duroxide.OrchestrationChained:
		return fmt.Sprintf("%s instance %s input %s", quote(k.Name), quote(k.Instance), cut(k.Input))
	case duroxide.CustomStatusUpdated:
		if k.Status == nil {
			return "(reset)"
		}
		return cut(*k.Status)
	case duroxide.KeyValueSet:
		return quote(k.Key) + " = " + cut(k.Value)
	case duroxide.KeyValueCleared:
		return quote(k.Key)
	case duroxide.ActivityCancelRequested:
		return k.Reason
	case duroxide.SubOrchestrationCancelRequested:
		return k.Reason
	case duroxide.ExternalSubscribedCancelled:
		return k.Reason
	case duroxide.QueueSubscriptionCancelled:
		return k.Reason
	case duroxide.OrchestrationCancelRequested:
		return k.Reason
	}
	return ""
}

// quote quotes s as Go does.
func quote(s string) string { return strconv.Quote(s) }

// cut quotes s, cut to formatValueLimit bytes (on a rune boundary).
func cut(s string) string {
	if len(s) <= formatValueLimit {
		return strconv.Quote(s)
	}
	end := formatValueLimit
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return strconv.Quote(s[:end]) + "…"
}

// msTime formats milliseconds since the Unix epoch as UTC RFC 3339.
func msTime(ms uint64) string {
	return time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano)
}
