package dashboard

import (
	"net/http"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// maxPendingShown is how many Pending instances the queues page reads.
const maxPendingShown = 50

// queuesData is the queues page.
type queuesData struct {
	Depths       *duroxide.QueueDepths
	Pending      []listRow
	PendingTotal int
	Metrics      *duroxide.SystemMetrics
	WantMetrics  bool
	Errors       []string
}

// queuesPage shows GetQueueDepths (the unlocked messages per queue), the
// Pending instances (starts stored that no runtime has run, with why), and,
// on request (?metrics=1: a query over every instance, execution and event
// document on cdb), GetSystemMetrics.
func (h *Handler) queuesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d := queuesData{WantMetrics: r.URL.Query().Get("metrics") == "1"}
	if qd, err := h.admin.GetQueueDepths(ctx); err != nil {
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
