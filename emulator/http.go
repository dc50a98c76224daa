package emulator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxRequestBytes bounds what the emulator reads of a request body. Larger
// bodies are answered 413 like any body over the service's 2 MB item limit.
const maxRequestBytes = 16 << 20

// request is one HTTP request on its way through the emulator.
type request struct {
	r          *http.Request
	body       []byte
	segs       []string // decoded path segments
	resType    string   // resource type for authorization ("docs", "colls", ...)
	resLink    string   // resource link for authorization
	op         OpKind
	activityID string

	// fault matching keys
	pkHeader string   // x-ms-documentdb-partitionkey as sent
	itemIDs  []string // item ids the request touches, when known
}

// response is what a handler produces; ServeHTTP writes it.
type response struct {
	status int
	header http.Header
	body   []byte
	items  int     // documents in the body, for the counters
	charge float64 // request units
	lsn    uint64  // session token / lsn headers when non-zero
	// rng is the partition key range the session token names ("0" when
	// empty); session, when set, is the whole token (several ranges).
	rng     string
	session string
	// owner, when set, is the container the session token belongs to:
	// its rid and name go out as x-ms-content-path and
	// x-ms-alt-content-path, which clients key their session tokens by
	// (@azure/cosmos's SessionContainer).
	owner   *container
	errCode string // non-empty: body is the service's error JSON
	errMsg  string
	// errInfo, when set, is the error body's additionalErrorInfo (a JSON
	// text the service sends as a string: a query plan for 400/1004).
	errInfo string
	subst   int // x-ms-substatus when non-zero
}

func (resp *response) setHeader(k, v string) {
	if resp.header == nil {
		resp.header = make(http.Header)
	}
	resp.header.Set(k, v)
}

// statusCodes maps HTTP statuses to the "code" of the service's error body.
var statusCodes = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "Forbidden",
	http.StatusNotFound:              "NotFound",
	http.StatusMethodNotAllowed:      "MethodNotAllowed",
	http.StatusRequestTimeout:        "RequestTimeout",
	http.StatusConflict:              "Conflict",
	http.StatusGone:                  "Gone",
	http.StatusPreconditionFailed:    "PreconditionFailed",
	http.StatusRequestEntityTooLarge: "RequestEntityTooLarge",
	http.StatusFailedDependency:      "FailedDependency",
	http.StatusTooManyRequests:       "TooManyRequests",
	http.StatusInternalServerError:   "InternalServerError",
	http.StatusServiceUnavailable:    "ServiceUnavailable",
	http.StatusNotImplemented:        "NotImplemented",
}

// errorResponse builds the service's error answer: a JSON body
// {"code": "...", "message": "..."} and an optional x-ms-substatus.
func errorResponse(status, substatus int, msg string) *response {
	code := statusCodes[status]
	if code == "" {
		code = http.StatusText(status)
	}
	return &response{status: status, errCode: code, errMsg: msg, subst: substatus, charge: 1}
}

func badRequest(msg string) *response { return errorResponse(http.StatusBadRequest, 0, msg) }

func notFound() *response {
	return errorResponse(http.StatusNotFound, 0, "Entity with the specified id does not exist in the system. More info: https://aka.ms/cosmosdb-tsg-not-found")
}

func conflict() *response {
	return errorResponse(http.StatusConflict, 0, "Entity with the specified id already exists in the system.")
}

func preconditionFailed() *response {
	return errorResponse(http.StatusPreconditionFailed, 0, "Operation cannot be performed because one of the specified precondition is not met.")
}

func tooLarge() *response {
	return errorResponse(http.StatusRequestEntityTooLarge, 0, "Request size is too large")
}

func jsonResponse(status int, body []byte) *response {
	return &response{status: status, body: body, charge: 1}
}

// ServeHTTP implements http.Handler: it authorizes, counts, applies faults
// and dispatches one REST request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		// A bug must not take the connection down without an answer: report
		// it as the service reports its own failures.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			resp := errorResponse(http.StatusInternalServerError, 0, fmt.Sprintf("emulator internal error: %v", v))
			s.writeResponse(w, &request{r: r, activityID: newActivityID()}, resp, nil)
		}
	}()
	if strings.HasPrefix(r.URL.Path, ControlPath) {
		s.serveControl(w, r)
		return
	}
	rq := &request{r: r}
	rq.activityID = r.Header.Get("x-ms-activity-id")
	if rq.activityID == "" {
		rq.activityID = newActivityID()
	}
	body, err := readBody(r)
	if err != nil {
		// The client went away mid-request; nothing to answer.
		return
	}
	rq.body = body
	rq.pkHeader = r.Header.Get("x-ms-documentdb-partitionkey")

	segs, ok := splitPath(r.URL.EscapedPath())
	var handler func(*request) *response
	if !ok {
		rq.op = OpOther
		handler = func(*request) *response { return badRequest("The request path is invalid.") }
	} else {
		rq.resType, rq.resLink = authResource(segs)
		if named, link, ok := s.resolveRIDLink(segs); ok {
			segs, rq.resLink = named, link
		}
		rq.segs = segs
		rq.op, handler = s.route(rq)
	}

	var resp *response
	switch {
	case len(body) > maxRequestBytes:
		resp = tooLarge()
	default:
		resp = s.authorize(rq)
	}
	// The simulated round trip: half before the request is applied, half
	// before the answer leaves.
	lat := s.latency.draw(rq.op)
	sleepCtx(lat/2, r.Context().Done())
	var fault *Fault
	if resp == nil {
		fault = s.faults.match(rq)
		if fault != nil {
			switch fault.Kind {
			case FaultDelay:
				t := time.NewTimer(fault.Delay)
				select {
				case <-t.C:
				case <-r.Context().Done():
					t.Stop()
				}
			case FaultDropConnection:
				s.counters.record(rq.op, len(body), 0, 0, 0)
				dropConnection(w)
				return
			case FaultApplyThenDrop:
				// handled after the handler ran
			default:
				resp = fault.response()
			}
		}
	}
	if resp == nil {
		resp = s.writeForbidden(r)
	}
	if resp == nil {
		resp = handler(rq)
		if resp.status < 400 && r.Method != http.MethodGet && r.Method != http.MethodHead && !isQuery(r) {
			// A write is acknowledged once durable (Options.DataDir).
			if err := s.awaitDurable(); err != nil {
				resp = durabilityFailure(err)
			}
		}
	}
	if fault != nil && fault.Kind == FaultApplyThenDrop {
		s.counters.record(rq.op, len(body), 0, 0, 0)
		dropConnection(w)
		return
	}
	sleepCtx(lat-lat/2, r.Context().Done())
	s.writeResponse(w, rq, resp, func(responseBytes int) {
		s.counters.record(rq.op, len(body), responseBytes, resp.items, resp.charge)
	})
}

