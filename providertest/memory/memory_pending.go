package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// Pending instances (duroxide.StatusPending, a Go addition): the record of
// a start that was stored by EnqueueStart or locked by a fetch, kept until
// the instance's first turn commits (the instance then has an execution)
// or the instance is deleted, as the cdb provider keeps its pending
// instance document. A start enqueued with EnqueueForOrchestrator and
// never fetched has none, so GetInstanceInfo does not find it (duroxide's
// test_no_instance_creation_on_enqueue).

// memPending is the record of a pending instance.
type memPending struct {
	name      string
	version   string  // "unknown" when the start named none
	createdAt uint64  // ms since the Unix epoch
	seq       uint64  // creation order
	reason    string  // the last reason a runtime reported, "" for none
	parent    *string // a sub-orchestration's parent instance, nil for a root
}

// markPending records instance's start of orchestration name and version
// (nil: none), by parent (nil for a root), unless a record exists; the
// caller holds p.mu.
func (p *MemoryProvider) markPending(instance, name string, version, parent *string) {
	if p.pending[instance] != nil {
		return
	}
	v := "unknown"
	if version != nil {
		v = *version
	}
	p.pending[instance] = &memPending{name: name, version: v, createdAt: uint64(max(p.nowMs(), 0)), seq: p.nextID(), parent: memClone(parent)}
}

// pendingOf returns instance's pending record when the instance is
// pending: a start was recorded and no turn of it has committed (it has
// no record, no execution and no history); nil otherwise. The caller holds
// p.mu.
func (p *MemoryProvider) pendingOf(instance string) *memPending {
	if p.instances[instance] != nil || len(p.executions[instance]) > 0 || len(p.history[instance]) > 0 {
		return nil
	}
	return p.pending[instance]
}

// pendingInfo is GetInstanceInfo's answer for a pending instance.
func pendingInfo(instance string, pend *memPending) duroxide.InstanceInfo {
	return duroxide.InstanceInfo{
		InstanceID: instance, OrchestrationName: pend.name, OrchestrationVersion: pend.version,
		Status: duroxide.StatusPending, CreatedAt: pend.createdAt, UpdatedAt: pend.createdAt, PendingReason: pend.reason,
		ParentInstanceID: memClone(pend.parent),
	}
}

// pendingIDs returns the ids of the pending instances, newest first; the
// caller holds p.mu.
func (p *MemoryProvider) pendingIDs() []string {
	var ids []string
	for id := range p.pending {
		if p.pendingOf(id) != nil {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(p.pending[b].seq, p.pending[a].seq) })
	return ids
}

// AbandonOrchestrationItemWithReason implements
// duroxide.PendingReasonRecorder: AbandonOrchestrationItem, with its
// errors, that also records reason as the pending reason of an instance
// that is pending (GetInstanceInfo's PendingReason); for an instance that
// is not, the reason is ignored.
func (p *MemoryProvider) AbandonOrchestrationItemWithReason(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	return p.abandonOrchestration(ctx, lockToken, delay, ignoreAttempt, reason)
}

var _ duroxide.PendingReasonRecorder = (*MemoryProvider)(nil)
