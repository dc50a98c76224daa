package duroxide

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// InstancePager is an optional capability of a ProviderAdmin: the
// instances that match a filter, with their metadata, read a page at a
// time with the store's own continuation, so that a page costs about one
// request to the store however many instances there are. ProviderAdmin
// only lists every id (ListInstances, ListInstancesByStatus), which a
// caller showing one page must then read instance by instance. A
// dashboard or a command-line listing finds the capability with a type
// assertion on the admin. It is a Go addition to duroxide's contract.
//
// Pending instances (StatusPending) are included, with their reason, by
// a provider that keeps them.
type InstancePager interface {
	// ListInstancesPage returns the page of instances matching q that
	// starts at q.Continuation (the first page when it is ""), at most
	// q.PageSize of them, and the continuation of the next page ("" on
	// the last). Every page but the last is full (a store that answers
	// with short pages is asked again); the last may be short, or empty
	// when the page before was full and nothing more matched, and an
	// empty page always has an empty continuation.
	//
	// Order: the store's continuation order, which each provider
	// documents (it need not be newest first); every instance that
	// matches q throughout a walk from the first page to the last
	// appears exactly once. Instances created, deleted or changed so
	// that they match or stop matching during the walk may or may not
	// appear.
	//
	// Errors are *ProviderError values: a malformed continuation, one
	// returned for another query (other filters), or a PageSize outside
	// 0..MaxInstancePageSize is a permanent error; store failures are
	// retryable or permanent as for the other calls.
	ListInstancesPage(ctx context.Context, q InstancePageQuery) (InstancePage, error)
}

// DefaultInstancePageSize is the page size of an InstancePageQuery whose
// PageSize is 0.
const DefaultInstancePageSize = 50

// MaxInstancePageSize is the largest PageSize an InstancePager accepts.
const MaxInstancePageSize = 1000

// InstancePageQuery selects the instances of one page of an
// InstancePager. Every filter is optional (its zero value matches every
// instance), and they combine with AND. Keep the filters the same from
// page to page: a continuation belongs to the query that returned it.
type InstancePageQuery struct {
	// Status keeps the instances whose current execution has this status
	// ("Running", "Completed", "Failed", "ContinuedAsNew", or
	// StatusPending for the pending instances); "" keeps every status. An
	// unknown status matches nothing.
	Status string
	// NameContains keeps the instances whose orchestration name contains
	// it, ignoring case (Unicode simple case folding as strings.ToLower
	// does it; the store may fold exotic characters differently).
	NameContains string
	// IDPrefix keeps the instances whose id starts with it (bytes,
	// case-sensitive).
	IDPrefix string
	// CreatedAfter keeps the instances created at or after it;
	// CreatedBefore those created before it. Both are milliseconds since
	// the Unix epoch, as InstanceInfo.CreatedAt; 0 leaves that side
	// unbounded.
	CreatedAfter, CreatedBefore uint64
	// PageSize is the most instances a page holds: 0 means
	// DefaultInstancePageSize, and more than MaxInstancePageSize (or a
	// negative value) is a permanent error.
	PageSize int
	// Continuation is "" for the first page, or the Continuation of the
	// page before, as it was returned (an opaque string, safe in a URL
	// query parameter once escaped).
	Continuation string
	// Order is the order of the walk: OrderStore (the zero value, the
	// store's continuation order and its cheapest), OrderNewestFirst or
	// OrderOldestFirst (by CreatedAt, then by instance id). An unknown
	// order is a permanent error.
	Order InstanceOrder
}

// InstanceOrder is the order of an InstancePager's walk.
type InstanceOrder string

// The orders of InstancePageQuery.Order.
const (
	// OrderStore is the store's continuation order, which each provider
	// documents.
	OrderStore InstanceOrder = ""
	// OrderNewestFirst is by CreatedAt, newest first; instances created
	// in the same millisecond by instance id, descending.
	OrderNewestFirst InstanceOrder = "newest"
	// OrderOldestFirst is by CreatedAt, oldest first; instances created
	// in the same millisecond by instance id, ascending.
	OrderOldestFirst InstanceOrder = "oldest"
)

// Valid reports whether o is one of the orders above.
func (o InstanceOrder) Valid() bool {
	return o == OrderStore || o == OrderNewestFirst || o == OrderOldestFirst
}

// Before reports whether a comes before b in order o (false for
// OrderStore, which has no order of its own to compare by).
func (o InstanceOrder) Before(a, b InstanceSummary) bool {
	switch o {
	case OrderNewestFirst:
		return a.CreatedAt > b.CreatedAt || a.CreatedAt == b.CreatedAt && a.InstanceID > b.InstanceID
	case OrderOldestFirst:
		return a.CreatedAt < b.CreatedAt || a.CreatedAt == b.CreatedAt && a.InstanceID < b.InstanceID
	}
	return false
}

// Compare is Before as a three-way comparison (for slices.SortFunc).
func (o InstanceOrder) Compare(a, b InstanceSummary) int {
	switch {
	case o.Before(a, b):
		return -1
	case o.Before(b, a):
		return 1
	}
	return 0
}

