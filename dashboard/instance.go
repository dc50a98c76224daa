package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// maxExecutionsShown is how many executions (the newest) the instance page
// reads the metadata of; maxChildrenShown how many children it reads the
// status of; maxTreeNodes how many instances the tree page walks.
const (
	maxExecutionsShown = 10
	maxChildrenShown   = 50
	maxTreeNodes       = 200
	maxAncestors       = 20
)

// eventRow is one history event as the timeline shows it.
type eventRow struct {
	ID       uint64
	Source   *uint64
	Kind     string
	Class    string // event category: lifecycle, activity, timer, external, sub, status, kv
	Name     string // the activity, orchestration, event, queue, key name
	Instance string // a sub-orchestration's or chained start's instance id
	Value    string // input, result, data or reason
	Error    *duroxide.ErrorDetails
	Time     string // UTC
	Offset   string // since the execution's first event
	Duration string // for a completion: since the event it completes
	// SourceHref links the event it completes (SourceID), on its own
	// history page.
	SourceHref string
	SourceID   uint64
	// Dropped says why an ExternalEvent never reached the orchestration
	// (runtime.DroppedExternalEvents: "dropped: no wait was pending");
	// empty otherwise.
	Dropped string
}

// kvPair is one KV entry.
type kvPair struct{ Key, Value string }

// childRow is one direct sub-orchestration.
type childRow struct {
	ID   string
	Info *duroxide.InstanceInfo
}

// instanceData is the instance page.
type instanceData struct {
	ID           string
	Info         duroxide.InstanceInfo
	Created      string
	Updated      string
	Custom       *duroxide.CustomStatus
	Input        *string
	Output       *string // Completed: the output; ContinuedAsNew: the next input
	Failure      *duroxide.ErrorDetails
	FailureText  string
	Executions   []execRow
	MoreExecs    int
	Exec         uint64 // the execution shown
	Kind         string // the event kind the history is filtered by ("" for all)
	Kinds        []string
	Events       []eventRow
	Groups       []eventGroup // Events, runs of like events summed up
	EventTotal   int
	HPage, Pages int
	Children     []childRow
	MoreChildren int
	KV           []kvPair
	KVError      string
	// Pending is what the current execution waits for (pending.go);
	// ShowPending is true when it is shown (the execution runs).
	Pending     pendingWork
	ShowPending bool
	// FailedAt names what failed, for a Failed execution: the activity or
	// sub-orchestration whose failure ended it, and links its event.
	FailedAt  *failureSite
	Errors    []string
	CanAct    bool
	CanSignal bool // raise and cancel need a Client
}

// failureSite is where a failed execution's error came from.
type failureSite struct {
	Kind    string // "activity" or "sub-orchestration"
	Name    string
	EventID uint64 // the ActivityFailed or SubOrchestrationFailed event
	Href    string
}

// execRow is one execution in the executions table.
type execRow struct {
	Info    duroxide.ExecutionInfo
	Started string
	Took    string
}

