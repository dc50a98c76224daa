package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The instance list. An admin that implements duroxide.InstancePager
// (cdb and the in-memory provider do) is asked for one page of the
// filtered instances with their metadata, and its continuation is the
// next page's link (cont=): a page costs what ListInstancesPage costs
// (one request on cdb), in the provider's continuation order. Any other
// admin has only ListInstances and ListInstancesByStatus, which return
// every id (newest first on cdb, one cross-partition query): the page
// takes that id list, filters it by id prefix, starts after the cursor
// (the last id the previous page examined) and reads GetInstanceInfo for
// one page of ids at a time, concurrently, until a page of matches is
// found or scanLimit ids were examined; it never reads the metadata of
// every instance.

// statuses are the status filter's choices.
var statuses = []string{"", duroxide.StatusPending, "Running", "Completed", "Failed", "ContinuedAsNew"}

// infoConcurrency bounds the concurrent GetInstanceInfo reads of one page.
const infoConcurrency = 8

// listFilter is the list page's query.
type listFilter struct {
	Status, Name, Prefix string
	After, Before        string // as typed
	after, before        uint64 // created after/before, ms; 0 = unset
	Cursor               string // the last id the previous page examined
	CursorPos            int    // its position then (when it is gone)
	Cont                 string // the pager's continuation of this page ("" = the first)
	PageNo               int    // this page's number with a pager, from 1
	Order                string // "newest" (the default), "oldest" or "store": the pager's order
}

// orders are the sort choices of a pager's list: value and label.
var orders = []struct{ Value, Label string }{
	{"newest", "newest first"}, {"oldest", "oldest first"}, {"store", "store order (cheapest)"},
}

// pagerOrder is the duroxide.InstanceOrder of the list's order choice.
func pagerOrder(o string) duroxide.InstanceOrder {
	switch o {
	case "oldest":
		return duroxide.OrderOldestFirst
	case "store":
		return duroxide.OrderStore
	}
	return duroxide.OrderNewestFirst
}

// statusTab is one status tab of the list, with its count when known.
type statusTab struct {
	Status  string // "" for every status
	Label   string
	Count   int
	Counted bool
	Current bool
	URL     string
}

// listRow is one instance on the page.
type listRow struct {
	Info    duroxide.InstanceSummary
	Created string // relative age
	Updated string
	Ended   string // relative age of CompletedAt, "" while running
	Took    string // CompletedAt - CreatedAt
}

// listData is the list page.
type listData struct {
	Filter     listFilter
	Statuses   []string
	Rows       []listRow
	Next       string         // URL of the next page, "" on the last
	Scanned    int            // ids examined for this page
	Total      int            // ids listed (after the status and prefix filters)
	Start      int            // position of the first id examined
	Incomplete bool           // scanLimit reached before a full page of matches
	counts     map[string]int // the pager's StatusCounts
	Paged      bool           // the page came from a duroxide.InstancePager
	Orders     []struct{ Value, Label string }
	Tabs       []statusTab
	Counted    bool // the tabs carry counts
	Errors     []string
	// Bulk are the bulk cancel and delete links of the filter
	// (read-write handlers only; nil without a filter).
	Bulk []string
}

// parseTime reads a filter time: RFC 3339, a date (2026-01-31, UTC), or a
// Go duration meaning that long ago ("24h"). "" is 0.
func parseTime(s string, now time.Time) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return uint64(t.UnixMilli()), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return uint64(t.UnixMilli()), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return uint64(now.Add(-d).UnixMilli()), nil
	}
	return 0, fmt.Errorf("%q is not a time: use 2026-01-31, 2026-01-31T08:00:00Z or a duration such as 24h", s)
}

