package emulator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Regions. A multi-region account lists its regions in the account
// document (GET /): writableLocations, readableLocations, each with its
// own endpoint, and enableMultipleWriteLocations. The SDKs read it and
// send reads to the first of the client's preferred regions the account
// has, writes to the write region. The emulator presents such an account
// when Options.Regions names more than one region (a test option): each
// region past the first is served on a port of its own, reads there
// trail the write region by Options.RegionLag (replicas.go), and writes
// there are refused with 403 substatus 3 (WriteForbidden), as the service
// refuses them, unless the account reports multiple write locations.

// defaultRegion is the one region of an account without Options.Regions.
const defaultRegion = "South Central US"

// region is one region of the account and the listener serving it.
type region struct {
	name string
	ln   net.Listener // nil for the first, served by the main listener
	port int
}

// regionSet is the account's regions, the write region first.
type regionSet struct {
	list       []region
	multiWrite bool
}

// checkRegions validates Options.Regions and RegionLag.
func checkRegions(names []string, lag time.Duration) error {
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			return fmt.Errorf("emulator: Regions %q: every region needs a name of its own", names)
		}
		seen[n] = true
	}
	if lag < 0 {
		return fmt.Errorf("emulator: RegionLag %v is negative", lag)
	}
	return nil
}

// listenRegions opens a listener for each region past the first, on the
// host of main (the first region's listener).
func listenRegions(main net.Listener, names []string, multiWrite bool) (regionSet, error) {
	addr := main.Addr().(*net.TCPAddr)
	set := regionSet{multiWrite: multiWrite, list: []region{{name: defaultRegion, port: addr.Port}}}
	if len(names) > 0 {
		set.list[0].name = names[0]
	}
	for _, n := range names[min(1, len(names)):] {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr.IP.String(), "0"))
		if err != nil {
			_ = main.Close()
			for _, r := range set.list[1:] {
				_ = r.ln.Close()
			}
			return regionSet{}, fmt.Errorf("emulator: listen for region %s: %w", n, err)
		}
		set.list = append(set.list, region{name: n, ln: ln, port: ln.Addr().(*net.TCPAddr).Port})
	}
	return set, nil
}

// of returns the index of the region a request was sent to (0, the write
// region, when the account has one region).
func (rs *regionSet) of(r *http.Request) int {
	if len(rs.list) < 2 {
		return 0
	}
	return rs.indexOfAddr(r.Context())
}

func (rs *regionSet) indexOfAddr(ctx context.Context) int {
	a, ok := ctx.Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return 0
	}
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return 0
	}
	for i, r := range rs.list {
		if r.port == tcp.Port {
			return i
		}
	}
	return 0
}

// lagOf returns how far the region a request was sent to trails the
// write region: 0 there, lag in the others.
func (rs *regionSet) lagOf(r *http.Request, lag time.Duration) time.Duration {
	if lag <= 0 || rs.of(r) == 0 {
		return 0
	}
	return lag
}

// writeForbidden refuses a write sent to a read region of a single-write
// account, as the service does (the SDKs then refresh the account and
// send it to the write region); nil when the write may proceed.
func (s *Server) writeForbidden(r *http.Request) *response {
	if s.regions.multiWrite || s.regions.of(r) == 0 {
		return nil
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || isQuery(r) {
		return nil
	}
	return errorResponse(http.StatusForbidden, 3, "The requested operation cannot be performed at this region.")
}

// locations renders the account document's writableLocations and
// readableLocations for a request that reached the server at host (the
// Host header: each region's endpoint keeps its host name).
func (s *Server) locations(scheme, host string) (writable, readable string) {
	hostname := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		hostname = h
	}
	var w, r []byte
	for i, rg := range s.regions.list {
		endpoint := scheme + "://" + host + "/"
		if i > 0 {
			endpoint = scheme + "://" + net.JoinHostPort(hostname, strconv.Itoa(rg.port)) + "/"
		}
		loc := append(append([]byte(`{"name":`), appendString(nil, rg.name)...), `,"databaseAccountEndpoint":`...)
		loc = append(appendString(loc, endpoint), '}')
		if i == 0 || s.regions.multiWrite {
			if len(w) > 0 {
				w = append(w, ',')
			}
			w = append(w, loc...)
		}
		if len(r) > 0 {
			r = append(r, ',')
		}
		r = append(r, loc...)
	}
	return "[" + string(w) + "]", "[" + string(r) + "]"
}

// RegionEndpoint returns the endpoint of the region named name (see
// Options.Regions), with a trailing slash; the first region's is
// Endpoint. It fails when the account has no such region.
func (s *Server) RegionEndpoint(name string) (string, error) {
	for i, r := range s.regions.list {
		if r.name != name {
			continue
		}
		if i == 0 {
			return s.Endpoint(), nil
		}
		ep := s.Endpoint()
		host, _, _ := net.SplitHostPort(ep[len(s.scheme())+3 : len(ep)-1])
		return s.scheme() + "://" + net.JoinHostPort(host, strconv.Itoa(r.port)) + "/", nil
	}
	return "", fmt.Errorf("emulator: the account has no region %q", name)
}

func (s *Server) scheme() string {
	if s.tls {
		return "https"
	}
	return "http"
}
