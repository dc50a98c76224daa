package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// instancePath is the page of id.
func instancePath(id string) string { return "/dash/instance?id=" + url.QueryEscape(id) }

// hrefs returns the unescaped href attributes of body.
func hrefs(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// idsLinked returns the instance ids the page links to, in order.
func idsLinked(t *testing.T, body string) []string {
	t.Helper()
	var ids []string
	for _, h := range hrefs(body) {
		if rest, ok := strings.CutPrefix(h, "/dash/instance?"); ok {
			q, err := url.ParseQuery(rest)
			require.NoError(t, err)
			ids = append(ids, q.Get("id"))
		}
	}
	return ids
}

// nextLink returns the list's next-page link (rel="next"), "" on the last
// page.
func nextLink(body string) string {
	m := regexp.MustCompile(`<a rel="next" href="([^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// workload is every instance of the fixture's workload.
var workload = []string{helloID, failID, parentID, childID, leafID, waitID, eternalID, oddID, scriptID, chattyID, pendingID}

// rowIDs returns the ids of the list's rows, in order.
func rowIDs(t *testing.T, body string) []string {
	t.Helper()
	var ids []string
	for _, m := range regexp.MustCompile(`<td class="id"><a href="/dash/instance\?id=([^"]*)"`).FindAllStringSubmatch(body, -1) {
		id, err := url.QueryUnescape(html.UnescapeString(m[1]))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func TestInstancesPageListsTheWorkloadWithStatuses(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get("/dash/")
	require.Equal(t, http.StatusOK, code, body)
	rows := rowIDs(t, body)
	for _, id := range workload {
		assert.Contains(t, rows, id)
	}
	assert.Contains(t, body, `st-failed">Failed<`)
	assert.Contains(t, body, `st-running">Running<`)
}

func TestInstancesPageFiltersByStatusNamePrefixAndCreationTime(t *testing.T) {
	t.Parallel()
	t.Run("the provider's pager", func(t *testing.T) {
		t.Parallel()
		checkListFilters(t, newSite(t, dashboard.Options{}))
	})
	t.Run("the id listing", func(t *testing.T) {
		t.Parallel()
		checkListFilters(t, newSite(t, dashboard.Options{Admin: idsOnly{shared(t).quiet}}))
	})
}

// checkListFilters checks the list's filters on s.
func checkListFilters(t *testing.T, s *site) {
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"status=Failed", []string{failID}},
		{"status=Running", []string{waitID}},
		{"status=Pending", []string{pendingID}},
		{"name=eterna", []string{eternalID}},
		{"prefix=" + url.QueryEscape("parent-1/"), []string{childID, leafID}},
		{"prefix=parent&name=Leaf", []string{leafID}},
		{"after=" + url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), nil},
		{"before=2000-01-01", nil},
	} {
		code, body := s.get("/dash/?" + c.query)
		require.Equal(t, http.StatusOK, code, c.query)
		if c.want == nil {
			assert.Contains(t, body, "No instance matches", c.query)
			continue
		}
		rows := rowIDs(t, body)
		for _, id := range workload {
			// The action tests add instances of their own meanwhile.
			assert.Equal(t, slices.Contains(c.want, id), slices.Contains(rows, id), "%s: %q", c.query, id)
		}
	}
	code, body := s.get("/dash/?after=yesterday")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "is not a time")
}

// idsOnly hides every capability of an admin but ProviderAdmin, such as
// duroxide.InstancePager: the list then pages over the id listing.
type idsOnly struct{ duroxide.ProviderAdmin }

// TestInstancesPagePagesThroughEveryInstanceOnce follows the next-page
// links with a page of 3, over cdb's paged listing (the continuation) and
// over an admin without one (the id listing and its cursor).
func TestInstancesPagePagesThroughEveryInstanceOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		admin duroxide.ProviderAdmin
		param string
	}{
		{"the provider's pager", shared(t).quiet, "cont="},
		{"the id listing", idsOnly{shared(t).quiet}, "cursor="},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSite(t, dashboard.Options{Admin: c.admin, PageSize: 3})
			seen := map[string]int{}
			path := "/dash/"
			pages := 0
			for path != "" {
				pages++
				require.Less(t, pages, 20, "too many pages")
				code, body := s.get(path)
				require.Equal(t, http.StatusOK, code)
				rows := rowIDs(t, body)
				assert.LessOrEqual(t, len(rows), 3)
				for _, id := range rows {
					seen[id]++
				}
				path = nextLink(body)
				if path != "" {
					assert.Contains(t, path, c.param)
				}
			}
			for _, id := range workload {
				assert.Contains(t, seen, id)
			}
			for id, n := range seen {
				assert.Equal(t, 1, n, id)
			}
		})
	}
}

