package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the page templates, each parsed with the layout (parsed once
// per process: templates are immutable after parsing).
var pages = mustParsePages()

// funcs are the template functions: display and time formatting.
var funcs = template.FuncMap{
	"id":       displayID,
	"utc":      utcMs,
	"trunc":    truncate,
	"long":     func(s string) bool { return utf8.RuneCountInString(s) > truncateAt },
	"dur":      formatDuration,
	"deref":    func(s *string) string { return deref(s) },
	"add":      func(a, b int) int { return a + b },
	"statusCl": statusClass,
	"pair":     func(page, row any) map[string]any { return map[string]any{"Page": page, "Row": row} },
}

func mustParsePages() map[string]*template.Template {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		out[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return out
}

// page is what the layout renders around a page's content.
type page struct {
	Title     string
	Prefix    string
	ReadWrite bool
	Health    bool // the health page exists (a *cdb.Provider)
	Nav       string
	NowUTC    string
	Data      any
	CSRF      string
	// Refresh is the page's auto-refresh period in seconds (?refresh=N,
	// 5..3600; 0: none), a meta refresh that needs no JavaScript;
	// RefreshLinks turn it on and off on a GET page.
	Refresh      int
	RefreshLinks []refreshLink
	// SignIn is the sign-in link (a read-write handler with a token
	// sign-in, not signed in), SignOut whether to offer signing out.
	SignIn  string
	SignOut bool
}

// refreshLink is one choice of the auto-refresh period.
type refreshLink struct {
	Label   string
	URL     string
	Current bool
}

// refreshPeriods are the auto-refresh choices offered, in seconds (0: off).
var refreshPeriods = []int{0, 10, 60}

// refreshOf returns r's auto-refresh period (?refresh=N seconds, kept
// within 5..3600; 0 when absent or not a number) and the links that
// change it.
func (h *Handler) refreshOf(r *http.Request) (int, []refreshLink) {
	if r.Method != http.MethodGet {
		return 0, nil
	}
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("refresh"))
	if err != nil || n <= 0 {
		n = 0
	} else {
		n = min(max(n, 5), 3600)
	}
	links := make([]refreshLink, 0, len(refreshPeriods))
	for _, p := range refreshPeriods {
		v := r.URL.Query()
		label := "off"
		if p == 0 {
			v.Del("refresh")
		} else {
			v.Set("refresh", strconv.Itoa(p))
			label = strconv.Itoa(p) + "s"
		}
		u := h.opts.Prefix + r.URL.Path
		if len(v) > 0 {
			u += "?" + v.Encode()
		}
		links = append(links, refreshLink{Label: label, URL: u, Current: p == n})
	}
	return n, links
}

// render writes the page named name (a template of templates/) with data.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	t, ok := pages[name]
	if !ok {
		panic("dashboard: no template " + name)
	}
	nav := name
	if nav == "tree" {
		nav = "instance"
	}
	var buf bytes.Buffer
	pg := page{
		Title: title, Prefix: h.opts.Prefix, ReadWrite: h.opts.ReadWrite, Health: h.usage != nil,
		Nav: nav, NowUTC: h.opts.Now().UTC().Format("2006-01-02 15:04:05Z"), Data: data, CSRF: h.csrf,
	}
	if status == http.StatusOK && name != "confirm" && name != "bulk" && name != "signin" {
		pg.Refresh, pg.RefreshLinks = h.refreshOf(r)
	}
	if h.opts.ReadWrite && h.opts.BearerToken != "" && h.opts.Authorize == nil && name != "signin" {
		if h.signedIn(r) {
			pg.SignOut = true
		} else {
			next := r.URL.Path
			if r.Method == http.MethodGet && r.URL.RawQuery != "" {
				next += "?" + r.URL.RawQuery
			}
			pg.SignIn = h.opts.Prefix + "/signin?" + url.Values{"next": {next}}.Encode()
		}
	}
	err := t.ExecuteTemplate(&buf, "layout.html", pg)
	if err != nil {
		slog.Default().Error("dashboard: render", "page", name, "error", err)
		http.Error(w, "dashboard: cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page with status and message.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", http.StatusText(status), map[string]any{"Status": status, "Message": msg})
}

// static serves the embedded stylesheet and script.
func (h *Handler) static(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(staticFS, "static")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.StripPrefix("/static/", http.FileServerFS(sub)).ServeHTTP(w, r)
}

// displayID returns an instance id or a name as the pages show it: as it
// is when it reads unambiguously, else quoted in Go syntax (strconv.Quote)
// when it is empty, begins or ends with white space, or holds a control
// character, a double quote, a rune that is not printable or bytes that are
// not UTF-8 (as cdb-admin prints ids). html/template escapes the result.
func displayID(s string) string {
	if needsQuotes(s) {
		return strconv.Quote(s)
	}
	return s
}

// needsQuotes reports whether displayID quotes s.
func needsQuotes(s string) bool {
	if s == "" || !utf8.ValidString(s) || strings.ContainsRune(s, '"') {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return true
	}
	for _, r := range s {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			return true
		}
	}
	return false
}

// truncateAt is the number of runes a value (input, output, event data) is
// shown with before the rest is folded away in a <details>.
const truncateAt = 120

// truncate cuts s at truncateAt runes with "…".
func truncate(s string) string {
	if utf8.RuneCountInString(s) <= truncateAt {
		return s
	}
	return string([]rune(s)[:truncateAt]) + "…"
}

// utcMs formats milliseconds since the Unix epoch in UTC ("-" for 0).
func utcMs(ms uint64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02 15:04:05.000Z")
}

// formatDuration writes d compactly: "850ms", "3.2s", "4m10s", "2h5m",
// "3d4h".
func formatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		s = fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		s = fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		s = fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
	if neg {
		return "-" + s
	}
	return s
}

// age returns how long before now ms was ("3m10s ago"; "in 5s" for the
// future; "" for 0).
func (h *Handler) age(ms uint64) string {
	if ms == 0 {
		return ""
	}
	d := h.opts.Now().Sub(time.UnixMilli(int64(ms)))
	if d < 0 {
		return "in " + formatDuration(-d)
	}
	return formatDuration(d) + " ago"
}

// deref returns *s, "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// statusClass is the CSS class of a status badge.
func statusClass(status string) string {
	switch status {
	case "Running", "Completed", "Failed", "Pending", "ContinuedAsNew":
		return "st-" + strings.ToLower(status)
	}
	return "st-other"
}
