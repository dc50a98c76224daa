package dashboard

import (
	"net/http"
	"time"

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
	Errors       []string
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
	d := queuesData{WantMetrics: r.URL.Query().Get("metrics") == "1"}
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
	if d.WantMetrics {
		if m, err := h.admin.GetSystemMetrics(ctx); err != nil {
			d.Errors = append(d.Errors, "system metrics: "+err.Error())
		} else {
			d.Metrics = &m
		}
	}
	h.render(w, r, http.StatusOK, "queues", "Queues", d)
}
