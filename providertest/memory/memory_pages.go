package memory

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// The paged instance listing (duroxide.InstancePager, a Go addition).

var _ duroxide.InstancePager = (*MemoryProvider)(nil)

// ListInstancesPage implements duroxide.InstancePager: the instances and
// the pending instances that match q, q.PageSize (default 50) at a time,
// by instance id in ascending byte order for duroxide.OrderStore, else in
// q.Order. The continuation is the last instance of the page, encoded
// ("mem1." and the id in unpadded URL-safe base64 for OrderStore; "mem2."
// and the order, creation time and id as base64 JSON otherwise); the next
// page starts after it, so instances created or deleted during a walk
// never shift the others. StatusCounts is always filled. A malformed
// continuation, one of another order, a page size outside 0..1000 or an
// unknown order is a permanent error.
func (p *MemoryProvider) ListInstancesPage(ctx context.Context, q duroxide.InstancePageQuery) (duroxide.InstancePage, error) {
	const op = "list_instances_page"
	if err := memCtxErr(op, ctx); err != nil {
		return duroxide.InstancePage{}, err
	}
	size, err := q.PageSizeOf(op)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	after, first, err := decodePageToken(op, q.Continuation, q.Order)
	if err != nil {
		return duroxide.InstancePage{}, err
	}
	p.mu.Lock()
	rows := p.instanceSummaries()
	p.mu.Unlock()
	cmp := func(a, b duroxide.InstanceSummary) int { return strings.Compare(a.InstanceID, b.InstanceID) }
	if q.Order != duroxide.OrderStore {
		cmp = q.Order.Compare
	}
	slices.SortFunc(rows, cmp)
	page := duroxide.InstancePage{StatusCounts: map[string]int{}}
	for _, s := range rows {
		if q.MatchesButStatus(s) {
			page.StatusCounts[s.Status]++
		}
	}
	for _, s := range rows {
		if !first && cmp(s, after) <= 0 || !q.Matches(s) {
			continue
		}
		if len(page.Instances) == size {
			page.Continuation = encodePageToken(q.Order, page.Instances[size-1])
			break
		}
		page.Instances = append(page.Instances, s)
	}
	return page, nil
}

// Continuation prefixes: by id (OrderStore), and in another order.
const (
	pageTokenPrefix       = "mem1."
	sortedPageTokenPrefix = "mem2."
)

// sortedPageToken is a continuation of an ordered walk before its
// encoding.
type sortedPageToken struct {
	Order     duroxide.InstanceOrder `json:"o"`
	CreatedAt uint64                 `json:"c"`
	ID        string                 `json:"i"`
}

// encodePageToken returns the continuation that resumes after last.
func encodePageToken(order duroxide.InstanceOrder, last duroxide.InstanceSummary) string {
	if order == duroxide.OrderStore {
		return pageTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(last.InstanceID))
	}
	b, _ := json.Marshal(sortedPageToken{Order: order, CreatedAt: last.CreatedAt, ID: last.InstanceID})
	return sortedPageTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken returns the instance a continuation resumes after (its
// id and, for an ordered walk, its creation time); first is true for ""
// (the first page).
func decodePageToken(op, token string, order duroxide.InstanceOrder) (after duroxide.InstanceSummary, first bool, err error) {
	if token == "" {
		return after, true, nil
	}
	bad := memPermanent(op, "malformed continuation %q: pass the Continuation of the page before, as returned, with the same order", token)
	if order == duroxide.OrderStore {
		rest, ok := strings.CutPrefix(token, pageTokenPrefix)
		id, decErr := base64.RawURLEncoding.DecodeString(rest)
		if !ok || decErr != nil || rest == "" {
			return after, false, bad
		}
		return duroxide.InstanceSummary{InstanceID: string(id)}, false, nil
	}
	rest, ok := strings.CutPrefix(token, sortedPageTokenPrefix)
	b, decErr := base64.RawURLEncoding.DecodeString(rest)
	var t sortedPageToken
	if !ok || decErr != nil || json.Unmarshal(b, &t) != nil || t.Order != order {
		return after, false, bad
	}
	return duroxide.InstanceSummary{InstanceID: t.ID, CreatedAt: t.CreatedAt}, false, nil
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
			s.CompletedAt = memClone(exec.completedAt)
			if status == duroxide.StatusFailed && exec.output != nil {
				s.ErrorLine = duroxide.SummaryText(*exec.output)
			}
		}
		if inst.customStatus != nil {
			cs := duroxide.SummaryText(*inst.customStatus)
			s.CustomStatus = &cs
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
