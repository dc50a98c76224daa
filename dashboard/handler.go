package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/duroxide/runtime"
)

// Options configure NewHandler.
type Options struct {
	// Admin is the store the pages read (required): any provider's
	// duroxide.ProviderAdmin. When it is a *cdb.Provider the handler adds
	// the health and cost page.
	Admin duroxide.ProviderAdmin
	// Client raises events and cancels instances (the read-write
	// actions) and reads KV stores. When nil and Admin is also a
	// duroxide.Provider (as *cdb.Provider and the in-memory provider are),
	// the handler makes one with runtime.NewClient; otherwise KV is not
	// shown and raise and cancel are unavailable.
	Client *runtime.Client
	// ReadWrite enables the actions (raise an event, cancel, delete,
	// prune). A read-write handler needs Authorize or BearerToken:
	// NewHandler refuses one without either.
	ReadWrite bool
	// Authorize, when set, decides whether a request may run an action:
	// nil error means yes. It is the service's own authentication (its
	// session cookie, its identity proxy's header). Reads are not
	// authenticated by the handler: mount it behind the service's
	// authentication, or bind it to loopback, as cdb-admin serve does.
	Authorize func(*http.Request) error
	// BearerToken, when set (and Authorize is not), is the secret an
	// action needs: an "Authorization: Bearer <token>" header, or the
	// session cookie the sign-in page sets after the token is typed in.
	BearerToken string
	// Prefix is the path the handler is mounted under ("/dashboard"; ""
	// for the root): every link it renders starts with it, and requests
	// are expected with it (mux.Handle(Prefix+"/", handler)).
	Prefix string
	// PageSize is the number of instances on a page of the list (default
	// 50, at most 500).
	PageSize int
	// HistoryPageSize is the number of events on a page of an instance's
	// history (default 200).
	HistoryPageSize int
	// SampleInterval is how often the health page's sampler reads the
	// provider's Usage (default 10s); the chart keeps the last hour.
	// Only a *cdb.Provider is sampled.
	SampleInterval time.Duration
	// Now is the clock for relative ages and the sampler (default
	// time.Now).
	Now func() time.Time
}

// Handler is the dashboard: an http.Handler serving the pages and actions
// under Options.Prefix. Close stops its usage sampler.
type Handler struct {
	opts     Options
	admin    duroxide.ProviderAdmin
	client   *runtime.Client
	kv       kvReader
	usage    usageSource
	sampler  *sampler
	mux      *http.ServeMux
	secret   []byte // per-handler: CSRF tokens and session cookies
	csrf     string // the form token of this handler
	cop      *http.CrossOriginProtection
	failed   *failures // wrong tokens per client (ratelimit.go)
	metrics  metricsCache
	closeOne sync.Once
}

// kvReader reads an instance's KV store.
type kvReader interface {
	GetKVAllValues(ctx context.Context, instance string) (map[string]string, error)
}

// Errors NewHandler returns.
var (
	// ErrNoAdmin: Options.Admin is nil.
	ErrNoAdmin = errors.New("dashboard: Options.Admin is required")
	// ErrNoAuthentication: Options.ReadWrite without Authorize or
	// BearerToken.
	ErrNoAuthentication = errors.New("dashboard: a read-write handler needs Options.Authorize or Options.BearerToken")
)

// Default sizes and intervals of Options.
const (
	defaultPageSize        = 50
	maxPageSize            = 500
	defaultHistoryPageSize = 200
	defaultSampleInterval  = 10 * time.Second
	sessionCookie          = "duroxide_dashboard_session"
)

// NewHandler returns the dashboard over opts.Admin. It returns ErrNoAdmin
// without an Admin and ErrNoAuthentication for a read-write handler without
// authentication. When Admin is a *cdb.Provider it starts a goroutine that
// samples the provider's Usage every SampleInterval; Close stops it.
func NewHandler(opts Options) (*Handler, error) {
	if opts.Admin == nil {
		return nil, ErrNoAdmin
	}
	if opts.ReadWrite && opts.Authorize == nil && opts.BearerToken == "" {
		return nil, ErrNoAuthentication
	}
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	if opts.PageSize <= 0 {
		opts.PageSize = defaultPageSize
	}
	opts.PageSize = min(opts.PageSize, maxPageSize)
	if opts.HistoryPageSize <= 0 {
		opts.HistoryPageSize = defaultHistoryPageSize
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = defaultSampleInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &Handler{opts: opts, admin: opts.Admin, client: opts.Client, secret: make([]byte, 32)}
	if _, err := rand.Read(h.secret); err != nil {
		return nil, fmt.Errorf("dashboard: random secret: %w", err)
	}
	h.csrf = h.mac("csrf")
	if h.client == nil {
		if p, ok := opts.Admin.(duroxide.Provider); ok {
			h.client = runtime.NewClient(p)
		}
	}
	if h.client != nil {
		h.kv = h.client
	}
	h.cop = http.NewCrossOriginProtection()
	h.failed = newFailures(opts.Now)
	h.usage = usageOf(opts.Admin)
	if h.usage != nil {
		h.sampler = newSampler(h.usage, opts.SampleInterval, opts.Now)
	}
	h.routes()
	return h, nil
}

// Close stops the usage sampler (if any); the handler still serves pages
// afterwards, with the samples taken so far. It is idempotent and returns
// nil.
func (h *Handler) Close() error {
	h.closeOne.Do(func() {
		if h.sampler != nil {
			h.sampler.stop()
		}
	})
	return nil
}

// ServeHTTP serves the pages under Options.Prefix; a path outside it is
// 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	rest, ok := strings.CutPrefix(p, h.opts.Prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		http.NotFound(w, r)
		return
	}
	if rest == "" {
		http.Redirect(w, r, h.opts.Prefix+"/", http.StatusFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = rest
	r2.URL.RawPath = ""
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.mux.ServeHTTP(w, r2)
}

// routes registers the pages.
func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", h.instancesPage)
	m.HandleFunc("GET /instance", h.instancePage)
	m.HandleFunc("GET /tree", h.treePage)
	m.HandleFunc("GET /history.json", h.historyJSON)
	m.HandleFunc("GET /queues", h.queuesPage)
	m.HandleFunc("GET /health", h.healthPage)
	m.HandleFunc("GET /static/", h.static)
	m.HandleFunc("GET /signin", h.signinPage)
	m.HandleFunc("POST /signin", h.signin)
	m.HandleFunc("POST /signout", h.signout)
	m.HandleFunc("GET /action/{action}", h.confirmPage)
	m.HandleFunc("POST /action/{action}", h.act)
	m.HandleFunc("GET /bulk/{action}", h.bulkPage)
	m.HandleFunc("POST /bulk/{action}", h.bulkAct)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "no such page")
	})
	h.mux = m
}

