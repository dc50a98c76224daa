package dashboard

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// maxPendingShown is how many Pending instances the queues page reads.
const maxPendingShown = 50

// queuesData is the queues page.
type queuesData struct {
	// Stats is one row per queue when the admin is a
	// duroxide.QueueStatsReporter; Depths otherwise.
	Stats        []queueRow
	Depths       *duroxide.QueueDepths
	Pending      []listRow
	PendingTotal int
	Metrics      *duroxide.SystemMetrics
	WantMetrics  bool
	// Confirm: the totals were asked for without confirmation, which the
	// page asks for first (their cost is a read of every document).
	Confirm bool
	// Counted is how long ago the totals shown were counted (they are
	// cached for metricsTTL); Cost what that count cost on cdb ("" when
	// unknown); LastCost the cost of the last count, shown before one.
	Counted, Cost, LastCost string
	// Recount: a new count was asked for though one is cached.
	Recount bool
	// AllInstances is the instances counted, the Pending ones included.
	AllInstances uint64
	Errors       []string
}

// metricsTTL is how long the queues page reuses a count of the totals.
const metricsTTL = 5 * time.Minute

// metricsCache is the last count of the totals (GetSystemMetrics) and
// what it cost.
type metricsCache struct {
	mu   sync.Mutex
	m    *duroxide.SystemMetrics
	at   time.Time
	cost string
}

// queueRow is one queue's line of the queues page.
type queueRow struct {
	Name   string
	Counts duroxide.QueueCounts
	// OldestWait is the oldest ready message's wait ("" when none).
	OldestWait string
}

// queueRowOf is the line of queue name with counts c.
func queueRowOf(name string, c duroxide.QueueCounts) queueRow {
	r := queueRow{Name: name, Counts: c}
	if c.Ready > 0 {
		r.OldestWait = formatDuration(time.Duration(c.OldestReadyAgeMs) * time.Millisecond)
	}
	return r
}

// queuesPage shows per queue the messages ready, locked and delayed and the
// oldest ready message's wait when the admin is a
// duroxide.QueueStatsReporter (cdb and the in-memory provider; 1 request
// on cdb), GetQueueDepths (the unlocked messages) otherwise, the
// Pending instances (starts stored that no runtime has run, with why), and,
// on request (?metrics=1: a query over every instance, execution and event
// document on cdb), GetSystemMetrics.
func (h *Handler) queuesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	d := queuesData{WantMetrics: q.Get("metrics") == "1"}
	if reporter, ok := h.admin.(duroxide.QueueStatsReporter); ok {
		if qs, err := reporter.GetQueueStats(ctx); err != nil {
			d.Errors = append(d.Errors, "queue stats: "+err.Error())
		} else {
			d.Stats = []queueRow{queueRowOf("Orchestrator", qs.Orchestrator), queueRowOf("Worker", qs.Worker)}
		}
	} else if qd, err := h.admin.GetQueueDepths(ctx); err != nil {
		d.Errors = append(d.Errors, "queue depths: "+err.Error())
	} else {
		d.Depths = &qd
	}
	if ids, err := h.admin.ListInstancesByStatus(ctx, duroxide.StatusPending); err != nil {
		d.Errors = append(d.Errors, "pending instances: "+err.Error())
	} else {
		d.PendingTotal = len(ids)
		for _, info := range h.infos(ctx, ids[:min(len(ids), maxPendingShown)]) {
			if info != nil {
				d.Pending = append(d.Pending, listRow{Info: info.Summary(), Created: h.age(info.CreatedAt)})
			}
		}
	}
	h.fillMetrics(r, &d, q.Get("confirm") == "1")
	if d.Metrics != nil {
		d.AllInstances = d.Metrics.TotalInstances + uint64(d.PendingTotal)
	}
	h.render(w, r, http.StatusOK, "queues", "Queues", d)
}

// fillMetrics fills the totals: the cached count when it is younger than
// metricsTTL; else, when asked for (?metrics=1) and confirmed (&confirm=1,
// or an authenticated request to a read-write handler), a new count,
// whose cost on cdb (the provider's Usage before and after) is shown.
func (h *Handler) fillMetrics(r *http.Request, d *queuesData, confirmed bool) {
	c := &h.metrics
	c.mu.Lock()
	defer c.mu.Unlock()
	now := h.opts.Now()
	d.LastCost = c.cost
	d.Recount = d.WantMetrics && r.URL.Query().Get("recount") == "1"
	if fresh := c.m != nil && now.Sub(c.at) < metricsTTL; fresh && !d.Recount {
		d.Metrics, d.Counted, d.Cost = c.m, formatDuration(now.Sub(c.at))+" ago", c.cost
		return
	}
	if !d.WantMetrics {
		return
	}
	if !confirmed && !(h.opts.ReadWrite && h.authenticated(r) == nil) {
		d.Confirm = true
		return
	}
	var before cdb.Usage
	if h.usage != nil {
		before = h.usage.Usage()
	}
	m, err := h.admin.GetSystemMetrics(r.Context())
	if err != nil {
		d.Errors = append(d.Errors, "system metrics: "+err.Error())
		return
	}
	c.m, c.at, c.cost = &m, now, ""
	if h.usage != nil {
		after := h.usage.Usage()
		c.cost = fmt.Sprintf("about %d requests and %s RU", after.Requests-before.Requests, readableNumber(after.RequestCharge-before.RequestCharge))
	}
	d.Metrics, d.Counted, d.Cost = c.m, "just now", c.cost
}
