package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The history of the execution shown on an instance's page, a page of
// Options.HistoryPageSize events at a time (&hpage=N), optionally only the
// events of one kind (&kind=ActivityFailed).
//
// When the admin is a duroxide.HistoryPageReader (cdb and the in-memory
// provider) and no kind is chosen, the page reads only what it shows: the
// page's events with the execution's metadata (1 request on cdb); for a
// running or failed execution shown on another page than its last, the
// last page too (what it waits for, why it failed); and in one more read
// the events outside the page that the page refers to (the
// OrchestrationStarted with the input, the events its completions
// complete). Otherwise, and to filter by kind, it reads the whole history
// (ReadHistoryWithExecutionID).

// historyView is what the history section is made from.
type historyView struct {
	page    []duroxide.Event          // the events shown
	tail    []duroxide.Event          // the execution's last events (the whole history when read whole)
	whole   bool                      // tail is the whole history
	known   map[uint64]duroxide.Event // every event read, by id
	pageOf  func(id uint64) int       // the history page (unfiltered) an event id is on, 0 when unknown
	exec    duroxide.ExecutionInfo
	matches int // events of the chosen kind (when filtering)
}

// fillHistory reads and turns into timeline rows the page shown of the
// execution d.Exec, and derives from what it read the input, the
// failure and where it came from, the pending work and the execution's
// metadata.
func (h *Handler) fillHistory(ctx context.Context, d *instanceData) (*duroxide.ExecutionInfo, []string) {
	var v historyView
	var err error
	if pr, ok := h.admin.(duroxide.HistoryPageReader); ok && d.Kind == "" {
		v, err = h.readHistoryPage(ctx, pr, d)
	} else {
		v, err = h.readWholeHistory(ctx, d)
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("history of execution %d: %v", d.Exec, err)}
	}
	size := h.opts.HistoryPageSize
	d.EventTotal = int(v.exec.EventCount)
	href := func(id uint64) string {
		page := v.pageOf(id)
		switch {
		case page == 0:
			return ""
		case page == d.HPage && d.Kind == "":
			return fmt.Sprintf("#e%d", id)
		}
		return fmt.Sprintf("%s/instance?id=%s&exec=%d&hpage=%d#e%d", h.opts.Prefix, url.QueryEscape(d.ID), d.Exec, page, id)
	}
	if ev, ok := v.known[duroxide.InitialEventID]; ok {
		if k, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			in := k.Input
			d.Input = &in
		}
	}
	start := v.exec.StartedAt
	if ev, ok := v.known[duroxide.InitialEventID]; ok {
		start = ev.TimestampMs
	}
	names := map[uint64]string{} // scheduled event id -> activity or orchestration name
	for id, ev := range v.known {
		switch k := ev.Kind.(type) {
		case duroxide.ActivityScheduled:
			names[id] = k.Name
		case duroxide.SubOrchestrationScheduled:
			names[id] = k.Name
		}
	}
	dropped := h.droppedOf(ctx, d, v)
	for _, ev := range v.page {
		row := describe(ev)
		row.Dropped = dropped[ev.EventID]
		row.Time = utcMs(ev.TimestampMs)
		row.Offset = "+" + formatDuration(time.Duration(ev.TimestampMs-start)*time.Millisecond)
		if ev.SourceEventID != nil {
			src := *ev.SourceEventID
			if s, ok := v.known[src]; ok && ev.TimestampMs >= s.TimestampMs {
				row.Duration = formatDuration(time.Duration(ev.TimestampMs-s.TimestampMs) * time.Millisecond)
			}
			if row.Name == "" {
				row.Name = names[src]
			}
			row.SourceHref, row.SourceID = href(src), src
		}
		d.Events = append(d.Events, row)
	}
	d.Groups = groupRuns(d.Events)
	total := int(v.exec.EventCount)
	if d.Kind != "" {
		total = v.matches
	}
	d.Pages = max(1, (total+size-1)/size)
	for _, ev := range v.tail {
		if k, ok := ev.Kind.(duroxide.OrchestrationFailed); ok {
			det := k.Details
			d.Failure = &det
		}
	}
	switch v.exec.Status {
	case duroxide.StatusRunning:
		d.Pending, d.ShowPending = h.pendingOf(v.tail), true
		d.Pending.Partial = !v.whole
		for i := range d.Pending.Events {
			d.Pending.Events[i].Href = href(d.Pending.Events[i].EventID)
		}
	case duroxide.StatusFailed:
		if d.FailedAt = failureOf(v.tail, names); d.FailedAt != nil {
			d.FailedAt.Href = href(d.FailedAt.EventID)
		}
	}
	ei := v.exec
	return &ei, nil
}