// instancePage shows one instance (?id=, &exec=N, &hpage=N).
func (h *Handler) instancePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	if !q.Has("id") || id == "" {
		h.fail(w, r, http.StatusBadRequest, "no instance id given (?id=)")
		return
	}
	ctx := r.Context()
	d := instanceData{ID: id, CanAct: h.opts.ReadWrite, CanSignal: h.opts.ReadWrite && h.client != nil}
	info, custom, err := h.instanceInfo(ctx, id)
	if err != nil {
		status, msg := h.lookupFailure(ctx, id, err)
		h.fail(w, r, status, msg)
		return
	}
	d.Info, d.Custom = info, custom
	if info.Status == duroxide.StatusCompleted || info.Status == duroxide.StatusFailed {
		d.CanSignal = false // nothing would read an event or a cancellation
	}
	d.Created, d.Updated = h.age(info.CreatedAt), h.age(info.UpdatedAt)
	d.Exec = info.CurrentExecutionID
	if e, err := strconv.ParseUint(q.Get("exec"), 10, 64); err == nil && e > 0 {
		d.Exec = e
	}
	d.HPage, _ = strconv.Atoi(q.Get("hpage"))
	d.Kinds = eventKinds
	if k := q.Get("kind"); slices.Contains(eventKinds, k) {
		d.Kind = k
	}
	// The history, the executions, the children and the KV store are
	// independent reads: they run concurrently, each with its own errors.
	var histErrs, execErrs, childErrs []string
	var wg sync.WaitGroup
	var shown *duroxide.ExecutionInfo
	if d.Exec > 0 {
		wg.Go(func() { shown, histErrs = h.fillHistory(ctx, &d) })
	}
	wg.Go(func() { execErrs = h.fillExecutions(ctx, &d) })
	var msgs []duroxide.InstanceMessage
	var msgErr error
	reader, hasMessages := h.admin.(duroxide.InstanceMessagesReader)
	if hasMessages && info.Status == duroxide.StatusRunning {
		wg.Go(func() { msgs, msgErr = reader.ListInstanceMessages(ctx, id) })
	}
	wg.Go(func() { childErrs = h.fillChildren(ctx, &d) })
	if h.kv != nil && info.Status != duroxide.StatusPending {
		wg.Go(func() {
			kv, err := h.kv.GetKVAllValues(ctx, id)
			if err != nil {
				d.KVError = err.Error()
			}
			for _, k := range slicesSortedKeys(kv) {
				d.KV = append(d.KV, kvPair{k, kv[k]})
			}
		})
	}
	wg.Wait()
	d.Errors = slices.Concat(histErrs, execErrs, childErrs)
	if shown != nil {
		h.addShownExecution(&d, *shown)
	}
	if d.ShowPending && info.Status == duroxide.StatusRunning {
		if msgErr != nil {
			d.Pending.MessagesError = msgErr.Error()
		}
		h.addMessages(&d.Pending, d.Exec, msgs)
	} else {
		d.ShowPending = false
	}
	if info.Status == "Completed" || info.Status == "ContinuedAsNew" {
		d.Output = info.Output
	}
	if info.Status == "Failed" && d.Failure == nil {
		d.FailureText = deref(info.Output)
	}
	h.render(w, r, http.StatusOK, "instance", "Instance "+displayID(id), d)
}

// instanceInfo reads the instance's metadata and, when the provider reads
// both at once (duroxide.InstanceStatusReader, one point read on cdb), its
// custom status; else the custom status through the provider's
// GetCustomStatus when Admin is a duroxide.Provider.
func (h *Handler) instanceInfo(ctx context.Context, id string) (duroxide.InstanceInfo, *duroxide.CustomStatus, error) {
	if sr, ok := h.admin.(duroxide.InstanceStatusReader); ok {
		return sr.GetInstanceStatus(ctx, id)
	}
	info, err := h.admin.GetInstanceInfo(ctx, id)
	if err != nil {
		return info, nil, err
	}
	if p, ok := h.admin.(duroxide.Provider); ok {
		cs, _ := p.GetCustomStatus(ctx, id, 0)
		return info, cs, nil
	}
	return info, nil, nil
}

// fillExecutions lists the executions and reads the metadata of the newest
// maxExecutionsShown but the one shown (fillHistory derives its metadata
// from its history, which it reads anyway: GetExecutionInfo would read it
// again).
func (h *Handler) fillExecutions(ctx context.Context, d *instanceData) []string {
	ids, err := h.admin.ListExecutions(ctx, d.ID)
	if err != nil {
		return []string{"executions: " + err.Error()}
	}
	slices.Reverse(ids)
	shown := ids[:min(len(ids), maxExecutionsShown)]
	if d.Exec != 0 && !slices.Contains(shown, d.Exec) && slices.Contains(ids, d.Exec) {
		shown = append(shown, d.Exec)
	}
	d.MoreExecs = len(ids) - len(shown)
	var errs []string
	for _, e := range shown {
		if e == d.Exec {
			d.Executions = append(d.Executions, execRow{Info: duroxide.ExecutionInfo{ExecutionID: e}})
			continue
		}
		ei, err := h.admin.GetExecutionInfo(ctx, d.ID, e)
		if err != nil {
			errs = append(errs, fmt.Sprintf("execution %d: %v", e, err))
			continue
		}
		d.Executions = append(d.Executions, h.execRow(ei))
	}
	return errs
}

