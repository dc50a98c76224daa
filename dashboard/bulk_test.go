package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

func TestBulkActionsAreRefusedReadOnlyAndUnauthenticated(t *testing.T) {
	t.Parallel()
	q := "?prefix=" + url.QueryEscape(waitID)
	ro := newSite(t, dashboard.Options{BearerToken: token})
	_, list := ro.get("/dash/?prefix=" + url.QueryEscape(waitID))
	assert.NotContains(t, list, "/dash/bulk/")
	rw := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	hook := newSite(t, dashboard.Options{ReadWrite: true, Authorize: func(*http.Request) error { return errors.New("who are you?") }})
	for _, a := range []string{"cancel", "delete"} {
		code, body := ro.do(http.MethodGet, "/dash/bulk/"+a+q, nil, bearer)
		assert.Equal(t, http.StatusForbidden, code, a)
		assert.Contains(t, body, "read-only")
		code, _ = ro.post("/dash/bulk/"+a, url.Values{"prefix": {waitID}}, bearer)
		assert.Equal(t, http.StatusForbidden, code, a)
		code, _ = rw.get("/dash/bulk/" + a + q)
		assert.Equal(t, http.StatusForbidden, code, a)
		code, _ = rw.post("/dash/bulk/"+a, url.Values{"prefix": {waitID}}, http.Header{"Authorization": {"Bearer wrong"}})
		assert.Equal(t, http.StatusForbidden, code, a)
		code, body = hook.post("/dash/bulk/"+a, url.Values{"prefix": {waitID}}, nil)
		assert.Equal(t, http.StatusForbidden, code, a)
		assert.Contains(t, body, "who are you?")
	}
	// An empty filter is refused: one click never means "every instance".
	code, _ := rw.do(http.MethodGet, "/dash/bulk/delete", nil, bearer)
	assert.Equal(t, http.StatusBadRequest, code)
	assertRunning(t, waitID)
}

// bulkConfirm opens a bulk action's confirmation page for the filter q
// until it shows matched instances (the list query may trail the
// runtime's writes on a lagging account) and returns the page.
func bulkConfirm(t *testing.T, s *site, action string, q url.Values, matched int) string {
	t.Helper()
	var page string
	want := `<strong class="matched">` + strconv.Itoa(matched) + `</strong>`
	require.Eventually(t, func() bool {
		code, body := s.do(http.MethodGet, "/dash/bulk/"+action+"?"+q.Encode(), nil, bearer)
		page = body
		return code == http.StatusOK && strings.Contains(body, want)
	}, 10*time.Second, 20*time.Millisecond, "the confirmation never showed %s: %s", want, page)
	return page
}

// bulkPost posts a bulk confirmation's form (its hidden fields and token)
// with fields.
func bulkPost(t *testing.T, s *site, action, page string, fields url.Values) (int, string) {
	t.Helper()
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	require.NotEmpty(t, form.Get("csrf"))
	for k, v := range fields {
		form[k] = v
	}
	return s.post("/dash/bulk/"+action, form, http.Header{"Origin": {s.srv.URL}, "Authorization": bearer["Authorization"]})
}

// applied reads the count a bulk result page reports.
func applied(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`<strong class="applied">(\d+)</strong>`).FindStringSubmatch(body)
	require.NotNil(t, m, body)
	return m[1]
}

func TestBulkCancelCancelsOnlyTheMatchingUnfinishedInstances(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	p := "bulkcancel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	other := p + "x" // outside the prefix p + "/"
	for _, id := range []string{p + "/w1", p + "/w2", other} {
		start(t, id, "Waiter", "")
	}
	start(t, p+"/done", "Hello", "bulk")
	_, err := shared(t).client.WaitForOrchestration(context.Background(), p+"/done", time.Minute)
	require.NoError(t, err)
	for _, id := range []string{p + "/w1", p + "/w2", other} {
		_, err := shared(t).client.WaitForStatusChange(context.Background(), id, 0, 5*time.Millisecond, time.Minute)
		require.NoError(t, err)
		awaitSeen(t, id, duroxide.StatusRunning)
	}
	awaitSeen(t, p+"/done", duroxide.StatusCompleted)

	_, list := s.do(http.MethodGet, "/dash/?prefix="+url.QueryEscape(p+"/"), nil, bearer)
	assert.Contains(t, list, "/dash/bulk/cancel?prefix=")
	page := bulkConfirm(t, s, "cancel", url.Values{"prefix": {p + "/"}}, 3)
	assert.Contains(t, page, "2 are not finished")
	code, body := bulkPost(t, s, "cancel", page, url.Values{"reason": {"bulk says no"}})
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "2", applied(t, body))
	assert.Contains(t, body, "already Completed")
	for _, id := range []string{p + "/w1", p + "/w2"} {
		st, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
		require.NoError(t, err)
		assert.Equal(t, runtime.StatusFailed, st.Kind, id)
		require.Error(t, st.Err())
		assert.Contains(t, st.Err().Error(), "bulk says no")
	}
	st, err := shared(t).client.GetOrchestrationStatus(context.Background(), other)
	require.NoError(t, err)
	assert.Equal(t, runtime.StatusRunning, st.Kind, "the instance outside the filter is untouched")
}

func TestBulkDeleteRemovesMatchingRootsWithTheirTreesOnly(t *testing.T) {
	t.Parallel()
	s := newSite(t, dashboard.Options{ReadWrite: true, BearerToken: token})
	p := "bulkdelete-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	fam, hello, waiter, other := p+"/fam", p+"/hello", p+"/wait", p+"x"
	start(t, fam, "Family", fam)
	start(t, hello, "Hello", "bulk")
	start(t, other, "Hello", "bulk")
	start(t, waiter, "Waiter", "")
	for _, id := range []string{fam, hello, other} {
		_, err := shared(t).client.WaitForOrchestration(context.Background(), id, time.Minute)
		require.NoError(t, err)
		awaitSeen(t, id, duroxide.StatusCompleted)
	}
	awaitSeen(t, fam+"/kid", duroxide.StatusCompleted)
	_, err := shared(t).client.WaitForStatusChange(context.Background(), waiter, 0, 5*time.Millisecond, time.Minute)
	require.NoError(t, err)
	awaitSeen(t, waiter, duroxide.StatusRunning)

	page := bulkConfirm(t, s, "delete", url.Values{"prefix": {p + "/"}}, 4)
	assert.Contains(t, page, "3 are roots")
	assert.Contains(t, page, "1 of them not finished")
	assert.Contains(t, page, "1 are sub-orchestrations")
	code, body := bulkPost(t, s, "delete", page, nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "2", applied(t, body))
	assert.Contains(t, body, "3 instance(s)", "the family's kid goes with it")
	assert.Contains(t, body, "Running: deleted only with force")
	for _, id := range []string{fam, fam + "/kid", hello} {
		code, _ := s.get(instancePath(id))
		assert.Equal(t, http.StatusNotFound, code, id)
	}
	assertExists(t, waiter)
	assertExists(t, other)
	// With force the running one goes too.
	page = bulkConfirm(t, s, "delete", url.Values{"prefix": {p + "/"}}, 1)
	code, body = bulkPost(t, s, "delete", page, url.Values{"force": {"on"}})
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "1", applied(t, body))
	code, _ = s.get(instancePath(waiter))
	assert.Equal(t, http.StatusNotFound, code)
	assertExists(t, other)
}