// readHistoryPage reads the page shown through pr, the execution's last
// page when it runs or failed, and the events outside them the page
// refers to.
func (h *Handler) readHistoryPage(ctx context.Context, pr duroxide.HistoryPageReader, d *instanceData) (historyView, error) {
	size := h.opts.HistoryPageSize
	d.HPage = max(d.HPage, 1)
	read := func(page int) (duroxide.HistoryPage, error) {
		return pr.ReadHistoryPage(ctx, d.ID, d.Exec, uint64((page-1)*size+1), size)
	}
	hp, err := read(d.HPage)
	if err != nil {
		return historyView{}, err
	}
	last := max(1, (int(hp.Execution.EventCount)+size-1)/size)
	if d.HPage > last {
		d.HPage = last
		if hp, err = read(last); err != nil {
			return historyView{}, err
		}
	}
	v := historyView{page: hp.Events, tail: hp.Events, whole: last == 1, exec: hp.Execution, known: map[uint64]duroxide.Event{}}
	v.pageOf = func(id uint64) int {
		if id == 0 || id > hp.Execution.EventCount {
			return 0
		}
		return int((id-1)/uint64(size)) + 1
	}
	if d.HPage != last && (hp.Execution.Status == duroxide.StatusRunning || hp.Execution.Status == duroxide.StatusFailed) {
		tp, err := read(last)
		if err != nil {
			return historyView{}, err
		}
		v.tail = tp.Events
	}
	for _, evs := range [][]duroxide.Event{v.page, v.tail} {
		for _, ev := range evs {
			v.known[ev.EventID] = ev
		}
	}
	var missing []uint64
	want := func(id uint64) {
		if _, ok := v.known[id]; !ok && id != 0 && !slices.Contains(missing, id) && len(missing) < duroxide.MaxHistoryEventsRead {
			missing = append(missing, id)
		}
	}
	want(duroxide.InitialEventID)
	for _, evs := range [][]duroxide.Event{v.page, v.tail} {
		for _, ev := range evs {
			if ev.SourceEventID != nil {
				want(*ev.SourceEventID)
			}
		}
	}
	if len(missing) > 0 {
		extra, err := pr.ReadHistoryEvents(ctx, d.ID, d.Exec, missing)
		if err != nil {
			return historyView{}, err
		}
		for _, ev := range extra {
			v.known[ev.EventID] = ev
		}
	}
	return v, nil
}

// readWholeHistory reads the whole history of the execution shown and
// takes the page shown from it (of the events of d.Kind when chosen); the
// execution's metadata comes from it (status from its terminal event,
// start and end from the first and terminal events).
func (h *Handler) readWholeHistory(ctx context.Context, d *instanceData) (historyView, error) {
	events, err := h.admin.ReadHistoryWithExecutionID(ctx, d.ID, d.Exec)
	if err != nil {
		return historyView{}, err
	}
	size := h.opts.HistoryPageSize
	v := historyView{tail: events, whole: true, known: make(map[uint64]duroxide.Event, len(events)),
		exec: duroxide.ExecutionInfo{ExecutionID: d.Exec, Status: duroxide.StatusRunning, EventCount: uint64(len(events))}}
	index := make(map[uint64]int, len(events))
	shown := events[:0:0]
	for i, ev := range events {
		v.known[ev.EventID], index[ev.EventID] = ev, i
		if i == 0 {
			v.exec.StartedAt = ev.TimestampMs
		}
		switch ev.Kind.(type) {
		case duroxide.OrchestrationFailed:
			v.exec.Status = duroxide.StatusFailed
		case duroxide.OrchestrationCompleted:
			v.exec.Status = duroxide.StatusCompleted
		case duroxide.OrchestrationContinuedAsNew:
			v.exec.Status = duroxide.StatusContinuedAsNew
		}
		if ev.IsTerminal() {
			v.exec.CompletedAt = duroxide.Uint64Ptr(ev.TimestampMs)
		}
		if d.Kind == "" || string(ev.Type()) == d.Kind {
			shown = append(shown, ev)
		}
	}
	v.matches = len(shown)
	pages := max(1, (len(shown)+size-1)/size)
	d.HPage = min(max(d.HPage, 1), pages)
	v.page = shown[(d.HPage-1)*size : min(d.HPage*size, len(shown))]
	v.pageOf = func(id uint64) int {
		i, ok := index[id]
		if !ok {
			return 0
		}
		return i/size + 1
	}
	return v, nil
}

