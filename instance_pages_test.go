package cdb_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// pagesProvider returns a quiet provider (no reconciler, change feed or
// lease documents, so that its Usage counts only the calls the test makes)
// on a private emulator with partitions physical partitions, holding three
// Running instances run-0..2 and n Pending ones page-%04d (a client's
// start each). With pageCap > 0 every query is answered with at most
// pageCap documents a request, as a service returning short pages does.
func pagesProvider(t *testing.T, partitions, n, pageCap int, adjust ...func(*cdb.Config)) *cdb.Provider {
	t.Helper()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{PhysicalPartitions: partitions})
	cfg := a.Config()
	cfg.Container = "pages"
	cfg.DisableReconciler, cfg.DisableChangeFeedWakeups, cfg.Leases = true, true, cdb.LeasesInProcess
	for _, f := range adjust {
		f(&cfg)
	}
	if pageCap > 0 {
		opts := *cfg.ClientOptions
		opts.Transport = shortPages{next: opts.Transport, max: pageCap}
		cfg.ClientOptions = &opts
	}
	p := a.NewProvider(t, cfg)
	ctx := context.Background()
	for i := range 3 {
		id := fmt.Sprintf("run-%d", i)
		require.NoError(t, p.EnqueueStart(ctx, start(id, "Runner")))
		item, err := fetchInstance(ctx, p, id)
		require.NoError(t, err)
		require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, []duroxide.Event{started(id)}, nil, nil, runningMetadata(), nil))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				if err := p.EnqueueStart(ctx, start(fmt.Sprintf("page-%04d", i), "Waiting")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return p
}

// tickingClock is a clock for Config.Now that moves 1 ms at every
// reading, from the real time of the call: the creation times a burst of
// starts is stamped with are spread evenly, whatever the machine's load
// (in real time a pause of the writers under load leaves a gap that costs
// a newest-first walk a window more).
func tickingClock() func() time.Time {
	var ms atomic.Int64
	ms.Store(time.Now().UnixMilli())
	return func() time.Time { return time.UnixMilli(ms.Add(1)) }
}

// shortPages caps the page size a query asks for (x-ms-max-item-count),
// so that the service answers with shorter pages than the caller wanted.
type shortPages struct {
	next policy.Transporter
	max  int
}

func (s shortPages) Do(r *http.Request) (*http.Response, error) {
	if v := r.Header.Get("x-ms-max-item-count"); v != "" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json") {
		if n, err := strconv.Atoi(v); err == nil && (n < 0 || n > s.max) {
			r.Header.Set("x-ms-max-item-count", strconv.Itoa(s.max))
		}
	}
	return s.next.Do(r)
}

// requests returns the requests p makes in call.
func requests(p *cdb.Provider, call func()) int64 {
	before := p.Usage().Requests
	call()
	return p.Usage().Requests - before
}

// TestInstancePageCostsOneRequest counts the requests of the paged listing
// among 1,003 instances on one physical partition: a page (of 50, of 100,
// filtered by status to 3 instances) is 1 cross-partition query request,
// and a walk of every page is one request per page; listing every Pending
// id instead takes a request per 100 of them.
func TestInstancePageCostsOneRequest(t *testing.T) {
	t.Parallel()
	p := pagesProvider(t, 1, 1000, 0)
	ctx := t.Context()

	var page duroxide.InstancePage
	var err error
	n := requests(p, func() { page, err = p.ListInstancesPage(ctx, duroxide.InstancePageQuery{}) })
	require.NoError(t, err)
	assert.Len(t, page.Instances, duroxide.DefaultInstancePageSize)
	assert.NotEmpty(t, page.Continuation)
	assert.EqualValues(t, 1, n, "the first page of 50")

	n = requests(p, func() {
		page, err = p.ListInstancesPage(ctx, duroxide.InstancePageQuery{PageSize: 100, Continuation: ""})
	})
	require.NoError(t, err)
	assert.Len(t, page.Instances, 100)
	assert.EqualValues(t, 1, n, "a page of 100")

	n = requests(p, func() {
		page, err = p.ListInstancesPage(ctx, duroxide.InstancePageQuery{Status: duroxide.StatusRunning})
	})
	require.NoError(t, err)
	assert.Len(t, page.Instances, 3)
	assert.Empty(t, page.Continuation)
	assert.EqualValues(t, 1, n, "3 Running among 1,003")

	seen := map[string]bool{}
	pages := 0
	n = requests(p, func() {
		q := duroxide.InstancePageQuery{PageSize: 100}
		for {
			page, err := p.ListInstancesPage(ctx, q)
			require.NoError(t, err)
			pages++
			for _, s := range page.Instances {
				require.False(t, seen[s.InstanceID], "%s listed twice", s.InstanceID)
				seen[s.InstanceID] = true
			}
			if page.Continuation == "" {
				return
			}
			q.Continuation = page.Continuation
		}
	})
	assert.Len(t, seen, 1003)
	assert.Equal(t, 11, pages, "1,003 instances, 100 a page")
	assert.EqualValues(t, pages, n, "one request per page")

	n = requests(p, func() {
		ids, err := p.ListInstancesByStatus(ctx, duroxide.StatusPending)
		require.NoError(t, err)
		assert.Len(t, ids, 1000)
	})
	assert.EqualValues(t, 11, n, "the id listing: a request per 100 ids, and an empty last page")
}