// TestInstancesPageNextLinkKeepsARelativeTime follows the next page of a
// list filtered by a relative creation time ("720h"): the link carries the
// instant it stood for, so the continuation meets the same filters.
func TestInstancesPageNextLinkKeepsARelativeTime(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{PageSize: 2})
	code, body := s.get("/dash/?after=720h")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, rowIDs(t, body), 2)
	next := nextLink(body)
	require.Contains(t, next, "cont=", "a next page")
	u, err := url.Parse(next)
	require.NoError(t, err)
	_, err = time.Parse(time.RFC3339Nano, u.Query().Get("after"))
	require.NoError(t, err, "the next link's after is an instant")
	code, body = s.get(next)
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, body, `class="error"`)
	assert.NotEmpty(t, rowIDs(t, body))
}

func TestInstancePageShowsStatusInputOutputAndTimeline(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath(helloID))
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{
		`st-completed">Completed<`, `>World</pre>`, `<h3>Output</h3><pre class="value">Hello, World!</pre>`,
		`<strong class="ev-kind">OrchestrationStarted</strong>`,
		`<strong class="ev-kind">ActivityScheduled</strong> <span class="ev-name">Greet</span>`,
		`<strong class="ev-kind">ActivityCompleted</strong>`, `<a class="meta" href="#e2">for #2</a>`,
		`<strong class="ev-kind">OrchestrationCompleted</strong>`, "took ", "Z</time>", " ago</span>",
	} {
		assert.Contains(t, body, want)
	}
}

func TestFailedInstanceShowsItsErrorDetails(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath(failID))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `st-failed">Failed<`)
	assert.Contains(t, body, "boom: the &lt;disk&gt; is full")
	assert.Contains(t, body, `<strong class="ev-kind">ActivityFailed</strong>`)
	assert.NotContains(t, body, "<disk>")
}

func TestRunningInstanceShowsCustomStatusAndKV(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath(waitID))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "waiting for &lt;b&gt;approval&lt;/b&gt; &amp;")
	assert.Contains(t, body, "<td>stage</td><td><code>approval &lt;pending&gt;</code></td>")
	assert.Contains(t, body, `<strong class="ev-kind">ExternalSubscribed</strong> <span class="ev-name">approve</span>`)
	assert.Contains(t, body, `<h3>Input</h3><p class="meta">(empty)</p>`)
}

func TestContinuedAsNewInstanceListsItsExecutions(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath(eternalID))
	require.Equal(t, http.StatusOK, code)
	for e := 1; e <= 3; e++ {
		assert.Contains(t, hrefs(body), "/dash/instance?id=eternal-1&exec="+strconv.Itoa(e)+"#history")
	}
	assert.Contains(t, body, "History of execution 3")
	code, body = s.get(instancePath(eternalID) + "&exec=1")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "History of execution 1")
	assert.Contains(t, body, `<strong class="ev-kind">OrchestrationContinuedAsNew</strong>`)
}

func TestParentLinksToItsSubOrchestrationsAndTheTree(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	_, body := s.get(instancePath(parentID))
	assert.Contains(t, idsLinked(t, body), childID, "the children section and the SubOrchestrationScheduled event")
	_, body = s.get(instancePath(childID))
	links := idsLinked(t, body)
	assert.Contains(t, links, parentID, "the parent")
	assert.Contains(t, links, leafID, "the child")
	code, body := s.get("/dash/tree?id=" + url.QueryEscape(leafID))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, []string{parentID, childID, leafID}, idsLinked(t, body), "root first, depth first")
	assert.Contains(t, body, `<li class="d2" aria-current="true">`)
}

func TestScriptIDIsRenderedAsText(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	for _, path := range []string{"/dash/", instancePath(scriptID)} {
		code, body := s.get(path)
		require.Equal(t, http.StatusOK, code)
		assert.NotContains(t, body, "<script>")
		assert.NotContains(t, body, "<i>script")
		assert.Contains(t, body, "&#34;&lt;script&gt;alert(\\&#34;x\\&#34;)&lt;/script&gt;&#34;", "quoted (it holds a double quote) and escaped")
	}
}

func TestOddIDIsAddressableFromTheListAndShownQuoted(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	_, body := s.get("/dash/?prefix=" + url.QueryEscape("odd/"))
	var link string
	for _, h := range hrefs(body) {
		if strings.HasPrefix(h, "/dash/instance?") {
			link = h
		}
	}
	require.NotEmpty(t, link)
	code, page := s.get(link)
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, `&#34;odd/#?%25 id\twith tab&#34;`, "quoted, the tab escaped")
	assert.Contains(t, page, `st-completed">Completed<`)
}

