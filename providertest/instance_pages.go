package providertest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
)

// instancePagesCases check duroxide.InstancePager, the paged instance
// listing (a Go addition, no Rust test): its filters, a walk that sees
// every instance once, its errors, and the empty listing. A provider whose
// admin lacks the capability skips them, saying so.
var instancePagesCases = []Case{
	{"test_instance_pages_filters", InstancePagesFilters},
	{"test_instance_pages_walk_sees_every_instance_once", InstancePagesWalkSeesEveryInstanceOnce},
	{"test_instance_pages_malformed_continuation_is_permanent", InstancePagesMalformedContinuationIsPermanent},
	{"test_instance_pages_empty_result_has_no_continuation", InstancePagesEmptyResultHasNoContinuation},
	{"test_instance_pages_in_order", InstancePagesInOrder},
}

// requirePager returns p's admin as a duroxide.InstancePager or skips t.
func requirePager(t *testing.T, f Factory) (duroxide.Provider, duroxide.ProviderAdmin, duroxide.InstancePager) {
	t.Helper()
	p, admin := delProvider(t, f)
	pager, ok := admin.(duroxide.InstancePager)
	if !ok {
		t.Skip("skipped: the provider's admin lacks the optional capability duroxide.InstancePager")
	}
	return p, admin, pager
}

// walkPages reads every page of q (q.Continuation is ignored) and returns
// the instances in order, failing t when a page but the last is short, a
// page exceeds size, or the walk does not end within maxPages pages.
func walkPages(t *testing.T, pager duroxide.InstancePager, q duroxide.InstancePageQuery, size, maxPages int) []duroxide.InstanceSummary {
	t.Helper()
	var all []duroxide.InstanceSummary
	q.Continuation = ""
	for range maxPages {
		page, err := pager.ListInstancesPage(t.Context(), q)
		require.NoError(t, err, "list_instances_page")
		require.LessOrEqual(t, len(page.Instances), size, "a page holds at most the page size")
		all = append(all, page.Instances...)
		if page.Continuation == "" {
			return all
		}
		require.Len(t, page.Instances, size, "every page but the last is full")
		q.Continuation = page.Continuation
	}
	require.FailNow(t, "the walk did not end", "%d pages of %d read", maxPages, size)
	return nil
}

// pageIDs returns the instance ids of q's walk, sorted.
func pageIDs(t *testing.T, pager duroxide.InstancePager, q duroxide.InstancePageQuery) []string {
	t.Helper()
	var ids []string
	size := q.PageSize
	if size == 0 {
		size = duroxide.DefaultInstancePageSize
	}
	for _, s := range walkPages(t, pager, q, size, 100) {
		ids = append(ids, s.InstanceID)
	}
	slices.Sort(ids)
	return ids
}