// TestInstancePagesAreFullWhenTheServiceAnswersShortPages checks that a
// page is full though the service answers with at most 30 documents a
// request: the provider asks again for the rest of the page (4 requests
// for 100), and the walk over 4 physical partitions still lists every
// instance once.
func TestInstancePagesAreFullWhenTheServiceAnswersShortPages(t *testing.T) {
	t.Parallel()
	p := pagesProvider(t, 4, 250, 30)
	ctx := t.Context()
	seen := map[string]int{}
	q := duroxide.InstancePageQuery{PageSize: 100, IDPrefix: "page-"}
	var sizes []int
	var requestsPerPage []int64
	for {
		var page duroxide.InstancePage
		var err error
		requestsPerPage = append(requestsPerPage, requests(p, func() { page, err = p.ListInstancesPage(ctx, q) }))
		require.NoError(t, err)
		sizes = append(sizes, len(page.Instances))
		for _, s := range page.Instances {
			seen[s.InstanceID]++
			assert.True(t, strings.HasPrefix(s.InstanceID, "page-"), s.InstanceID)
			assert.Equal(t, duroxide.StatusPending, s.Status, s.InstanceID)
			assert.Equal(t, "Waiting", s.OrchestrationName, s.InstanceID)
		}
		if page.Continuation == "" {
			break
		}
		q.Continuation = page.Continuation
	}
	require.Len(t, seen, 250)
	for id, c := range seen {
		require.Equal(t, 1, c, "%s listed %d times", id, c)
	}
	assert.Equal(t, []int{100, 100, 50}, sizes, "full pages, then the rest")
	assert.Equal(t, []int64{4, 4, 2}, requestsPerPage, "30 documents a request")
}

// TestInstancePageContinuationIsTiedToItsFilters checks that a
// continuation returned for one filter is refused, permanently and without
// a request, with another.
func TestInstancePageContinuationIsTiedToItsFilters(t *testing.T) {
	t.Parallel()
	p := pagesProvider(t, 1, 30, 0)
	ctx := t.Context()
	page, err := p.ListInstancesPage(ctx, duroxide.InstancePageQuery{PageSize: 10, Status: duroxide.StatusPending})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continuation)
	n := requests(p, func() {
		_, err = p.ListInstancesPage(ctx, duroxide.InstancePageQuery{PageSize: 10, Continuation: page.Continuation})
	})
	requirePermanent(t, err)
	assert.Contains(t, err.Error(), "other filters")
	assert.Zero(t, n)
	next, err := p.ListInstancesPage(ctx, duroxide.InstancePageQuery{PageSize: 20, Status: duroxide.StatusPending, Continuation: page.Continuation})
	require.NoError(t, err, "the same filters with another page size")
	assert.Len(t, next.Instances, 20)
}

// walkAll returns every instance of q's walk, in the walk's order.
func walkAll(t *testing.T, p *cdb.Provider, q duroxide.InstancePageQuery) (rows []duroxide.InstanceSummary, pages int, first duroxide.InstancePage) {
	t.Helper()
	for range 100 {
		page, err := p.ListInstancesPage(t.Context(), q)
		require.NoError(t, err)
		if pages == 0 {
			first = page
		}
		pages++
		rows = append(rows, page.Instances...)
		if page.Continuation == "" {
			return rows, pages, first
		}
		require.Len(t, page.Instances, q.PageSize, "every page but the last is full")
		q.Continuation = page.Continuation
	}
	require.FailNow(t, "the walk did not end")
	return nil, 0, first
}