// instancesPage is the list. Requests on cdb: one ListInstancesPage (1
// cross-partition query request, more when the service answers with short
// pages).
func (h *Handler) instancesPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := listFilter{Status: q.Get("status"), Name: strings.TrimSpace(q.Get("name")), Prefix: q.Get("prefix"),
		After: q.Get("after"), Before: q.Get("before"), Cursor: q.Get("cursor"), Cont: q.Get("cont"), Order: q.Get("order")}
	if !slices.ContainsFunc(orders, func(o struct{ Value, Label string }) bool { return o.Value == f.Order }) {
		f.Order = "newest"
	}
	f.CursorPos, _ = strconv.Atoi(q.Get("pos"))
	f.PageNo, _ = strconv.Atoi(q.Get("page"))
	f.PageNo = max(f.PageNo, 1)
	d := listData{Filter: f, Statuses: statuses, Orders: orders}
	d.Errors = h.checkFilter(&d.Filter)
	if h.opts.ReadWrite {
		if v := d.Filter.values(); len(v) > 0 {
			d.Bulk = []string{h.opts.Prefix + "/bulk/cancel?" + v.Encode(), h.opts.Prefix + "/bulk/delete?" + v.Encode()}
		}
	}
	if len(d.Errors) == 0 {
		fill := h.fillList
		if pager, ok := h.admin.(duroxide.InstancePager); ok {
			fill = func(ctx context.Context, d *listData) error { return h.fillPage(ctx, pager, d) }
		}
		if err := fill(r.Context(), &d); err != nil {
			d.Errors = append(d.Errors, err.Error())
		}
	}
	d.Tabs = h.tabs(&d)
	h.render(w, r, http.StatusOK, "instances", "Instances", d)
}

// checkFilter reads f's times (after, before) and checks its status; it
// returns what is wrong, with an unknown status cleared.
func (h *Handler) checkFilter(f *listFilter) []string {
	var errs []string
	var err error
	now := h.opts.Now()
	if f.after, err = parseTime(f.After, now); err != nil {
		errs = append(errs, "created after: "+err.Error())
	}
	if f.before, err = parseTime(f.Before, now); err != nil {
		errs = append(errs, "created before: "+err.Error())
	}
	if !slices.Contains(statuses, f.Status) {
		errs = append(errs, fmt.Sprintf("unknown status %q", f.Status))
		f.Status = ""
	}
	return errs
}

// tabs are the status tabs of the list: every status, then each status,
// with the counts the page brought (duroxide.InstancePage.StatusCounts).
func (h *Handler) tabs(d *listData) []statusTab {
	var counts map[string]int
	if d.counts != nil {
		counts, d.Counted = d.counts, true
	}
	out := make([]statusTab, 0, len(statuses))
	for _, st := range statuses {
		t := statusTab{Status: st, Label: st, Current: st == d.Filter.Status, Counted: counts != nil}
		if st == "" {
			t.Label = "All"
			for _, n := range counts {
				t.Count += n
			}
		} else {
			t.Count = counts[st]
		}
		f := d.Filter
		f.Status = st
		v := f.values()
		t.URL = h.opts.Prefix + "/"
		if len(v) > 0 {
			t.URL += "?" + v.Encode()
		}
		out = append(out, t)
	}
	return out
}