// droppedOf returns why each ExternalEvent of the page never reached the
// orchestration (runtime.DroppedExternalEvents), by event id. It needs
// the history up to the page: when only the page was read and it holds an
// ExternalEvent, the whole history is read for it.
func (h *Handler) droppedOf(ctx context.Context, d *instanceData, v historyView) map[uint64]string {
	history := v.tail
	if !v.whole {
		if !slices.ContainsFunc(v.page, func(ev duroxide.Event) bool { _, ok := ev.Kind.(duroxide.ExternalEvent); return ok }) {
			return nil
		}
		all, err := h.admin.ReadHistoryWithExecutionID(ctx, d.ID, d.Exec)
		if err != nil {
			return nil
		}
		history = all
	}
	dropped := map[uint64]string{}
	for _, de := range runtime.DroppedExternalEvents(history) {
		dropped[de.EventID] = de.Reason
	}
	return dropped
}

// eventGroup is a run of rows of the page: one row, or a run of at least
// minRun events of the same kind and name (a fan-out's schedules or
// completions), shown as one line that opens to its rows.
type eventGroup struct {
	Rows       []eventRow
	Run        bool
	Kind, Name string
	First      uint64
	Last       uint64
}

// minRun is the shortest run of like events summed up in one line.
const minRun = 10

// groupRuns cuts rows into groups: runs of minRun or more events of the
// same kind and name, and single rows.
func groupRuns(rows []eventRow) []eventGroup {
	var out []eventGroup
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].Kind == rows[i].Kind && rows[j].Name == rows[i].Name && rows[j].Error == nil && rows[j].Dropped == "" {
			j++
		}
		if j-i >= minRun {
			out = append(out, eventGroup{Rows: rows[i:j], Run: true, Kind: rows[i].Kind, Name: rows[i].Name, First: rows[i].ID, Last: rows[j-1].ID})
			i = j
			continue
		}
		out = append(out, eventGroup{Rows: rows[i : i+1]})
		i++
	}
	return out
}

// failureOf names the activity or sub-orchestration whose failure ended a
// failed execution (events: its last events, the OrchestrationFailed
// among them): the last ActivityFailed or SubOrchestrationFailed before
// it whose error is the execution's, or that it contains (nil when the
// orchestration failed on its own).
func failureOf(events []duroxide.Event, names map[uint64]string) *failureSite {
	var final *duroxide.ErrorDetails
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		var det duroxide.ErrorDetails
		var kind string
		switch k := ev.Kind.(type) {
		case duroxide.OrchestrationFailed:
			final = &k.Details
			continue
		case duroxide.ActivityFailed:
			det, kind = k.Details, "activity"
		case duroxide.SubOrchestrationFailed:
			det, kind = k.Details, "sub-orchestration"
		default:
			continue
		}
		if final == nil || ev.SourceEventID == nil || !strings.Contains(final.DisplayMessage(), det.DisplayMessage()) {
			continue
		}
		return &failureSite{Kind: kind, Name: names[*ev.SourceEventID], EventID: ev.EventID}
	}
	return nil
}

// historyJSON serves one execution's whole history (?id=&exec=N, the
// current execution without exec) as duroxide's JSON events, the same
// JSON cdb-admin history -json prints; &download=1 makes it an attachment.
func (h *Handler) historyJSON(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		h.fail(w, r, http.StatusBadRequest, "no instance id given (?id=)")
		return
	}
	ctx := r.Context()
	exec, err := strconv.ParseUint(q.Get("exec"), 10, 64)
	if err != nil || exec == 0 {
		info, err := h.admin.GetInstanceInfo(ctx, id)
		if err != nil {
			status, msg := h.lookupFailure(ctx, id, err)
			h.fail(w, r, status, msg)
			return
		}
		exec = info.CurrentExecutionID
	}
	events, err := h.admin.ReadHistoryWithExecutionID(ctx, id, exec)
	if err != nil {
		status, msg := h.lookupFailure(ctx, id, err)
		h.fail(w, r, status, msg)
		return
	}
	body, err := json.MarshalIndent(events, "", "  ")
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "encode the history: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if q.Get("download") == "1" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fmt.Sprintf("history-%s-%d.json", safeFileName(id), exec)}))
	}
	_, _ = w.Write(append(body, '\n'))
}

// safeFileName keeps the letters, digits, '-' and '_' of s (at most 64),
// for a download's file name.
func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