// TestOrderedInstancePagesWalkNewestAndOldestFirst checks the ordered
// walks over 303 instances on 3 physical partitions: newest and oldest
// first, every instance once, in the order duroxide.InstanceOrder defines
// (creation time, then id), when the probe holds them all (a page is 1
// request, and the first page counts them per status) and when the service
// answers 40 documents a request (the time windows).
func TestOrderedInstancePagesWalkNewestAndOldestFirst(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		pageCap int
	}{{"one response", 0}, {"short responses", 40}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := pagesProvider(t, 3, 300, c.pageCap)
			store, _, _ := walkAll(t, p, duroxide.InstancePageQuery{PageSize: 1000})
			require.Len(t, store, 303)
			for _, order := range []duroxide.InstanceOrder{duroxide.OrderNewestFirst, duroxide.OrderOldestFirst} {
				want := slices.Clone(store)
				slices.SortFunc(want, order.Compare)
				var got []duroxide.InstanceSummary
				var pages int
				var first duroxide.InstancePage
				n := requests(p, func() { got, pages, first = walkAll(t, p, duroxide.InstancePageQuery{PageSize: 50, Order: order}) })
				require.Equal(t, ids(want), ids(got), "%s: every instance once, in order", order)
				assert.Equal(t, 7, pages, order)
				if c.pageCap == 0 {
					assert.EqualValues(t, pages, n, "%s: one request a page", order)
					assert.Equal(t, map[string]int{duroxide.StatusRunning: 3, duroxide.StatusPending: 300}, first.StatusCounts, order)
				} else {
					assert.Nil(t, first.StatusCounts, "%s: not counted when the probe holds only part", order)
				}
				running, _, _ := walkAll(t, p, duroxide.InstancePageQuery{PageSize: 2, Order: order, Status: duroxide.StatusRunning})
				assert.Equal(t, []string{"run-0", "run-1", "run-2"}, sorted(ids(running)), "%s, status Running", order)
			}
		})
	}
}

// ids returns the instance ids of rows, in order.
func ids(rows []duroxide.InstanceSummary) []string {
	out := make([]string, len(rows))
	for i, s := range rows {
		out[i] = s.InstanceID
	}
	return out
}

// sorted returns s sorted.
func sorted(s []string) []string { slices.Sort(s); return s }

// TestOrderedInstancePageOfManyCostsAFewRequests counts the requests of
// newest-first pages among 3,003 instances, more than a response holds:
// the first page is the probe and a few windows of creation time (the
// instances were created within a second or two, so the windows narrow
// to milliseconds), each next page a window or two of the width that
// filled the one before; every instance comes in order.
func TestOrderedInstancePageOfManyCostsAFewRequests(t *testing.T) {
	t.Parallel()
	// Creation times from a clock that ticks per reading: in real time,
	// pauses of the writers on a loaded machine left gaps that cost a page
	// 5 requests once (a lagging land.sh run), against 2 on a quiet one.
	p := pagesProvider(t, 1, 3000, 0, func(cfg *cdb.Config) { cfg.Now = tickingClock() })
	ctx := t.Context()
	store, _, _ := walkAll(t, p, duroxide.InstancePageQuery{PageSize: 1000})
	want := slices.Clone(store)
	slices.SortFunc(want, duroxide.OrderNewestFirst.Compare)
	q := duroxide.InstancePageQuery{PageSize: 50, Order: duroxide.OrderNewestFirst}
	var got []duroxide.InstanceSummary
	var costs []int64
	for range 5 {
		var page duroxide.InstancePage
		var err error
		costs = append(costs, requests(p, func() { page, err = p.ListInstancesPage(ctx, q) }))
		require.NoError(t, err)
		require.Len(t, page.Instances, 50)
		got = append(got, page.Instances...)
		q.Continuation = page.Continuation
	}
	assert.Equal(t, ids(want[:250]), ids(got), "the 250 newest, in order")
	t.Logf("requests per page: %v", costs)
	assert.LessOrEqual(t, costs[0], int64(8), "the first page: the probe and a few windows")
	for i, c := range costs[1:] {
		assert.LessOrEqual(t, c, int64(4), "page %d", i+2)
	}
}