// execRow is one row of the executions table.
func (h *Handler) execRow(ei duroxide.ExecutionInfo) execRow {
	row := execRow{Info: ei, Started: h.age(ei.StartedAt)}
	if ei.CompletedAt != nil && *ei.CompletedAt >= ei.StartedAt {
		row.Took = formatDuration(time.Duration(*ei.CompletedAt-ei.StartedAt) * time.Millisecond)
	}
	return row
}

// addShownExecution fills the row of the execution shown.
func (h *Handler) addShownExecution(d *instanceData, ei duroxide.ExecutionInfo) {
	for i := range d.Executions {
		if d.Executions[i].Info.ExecutionID == ei.ExecutionID {
			d.Executions[i] = h.execRow(ei)
		}
	}
}

// eventKinds are the kinds the history can be filtered by.
var eventKinds = []string{
	string(duroxide.EventTypeOrchestrationStarted),
	string(duroxide.EventTypeOrchestrationCompleted),
	string(duroxide.EventTypeOrchestrationFailed),
	string(duroxide.EventTypeActivityScheduled),
	string(duroxide.EventTypeActivityCompleted),
	string(duroxide.EventTypeActivityFailed),
	string(duroxide.EventTypeActivityCancelRequested),
	string(duroxide.EventTypeTimerCreated),
	string(duroxide.EventTypeTimerFired),
	string(duroxide.EventTypeExternalSubscribed),
	string(duroxide.EventTypeExternalEvent),
	string(duroxide.EventTypeOrchestrationChained),
	string(duroxide.EventTypeSubOrchestrationScheduled),
	string(duroxide.EventTypeSubOrchestrationCompleted),
	string(duroxide.EventTypeSubOrchestrationFailed),
	string(duroxide.EventTypeSubOrchestrationCancelRequested),
	string(duroxide.EventTypeOrchestrationContinuedAsNew),
	string(duroxide.EventTypeOrchestrationCancelRequested),
	string(duroxide.EventTypeExternalSubscribedCancelled),
	string(duroxide.EventTypeQueueSubscribed),
	string(duroxide.EventTypeQueueEventDelivered),
	string(duroxide.EventTypeQueueSubscriptionCancelled),
	string(duroxide.EventTypeCustomStatusUpdated),
	string(duroxide.EventTypeKeyValueSet),
	string(duroxide.EventTypeKeyValueCleared),
	string(duroxide.EventTypeKeyValuesCleared),
}

// describe is an event's kind, category, name and value.
func describe(ev duroxide.Event) eventRow {
	row := eventRow{ID: ev.EventID, Source: ev.SourceEventID, Kind: string(ev.Type())}
	switch k := ev.Kind.(type) {
	case duroxide.OrchestrationStarted:
		row.Class, row.Name, row.Value = "lifecycle", k.Name+" "+k.Version, k.Input
		if k.ParentInstance != nil {
			row.Instance = *k.ParentInstance
		}
	case duroxide.OrchestrationCompleted:
		row.Class, row.Value = "lifecycle", k.Output
	case duroxide.OrchestrationFailed:
		row.Class, row.Error = "failure", &k.Details
	case duroxide.OrchestrationContinuedAsNew:
		row.Class, row.Value = "lifecycle", k.Input
	case duroxide.OrchestrationCancelRequested:
		row.Class, row.Value = "failure", k.Reason
	case duroxide.ActivityScheduled:
		row.Class, row.Name, row.Value = "activity", k.Name, k.Input
	case duroxide.ActivityCompleted:
		row.Class, row.Value = "activity", k.Result
	case duroxide.ActivityFailed:
		row.Class, row.Error = "failure", &k.Details
	case duroxide.ActivityCancelRequested:
		row.Class, row.Value = "activity", k.Reason
	case duroxide.TimerCreated:
		row.Class, row.Value = "timer", "fires at "+utcMs(k.FireAtMs)
	case duroxide.TimerFired:
		row.Class, row.Value = "timer", "fired at "+utcMs(k.FireAtMs)
	case duroxide.ExternalSubscribed:
		row.Class, row.Name = "external", k.Name
	case duroxide.ExternalEvent:
		row.Class, row.Name, row.Value = "external", k.Name, k.Data
	case duroxide.ExternalSubscribedCancelled:
		row.Class, row.Value = "external", k.Reason
	case duroxide.QueueSubscribed:
		row.Class, row.Name = "external", k.Name
	case duroxide.QueueEventDelivered:
		row.Class, row.Name, row.Value = "external", k.Name, k.Data
	case duroxide.QueueSubscriptionCancelled:
		row.Class, row.Value = "external", k.Reason
	case duroxide.OrchestrationChained:
		row.Class, row.Name, row.Instance, row.Value = "sub", k.Name, k.Instance, k.Input
	case duroxide.SubOrchestrationScheduled:
		row.Class, row.Name, row.Instance, row.Value = "sub", k.Name, k.Instance, k.Input
	case duroxide.SubOrchestrationCompleted:
		row.Class, row.Value = "sub", k.Result
	case duroxide.SubOrchestrationFailed:
		row.Class, row.Error = "failure", &k.Details
	case duroxide.SubOrchestrationCancelRequested:
		row.Class, row.Value = "sub", k.Reason
	case duroxide.CustomStatusUpdated:
		row.Class = "status"
		if k.Status == nil {
			row.Value = "(cleared)"
		} else {
			row.Value = *k.Status
		}
	case duroxide.KeyValueSet:
		row.Class, row.Name, row.Value = "kv", k.Key, k.Value
	case duroxide.KeyValueCleared:
		row.Class, row.Name = "kv", k.Key
	case duroxide.KeyValuesCleared:
		row.Class = "kv"
	default:
		row.Class = "other"
	}
	return row
}