// InstancePagesFilters checks each filter of an InstancePageQuery (status,
// Pending included with its reason when the provider keeps pending
// instances; a case-insensitive name substring; an id prefix; creation
// bounds) and their combination, and that every summary equals
// GetInstanceInfo's answer without the output.
func InstancePagesFilters(t *testing.T, f Factory) {
	p, admin, pager := requirePager(t, f)
	ctx := t.Context()
	named := func(instance, name, status, parent string) {
		t.Helper()
		start := startItem(instance).Kind.(duroxide.StartOrchestrationItem)
		start.Orchestration = name
		started := duroxide.OrchestrationStarted{Name: name, Version: testOrchVersion, Input: "{}"}
		if parent != "" {
			start.ParentInstance, start.ParentID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(1)
			started.ParentInstance, started.ParentID = duroxide.StringPtr(parent), duroxide.Uint64Ptr(1)
		}
		md := delMetadata(status, "out", parent)
		md.OrchestrationName = duroxide.StringPtr(name)
		if status == duroxide.StatusRunning {
			md.Status, md.Output = nil, nil
		}
		delTurn(t, p, duroxide.WorkItem{Kind: start}, duroxide.InitialExecutionID,
			[]duroxide.Event{duroxide.NewEvent(duroxide.InitialEventID, instance, duroxide.InitialExecutionID, nil, started)}, nil, md)
	}
	named("pg-a-1", "AlphaOrder", duroxide.StatusCompleted, "")
	named("pg-a-2", "AlphaOrder", duroxide.StatusRunning, "")
	named("pg-b-1", "BetaShip", duroxide.StatusFailed, "")
	named("pg-b-1/child", "BetaShip", duroxide.StatusCompleted, "pg-b-1")
	all := []string{"pg-a-1", "pg-a-2", "pg-b-1", "pg-b-1/child"}

	const pendingReason = `orchestration "Gamma" is not registered here`
	pending := false
	if starter, ok := duroxide.AsInstanceStarter(p); ok {
		start := startItem("pg-p-1").Kind.(duroxide.StartOrchestrationItem)
		start.Orchestration = "Gamma"
		require.NoError(t, starter.EnqueueStart(ctx, start))
		if rec, ok := p.(duroxide.PendingReasonRecorder); ok {
			item := fetchOrch(t, p, longLock)
			require.Equal(t, "pg-p-1", item.Instance)
			require.NoError(t, rec.AbandonOrchestrationItemWithReason(ctx, item.LockToken, 0, false, pendingReason))
		}
		info, err := admin.GetInstanceInfo(ctx, "pg-p-1")
		require.NoError(t, err)
		pending = info.Status == duroxide.StatusPending
	}
	if pending {
		all = append(all, "pg-p-1")
	}

	infos := map[string]duroxide.InstanceInfo{}
	for _, id := range all {
		info, err := admin.GetInstanceInfo(ctx, id)
		require.NoError(t, err)
		infos[id] = info
	}
	page, err := pager.ListInstancesPage(ctx, duroxide.InstancePageQuery{})
	require.NoError(t, err)
	assert.Empty(t, page.Continuation, "five instances fit in a page of the default size")
	got := map[string]duroxide.InstanceSummary{}
	for _, s := range page.Instances {
		got[s.InstanceID] = s
	}
	require.Len(t, got, len(all), "every instance, once: %v", page.Instances)
	for _, id := range all {
		s := got[id]
		s.CustomStatus, s.CompletedAt = nil, nil // not in InstanceInfo: InstancePagesInOrder checks them
		assert.Equal(t, infos[id].Summary(), s, "the summary of %s is GetInstanceInfo's answer without the output", id)
	}
	if pending {
		assert.Equal(t, pendingReason, got["pg-p-1"].PendingReason, "a Pending instance comes with its reason")
	}

	// Creation bounds, from the times the provider recorded (they may be
	// equal: the expectation is computed from them).
	cut := infos["pg-b-1"].CreatedAt
	var atOrAfter, before []string
	for _, id := range all {
		if infos[id].CreatedAt >= cut {
			atOrAfter = append(atOrAfter, id)
		} else {
			before = append(before, id)
		}
	}
	slices.Sort(atOrAfter)
	slices.Sort(before)

	for _, c := range []struct {
		name string
		q    duroxide.InstancePageQuery
		want []string
	}{
		{"status Completed", duroxide.InstancePageQuery{Status: duroxide.StatusCompleted}, []string{"pg-a-1", "pg-b-1/child"}},
		{"status Running", duroxide.InstancePageQuery{Status: duroxide.StatusRunning}, []string{"pg-a-2"}},
		{"status Failed", duroxide.InstancePageQuery{Status: duroxide.StatusFailed}, []string{"pg-b-1"}},
		{"an unknown status", duroxide.InstancePageQuery{Status: "Sleeping"}, nil},
		{"name, another case", duroxide.InstancePageQuery{NameContains: "alphaORD"}, []string{"pg-a-1", "pg-a-2"}},
		{"name, a substring", duroxide.InstancePageQuery{NameContains: "taSh"}, []string{"pg-b-1", "pg-b-1/child"}},
		{"id prefix", duroxide.InstancePageQuery{IDPrefix: "pg-b-1/"}, []string{"pg-b-1/child"}},
		{"id prefix is case-sensitive", duroxide.InstancePageQuery{IDPrefix: "PG-"}, nil},
		{"created at or after", duroxide.InstancePageQuery{CreatedAfter: cut}, atOrAfter},
		{"created before", duroxide.InstancePageQuery{CreatedBefore: cut}, before},
		{"status, name and prefix", duroxide.InstancePageQuery{Status: duroxide.StatusCompleted, NameContains: "beta", IDPrefix: "pg-b"}, []string{"pg-b-1/child"}},
		{"a page of one", duroxide.InstancePageQuery{Status: duroxide.StatusCompleted, PageSize: 1}, []string{"pg-a-1", "pg-b-1/child"}},
	} {
		assert.Equal(t, c.want, pageIDs(t, pager, c.q), c.name)
	}
	if pending {
		assert.Equal(t, []string{"pg-p-1"}, pageIDs(t, pager, duroxide.InstancePageQuery{Status: duroxide.StatusPending}), "status Pending")
		assert.Equal(t, []string{"pg-p-1"}, pageIDs(t, pager, duroxide.InstancePageQuery{NameContains: "gamma"}), "a Pending instance's name")
	}
}