func TestUnknownInstanceIs404(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath("no such\x01instance"))
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, `&#34;no such\x01instance&#34; not found`)
}

func TestLongHistoryIsPaged(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{HistoryPageSize: 25})
	code, body := s.get(instancePath(chattyID))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "62 event(s); page 1 of 3")
	assert.Equal(t, 25, strings.Count(body, `<li id="e`))
	assert.Contains(t, body, `id="e1"`)
	code, body = s.get(instancePath(chattyID) + "&hpage=3")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 12, strings.Count(body, `<li id="e`))
	assert.Contains(t, body, `id="e62"`)
	assert.Contains(t, body, "← Earlier events")
}

func TestQueuesPageShowsDepthsAndMetricsOnRequest(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, body := s.get("/dash/queues")
	require.Equal(t, http.StatusOK, code)
	assert.Regexp(t, `<tr><td>Orchestrator</td><td>\d+</td><td>\d+</td><td>\d+</td><td>`, body, "ready, locked, delayed")
	assert.Regexp(t, `<tr><td>Worker</td><td>\d+</td><td>\d+</td><td>\d+</td><td>`, body)
	assert.Contains(t, body, "a finished instance's too: counted until it fires", "says how Delayed counts the timers of finished instances, as cdb-admin queues does")
	assert.Contains(t, body, "Count instances, executions and events")
}

// TestQueuesMetricsAreConfirmedCachedAndCosted checks the gate on the
// totals (a read of every document): the link asks first and costs
// nothing; the confirmed count shows what it cost; the next views reuse
// it for free; a read-write handler's signed-in operator skips the
// question. Not parallel: it counts the quiet provider's requests.
func TestQueuesMetricsAreConfirmedCachedAndCosted(t *testing.T) {
	p := shared(t).quiet
	s := newSite(t, dashboard.Options{})
	var body string
	n := requests(p, func() { _, body = s.get("/dash/queues?metrics=1") })
	assert.Contains(t, body, "reads every instance, execution and history document")
	assert.Contains(t, body, `name="confirm" value="1"`)
	assert.NotContains(t, body, "<dt>Executions</dt>")
	assert.EqualValues(t, 1+1+1, n, "asking costs the page alone")
	_, body = s.get("/dash/queues?metrics=1&confirm=1")
	assert.Regexp(t, `<dt>Instances</dt><dd>\d+ <span class="meta">\(\d+ Pending\)</span></dd>`, body)
	assert.Regexp(t, `Counted just now \(about \d+ requests and [\d.]+k? RU\)`, body)
	n = requests(p, func() { _, body = s.get("/dash/queues") })
	assert.Regexp(t, `Counted \S+ ago`, body, "the count is reused")
	assert.EqualValues(t, 1+1+1, n, "a cached count costs nothing")

	rw := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	_, body = rw.do(http.MethodGet, "/dash/queues?metrics=1", nil, bearer)
	assert.Contains(t, body, "<dt>Executions</dt>", "an authenticated operator of a read-write dashboard is not asked")
}

// requests returns the Cosmos DB requests p made during call.
func requests(p interface{ Usage() cdb.Usage }, call func()) int64 {
	before := p.Usage().Requests
	call()
	return p.Usage().Requests - before
}

func TestPendingInstanceIsShownWithItsReason(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	reason := `orchestration &#34;Procss&#34; is not registered on runtime `
	for _, path := range []string{"/dash/", "/dash/queues", instancePath(pendingID)} {
		code, body := s.get(path)
		require.Equal(t, http.StatusOK, code, path)
		if path != "/dash/queues" {
			assert.Contains(t, body, `st-pending">Pending<`, path)
		}
		assert.Contains(t, body, reason, path)
	}
	_, body := s.get(instancePath(pendingID))
	assert.NotContains(t, body, "History of execution")
}

func TestHealthPageChartsTheUsageRates(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{SampleInterval: 20 * time.Millisecond})
	for range 3 {
		s.get("/dash/")
		time.Sleep(30 * time.Millisecond)
	}
	code, body := s.get("/dash/health")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "answering")
	assert.Contains(t, body, "<polyline points=")
	assert.Contains(t, body, "req/min")
}

func TestHealthPageIsAbsentWithoutACosmosProvider(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{Admin: adminOnly{shared(t).quiet}})
	code, _ := s.get("/dash/health")
	assert.Equal(t, http.StatusNotFound, code)
	code, body := s.get(instancePath(helloID))
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `st-completed">Completed<`)
	assert.NotContains(t, body, "Health &amp; cost")
}

// adminOnly hides everything of a provider but ProviderAdmin.
type adminOnly struct{ duroxide.ProviderAdmin }