// fillChildren lists the direct sub-orchestrations and reads the status of
// the first maxChildrenShown.
func (h *Handler) fillChildren(ctx context.Context, d *instanceData) []string {
	ids, err := h.admin.ListChildren(ctx, d.ID)
	if err != nil {
		return []string{"sub-orchestrations: " + err.Error()}
	}
	shown := ids[:min(len(ids), maxChildrenShown)]
	d.MoreChildren = len(ids) - len(shown)
	for i, info := range h.infos(ctx, shown) {
		d.Children = append(d.Children, childRow{ID: shown[i], Info: info})
	}
	return nil
}

// treeNode is one instance of the tree page, with its depth.
type treeNode struct {
	ID      string
	Depth   int
	Indent  int // Depth, at most 10 (the CSS classes d0..d10)
	Info    *duroxide.InstanceInfo
	Current bool
}

// treeData is the tree page.
type treeData struct {
	ID        string
	Root      string
	Nodes     []treeNode
	Truncated bool
	Errors    []string
}

// treePage shows the whole tree the instance belongs to (?id=): its
// ancestors up to the root (GetInstanceInfo each, at most maxAncestors),
// then the root's descendants depth first (ListChildren each, at most
// maxTreeNodes instances).
func (h *Handler) treePage(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		h.fail(w, r, http.StatusBadRequest, "no instance id given (?id=)")
		return
	}
	ctx := r.Context()
	d := treeData{ID: id, Root: id}
	for range maxAncestors {
		info, err := h.admin.GetInstanceInfo(ctx, d.Root)
		if err != nil {
			if d.Root == id {
				h.fail(w, r, http.StatusNotFound, "instance "+displayID(id)+" not found")
				return
			}
			d.Errors = append(d.Errors, err.Error())
			break
		}
		if info.ParentInstanceID == nil {
			break
		}
		d.Root = *info.ParentInstanceID
	}
	type item struct {
		id    string
		depth int
	}
	stack := []item{{d.Root, 0}}
	var ids []string
	for len(stack) > 0 && len(d.Nodes) < maxTreeNodes {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d.Nodes = append(d.Nodes, treeNode{ID: it.id, Depth: it.depth, Indent: min(it.depth, 10), Current: it.id == id})
		ids = append(ids, it.id)
		children, err := h.admin.ListChildren(ctx, it.id)
		if err != nil {
			d.Errors = append(d.Errors, err.Error())
			continue
		}
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, item{children[i], it.depth + 1})
		}
	}
	d.Truncated = len(stack) > 0
	for i, info := range h.infos(ctx, ids) {
		d.Nodes[i].Info = info
	}
	h.render(w, r, http.StatusOK, "tree", "Tree of "+displayID(id), d)
}

// slicesSortedKeys returns m's keys sorted.
func slicesSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