// mac returns the hex HMAC-SHA256 of s under the handler's secret.
func (h *Handler) mac(s string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(s))
	return hex.EncodeToString(m.Sum(nil))
}

// authenticated reports whether r may run an action: Authorize's verdict,
// else a matching bearer token (header or session cookie). A wrong bearer
// token counts against the client's rate limit (ratelimit.go).
func (h *Handler) authenticated(r *http.Request) error {
	if h.opts.Authorize != nil {
		return h.opts.Authorize(r)
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.BearerToken)) == 1 {
			return nil
		}
		h.failed.fail(r)
		return errors.New("wrong bearer token")
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.sessionValue())) == 1 {
			return nil
		}
	}
	return errors.New("not signed in")
}

// sessionValue is the session cookie's value: bound to the handler's secret
// and the token, so it is worthless to another handler or after the token
// changes.
func (h *Handler) sessionValue() string { return h.mac("session\x00" + h.opts.BearerToken) }

// bearerOnly reports whether r is authenticated by its Authorization:
// Bearer header alone (Options.BearerToken, no Authorize), carrying no
// cookie: a script's request, which a browser cannot forge for another
// site (it never adds that header on its own), so it needs no form token.
func (h *Handler) bearerOnly(r *http.Request) bool {
	if h.opts.Authorize != nil || h.opts.BearerToken == "" || r.Header.Get("Cookie") != "" {
		return false
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.BearerToken)) == 1
}

// checkCSRF refuses a cross-origin request (net/http's CrossOriginProtection:
// Sec-Fetch-Site, then Origin against Host) and a form without the
// handler's token, unless the request is authenticated by its bearer
// header alone (bearerOnly).
func (h *Handler) checkCSRF(r *http.Request) error {
	if err := h.cop.Check(r); err != nil {
		return fmt.Errorf("cross-origin request refused: %w", err)
	}
	if h.bearerOnly(r) {
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(h.csrf)) != 1 {
		return errors.New("missing or wrong form token (reload the page and try again)")
	}
	return nil
}

// tooMany refuses a client that sent too many wrong tokens.
func (h *Handler) tooMany(w http.ResponseWriter, r *http.Request, left time.Duration) {
	w.Header().Set("Retry-After", fmt.Sprint(int(left.Seconds())+1))
	h.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("too many wrong tokens from this address: try again in %s", formatDuration(left.Round(time.Second))))
}

// signinPage asks for the bearer token.
func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	if h.opts.BearerToken == "" || h.opts.Authorize != nil {
		h.fail(w, r, http.StatusNotFound, "this dashboard has no token sign-in")
		return
	}
	h.render(w, r, http.StatusOK, "signin", "Sign in", map[string]any{"Next": safeNext(r.URL.Query().Get("next"))})
}

// signin checks the token typed in and sets the session cookie.
func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if h.opts.BearerToken == "" || h.opts.Authorize != nil {
		h.fail(w, r, http.StatusNotFound, "this dashboard has no token sign-in")
		return
	}
	if err := h.checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	if left, blocked := h.failed.blocked(r); blocked {
		h.tooMany(w, r, left)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(h.opts.BearerToken)) != 1 {
		h.failed.fail(r)
		h.render(w, r, http.StatusForbidden, "signin", "Sign in", map[string]any{"Next": safeNext(r.PostFormValue("next")), "Error": "wrong token"})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: h.sessionValue(), Path: h.opts.Prefix + "/",
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, h.opts.Prefix+safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// signout clears the session cookie.
func (h *Handler) signout(w http.ResponseWriter, r *http.Request) {
	if err := h.checkCSRF(r); err != nil {
		h.fail(w, r, http.StatusForbidden, err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: h.opts.Prefix + "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, h.opts.Prefix+"/", http.StatusSeeOther)
}

// signedIn reports whether r carries this handler's session cookie.
func (h *Handler) signedIn(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(h.sessionValue())) == 1
}

// safeNext keeps a sign-in's return path inside the dashboard: a path
// starting with one "/" and holding no backslash or control character
// (browsers drop tabs and newlines from a Location, so "/\t/evil.example"
// would leave it), else "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "/"
		}
	}
	return next
}
