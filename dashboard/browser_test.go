package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The browser tests drive Debian's chromium headless through chromedp
// against a dashboard served by httptest. They skip with one line when no
// chromium binary is found ($CHROMIUM, else chromium, chromium-browser,
// google-chrome on PATH). They share one browser, started by the first
// (sharedBrowser) and stopped by TestMain; each test has a tab in a
// browser context of its own (cookies, storage and cache apart, as in a
// browser of its own). They run one at a time (no t.Parallel): several at
// once on a small shared machine only make each slower.

// chromiumPath returns the browser binary, or skips the test.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("browser test skipped: no chromium binary found (apt-get install chromium, or set $CHROMIUM)")
	return ""
}

// theBrowser is the browser the tests share: its first tab's context, the
// error of its start, and what stops it (TestMain calls stopBrowser).
var theBrowser struct {
	once sync.Once
	ctx  context.Context
	err  error
	stop func()
}

// sharedBrowser returns the context of the shared headless chromium,
// starting it at the first call (or skips the test without chromium).
func sharedBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	theBrowser.once.Do(func() {
		dir, err := os.MkdirTemp("", "dashboard-chromium-")
		if err != nil {
			theBrowser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // the tests may run as root (CI containers)
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.UserDataDir(dir),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(alloc)
		theBrowser.stop = func() {
			// Cancel closes the browser and waits for its processes
			// (TestMain exits right after: none may be left unreaped).
			_ = chromedp.Cancel(ctx)
			cancelBrowser()
			cancelAlloc()
			_ = os.RemoveAll(dir)
		}
		theBrowser.ctx, theBrowser.err = ctx, chromedp.Do(ctx) // starts the browser
	})
	require.NoError(t, theBrowser.err, "starting chromium")
	return theBrowser.ctx
}

// stopBrowser stops the shared browser, if one was started.
func stopBrowser() {
	if theBrowser.stop != nil {
		theBrowser.stop()
	}
}

// browser opens a tab for t in a new browser context of the shared
// browser, with a viewport of width × 900 pixels, and returns its context
// (the tab and its browser context are closed when the test ends).
func browser(t *testing.T, width int64) context.Context {
	t.Helper()
	ctx, cancelTab := chromedp.NewContext(sharedBrowser(t), chromedp.WithNewBrowserContext())
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)))
	return ctx
}

// visit navigates to path of s and returns the HTTP status.
func visit(t *testing.T, ctx context.Context, s *site, path string) int64 {
	t.Helper()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(s.srv.URL+path))
	require.NoError(t, err)
	return resp.Status
}

// click clicks the first element sel matches and waits for the page it
// leads to, returning its HTTP status.
func click(t *testing.T, ctx context.Context, sel string) int64 {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	require.NoError(t, err, sel)
	return resp.Status
}

// text returns the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	require.NoError(t, err, sel)
	return s
}

// hrefSel is a CSS selector of the link to id's page.
func hrefSel(id string) string {
	return `a[href=` + strconv.Quote("/dash/instance?id="+url.QueryEscape(id)) + `]`
}

func TestBrowserGoesFromTheListToAnInstanceItsHistoryAndItsSubOrchestration(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/?prefix=parent"))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `td.id `+hrefSel(parentID)))
	assert.Equal(t, "Instance "+parentID, text(t, ctx, "h1"))
	assert.Contains(t, text(t, ctx, "p.history-count"), "event(s)")
	assert.Contains(t, text(t, ctx, "li.ev-sub"), "SubOrchestrationScheduled")
	// The child's link in the history's SubOrchestrationScheduled event.
	require.EqualValues(t, http.StatusOK, click(t, ctx, `li.ev-sub a.id`))
	assert.Equal(t, "Instance "+childID, text(t, ctx, "h1"))
	assert.Equal(t, parentID, text(t, ctx, "dd "+hrefSel(parentID)), "the parent link")
	require.EqualValues(t, http.StatusOK, click(t, ctx, `a[href^="/dash/tree?"]`))
	assert.Equal(t, leafID, text(t, ctx, "ul.tree li.d2 a"))
}