// InstanceSummary is one instance of an InstancePage: InstanceInfo
// without the output, which a listing does not read.
type InstanceSummary struct {
	InstanceID           string
	OrchestrationName    string
	OrchestrationVersion string
	// CurrentExecutionID is 0 for a Pending instance.
	CurrentExecutionID uint64
	// Status is as InstanceInfo.Status.
	Status string
	// CreatedAt and UpdatedAt are milliseconds since the Unix epoch.
	CreatedAt, UpdatedAt uint64
	// ParentInstanceID is nil for a root orchestration.
	ParentInstanceID *string
	// PendingReason is as InstanceInfo.PendingReason: for a Pending
	// instance, why its start has not run, "" otherwise.
	PendingReason string
	// ErrorLine is, for a Failed instance, the first line of its error
	// (InstanceInfo.Output), at most MaxSummaryText bytes; "" otherwise.
	ErrorLine string
	// CustomStatus is the instance's custom status, its first line and at
	// most MaxSummaryText bytes (SummaryText); nil when none was ever set or it was
	// cleared. InstanceInfo does not carry it: Summary leaves it nil.
	CustomStatus *string
	// CompletedAt is when the current execution ended (milliseconds
	// since the Unix epoch), nil while it runs or when the provider does
	// not record it. InstanceInfo does not carry it: Summary leaves it
	// nil.
	CompletedAt *uint64
}

// MaxSummaryText is the most bytes of an error line or a custom status
// an InstanceSummary carries: a listing reads only that much of them.
const MaxSummaryText = 200

// SummaryText returns s cut to its first line and to MaxSummaryText bytes
// (on a rune boundary), as InstanceSummary.ErrorLine holds it.
func SummaryText(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) <= MaxSummaryText {
		return s
	}
	cut := MaxSummaryText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Summary returns i's summary (i without its output).
func (i InstanceInfo) Summary() InstanceSummary {
	return InstanceSummary{
		InstanceID: i.InstanceID, OrchestrationName: i.OrchestrationName, OrchestrationVersion: i.OrchestrationVersion,
		CurrentExecutionID: i.CurrentExecutionID, Status: i.Status, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt,
		ParentInstanceID: i.ParentInstanceID, PendingReason: i.PendingReason, ErrorLine: i.errorLine(),
	}
}

// errorLine is the ErrorLine of i's summary.
func (i InstanceInfo) errorLine() string {
	if i.Status != StatusFailed || i.Output == nil {
		return ""
	}
	return SummaryText(*i.Output)
}

// InstancePage is one page of an InstancePager's listing.
type InstancePage struct {
	// Instances are the page's instances, in the provider's continuation
	// order; empty (never more than the query's page size) when nothing
	// more matches.
	Instances []InstanceSummary
	// Continuation is passed as InstancePageQuery.Continuation to read
	// the next page; "" when this page is the last.
	Continuation string
	// StatusCounts, when not nil, is the number of instances matching
	// the query's filters but its status, per status (a status with none
	// is absent), counted while reading this page at no extra cost: the
	// in-memory provider always fills it; cdb on the first page of a
	// query whose instances fit in one response (DESIGN.md §6.1).
	StatusCounts map[string]int
}

// PageSizeOf returns q's effective page size: DefaultInstancePageSize for
// 0, q.PageSize when it is in 1..MaxInstancePageSize, and otherwise a
// permanent *ProviderError of operation op; an unknown q.Order is one too.
// Providers call it first.
func (q InstancePageQuery) PageSizeOf(op string) (int, error) {
	switch {
	case q.PageSize < 0 || q.PageSize > MaxInstancePageSize:
		return 0, NewPermanentError(op, fmt.Sprintf("page size %d is outside 1..%d", q.PageSize, MaxInstancePageSize))
	case !q.Order.Valid():
		return 0, NewPermanentError(op, fmt.Sprintf("unknown order %q: use OrderStore, OrderNewestFirst or OrderOldestFirst", q.Order))
	}
	if q.PageSize == 0 {
		return DefaultInstancePageSize, nil
	}
	return q.PageSize, nil
}

// Matches reports whether s passes q's filters (status, name, id prefix,
// creation bounds), for a provider that filters in memory.
func (q InstancePageQuery) Matches(s InstanceSummary) bool {
	return (q.Status == "" || s.Status == q.Status) && q.MatchesButStatus(s)
}

// MatchesButStatus is Matches without the status filter (what
// InstancePage.StatusCounts counts).
func (q InstancePageQuery) MatchesButStatus(s InstanceSummary) bool {
	switch {
	case !strings.HasPrefix(s.InstanceID, q.IDPrefix),
		q.CreatedAfter != 0 && s.CreatedAt < q.CreatedAfter,
		q.CreatedBefore != 0 && s.CreatedAt >= q.CreatedBefore:
		return false
	}
	return q.NameContains == "" || strings.Contains(strings.ToLower(s.OrchestrationName), strings.ToLower(q.NameContains))
}
