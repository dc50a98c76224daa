package dashboard_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/cdbtest"
	"github.com/duroxide-go/duroxide-cdb/dashboard"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// The tests share one container of one test-kit account (the embedded
// emulator unless COSMOS_ENDPOINT is set), filled once with a known
// workload by a runtime that keeps running (the action tests start
// instances of their own and watch them end). Pages are read through a
// second provider on the same container with no background requests of
// its own (no reconciler, change-feed reader or lease heartbeats), so that
// its Usage counts exactly the requests of the page views.

// The workload's instances.
const (
	helloID   = "hello-1"                       // Hello("World"): Greet, Completed "Hello, World!"
	failID    = "fail-1"                        // Fails: its activity fails, Failed
	parentID  = "parent-1"                      // Parent: sub-orchestration childID, Completed
	childID   = "parent-1/child #1"             // Child of parentID: sub-orchestration leafID
	leafID    = "parent-1/child #1/leaf"        // Child of childID
	waitID    = "wait-1"                        // Waiter: custom status and KV set, waits for "approve"
	eternalID = "eternal-1"                     // Eternal: continues as new twice, Completed in execution 3
	oddID     = "odd/#?%25 id\twith tab"        // Hello, an id with / # ? % a space and a tab
	scriptID  = `<script>alert("x")</script>`   // Hello, an id that is a script tag
	chattyID  = "chatty-1"                      // Chatty: 30 activities, a history of 62 events
	pendingID = "pending-1"                     // Procss (not registered): Pending, with the runtime's reason
	customMsg = "waiting for <b>approval</b> &" // Waiter's custom status
)

var (
	fixOnce sync.Once
	fix     *fixture
	fixErr  error
)

// fixture is the shared container, its runtime and its quiet reader.
type fixture struct {
	account *cdbtest.Account
	busy    *cdb.Provider // the runtime's
	quiet   *cdb.Provider // the pages'
	rt      *runtime.Runtime
	client  *runtime.Client
}

// holdRelease ends every Hold activity (closed when the tests are done).
var holdRelease = make(chan struct{})

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	close(holdRelease)
	if fix != nil {
		fix.close()
	}
	os.Exit(code)
}

func (f *fixture) close() {
	if f.rt != nil {
		_ = f.rt.Shutdown(context.Background())
	}
	for _, p := range []*cdb.Provider{f.busy, f.quiet} {
		if p != nil {
			_ = p.Close()
		}
	}
	if f.account != nil {
		_ = f.account.Close()
	}
}

// shared returns the fixture, seeding it on first use.
func shared(t testing.TB) *fixture {
	t.Helper()
	fixOnce.Do(func() { fix, fixErr = openFixture() })
	if fixErr != nil {
		t.Fatal(fixErr)
	}
	return fix
}

// registry is the workload's orchestrations and activities.
func registry() *runtime.Registry {
	reg := runtime.NewRegistry()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(reg.RegisterActivity("Greet", func(_ *runtime.ActivityContext, name string) (string, error) {
		return "Hello, " + name + "!", nil
	}))
	must(reg.RegisterActivity("Boom", func(*runtime.ActivityContext, string) (string, error) {
		return "", errors.New("boom: the <disk> is full")
	}))
	must(reg.RegisterActivity("Hold", func(ctx *runtime.ActivityContext, _ string) (string, error) {
		select {
		case <-holdRelease:
		case <-ctx.Done():
		}
		return "released", nil
	}))
	// Busy has one of each kind of pending work: an activity in flight
	// (Hold), a 6-hour timer and a wait for the event "go".
	must(reg.RegisterOrchestration("Busy", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		ctx.Join(ctx.ScheduleActivity("Hold", in), ctx.ScheduleTimer(6*time.Hour), ctx.ScheduleWait("go"))
		return "done", nil
	}))
	must(reg.RegisterOrchestration("Hello", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Greet", in).Get()
	}))
	must(reg.RegisterOrchestration("Fails", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Boom", in).Get()
	}))
	must(reg.RegisterOrchestration("Leaf", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleActivity("Greet", in).Get()
	}))
	must(reg.RegisterOrchestration("Child", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleSubOrchestrationWithID("Leaf", leafID, in).Get()
	}))
	must(reg.RegisterOrchestration("Parent", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleSubOrchestrationWithID("Child", childID, in).Get()
	}))
	// Family runs Hello as its sub-orchestration in+"/kid".
	must(reg.RegisterOrchestration("Family", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		return ctx.ScheduleSubOrchestrationWithID("Hello", in+"/kid", "kid").Get()
	}))
	must(reg.RegisterOrchestration("Waiter", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus(customMsg)
		ctx.SetKVValue("stage", "approval <pending>")
		return ctx.ScheduleWait("approve").Get()
	}))
	must(reg.RegisterOrchestration("Eternal", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
		}
		return "done at " + in, nil
	}))
	must(reg.RegisterOrchestration("TwoEvents", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		if _, err := ctx.ScheduleWait("a").Get(); err != nil {
			return "", err
		}
		return ctx.ScheduleWait("b").Get()
	}))
	must(reg.RegisterOrchestration("Chatty", func(ctx *runtime.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		for i := range n {
			if _, err := ctx.ScheduleActivity("Greet", strconv.Itoa(i)).Get(); err != nil {
				return "", err
			}
		}
		return "chatted", nil
	}))
	return reg
}