func TestNewHandlerRefusesReadWriteWithoutAuthentication(t *testing.T) {
	t.Parallel()
	_, err := dashboard.NewHandler(dashboard.Options{Admin: shared(t).quiet, ReadWrite: true})
	assert.ErrorIs(t, err, dashboard.ErrNoAuthentication)
	_, err = dashboard.NewHandler(dashboard.Options{})
	assert.ErrorIs(t, err, dashboard.ErrNoAdmin)
}

// csrfToken reads the form token of a page.
func csrfToken(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "no csrf field")
	return m[1]
}

const token = "s3cret-token"

var bearer = http.Header{"Authorization": {"Bearer " + token}}

func TestReadOnlyHandlerRefusesEveryAction(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{BearerToken: token})
	_, body := s.get(instancePath(waitID))
	assert.NotContains(t, body, "/dash/action/")
	for _, a := range []string{"raise", "cancel", "delete", "prune"} {
		code, _ := s.do(http.MethodGet, "/dash/action/"+a+"?id="+waitID, nil, bearer)
		assert.Equal(t, http.StatusForbidden, code, a)
		code, body := s.post("/dash/action/"+a, url.Values{"id": {waitID}, "name": {"approve"}}, bearer)
		assert.Equal(t, http.StatusForbidden, code, a)
		assert.Contains(t, body, "read-only")
	}
	assertRunning(t, waitID)
}

func TestUnauthenticatedActionIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	code, _ := s.get("/dash/action/delete?id=" + helloID)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = s.post("/dash/action/delete", url.Values{"id": {helloID}}, http.Header{"Authorization": {"Bearer wrong"}})
	assert.Equal(t, http.StatusForbidden, code)
	hook := newSite(t, dashboard.Options{ReadWrite: true, Authorize: func(r *http.Request) error {
		if r.Header.Get("X-User") == "ops" {
			return nil
		}
		return errors.New("who are you?")
	}})
	code, body := hook.post("/dash/action/delete", url.Values{"id": {helloID}}, nil)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "who are you?")
	assertExists(t, helloID)
}

func TestActionWithoutTheFormTokenOrFromAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	// Signed in through the form: the session cookie needs the form token.
	code, page := s.get("/dash/signin")
	require.Equal(t, http.StatusOK, code)
	code, _ = s.post("/dash/signin", url.Values{"csrf": {csrfToken(t, page)}, "token": {token}, "next": {"/"}}, nil)
	require.Equal(t, http.StatusSeeOther, code)
	code, body := s.post("/dash/action/delete", url.Values{"id": {helloID}}, nil)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "form token")
	_, page = s.get("/dash/action/delete?id=" + helloID)
	tok := csrfToken(t, page)
	code, _ = s.post("/dash/action/delete", url.Values{"id": {helloID}, "csrf": {tok + "0"}}, nil)
	assert.Equal(t, http.StatusForbidden, code)
	// Another origin is refused, with the bearer header too.
	cross := http.Header{"Authorization": bearer["Authorization"], "Sec-Fetch-Site": {"cross-site"}}
	code, body = s.post("/dash/action/delete", url.Values{"id": {helloID}, "csrf": {tok}}, cross)
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "cross-origin")
	evil := http.Header{"Authorization": bearer["Authorization"], "Origin": {"https://evil.example"}}
	code, _ = s.post("/dash/action/delete", url.Values{"id": {helloID}, "csrf": {tok}}, evil)
	assert.Equal(t, http.StatusForbidden, code)
	assertExists(t, helloID)
}

// TestBearerAuthenticatedPostNeedsNoFormToken scripts an action as README
// says: a POST with only the Authorization: Bearer header (no cookie, so
// nothing a browser could forge) runs without the form token; a wrong
// token is refused.
func TestBearerAuthenticatedPostNeedsNoFormToken(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := "scripted-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Hello", "script")
	_, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusCompleted)
	code, _ := s.post("/dash/action/delete", url.Values{"id": {id}}, http.Header{"Authorization": {"Bearer nope"}})
	assert.Equal(t, http.StatusForbidden, code)
	assertExists(t, id)
	code, body := s.post("/dash/action/delete", url.Values{"id": {id}}, bearer)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Deleted 1 instance(s)")
}

// awaitSeen waits until the dashboard's provider (another process than
// the runtime's, with no session token of its writes) reads id with
// status: on a lagging account (CDB_EMULATOR_REPLICA_LAG) its reads may
// trail the runtime's writes a little, and the actions read the instance
// first.
func awaitSeen(t *testing.T, id, status string) {
	t.Helper()
	assert.Eventually(t, func() bool {
		info, err := shared(t).quiet.GetInstanceInfo(context.Background(), id)
		return err == nil && info.Status == status
	}, 10*time.Second, 10*time.Millisecond, "the dashboard's provider does not read %s as %s", id, status)
}

