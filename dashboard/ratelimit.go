package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Token checks are rate-limited: a client (by remote IP address) that
// typed or sent a wrong token failLimit times within failWindow is refused
// with 429 Too Many Requests, whatever it sends, until the window ends, so
// that the token cannot be guessed at the speed of the network.
const (
	failLimit   = 10
	failWindow  = time.Minute
	maxFailures = 10_000 // clients tracked; the table is cleared beyond
)

// failures counts wrong tokens per client.
type failures struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]*failCount
}

// failCount is one client's wrong tokens since start.
type failCount struct {
	start time.Time
	n     int
}

func newFailures(now func() time.Time) *failures {
	return &failures{now: now, seen: map[string]*failCount{}}
}

// client is the rate limit's key of r: its remote IP address.
func client(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether r's client has used up its wrong tokens, and
// for how long more.
func (f *failures) blocked(r *http.Request) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.seen[client(r)]
	if c == nil {
		return 0, false
	}
	left := c.start.Add(failWindow).Sub(f.now())
	if left <= 0 {
		delete(f.seen, client(r))
		return 0, false
	}
	return left, c.n >= failLimit
}

// fail records a wrong token from r's client.
func (f *failures) fail(r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	c := f.seen[client(r)]
	if c == nil || now.Sub(c.start) >= failWindow {
		if len(f.seen) >= maxFailures {
			clear(f.seen)
		}
		c = &failCount{start: now}
		f.seen[client(r)] = c
	}
	c.n++
}