func TestBrowserReachesAnInstanceAndItsHistoryByKeyboardOnly(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/?prefix=hello"))
	// Tab from the top of the page until the instance's link has the
	// focus: the skip link, the navigation and the filters come first.
	focused := ""
	for range 30 {
		require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
		var err error
		focused, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.getAttribute("href") || ""`))
		require.NoError(t, err)
		if focused == "/dash/instance?id="+helloID {
			break
		}
	}
	require.Equal(t, "/dash/instance?id="+helloID, focused, "the instance link is reachable with Tab")
	resp, err := chromedp.RunResponse(ctx, chromedp.KeyEvent(kb.Enter))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, resp.Status)
	assert.Equal(t, "Instance "+helloID, text(t, ctx, "h1"))
	// The skip link is the first stop and leads to the content.
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`))
	require.NoError(t, err)
	assert.Equal(t, "Skip to content", first)
}

func TestBrowserRaisesAnEventInReadWriteMode(t *testing.T) {
	ctx := browser(t, 1280)
	f := shared(t)
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := "browser raise/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	start(t, id, "Waiter", "")
	_, err := f.client.WaitForStatusChange(context.Background(), id, 0, 5*time.Millisecond, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, id, duroxide.StatusRunning)

	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/signin?next="+url.QueryEscape("/instance?id="+id)))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), token)))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `main form button[type=submit]`), "signed in, back on the instance")
	assert.Equal(t, "Instance "+id, text(t, ctx, "h1"))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `a[href^="/dash/action/raise?"]`))
	name, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#name")))
	require.NoError(t, err)
	assert.Equal(t, "approve", name, "the event the instance waits for is prefilled")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#data"), "from the browser")))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `main form button[type=submit]`))
	assert.Contains(t, text(t, ctx, "p.ok"), "Event approve raised")
	st, err := f.client.WaitForOrchestration(context.Background(), id, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, runtime.StatusCompleted, st.Kind)
	assert.Equal(t, "from the browser", st.Output)
}

func TestBrowserReadOnlyDashboardRefusesAnAction(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/instance?id="+waitID))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('a[href*="/action/"]').length`))
	require.NoError(t, err)
	assert.Zero(t, n, "no action links")
	require.EqualValues(t, http.StatusForbidden, visit(t, ctx, s, "/dash/action/cancel?id="+waitID))
	assert.Contains(t, text(t, ctx, "p.error"), "read-only")
	assertRunning(t, waitID)
}

func TestBrowserShowsAScriptTagIDAsText(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/?prefix="+url.QueryEscape("<script")))
	assert.Equal(t, strconv.Quote(scriptID), text(t, ctx, "td.id a"))
	require.EqualValues(t, http.StatusOK, click(t, ctx, "td.id a"))
	assert.Equal(t, strconv.Quote(scriptID), text(t, ctx, "h1 .id"))
	scripts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.scripts.length`))
	require.NoError(t, err)
	assert.Zero(t, scripts, "no script element made it into the page")
	input, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("pre.value").textContent`))
	require.NoError(t, err)
	assert.Equal(t, "<i>script</i>", input, "the input shown as text, not markup")
}

