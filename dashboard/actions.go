package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The actions: raise an event, cancel, delete, prune. Each is a GET of a
// confirmation page (a form) and a POST of that form. A POST is refused
// with 403 when the handler is read-only, when the request is not
// authenticated (Options.Authorize or BearerToken), when it is cross-origin
// (net/http's CrossOriginProtection) or when the form lacks the handler's
// token (the hidden csrf field).

// actionInfo describes one action's confirmation page.
type actionInfo struct {
	Title    string
	Verb     string
	Danger   bool
	NeedsRun bool // uses the Client (raise, cancel)
}

var actions = map[string]actionInfo{
	"raise":  {Title: "Raise an event", Verb: "Raise the event", NeedsRun: true},
	"cancel": {Title: "Cancel the instance", Verb: "Cancel it", Danger: true, NeedsRun: true},
	"delete": {Title: "Delete the instance", Verb: "Delete it", Danger: true},
	"prune":  {Title: "Prune old executions", Verb: "Prune them", Danger: true},
}

// confirmData is a confirmation page and its result.
type confirmData struct {
	Action string
	Info   actionInfo
	ID     string
	Name   string // raise: the event name
	Data   string // raise: the payload
	Reason string // cancel
	Force  bool   // delete
	Keep   string // prune: executions kept
	Result string // after the POST
	Error  string
}

// allowed checks what every action request must pass before its page or
// effect: the action exists, the handler is read-write, the request is
// authenticated. It writes the refusal and returns false.
func (h *Handler) allowed(w http.ResponseWriter, r *http.Request) (string, actionInfo, bool) {
	name := r.PathValue("action")
	info, ok := actions[name]
	if !ok {
		h.fail(w, r, http.StatusNotFound, "no such action")
		return "", info, false
	}
	if !h.opts.ReadWrite {
		h.fail(w, r, http.StatusForbidden, "this dashboard is read-only")
		return "", info, false
	}
	if left, blocked := h.failed.blocked(r); blocked {
		h.tooMany(w, r, left)
		return "", info, false
	}
	if err := h.authenticated(r); err != nil {
		msg := "not authorized: " + err.Error()
		if h.opts.Authorize == nil {
			msg += " (sign in with the dashboard's token first)"
		}
		h.fail(w, r, http.StatusForbidden, msg)
		return "", info, false
	}
	if info.NeedsRun && h.client == nil {
		h.fail(w, r, http.StatusNotImplemented, "this action needs Options.Client")
		return "", info, false
	}
	return name, info, true
}

// confirmPage is an action's confirmation form (?id=).
func (h *Handler) confirmPage(w http.ResponseWriter, r *http.Request) {
	name, info, ok := h.allowed(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if !q.Has("id") {
		h.fail(w, r, http.StatusBadRequest, "no instance id given (?id=)")
		return
	}
	d := confirmData{Action: name, Info: info, ID: q.Get("id"), Name: q.Get("name"), Keep: "1"}
	h.render(w, r, http.StatusOK, "confirm", info.Title, d)
}

// act runs a confirmed action.
func (h *Handler) act(w http.ResponseWriter, r *http.Request) {
	name, info, ok := h.allowed(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "unreadable form: "+err.Error())
		return
	}
	if err := h.checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	if !r.PostForm.Has("id") {
		h.fail(w, r, http.StatusBadRequest, "no instance id given")
		return
	}
	d := confirmData{Action: name, Info: info, ID: r.PostFormValue("id"), Name: r.PostFormValue("name"),
		Data: r.PostFormValue("data"), Reason: r.PostFormValue("reason"), Force: r.PostFormValue("force") == "on",
		Keep: r.PostFormValue("keep")}
	ctx := r.Context()
	var err error
	switch name {
	case "raise":
		if strings.TrimSpace(d.Name) == "" {
			err = errors.New("the event needs a name")
			break
		}
		if err = h.client.RaiseEvent(ctx, d.ID, d.Name, d.Data); err == nil {
			d.Result = fmt.Sprintf("Event %s raised: the instance receives it on its next turn.", displayID(d.Name))
		}
	case "cancel":
		if err = h.client.CancelInstance(ctx, d.ID, d.Reason); err == nil {
			d.Result = "Cancellation requested: the instance fails with \"canceled\" on its next turn."
		}
	case "delete":
		var res duroxide.DeleteInstanceResult
		if res, err = h.admin.DeleteInstance(ctx, d.ID, d.Force); err == nil {
			d.Result = fmt.Sprintf("Deleted %d instance(s), %d execution(s), %d event(s), %d queue message(s).",
				res.InstancesDeleted, res.ExecutionsDeleted, res.EventsDeleted, res.QueueMessagesDeleted)
		}
	case "prune":
		var keep uint64
		if keep, err = strconv.ParseUint(d.Keep, 10, 32); err != nil || keep == 0 {
			err = fmt.Errorf("keep must be a positive number of executions, not %q", d.Keep)
			break
		}
		k := uint32(keep)
		var res duroxide.PruneResult
		if res, err = h.admin.PruneExecutions(ctx, d.ID, duroxide.PruneOptions{KeepLast: &k}); err == nil {
			d.Result = fmt.Sprintf("Pruned %d execution(s), %d event(s).", res.ExecutionsDeleted, res.EventsDeleted)
		}
	}
	status := http.StatusOK
	if err != nil {
		d.Error = err.Error()
		status = http.StatusUnprocessableEntity
	}
	h.render(w, r, status, "confirm", info.Title, d)
}