// start starts an instance on the fixture's runtime.
func start(t *testing.T, id, name, in string) {
	t.Helper()
	f := shared(t)
	require.NoError(t, f.client.StartOrchestration(context.Background(), id, name, in))
}

func assertRunning(t *testing.T, id string) {
	t.Helper()
	info, err := shared(t).quiet.GetInstanceInfo(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "Running", info.Status, id)
}

func assertExists(t *testing.T, id string) {
	t.Helper()
	_, err := shared(t).quiet.GetInstanceInfo(context.Background(), id)
	assert.NoError(t, err, id)
}

// confirmAndPost opens an action's confirmation page, then posts its
// form with fields, as a browser would.
func confirmAndPost(t *testing.T, s *site, action, id string, fields url.Values, header http.Header) (int, string) {
	t.Helper()
	code, page := s.do(http.MethodGet, "/dash/action/"+action+"?id="+url.QueryEscape(id), nil, header)
	require.Equal(t, http.StatusOK, code, page)
	form := url.Values{"id": {id}, "csrf": {csrfToken(t, page)}}
	for k, v := range fields {
		form[k] = v
	}
	h := http.Header{"Origin": {s.srv.URL}}
	for k, v := range header {
		h[k] = v
	}
	return s.post("/dash/action/"+action, form, h)
}

func TestRaiseEventActionCompletesTheWaiter(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token, Client: shared(t).client})
	id := "raise/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Waiter", "")
	_, err := shared(t).client.WaitForStatusChange(context.Background(), id, 0, 5*time.Millisecond, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusRunning)
	code, body := confirmAndPost(t, s, "raise", id, url.Values{"name": {"approve"}, "data": {`"yes"`}}, bearer)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Event approve raised")
	st, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, runtime.StatusCompleted, st.Kind)
	assert.Equal(t, `"yes"`, st.Output)
}

func TestCancelActionFailsTheInstance(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := "cancel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Waiter", "")
	_, err := shared(t).client.WaitForStatusChange(context.Background(), id, 0, 5*time.Millisecond, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusRunning)
	code, body := confirmAndPost(t, s, "cancel", id, url.Values{"reason": {"operator says no"}}, bearer)
	require.Equal(t, http.StatusOK, code, body)
	st, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, runtime.StatusFailed, st.Kind)
	require.Error(t, st.Err())
	assert.Contains(t, st.Err().Error(), "operator says no")
}

func TestDeleteActionAfterSigningInRemovesTheTree(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := "delete-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Hello", "bye")
	_, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusCompleted)
	// Sign in through the form: the session cookie replaces the header.
	code, page := s.get("/dash/signin?next=" + url.QueryEscape("/instance?id="+id))
	require.Equal(t, http.StatusOK, code)
	code, _ = s.post("/dash/signin", url.Values{"csrf": {csrfToken(t, page)}, "token": {"nope"}, "next": {"/"}}, nil)
	assert.Equal(t, http.StatusForbidden, code)
	code, _ = s.post("/dash/signin", url.Values{"csrf": {csrfToken(t, page)}, "token": {token}, "next": {"/instance?id=" + id}}, nil)
	require.Equal(t, http.StatusSeeOther, code)
	code, body := confirmAndPost(t, s, "delete", id, nil, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Deleted 1 instance(s)")
	code, _ = s.get(instancePath(id))
	assert.Equal(t, http.StatusNotFound, code)
}

func TestPruneActionKeepsTheNewestExecutions(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := "prune-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Eternal", "1")
	_, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusCompleted)
	code, body := confirmAndPost(t, s, "prune", id, url.Values{"keep": {"1"}}, bearer)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Pruned 2 execution(s)")
	execs, err := shared(t).quiet.ListExecutions(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3}, execs)
	code, body = confirmAndPost(t, s, "prune", id, url.Values{"keep": {"zero"}}, bearer)
	assert.Equal(t, http.StatusUnprocessableEntity, code)
	assert.Contains(t, body, "positive number")
}

func TestMountedUnderItsPrefixOnly(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	code, _ := s.get("/dash")
	assert.Equal(t, 3, code/100, "redirected to /dash/")
	code, _ = s.get("/dash/nope")
	assert.Equal(t, http.StatusNotFound, code)
	code, css := s.get("/dash/static/style.css")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, css, "@media (max-width: 640px)")
}