// openFixture opens the account, the two providers and the runtime, and
// runs the workload to its known state.
func openFixture() (*fixture, error) {
	f := &fixture{}
	var err error
	if f.account, err = cdbtest.Open(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	cfg := f.account.Config()
	cfg.LongPollInterval = 20 * time.Millisecond
	if f.busy, err = cdb.New(ctx, cfg); err != nil {
		f.close()
		return nil, err
	}
	quiet := cfg
	quiet.DisableReconciler, quiet.DisableChangeFeedWakeups, quiet.Leases = true, true, cdb.LeasesInProcess
	if f.quiet, err = cdb.New(ctx, quiet); err != nil {
		f.close()
		return nil, err
	}
	if f.rt, err = runtime.Start(ctx, f.busy, registry(), runtime.Options{PollInterval: 5 * time.Millisecond, LongPollTimeout: 50 * time.Millisecond,
		// The Busy instances' Hold activities each keep a worker until the
		// tests end: enough workers are left for the others.
		WorkerConcurrency: 8,
		// pendingID stays Pending, its first attempt's reason recorded,
		// for the 10 minutes the tests may take.
		UnregisteredBackoff: runtime.UnregisteredBackoff{Base: 10 * time.Minute, Max: 10 * time.Minute}}); err != nil {
		f.close()
		return nil, err
	}
	f.client = runtime.NewClient(f.busy)
	starts := []struct{ id, name, in string }{
		{helloID, "Hello", "World"}, {failID, "Fails", "x"}, {parentID, "Parent", "P"},
		{waitID, "Waiter", ""}, {eternalID, "Eternal", "1"}, {oddID, "Hello", "odd"},
		{scriptID, "Hello", "<i>script</i>"}, {chattyID, "Chatty", "30"}, {pendingID, "Procss", ""},
	}
	for _, s := range starts {
		if err := f.client.StartOrchestration(ctx, s.id, s.name, s.in); err != nil {
			f.close()
			return nil, err
		}
	}
	for _, s := range starts {
		switch s.name {
		case "Waiter":
			_, err = f.client.WaitForStatusChange(ctx, s.id, 0, 5*time.Millisecond, time.Minute)
		case "Procss":
			err = waitPendingReason(ctx, f.client, s.id)
		default:
			_, err = f.client.WaitForOrchestration(ctx, s.id, time.Minute)
		}
		if err != nil {
			f.close()
			return nil, err
		}
	}
	// The waiter's KV entry is committed in the same turn as its custom
	// status; leafID ends before parentID.
	return f, nil
}

// waitPendingReason waits until a runtime has recorded why id's start
// cannot run.
func waitPendingReason(ctx context.Context, client *runtime.Client, id string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err := client.GetOrchestrationStatus(ctx, id)
		if err != nil {
			return err
		}
		if st.PendingReason != "" {
			return nil
		}
	}
	return errors.New("no pending reason recorded for " + id)
}

// site is a dashboard under test, served by httptest.
type site struct {
	t      testing.TB
	h      *dashboard.Handler
	srv    *httptest.Server
	client *http.Client
}

// newSite serves a dashboard over the quiet provider under /dash with
// opts (Admin, Client and Prefix filled in when empty).
func newSite(t testing.TB, opts dashboard.Options) *site {
	t.Helper()
	f := shared(t)
	if opts.Admin == nil {
		opts.Admin = f.quiet
	}
	if opts.Prefix == "" {
		opts.Prefix = "/dash"
	}
	h, err := dashboard.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(opts.Prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = h.Close()
	})
	jar := &cookieJar{}
	return &site{t: t, h: h, srv: srv, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// get fetches path (with its query) and returns the status and body.
func (s *site) get(path string) (int, string) {
	s.t.Helper()
	return s.do(http.MethodGet, path, nil, nil)
}

// post submits form to path with extra headers.
func (s *site) post(path string, form url.Values, header http.Header) (int, string) {
	s.t.Helper()
	return s.do(http.MethodPost, path, form, header)
}

func (s *site) do(method, path string, form url.Values, header http.Header) (int, string) {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, s.srv.URL+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// cookieJar is a minimal jar: every cookie for every URL of the test
// server.
type cookieJar struct {
	mu      sync.Mutex
	cookies map[string]*http.Cookie
}

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cookies == nil {
		j.cookies = map[string]*http.Cookie{}
	}
	for _, c := range cs {
		j.cookies[c.Name] = c
	}
}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []*http.Cookie
	for _, c := range j.cookies {
		out = append(out, c)
	}
	return out
}