// TestBrowserListsNewestFirstWithCountsPerStatus checks in the browser
// that the list starts with the newest instance, that the status tabs
// carry counts and lead to the status's list, and that a long id stays on
// one line with the whole id on hover.
func TestBrowserListsNewestFirstWithCountsPerStatus(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/"))
	created, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.list tbody tr")].map(r => r.querySelector("time").textContent)`))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(created), len(workload))
	for i := 1; i < len(created); i++ {
		assert.GreaterOrEqual(t, created[i-1], created[i], "row %d is newer than the row above it", i)
	}
	tabs, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("nav.tabs a")].map(a => [a.dataset.status, a.querySelector(".count") ? a.querySelector(".count").textContent : ""]))`))
	require.NoError(t, err)
	assert.NotEmpty(t, tabs[""], "All has a count")
	assert.NotEmpty(t, tabs["Failed"], "Failed has a count")
	require.EqualValues(t, http.StatusOK, click(t, ctx, `nav.tabs a[data-status="Failed"]`))
	statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.list tbody .badge")].map(b => b.textContent)`))
	require.NoError(t, err)
	assert.Len(t, statuses, mustAtoi(t, tabs["Failed"]), "the Failed tab lists as many as it counts")
	for _, st := range statuses {
		assert.Equal(t, "Failed", st)
	}
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/?prefix=parent-1/child"))
	box, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => { const a = document.querySelector("td.id a.oneline"); return {title: a.title, h: a.getBoundingClientRect().height, lh: parseFloat(getComputedStyle(a).lineHeight) || 20}; })()`))
	require.NoError(t, err)
	assert.Contains(t, []string{childID, leafID}, box["title"], "the whole id on hover")
	assert.Less(t, box["h"].(float64), 2*box["lh"].(float64), "the id stays on one line")
}

// mustAtoi is strconv.Atoi or a failed test.
func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, s)
	return n
}

// TestBrowserShowsPendingWorkAndRefusesActionsThatDoNothing checks in the
// browser the pending-work panel of a Busy instance, and that cancel and
// raise are refused on a finished instance and on a missing one.
func TestBrowserShowsPendingWorkAndRefusesActionsThatDoNothing(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	id := startBusy(t, s)
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/signin?next="+url.QueryEscape("/instance?id="+id)))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), token)))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `main form button[type=submit]`))
	pending, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("pending").parentElement.innerText`))
	require.NoError(t, err)
	assert.Contains(t, pending, "Waiting for events")
	assert.Contains(t, pending, "event go")
	assert.Contains(t, pending, "Hold")
	assert.Regexp(t, `held by lock \S+, \S+ left`, pending)
	assert.Regexp(t, `fires in (5h59m|6h0m)`, pending)

	for _, c := range []struct {
		path string
		code int64
		text string
	}{
		{"/dash/action/cancel?id=" + url.QueryEscape(helloID), http.StatusConflict, "is Completed"},
		{"/dash/action/raise?id=" + url.QueryEscape(failID), http.StatusConflict, "is Failed"},
		{"/dash/action/raise?id=no-such-instance", http.StatusNotFound, "not found"},
	} {
		require.EqualValues(t, c.code, visit(t, ctx, s, c.path), c.path)
		assert.Contains(t, text(t, ctx, "p.error"), c.text, c.path)
	}
}

// TestBrowserMetricsLinkAsksBeforeCounting checks in the browser that the
// queues page's totals link asks first, and that confirming counts them.
func TestBrowserMetricsLinkAsksBeforeCounting(t *testing.T) {
	ctx := browser(t, 1280)
	s := newSite(t, dashboard.Options{})
	require.EqualValues(t, http.StatusOK, visit(t, ctx, s, "/dash/queues"))
	require.EqualValues(t, http.StatusOK, click(t, ctx, `a[href="/dash/queues?metrics=1"]`))
	assert.Contains(t, text(t, ctx, ".confirm-cost"), "reads every instance, execution and history document")
	require.EqualValues(t, http.StatusOK, click(t, ctx, `.confirm-cost button[type=submit]`))
	assert.Contains(t, text(t, ctx, "dl.facts"), "Executions")
}

// TestBrowserScreenshots writes the README's screenshots when
// $DASHBOARD_SCREENSHOTS names a directory (run by hand:
// DASHBOARD_SCREENSHOTS=$PWD/../docs/dashboard go test -run Screenshots
// ./dashboard/); it is skipped otherwise, so go test never writes into the
// checkout.
func TestBrowserScreenshots(t *testing.T) {
	dir := os.Getenv("DASHBOARD_SCREENSHOTS")
	if dir == "" {
		t.Skip("screenshots skipped: set DASHBOARD_SCREENSHOTS to a directory to write them")
	}
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token, SampleInterval: 200 * time.Millisecond})
	for range 10 {
		s.get("/dash/")
		s.get(instancePath(chattyID))
		time.Sleep(150 * time.Millisecond)
	}
	busy := startBusy(t, s)
	shots := []struct {
		file, path string
		width      int64
	}{
		{"instances.png", "/dash/", 1280},
		{"instance.png", instancePath(busy), 1280},
		{"history.png", instancePath(failID), 1280},
		{"tree.png", "/dash/tree?id=" + url.QueryEscape(childID), 1280},
		{"queues.png", "/dash/queues?metrics=1&confirm=1", 1280},
		{"health.png", "/dash/health", 1280},
		{"instance-phone.png", instancePath(waitID), 390},
	}
	for _, shot := range shots {
		ctx := browser(t, shot.width)
		require.EqualValues(t, http.StatusOK, visit(t, ctx, s, shot.path))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG (below: JPEG)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, shot.file), png, 0o644))
	}
}