// rowCreated returns the creation times of the list's rows, in order (the
// first <time> of each row, UTC text that sorts as time does).
func rowCreated(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<td class="id"><a href="/dash/instance\?id=.*?<time>([^<]*)</time>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestInstancesPageListsNewestFirstAndSorts checks the list's order: newest
// first by default, oldest first on request, over every page.
func TestInstancesPageListsNewestFirstAndSorts(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	for _, c := range []struct {
		query string
		less  func(a, b string) bool
	}{
		{"", func(a, b string) bool { return a >= b }},
		{"?order=oldest", func(a, b string) bool { return a <= b }},
	} {
		code, body := s.get("/dash/" + c.query)
		require.Equal(t, http.StatusOK, code)
		times := rowCreated(body)
		require.GreaterOrEqual(t, len(times), len(workload), c.query)
		for i := 1; i < len(times); i++ {
			assert.True(t, c.less(times[i-1], times[i]), "%s: row %d created %s after row %d created %s", c.query, i, times[i], i-1, times[i-1])
		}
	}
	code, body := s.get("/dash/")
	require.Equal(t, http.StatusOK, code)
	rows := rowIDs(t, body)
	require.Contains(t, rows, pendingID)
	assert.Less(t, slices.Index(rows, pendingID), slices.Index(rows, helloID), "the Pending instance, started last, comes before the first one started")
}

// TestInstancesPageCountsPerStatusInTabs checks the status tabs' counts
// (the page's StatusCounts) and that each row shows its failure's first
// line and custom status.
func TestInstancesPageCountsPerStatusInTabs(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	tab := func(body, status string) string {
		m := regexp.MustCompile(`data-status="` + status + `"[^>]*>[^<]*<span class="count">(\d+)</span>`).FindStringSubmatch(body)
		if m == nil {
			return "none"
		}
		return m[1]
	}
	code, body := s.get("/dash/?prefix=parent-1")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "3", tab(body, ""), "All")
	assert.Equal(t, "3", tab(body, "Completed"))
	assert.Equal(t, "0", tab(body, "Failed"))
	code, body = s.get("/dash/?name=Fails&status=Failed")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "1", tab(body, "Failed"))
	assert.Equal(t, "1", tab(body, ""), "All counts every status")
	assert.Equal(t, []string{failID}, rowIDs(t, body))
	assert.Contains(t, body, `boom: the &lt;disk&gt; is full`, "the failure's first line in the row")
	code, body = s.get("/dash/?prefix=" + waitID)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `class="custom oneline" title="waiting for &lt;b&gt;approval&lt;/b&gt; &amp;"`, "the custom status in the row")
}

// raiseEarly runs a TwoEvents instance (waits for "a", then "b") as id on
// the fixture's runtime and raises "b" while it waits for "a", then "a":
// its history holds a "b" event no wait was pending for, and it waits for
// "b".
func raiseEarly(t *testing.T, id string) {
	t.Helper()
	f := shared(t)
	ctx := context.Background()
	start(t, id, "TwoEvents", "")
	has := func(typ duroxide.EventType, name string) func() bool {
		return func() bool {
			h, err := f.quiet.ReadHistory(ctx, id)
			if err != nil {
				return false // not started yet
			}
			for _, ev := range h {
				switch k := ev.Kind.(type) {
				case duroxide.ExternalSubscribed:
					if typ == ev.Type() && k.Name == name {
						return true
					}
				case duroxide.ExternalEvent:
					if typ == ev.Type() && k.Name == name {
						return true
					}
				}
			}
			return false
		}
	}
	require.Eventually(t, has(duroxide.EventTypeExternalSubscribed, "a"), time.Minute, 5*time.Millisecond)
	require.NoError(t, f.client.RaiseEvent(ctx, id, "b", "early"))
	require.Eventually(t, has(duroxide.EventTypeExternalEvent, "b"), time.Minute, 5*time.Millisecond)
	require.NoError(t, f.client.RaiseEvent(ctx, id, "a", "first"))
	require.Eventually(t, has(duroxide.EventTypeExternalSubscribed, "b"), time.Minute, 5*time.Millisecond)
}

func TestAnEventRaisedBeforeItsWaitIsMarkedDropped(t *testing.T) {
	t.Parallel()
	raiseEarly(t, "dropped-event-1")
	s := newSite(t, dashboard.Options{})
	code, body := s.get(instancePath("dropped-event-1"))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 1, strings.Count(body, `<div class="dropped"`), body)
	assert.Regexp(t, `(?s)<strong class="ev-kind">ExternalEvent</strong> <span class="ev-name">b</span>.*?<div class="dropped"[^>]*>dropped: no wait was pending</div>\s*<code class="value">early</code>`, body)
}