// listIDs returns the ids with status, newest first ("": the Pending ones,
// when the provider lists them, then every other).
func (h *Handler) listIDs(ctx context.Context, status string) ([]string, error) {
	if status != "" {
		ids, err := h.admin.ListInstancesByStatus(ctx, status)
		if err != nil {
			return nil, fmt.Errorf("list the %s instances: %w", status, err)
		}
		return ids, nil
	}
	// Best effort: a provider that keeps no Pending instances may refuse
	// the status; its list is then ListInstances alone.
	pending, _ := h.admin.ListInstancesByStatus(ctx, duroxide.StatusPending)
	ids, err := h.admin.ListInstances(ctx)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	if len(pending) == 0 {
		return ids, nil
	}
	seen := make(map[string]bool, len(pending))
	for _, id := range pending {
		seen[id] = true
	}
	out := pending
	for _, id := range ids {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// fillList lists, filters and reads one page into d.
func (h *Handler) fillList(ctx context.Context, d *listData) error {
	f := &d.Filter
	ids, err := h.listIDs(ctx, f.Status)
	if err != nil {
		return err
	}
	if f.Prefix != "" {
		kept := ids[:0:0]
		for _, id := range ids {
			if strings.HasPrefix(id, f.Prefix) {
				kept = append(kept, id)
			}
		}
		ids = kept
	}
	d.Total = len(ids)
	start := 0
	if f.Cursor != "" {
		if i := slices.Index(ids, f.Cursor); i >= 0 {
			start = i + 1
		} else {
			start = min(max(f.CursorPos, 0), len(ids))
		}
	}
	d.Start = start
	size := h.opts.PageSize
	scanLimit := 10 * size
	filtered := f.Name != "" || f.after != 0 || f.before != 0
	pos := start
	for pos < len(ids) && len(d.Rows) < size && pos-start < scanLimit {
		chunk := ids[pos:min(pos+size, len(ids))]
		if !filtered {
			chunk = chunk[:min(len(chunk), size-len(d.Rows))]
		}
		infos := h.infos(ctx, chunk)
		for _, info := range infos {
			pos++
			if info == nil || !f.match(*info) {
				continue
			}
			d.Rows = append(d.Rows, h.row(info.Summary()))
			if len(d.Rows) == size {
				break // the rest of the chunk is examined by the next page
			}
		}
	}
	d.Scanned = pos - start
	d.Incomplete = filtered && len(d.Rows) < size && pos < len(ids)
	if pos < len(ids) && pos > start {
		v := f.values()
		v.Set("cursor", ids[pos-1])
		v.Set("pos", strconv.Itoa(pos))
		d.Next = h.opts.Prefix + "/?" + v.Encode()
	}
	return nil
}

// match reports whether info passes the name and creation-time filters
// (the name: case-insensitive substring).
func (f *listFilter) match(info duroxide.InstanceInfo) bool {
	if f.Name != "" && !strings.Contains(strings.ToLower(info.OrchestrationName), strings.ToLower(f.Name)) {
		return false
	}
	if f.after != 0 && info.CreatedAt < f.after {
		return false
	}
	if f.before != 0 && info.CreatedAt >= f.before {
		return false
	}
	return true
}

// infos reads GetInstanceInfo of ids, infoConcurrency at a time; an
// instance that cannot be read (deleted since it was listed) is nil.
func (h *Handler) infos(ctx context.Context, ids []string) []*duroxide.InstanceInfo {
	out := make([]*duroxide.InstanceInfo, len(ids))
	sem := make(chan struct{}, infoConcurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if info, err := h.admin.GetInstanceInfo(ctx, id); err == nil {
				out[i] = &info
			}
		}()
	}
	wg.Wait()
	return out
}

// fillPage reads one page of the filtered instances from pager into d.
func (h *Handler) fillPage(ctx context.Context, pager duroxide.InstancePager, d *listData) error {
	f := &d.Filter
	d.Paged = true
	page, err := pager.ListInstancesPage(ctx, duroxide.InstancePageQuery{
		Status: f.Status, NameContains: f.Name, IDPrefix: f.Prefix, CreatedAfter: f.after, CreatedBefore: f.before,
		PageSize: h.opts.PageSize, Continuation: f.Cont, Order: pagerOrder(f.Order),
	})
	if err != nil {
		return fmt.Errorf("list instances: %w", err)
	}
	d.counts = page.StatusCounts
	for _, s := range page.Instances {
		d.Rows = append(d.Rows, h.row(s))
	}
	if page.Continuation != "" {
		// The continuation belongs to these filters: a relative time
		// ("24h") goes on as the instant it stood for.
		v := f.values()
		for k, ms := range map[string]uint64{"after": f.after, "before": f.before} {
			if ms != 0 {
				v.Set(k, time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano))
			}
		}
		v.Set("cont", page.Continuation)
		v.Set("page", strconv.Itoa(f.PageNo+1))
		d.Next = h.opts.Prefix + "/?" + v.Encode()
	}
	return nil
}

// row is the list's row of s.
func (h *Handler) row(s duroxide.InstanceSummary) listRow {
	r := listRow{Info: s, Created: h.age(s.CreatedAt), Updated: h.age(s.UpdatedAt)}
	if s.CompletedAt != nil {
		r.Ended = h.age(*s.CompletedAt)
		if *s.CompletedAt >= s.CreatedAt {
			r.Took = formatDuration(time.Duration(*s.CompletedAt-s.CreatedAt) * time.Millisecond)
		}
	}
	return r
}

// values returns the filters as they were typed, as query parameters.
func (f *listFilter) values() url.Values {
	v := url.Values{}
	order := f.Order
	if order == "newest" {
		order = "" // the default
	}
	for k, s := range map[string]string{"status": f.Status, "name": f.Name, "prefix": f.Prefix, "after": f.After, "before": f.Before, "order": order} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}