// InstancePagesWalkSeesEveryInstanceOnce checks that walking 250 instances
// with a page size of 100 returns pages of 100, 100 and 50 that hold every
// instance exactly once, and that the default page size is 50.
func InstancePagesWalkSeesEveryInstanceOnce(t *testing.T, f Factory) {
	p, _, pager := requirePager(t, f)
	const n = 250
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("walk-%03d", i)
		createInstance(t, p, want[i])
	}
	for _, size := range []int{100, 0} {
		q := duroxide.InstancePageQuery{PageSize: size}
		if size == 0 {
			size = duroxide.DefaultInstancePageSize
		}
		rows := walkPages(t, pager, q, size, n/size+2)
		ids := make([]string, len(rows))
		for i, s := range rows {
			ids[i] = s.InstanceID
			assert.Equal(t, duroxide.StatusRunning, s.Status, s.InstanceID)
			assert.Equal(t, testOrch, s.OrchestrationName, s.InstanceID)
		}
		slices.Sort(ids)
		require.Equal(t, want, ids, "every instance exactly once, pages of %d", size)
	}
}

// InstancePagesMalformedContinuationIsPermanent checks that a continuation
// the provider never returned, and a page size outside 0..1000, are
// permanent errors.
func InstancePagesMalformedContinuationIsPermanent(t *testing.T, f Factory) {
	p, _, pager := requirePager(t, f)
	for i := range 3 {
		createInstance(t, p, fmt.Sprintf("bad-cont-%d", i))
	}
	for _, cont := range []string{"not a continuation", "%%%", "{}", "eyJ0b2tlbiI6MX0"} {
		_, err := pager.ListInstancesPage(t.Context(), duroxide.InstancePageQuery{Continuation: cont})
		requirePermanent(t, err, "continuation %q", cont)
	}
	for _, size := range []int{-1, duroxide.MaxInstancePageSize + 1} {
		_, err := pager.ListInstancesPage(t.Context(), duroxide.InstancePageQuery{PageSize: size})
		requirePermanent(t, err, "page size %d", size)
	}
	page, err := pager.ListInstancesPage(t.Context(), duroxide.InstancePageQuery{PageSize: duroxide.MaxInstancePageSize})
	require.NoError(t, err, "the largest page size")
	assert.Len(t, page.Instances, 3)
}