// startBusy starts a Busy instance and waits until its Hold activity is
// locked by a worker (the instance page says so).
func startBusy(t *testing.T, s *site) string {
	t.Helper()
	id := "busy-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Busy", "x")
	t.Cleanup(func() { _ = shared(t).client.CancelInstance(context.Background(), id, "test over") })
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		_, body := s.get(instancePath(id))
		if strings.Contains(body, "held by lock") {
			return id
		}
		require.True(t, time.Now().Before(deadline), "the Hold activity was never locked:\n%s", body)
	}
}

// TestPendingWorkPanelShowsWaitsActivitiesAndTimers checks the instance
// page's pending work for a Busy instance: the event it waits for, the
// activity in flight with its attempt and lock, the timer with the time
// until it fires.
func TestPendingWorkPanelShowsWaitsActivitiesAndTimers(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	id := startBusy(t, s)
	_, body := s.get(instancePath(id))
	section := body[strings.Index(body, `id="pending"`):]
	section = section[:strings.Index(section, "</section>")]
	assert.Regexp(t, `(?s)Waiting for events.*event <strong>go</strong>`, section)
	assert.Regexp(t, `(?s)Activities in flight.*<strong>Hold</strong>.*<td>1</td>.*held by lock <code>`, section, "attempt 1, locked")
	assert.Regexp(t, `<strong>fires in (5h59m|6h0m)</strong>`, section)
	_, done := s.get(instancePath(helloID))
	assert.NotContains(t, done, `id="pending"`, "a finished instance has no pending work")
}

// TestFailureNamesTheActivityAndLinksItsEvent checks a failed instance's
// summary: the activity whose failure ended it, linked to its event, and
// the ActivityFailed row's activity name.
func TestFailureNamesTheActivityAndLinksItsEvent(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	_, body := s.get(instancePath(failID))
	assert.Regexp(t, `Failed in activity <strong>Boom</strong>: <a href="#e\d+">event #\d+</a>`, body)
	assert.Regexp(t, `<strong class="ev-kind">ActivityFailed</strong> <span class="ev-name">Boom</span>`, body)
}

// TestActionsRefuseMissingAndFinishedInstances checks that raise and
// cancel are refused, on their confirmation page and on the post, for an
// instance that does not exist (404) or has finished (409), and that
// nothing is written.
func TestActionsRefuseMissingAndFinishedInstances(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	p := shared(t).quiet
	for _, action := range []string{"raise", "cancel"} {
		for _, c := range []struct {
			id   string
			code int
			text string
		}{
			{"no-such-instance", http.StatusNotFound, "not found"},
			{helloID, http.StatusConflict, "is Completed"},
			{failID, http.StatusConflict, "is Failed"},
		} {
			code, body := s.do(http.MethodGet, "/dash/action/"+action+"?id="+url.QueryEscape(c.id), nil, bearer)
			assert.Equal(t, c.code, code, "%s %s: confirmation page", action, c.id)
			assert.Contains(t, body, c.text, "%s %s", action, c.id)
			code, _ = s.post("/dash/action/"+action, url.Values{"id": {c.id}, "name": {"approve"}}, bearer)
			assert.Equal(t, c.code, code, "%s %s: post", action, c.id)
		}
	}
	depths, err := p.GetQueueDepths(context.Background())
	require.NoError(t, err)
	execs, err := p.ListExecutions(context.Background(), "no-such-instance")
	require.NoError(t, err)
	assert.Empty(t, execs, "nothing was created for the missing id")
	_ = depths
	msgs, err := p.ListInstanceMessages(context.Background(), "no-such-instance")
	require.NoError(t, err)
	assert.Empty(t, msgs, "no message left for the missing id")
}

// TestRaiseFormListsTheAwaitedEventsAndWarnsOnOthers checks the raise
// form: it lists and prefills the event the instance waits for, and a
// name it does not wait for is refused with a warning unless raised
// anyway.
func TestRaiseFormListsTheAwaitedEventsAndWarnsOnOthers(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := startBusy(t, s)
	code, page := s.do(http.MethodGet, "/dash/action/raise?id="+url.QueryEscape(id), nil, bearer)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `<a class="awaited"`)
	assert.Contains(t, page, `name="name" value="go"`, "the only awaited event is prefilled")
	code, body := s.post("/dash/action/raise", url.Values{"id": {id}, "name": {"Go"}}, bearer)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, body, "does not wait for an event Go")
	assert.Contains(t, body, `name="anyway"`)
	code, body = s.post("/dash/action/raise", url.Values{"id": {id}, "name": {"Go"}, "anyway": {"on"}}, bearer)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Event Go raised")
}

