package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// TestCosmosRequestsPerPageView counts the Cosmos DB requests of one view
// of each page on cdb (the quiet provider's Usage, which nothing else
// moves), the numbers the package documentation gives: the list through
// cdb's paged listing, and through the id listing of an admin without one.
func TestCosmosRequestsPerPageView(t *testing.T) {
	s := newSite(t, dashboard.Options{PageSize: 5})
	p := shared(t).quiet
	for _, c := range []struct {
		name, path string
		want       int64
	}{
		{"list, any status, a page of 5", "/dash/", 1},
		{"list, one status", "/dash/?status=Completed", 1},
		{"list, filtered by status, name, prefix and time", "/dash/?status=Completed&name=hello&prefix=h&after=2000-01-01", 1},
		{"instance, one execution, no child", instancePath(helloID), 1 + 1 + 0 + 1 + 1 + 1},
		{"instance, three executions", instancePath(eternalID), 1 + 1 + 2 + 1 + 1 + 1},
		{"instance, one child", instancePath(parentID), 1 + 1 + 0 + 1 + 1 + 1 + 1},
		{"tree of three", "/dash/tree?id=" + url.QueryEscape(leafID), 3 + 3 + 3},
		{"queues, one Pending instance", "/dash/queues", 1 + 1 + 1},
		{"health", "/dash/health", 1},
	} {
		before := p.Usage().Requests
		code, _ := s.get(c.path)
		require.Equal(t, http.StatusOK, code, c.name)
		assert.Equal(t, c.want, p.Usage().Requests-before, c.name)
	}

	ids := newSite(t, dashboard.Options{Admin: idsOnly{p}, PageSize: 5})
	for _, c := range []struct {
		name, path string
		want       int64
	}{
		{"list without a pager, any status, a page of 5", "/dash/", 2 + 5},
		{"list without a pager, one status", "/dash/?status=Completed", 1 + 5},
	} {
		before := p.Usage().Requests
		code, _ := ids.get(c.path)
		require.Equal(t, http.StatusOK, code, c.name)
		assert.Equal(t, c.want, p.Usage().Requests-before, c.name)
	}
}

// TestInstancePageOfALongHistoryReadsOnlyThePageShown counts the requests
// of an instance page whose running execution has 2,001 events (a start,
// 1,000 activities scheduled, 1,000 completed): any page of 200 reads
// that page, the last page (what it waits for), the events it refers to
// elsewhere, and the instance's other parts, 8 requests, where the whole
// history alone takes more than 20. The page names each completion's
// activity, links its schedule on its own page, and sums up the run of
// 200 schedules in one line.
func TestInstancePageOfALongHistoryReadsOnlyThePageShown(t *testing.T) {
	t.Parallel()
	a := cdbtest.NewEmulatorAccount(t, emulator.Options{})
	cfg := a.Config()
	cfg.Container = "long"
	cfg.DisableReconciler, cfg.DisableChangeFeedWakeups, cfg.Leases = true, true, cdb.LeasesInProcess
	p := a.NewProvider(t, cfg)
	ctx := t.Context()
	const id, n = "fan-out-1", 1000
	require.NoError(t, p.EnqueueStart(ctx, duroxide.StartOrchestrationItem{Instance: id, Orchestration: "FanOut", Input: "{}", ExecutionID: 1}))
	item, err := p.FetchOrchestrationItem(ctx, time.Minute, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item)
	events := []duroxide.Event{duroxide.NewEvent(1, id, 1, nil, duroxide.OrchestrationStarted{Name: "FanOut", Version: "1.0.0", Input: "{}"})}
	for i := range uint64(n) {
		events = append(events, duroxide.NewEvent(2+i, id, 1, nil, duroxide.ActivityScheduled{Name: "Charge", Input: strconv.FormatUint(i, 10)}))
	}
	for i := range uint64(n) {
		events = append(events, duroxide.NewEvent(2+n+i, id, 1, duroxide.Uint64Ptr(2+i), duroxide.ActivityCompleted{Result: "ok"}))
	}
	v := duroxide.CurrentBuildVersion()
	md := duroxide.ExecutionMetadata{Status: duroxide.StringPtr(duroxide.StatusRunning), OrchestrationName: duroxide.StringPtr("FanOut"),
		OrchestrationVersion: duroxide.StringPtr("1.0.0"), PinnedDuroxideVersion: &v}
	require.NoError(t, p.AckOrchestrationItem(ctx, item.LockToken, 1, events, nil, nil, md, nil))

	s := newSite(t, dashboard.Options{Admin: p})
	whole := requests(p, func() {
		all, err := p.ReadHistoryWithExecutionID(ctx, id, 1)
		require.NoError(t, err)
		require.Len(t, all, 2*n+1)
	})
	assert.Greater(t, whole, int64(20), "the whole history")
	for _, page := range []int{1, 2, 6, 11} {
		var body string
		n := requests(p, func() {
			var code int
			code, body = s.get(instancePath(id) + "&hpage=" + strconv.Itoa(page))
			require.Equal(t, http.StatusOK, code)
		})
		lastPage := 1 // the last page, read besides the page shown
		if page == 11 {
			lastPage = 0
		}
		assert.EqualValues(t, 1+lastPage+1+1+1+1+1+1, n, "page %d: the page, the last page, the events referred to, the instance's point read, executions, children, KV, queue messages", page)
		assert.Contains(t, body, "2001 event(s)", "page %d", page)
		assert.Contains(t, body, fmt.Sprintf("page %d of 11", page))
		if page == 2 {
			assert.Contains(t, body, "<strong>ActivityScheduled</strong> <span class=\"ev-name\">Charge</span> ×200", "a run of like events in one line")
		}
		if page == 6 {
			assert.Regexp(t, `<strong class="ev-kind">ActivityCompleted</strong> <span class="ev-name">Charge</span> <a class="meta" href="/dash/instance\?id=fan-out-1&amp;exec=1&amp;hpage=1#e2">for #2</a>`, body,
				"a completion names its activity and links its schedule on page 1")
		}
	}
}