// The version headers of every answer (values shared by every response;
// nothing modifies header values in place).
var (
	gatewayVersion = []string{"version=2.14.0"}
	serviceVersion = []string{"version=2.14.0.0"}
	schemaVersion  = []string{"1.16"}
)

// writeResponse writes resp with the headers every gateway answer carries.
// count, when non-nil, is called with the body's size before anything is
// sent, so that a client reading the counters right after its call returns
// sees the call counted.
func (s *Server) writeResponse(w http.ResponseWriter, rq *request, resp *response, count func(responseBytes int)) {
	h := w.Header()
	for k, v := range resp.header {
		h[wireHeaderName(k)] = v
	}
	// Cosmos DB's own headers go out in lower case, as the service sends
	// them (see wireHeaderName); one backing array for the values saves
	// an allocation per header.
	vals := make([]string, 0, 8)
	set := func(key, v string) {
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set("x-ms-activity-id", rq.activityID)
	set("x-ms-request-charge", strconv.FormatFloat(resp.charge, 'f', 2, 64))
	h["x-ms-gatewayversion"] = gatewayVersion
	h["x-ms-serviceversion"] = serviceVersion
	h["x-ms-schemaversion"] = schemaVersion
	set("Date", s.dates.httpDate(s.now()))
	if resp.lsn != 0 || resp.owner != nil {
		l := strconv.FormatUint(resp.lsn, 10)
		tok := resp.session
		if tok == "" {
			id := resp.rng
			if id == "" {
				id = "0"
			}
			tok = id + ":-1#" + l
		}
		set("x-ms-session-token", tok)
		if c := resp.owner; c != nil {
			paths := c.contentPaths()
			h["x-ms-content-path"] = paths[0:1:1]
			h["x-ms-alt-content-path"] = paths[1:2:2]
		}
		set("lsn", l)
		set("x-ms-cosmos-llsn", l)
	}
	if resp.subst != 0 {
		set("x-ms-substatus", strconv.Itoa(resp.subst))
	}
	body := resp.body
	if resp.errCode != "" {
		msg := resp.errMsg + "\r\nActivityId: " + rq.activityID + ", Microsoft.Azure.Documents.Common/2.14.0"
		body = append([]byte(`{"code":`), appendString(nil, resp.errCode)...)
		body = append(body, `,"message":`...)
		body = appendString(body, msg)
		if resp.errInfo != "" {
			body = append(body, `,"additionalErrorInfo":`...)
			body = appendString(body, resp.errInfo)
		}
		body = append(body, '}')
	}
	if body != nil {
		if h.Get("Content-Type") == "" {
			h.Set("Content-Type", "application/json")
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	sent := body != nil && rq.r.Method != http.MethodHead
	responseBytes := 0
	if sent {
		responseBytes = len(body)
	}
	if count != nil {
		count(responseBytes)
	}
	w.WriteHeader(resp.status)
	if sent {
		_, _ = w.Write(body)
	}
}

// dropConnection closes the client connection without answering.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// splitPath splits an escaped URL path into decoded segments, so that an
// escaped '/' inside an id stays inside its segment.
func splitPath(escaped string) ([]string, bool) {
	escaped = strings.Trim(escaped, "/")
	if escaped == "" {
		return nil, true
	}
	parts := strings.Split(escaped, "/")
	for i, p := range parts {
		d, err := url.PathUnescape(p)
		if err != nil {
			return nil, false
		}
		parts[i] = d
	}
	return parts, true
}

// authResource derives the resource type and resource link the client signs:
// for a feed (odd number of segments) the type is the last segment and the
// link its parent; for a single resource the type is the collection segment
// and the link the full path.
func authResource(segs []string) (resType, link string) {
	switch n := len(segs); {
	case n == 0:
		return "", ""
	case n%2 == 1:
		return strings.ToLower(segs[n-1]), strings.Join(segs[:n-1], "/")
	case n == 2 && strings.EqualFold(segs[0], "offers"):
		// Offers are addressed by resource id; clients sign the lower-cased id.
		return "offers", strings.ToLower(segs[1])
	default:
		return strings.ToLower(segs[n-2]), strings.Join(segs, "/")
	}
}

func newActivityID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// headerBool reports whether header k is "true" (any case).
func headerBool(r *http.Request, k string) bool {
	return strings.EqualFold(r.Header.Get(k), "true")
}

// readBody reads the request body, at most maxRequestBytes+1 bytes (more
// is answered 413), into a buffer of the Content-Length the client sent,
// when it sent one (the server delivers exactly that many bytes).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength >= 0 && r.ContentLength <= maxRequestBytes {
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
}