// TestDeleteConfirmationListsWhatItRemoves checks that the delete page
// lists the instance's tree and its executions before anything is
// deleted.
func TestDeleteConfirmationListsWhatItRemoves(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	code, page := s.do(http.MethodGet, "/dash/action/delete?id="+url.QueryEscape(parentID), nil, bearer)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "It removes 3 instance(s), the 1 execution(s) of this one")
	removes := page[strings.Index(page, `class="tree removes"`):]
	assert.Equal(t, []string{parentID, childID, leafID}, idsLinked(t, removes[:strings.Index(removes, "</ul>")]))
	assertExists(t, parentID)
}

// TestHardeningOfLinksIDsAndTokens checks the smaller defences: a sign-in
// return path with a tab goes home, an empty id is 400 and an over-long
// one 404 (not 502), the CSP forbids <base>, and wrong tokens are
// rate-limited.
func TestHardeningOfLinksIDsAndTokens(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	code, page := s.get("/dash/signin?next=/%09/evil.example/x")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `name="next" value="/"`, "a return path with a tab is refused")
	for _, page := range []string{"instance", "tree", "history.json"} {
		code, _ = s.get("/dash/" + page + "?id=")
		assert.Equal(t, http.StatusBadRequest, code, "an empty id on %s", page)
		code, _ = s.get("/dash/" + page + "?id=" + strings.Repeat("x", 5000))
		assert.Equal(t, http.StatusNotFound, code, "an over-long id on %s", page)
	}
	resp, err := s.client.Get(s.srv.URL + "/dash/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "base-uri 'none'")
	wrong := http.Header{"Authorization": {"Bearer guess"}}
	for range 10 {
		code, _ = s.do(http.MethodGet, "/dash/action/delete?id="+helloID, nil, wrong)
		require.Equal(t, http.StatusForbidden, code)
	}
	code, _ = s.do(http.MethodGet, "/dash/action/delete?id="+helloID, nil, bearer)
	assert.Equal(t, http.StatusTooManyRequests, code, "the right token too, from this address, for a minute")
}

// TestAutoRefreshIsOptIn checks the meta refresh: absent by default,
// present with ?refresh=N (kept within 5..3600 seconds).
func TestAutoRefreshIsOptIn(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	_, body := s.get("/dash/queues")
	assert.NotContains(t, body, `http-equiv="refresh"`)
	assert.Contains(t, body, `href="/dash/queues?refresh=10"`)
	_, body = s.get("/dash/queues?refresh=1")
	assert.Contains(t, body, `<meta http-equiv="refresh" content="5">`)
}

// TestSignInAndOutLinks checks the header of a read-write dashboard with
// a token: a sign-in link back to the page, then, signed in, a sign-out
// button that ends the session.
func TestSignInAndOutLinks(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	_, body := s.get("/dash/queues")
	assert.Contains(t, body, `<a href="/dash/signin?next=%2Fqueues">Sign in</a>`)
	_, page := s.get("/dash/signin")
	code, _ := s.post("/dash/signin", url.Values{"csrf": {csrfToken(t, page)}, "token": {token}, "next": {"/queues"}}, nil)
	require.Equal(t, http.StatusSeeOther, code)
	_, body = s.get("/dash/queues")
	assert.Contains(t, body, "Sign out")
	assert.NotContains(t, body, ">Sign in<")
	code, _ = s.post("/dash/signout", url.Values{"csrf": {csrfToken(t, body)}}, nil)
	require.Equal(t, http.StatusSeeOther, code)
	_, body = s.get("/dash/queues")
	assert.Contains(t, body, ">Sign in<", "signed out")
	_, ro := newSite(t, dashboard.Options{}).get("/dash/")
	assert.NotContains(t, ro, "Sign in", "a read-only dashboard has no sign-in")
}

// TestHistoryJSONViewAndDownload checks the history's JSON: duroxide's
// events of the execution, and an attachment with &download=1; and the
// filter by kind on the instance page.
func TestHistoryJSONViewAndDownload(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{})
	resp, err := s.client.Get(s.srv.URL + "/dash/history.json?id=" + url.QueryEscape(failID) + "&download=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, `attachment; filename=history-fail-1-1.json`, resp.Header.Get("Content-Disposition"))
	var events []duroxide.Event
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&events))
	want, err := shared(t).quiet.ReadHistoryWithExecutionID(t.Context(), failID, 1)
	require.NoError(t, err)
	assert.Equal(t, want, events)

	_, body := s.get(instancePath(failID) + "&kind=ActivityFailed")
	assert.Contains(t, body, "those of kind ActivityFailed shown")
	assert.Contains(t, body, `<strong class="ev-kind">ActivityFailed</strong>`)
	assert.NotContains(t, body, `<strong class="ev-kind">ActivityScheduled</strong>`)
}
