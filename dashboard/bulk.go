package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The bulk actions: cancel or delete the instances the list's filter
// (status, name, id prefix, creation time) matches. GET /bulk/{action}
// is the confirmation page with the count the filter matches; POST runs
// it on at most maxBulk of them (the newest first) and reports how many
// were cancelled or deleted, which were skipped and which failed. They
// pass the single actions' gates (allowed: read-write, authenticated,
// not rate-limited; checkCSRF on the POST) and refuse an empty filter.

// maxBulk is the most instances one bulk request examines and acts on:
// one click never runs unbounded; more matches need another click.
const maxBulk = 1000

// bulkTitles are the bulk actions' titles and buttons.
var bulkTitles = map[string]actionInfo{
	"cancel": {Title: "Cancel the matching instances", Verb: "Cancel them", Danger: true, NeedsRun: true},
	"delete": {Title: "Delete the matching instances", Verb: "Delete them", Danger: true},
}

// bulkSkip is an instance a bulk action left alone or failed on, and why.
type bulkSkip struct {
	ID, Why string
}

// bulkData is a bulk action's confirmation page and its result.
type bulkData struct {
	Action string
	Info   actionInfo
	Filter listFilter
	// Fields are the filter as the form sends it back: relative times
	// fixed to the instants they stood for when the page was made.
	Fields  map[string]string
	Back    string // the list with this filter
	Matched int    // instances matched, at most maxBulk
	More    bool   // more than maxBulk match
	Act     int    // of Matched: the ones the action applies to
	Running int    // delete: roots not finished (deleted only with Force)
	Nested  int    // delete: sub-orchestrations (they go with their roots)
	Reason  string
	Force   bool
	// After the POST:
	Done    bool
	Applied int // cancelled or deleted (delete: roots)
	Removed duroxide.DeleteInstanceResult
	Skipped []bulkSkip
	Failed  []bulkSkip
	Error   string
}

// finished reports whether status is terminal (nothing left to cancel).
func finished(status string) bool {
	return status == duroxide.StatusCompleted || status == duroxide.StatusFailed
}

// bulkFilter reads and checks the filter of a bulk request (query or
// form) and refuses an empty one.
func (h *Handler) bulkFilter(w http.ResponseWriter, r *http.Request, v url.Values) (listFilter, bool) {
	f := listFilter{Status: v.Get("status"), Name: strings.TrimSpace(v.Get("name")), Prefix: v.Get("prefix"),
		After: v.Get("after"), Before: v.Get("before")}
	if errs := h.checkFilter(&f); len(errs) > 0 {
		h.fail(w, r, http.StatusBadRequest, strings.Join(errs, "; "))
		return f, false
	}
	if f.Status == "" && f.Name == "" && f.Prefix == "" && f.after == 0 && f.before == 0 {
		h.fail(w, r, http.StatusBadRequest, "a bulk action needs a filter (status, name, id prefix or creation time)")
		return f, false
	}
	return f, true
}

// bulkAllowed checks the action is a bulk one, then the single actions'
// gates.
func (h *Handler) bulkAllowed(w http.ResponseWriter, r *http.Request) (string, actionInfo, bool) {
	info, ok := bulkTitles[r.PathValue("action")]
	if !ok {
		h.fail(w, r, http.StatusNotFound, "no such bulk action (cancel or delete)")
		return "", info, false
	}
	name, _, ok := h.allowed(w, r)
	return name, info, ok
}

// matching returns the instances f matches, newest first, at most maxBulk,
// and whether more match. With a duroxide.InstancePager it reads pages of
// the filter (one request each on cdb); otherwise it lists the ids and
// reads their metadata until maxBulk+1 match.
func (h *Handler) matching(ctx context.Context, f *listFilter) ([]duroxide.InstanceSummary, bool, error) {
	var out []duroxide.InstanceSummary
	if pager, ok := h.admin.(duroxide.InstancePager); ok {
		cont := ""
		for {
			page, err := pager.ListInstancesPage(ctx, duroxide.InstancePageQuery{
				Status: f.Status, NameContains: f.Name, IDPrefix: f.Prefix, CreatedAfter: f.after, CreatedBefore: f.before,
				PageSize: min(maxBulk+1-len(out), duroxide.MaxInstancePageSize), Continuation: cont, Order: duroxide.OrderNewestFirst,
			})
			if err != nil {
				return nil, false, fmt.Errorf("list instances: %w", err)
			}
			out = append(out, page.Instances...)
			if cont = page.Continuation; cont == "" || len(out) > maxBulk {
				break
			}
		}
	} else {
		ids, err := h.listIDs(ctx, f.Status)
		if err != nil {
			return nil, false, err
		}
		for start := 0; start < len(ids) && len(out) <= maxBulk; start += h.opts.PageSize {
			chunk := ids[start:min(start+h.opts.PageSize, len(ids))]
			for i, info := range h.infos(ctx, chunk) {
				if info != nil && strings.HasPrefix(chunk[i], f.Prefix) && f.match(*info) {
					out = append(out, info.Summary())
				}
			}
		}
	}
	if len(out) > maxBulk {
		return out[:maxBulk], true, nil
	}
	return out, false, nil
}

