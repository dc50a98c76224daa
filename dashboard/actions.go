package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
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
	// Status is the instance's status when the page was made.
	Status string
	// Awaited (raise) are the event names the instance waits for now
	// (runtime.AwaitedExternalEvents); Warning says why the name typed is
	// not one of them, and Anyway confirms it.
	Awaited []string
	Warning string
	Anyway  bool
	// Removes (delete) are the instances a delete removes: the instance
	// and its sub-orchestrations, as far as they were walked (MoreRemoved
	// beyond), with the executions of the instance.
	Removes     []treeNode
	MoreRemoved bool
	Executions  int
}

// maxRemovedShown is how many instances a delete's confirmation lists.
const maxRemovedShown = 100

// target reads the instance an action is about and refuses, with the
// status to answer, what would do nothing: a missing instance (404); for
// raise and cancel a finished one (409: no turn will ever read the event
// or the cancellation).
func (h *Handler) target(ctx context.Context, action, id string) (duroxide.InstanceInfo, int, string) {
	if id == "" {
		return duroxide.InstanceInfo{}, http.StatusBadRequest, "the instance id is empty"
	}
	info, err := h.admin.GetInstanceInfo(ctx, id)
	if err != nil {
		if status, msg := h.lookupFailure(ctx, id, err); status != 0 {
			return info, status, msg
		}
	}
	if action == "raise" || action == "cancel" {
		switch info.Status {
		case duroxide.StatusCompleted, duroxide.StatusFailed:
			what := "an event raised now would never be received"
			if action == "cancel" {
				what = "there is nothing left to cancel"
			}
			return info, http.StatusConflict, fmt.Sprintf("instance %s is %s: %s", displayID(id), info.Status, what)
		}
	}
	return info, 0, ""
}

// lookupFailure turns a failed read of instance id into the status and
// message to answer: 404 when it does not exist (or the store refuses
// the id for good: too long, say), 502 when the store failed.
func (h *Handler) lookupFailure(ctx context.Context, id string, err error) (int, string) {
	if !duroxide.IsRetryable(err) {
		if execs, lerr := h.admin.ListExecutions(ctx, id); lerr != nil || len(execs) == 0 {
			return http.StatusNotFound, fmt.Sprintf("instance %s not found (%v)", displayID(id), err)
		}
	}
	return http.StatusBadGateway, fmt.Sprintf("read instance %s: %v", displayID(id), err)
}

// awaited returns the event names instance id's current execution waits
// for.
func (h *Handler) awaited(ctx context.Context, id string, info duroxide.InstanceInfo) []string {
	if info.CurrentExecutionID == 0 {
		return nil
	}
	events, err := h.admin.ReadHistoryWithExecutionID(ctx, id, info.CurrentExecutionID)
	if err != nil {
		return nil
	}
	var names []string
	for _, a := range runtime.AwaitedExternalEvents(events) {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return names
}

// removes fills d with what deleting d.ID removes: its tree, from it down
// (ListChildren each, at most maxRemovedShown instances), and its
// executions.
func (h *Handler) removes(ctx context.Context, d *confirmData) {
	stack := []treeNode{{ID: d.ID}}
	var ids []string
	for len(stack) > 0 && len(d.Removes) < maxRemovedShown {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n.Indent = min(n.Depth, 10)
		d.Removes = append(d.Removes, n)
		ids = append(ids, n.ID)
		children, err := h.admin.ListChildren(ctx, n.ID)
		if err != nil {
			continue
		}
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, treeNode{ID: children[i], Depth: n.Depth + 1})
		}
	}
	d.MoreRemoved = len(stack) > 0
	for i, info := range h.infos(ctx, ids) {
		d.Removes[i].Info = info
	}
	if execs, err := h.admin.ListExecutions(ctx, d.ID); err == nil {
		d.Executions = len(execs)
	}
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
	ctx := r.Context()
	inst, status, msg := h.target(ctx, name, d.ID)
	if status != 0 {
		h.fail(w, r, status, msg)
		return
	}
	d.Status = inst.Status
	switch name {
	case "raise":
		d.Awaited = h.awaited(ctx, d.ID, inst)
		if d.Name == "" && len(d.Awaited) == 1 {
			d.Name = d.Awaited[0]
		}
	case "delete":
		h.removes(ctx, &d)
	}
	h.render(w, r, http.StatusOK, "confirm", info.Title, d)
}

// formChecked parses an action's posted form and checks its origin and
// token (checkCSRF); it writes the refusal and returns false.
func (h *Handler) formChecked(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "unreadable form: "+err.Error())
		return false
	}
	if err := h.checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, err.Error())
		return false
	}
	return true
}

// act runs a confirmed action.
func (h *Handler) act(w http.ResponseWriter, r *http.Request) {
	name, info, ok := h.allowed(w, r)
	if !ok {
		return
	}
	if !h.formChecked(w, r) {
		return
	}
	if !r.PostForm.Has("id") {
		h.fail(w, r, http.StatusBadRequest, "no instance id given")
		return
	}
	d := confirmData{Action: name, Info: info, ID: r.PostFormValue("id"), Name: r.PostFormValue("name"),
		Data: r.PostFormValue("data"), Reason: r.PostFormValue("reason"), Force: r.PostFormValue("force") == "on",
		Keep: r.PostFormValue("keep"), Anyway: r.PostFormValue("anyway") == "on"}
	ctx := r.Context()
	inst, status, msg := h.target(ctx, name, d.ID)
	if status != 0 {
		h.fail(w, r, status, msg)
		return
	}
	d.Status = inst.Status
	var err error
	switch name {
	case "raise":
		if strings.TrimSpace(d.Name) == "" {
			err = errors.New("the event needs a name")
			break
		}
		if d.Awaited = h.awaited(ctx, d.ID, inst); !slices.Contains(d.Awaited, d.Name) && !d.Anyway {
			d.Warning = fmt.Sprintf("Instance %s does not wait for an event %s now", displayID(d.ID), displayID(d.Name))
			if len(d.Awaited) == 0 {
				d.Warning += " (it waits for no event)"
			}
			d.Warning += ": an event no wait is pending for is dropped (" + runtime.DroppedNoWaitPending + "). Check the spelling, or raise it anyway."
			h.render(w, r, http.StatusConflict, "confirm", info.Title, d)
			return
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
	status = http.StatusOK
	if err != nil {
		d.Error = err.Error()
		status = http.StatusUnprocessableEntity
	}
	h.render(w, r, status, "confirm", info.Title, d)
}
