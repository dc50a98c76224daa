package memory

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The paged instance listing (duroxide.InstancePager, a Go addition).

var _ duroxide.InstancePager = (*MemoryProvider)(nil)

// pageTokenPrefix starts every continuation ListInstancesPage returns.
const pageTokenPrefix = "mem1."

// ListInstancesPage implements duroxide.InstancePager: the instances and
// the pending instances that match q, by instance id in ascending byte
// order, q.PageSize (default 50) at a time. The continuation is the last
// id of the page, encoded ("mem1." and the id in unpadded URL-safe
// base64); the next page starts after it, so instances created or deleted
// during a walk never shift the others. A malformed continuation or a page
// size outside 0..1000 is a permanent error.
func (p *MemoryProvider) ListInstancesPage(ctx context.Context, q duroxide.InstancePageQuery) (duroxide.InstancePage, error) {
	const op = "list_instances_page"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.InstancePage{}, err
	}
	size, err := q.PageSizeOf(op)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	after, first, err := decodePageToken(op, q.Continuation)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	p.mu.Lock()
	rows := p.instanceSummaries()
	p.mu.Unlock()
	slices.SortFunc(rows, func(a, b duroxide.InstanceSummary) int { return strings.Compare(a.InstanceID, b.InstanceID) })
	var page duroxide.InstancePage
	for _, s := range rows {
		if !first && s.InstanceID <= after || !q.Matches(s) {
			continue
		}
		if len(page.Instances) == size {
			page.Continuation = pageTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(page.Instances[size-1].InstanceID))
			break
		}
		page.Instances = append(page.Instances, s)
	}
	return page, nil
}

// decodePageToken returns the id a continuation resumes after; first is
// true for "" (the first page).
func decodePageToken(op, token string) (after string, first bool, err error) {
	if token == "" {
		return "", true, nil
	}
	rest, ok := strings.CutPrefix(token, pageTokenPrefix)
	id, decErr := base64.RawURLEncoding.DecodeString(rest)
	if !ok || decErr != nil || rest == "" {
		return "", false, memPermanent(op, "malformed continuation %q: pass the Continuation of the page before, as returned", token)
	}
	return string(id), false, nil
}

// instanceSummaries returns every instance and pending instance as a
// summary, unordered; the caller holds p.mu.
func (p *MemoryProvider) instanceSummaries() []duroxide.InstanceSummary {
	rows := make([]duroxide.InstanceSummary, 0, len(p.instances)+len(p.pending))
	for id, inst := range p.instances {
		s := duroxide.InstanceSummary{
			InstanceID: id, OrchestrationName: inst.name, OrchestrationVersion: "unknown",
			CurrentExecutionID: inst.currentExecution, Status: "Unknown",
			CreatedAt: inst.createdAt, UpdatedAt: inst.updatedAt, ParentInstanceID: memClone(inst.parent),
		}
		if inst.version != nil {
			s.OrchestrationVersion = *inst.version
		}
		if status, exec := p.currentStatus(id); exec != nil {
			s.Status = status
		}
		rows = append(rows, s)
	}
	for id := range p.pending {
		if pend := p.pendingOf(id); pend != nil {
			rows = append(rows, pendingInfo(id, pend).Summary())
		}
	}
	return rows
}