// bulkFill matches d.Filter and counts what the action applies to.
func (h *Handler) bulkFill(ctx context.Context, d *bulkData) ([]duroxide.InstanceSummary, error) {
	matched, more, err := h.matching(ctx, &d.Filter)
	if err != nil {
		return nil, err
	}
	d.Matched, d.More = len(matched), more
	for _, s := range matched {
		switch {
		case d.Action == "cancel":
			if !finished(s.Status) {
				d.Act++
			}
		case s.ParentInstanceID != nil:
			d.Nested++
		default:
			d.Act++
			if !finished(s.Status) {
				d.Running++
			}
		}
	}
	return matched, nil
}

// newBulkData is the page of action over f.
func (h *Handler) newBulkData(name string, info actionInfo, f listFilter) bulkData {
	d := bulkData{Action: name, Info: info, Filter: f, Fields: map[string]string{}}
	v := f.values()
	for k, ms := range map[string]uint64{"after": f.after, "before": f.before} {
		if ms != 0 {
			v.Set(k, time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano))
		}
	}
	for k := range v {
		d.Fields[k] = v.Get(k)
	}
	d.Back = h.opts.Prefix + "/?" + v.Encode()
	return d
}

// bulkPage is a bulk action's confirmation (the filter in the query).
func (h *Handler) bulkPage(w http.ResponseWriter, r *http.Request) {
	name, info, ok := h.bulkAllowed(w, r)
	if !ok {
		return
	}
	f, ok := h.bulkFilter(w, r, r.URL.Query())
	if !ok {
		return
	}
	d := h.newBulkData(name, info, f)
	if _, err := h.bulkFill(r.Context(), &d); err != nil {
		h.fail(w, r, http.StatusBadGateway, err.Error())
		return
	}
	h.render(w, r, http.StatusOK, "bulk", info.Title, d)
}

// bulkAct runs a confirmed bulk action over the instances its filter
// matches now.
func (h *Handler) bulkAct(w http.ResponseWriter, r *http.Request) {
	name, info, ok := h.bulkAllowed(w, r)
	if !ok {
		return
	}
	if !h.formChecked(w, r) {
		return
	}
	f, ok := h.bulkFilter(w, r, r.PostForm)
	if !ok {
		return
	}
	d := h.newBulkData(name, info, f)
	d.Reason, d.Force, d.Done = r.PostFormValue("reason"), r.PostFormValue("force") == "on", true
	ctx := r.Context()
	matched, err := h.bulkFill(ctx, &d)
	if err != nil {
		h.fail(w, r, http.StatusBadGateway, err.Error())
		return
	}
	for _, s := range matched {
		id := s.InstanceID
		switch {
		case name == "cancel" && finished(s.Status):
			d.Skipped = append(d.Skipped, bulkSkip{id, "already " + s.Status})
		case name == "cancel":
			if err := h.client.CancelInstance(ctx, id, d.Reason); err != nil {
				d.Failed = append(d.Failed, bulkSkip{id, err.Error()})
				continue
			}
			d.Applied++
		case s.ParentInstanceID != nil:
			d.Skipped = append(d.Skipped, bulkSkip{id, "a sub-orchestration: it goes with its root " + displayID(*s.ParentInstanceID) + "'s tree"})
		case !finished(s.Status) && !d.Force:
			d.Skipped = append(d.Skipped, bulkSkip{id, s.Status + ": deleted only with force"})
		default:
			res, err := h.admin.DeleteInstance(ctx, id, d.Force)
			if err != nil {
				d.Failed = append(d.Failed, bulkSkip{id, err.Error()})
				continue
			}
			d.Applied++
			d.Removed.Add(res)
		}
	}
	status := http.StatusOK
	if len(d.Failed) > 0 {
		status = http.StatusUnprocessableEntity
	}
	h.render(w, r, status, "bulk", info.Title, d)
}