// InstancePagesEmptyResultHasNoContinuation checks that a listing with
// nothing to list, on an empty store and through a filter that matches
// nothing, is an empty page with no continuation.
func InstancePagesEmptyResultHasNoContinuation(t *testing.T, f Factory) {
	p, _, pager := requirePager(t, f)
	page, err := pager.ListInstancesPage(t.Context(), duroxide.InstancePageQuery{})
	require.NoError(t, err)
	assert.Empty(t, page.Instances, "an empty store")
	assert.Empty(t, page.Continuation, "an empty store")
	createInstance(t, p, "lonely")
	page, err = pager.ListInstancesPage(t.Context(), duroxide.InstancePageQuery{IDPrefix: "nobody-"})
	require.NoError(t, err)
	assert.Empty(t, page.Instances, "a filter that matches nothing")
	assert.Empty(t, page.Continuation, "a filter that matches nothing")
}

// InstancePagesInOrder checks the ordered walks (InstancePageQuery.Order):
// newest and oldest first, pages of 4 over 11 instances (one Failed with
// a custom status), hold every instance once in the order
// duroxide.InstanceOrder defines, with the failure's first line and the
// custom status in the summary; StatusCounts, when the provider fills it,
// counts the instances per status; an unknown order is a permanent error.
func InstancePagesInOrder(t *testing.T, f Factory) {
	p, admin, pager := requirePager(t, f)
	ctx := t.Context()
	for i := range 10 {
		createInstance(t, p, fmt.Sprintf("order-%02d", i))
	}
	start := startItem("order-failed").Kind.(duroxide.StartOrchestrationItem)
	delTurn(t, p, duroxide.WorkItem{Kind: start}, duroxide.InitialExecutionID,
		[]duroxide.Event{duroxide.NewEvent(duroxide.InitialEventID, "order-failed", duroxide.InitialExecutionID, nil,
			duroxide.OrchestrationStarted{Name: testOrch, Version: testOrchVersion, Input: "{}"}),
			customStatusEvent("order-failed", 2, duroxide.StringPtr("stuck awaiting shipment\nsince Monday"))},
		nil, delMetadata(duroxide.StatusFailed, "charge card declined\nat ChargeCard", ""))
	var want []duroxide.InstanceSummary
	ids := []string{"order-failed"}
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("order-%02d", i))
	}
	for _, id := range ids {
		info, err := admin.GetInstanceInfo(ctx, id)
		require.NoError(t, err)
		want = append(want, info.Summary())
	}
	for _, order := range []duroxide.InstanceOrder{duroxide.OrderNewestFirst, duroxide.OrderOldestFirst} {
		q := duroxide.InstancePageQuery{PageSize: 4, Order: order, IDPrefix: "order-"}
		got := walkPages(t, pager, q, 4, 5)
		exp := slices.Clone(want)
		slices.SortFunc(exp, order.Compare)
		gotIDs, expIDs := make([]string, len(got)), make([]string, len(exp))
		for i := range got {
			gotIDs[i] = got[i].InstanceID
		}
		for i := range exp {
			expIDs[i] = exp[i].InstanceID
		}
		require.Equal(t, expIDs, gotIDs, "%s: every instance once, in order", order)
		for _, s := range got {
			if s.InstanceID == "order-failed" {
				assert.Equal(t, duroxide.StatusFailed, s.Status)
				assert.Equal(t, "charge card declined", s.ErrorLine, "the failure's first line")
				if assert.NotNil(t, s.CustomStatus) {
					assert.Equal(t, "stuck awaiting shipment", *s.CustomStatus)
				}
				assert.NotNil(t, s.CompletedAt, "a failed instance's end")
			} else {
				assert.Empty(t, s.ErrorLine, s.InstanceID)
				assert.Nil(t, s.CompletedAt, "%s runs", s.InstanceID)
			}
		}
		first, err := pager.ListInstancesPage(ctx, q)
		require.NoError(t, err)
		if first.StatusCounts != nil {
			assert.Equal(t, map[string]int{duroxide.StatusRunning: 10, duroxide.StatusFailed: 1}, first.StatusCounts, order)
		}
	}
	_, err := pager.ListInstancesPage(ctx, duroxide.InstancePageQuery{Order: "sideways"})
	requirePermanent(t, err, "an unknown order")
}
