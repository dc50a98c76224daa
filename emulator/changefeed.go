package emulator

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// handleChangeFeed serves the latest-version change feed of a container (or
// of one logical partition when the partition key header is set): every
// document changed after the LSN in If-None-Match, once, at its latest
// version, in LSN order. No If-None-Match reads from the beginning, "*" from
// now; If-Modified-Since starts at a point in time. The response ETag is the
// continuation; 304 Not Modified means there is nothing new.
func (s *Server) handleChangeFeed(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	if aim := rq.r.Header.Get("A-IM"); !strings.EqualFold(aim, "Incremental Feed") {
		return badRequest("The change feed mode '" + aim + "' is not supported by the emulator; use 'Incremental Feed' (latest version).")
	}
	size, resp := pageSize(rq.r)
	if resp != nil {
		return resp
	}
	var pkKey, prefix string
	if rq.pkHeader != "" {
		if pkKey, resp = requestPK(rq); resp != nil {
			return resp
		}
		if p, ok := c.keyPrefix(pkKey); ok {
			pkKey, prefix = "", p
		}
	}
	var since time.Time
	if h := rq.r.Header.Get("If-Modified-Since"); h != "" {
		t, err := parseHTTPDate(h)
		if err != nil {
			return badRequest("Invalid value for header If-Modified-Since: " + h)
		}
		since = t
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	rf, resp := c.requestRange(rq.r)
	if resp != nil {
		return resp
	}
	rf = rf.withPrefix(prefix)
	var key *string
	if pkKey != "" {
		key = &pkKey
	}
	ranges := c.rangesOf(key, rf)
	view, resp := s.chooseReplica(rq, c, ranges)
	if resp != nil {
		return resp
	}
	// The versions a lagging replica still sees of documents written
	// since (nil when it is up to date).
	var old map[*item]bool
	if view.stale() {
		old = view.visibleOld()
	}
	var from uint64
	switch inm := rq.r.Header.Get("If-None-Match"); {
	case inm == "*":
		from = view.lsn
	case inm != "":
		n, err := strconv.ParseUint(strings.Trim(inm, `"`), 10, 64)
		if err != nil {
			return badRequest("The continuation (If-None-Match) '" + inm + "' is not a valid change feed continuation.")
		}
		from = n
	}
	start := sort.Search(len(c.feed), func(i int) bool { return c.feed[i].lsn > from })
	buf := make([]byte, 0, 1024)
	buf = append(buf, `{"_rid":`...)
	buf = appendString(buf, c.ridString())
	buf = append(buf, `,"Documents":[`...)
	count := 0
	var last uint64
	for _, e := range c.feed[start:] {
		if e.lsn > view.lsn {
			break
		}
		if count > 0 && size > 0 && count >= size && e.lsn != last {
			break
		}
		if count > 0 && len(buf) >= maxResponseBytes && e.lsn != last {
			break
		}
		it := e.it
		if !c.live(it) && !old[it] {
			continue
		}
		if pkKey != "" && it.part.key != pkKey {
			continue
		}
		if !rf.admits(it.part.epk) {
			continue
		}
		if !since.IsZero() && it.ts < since.Unix() {
			continue
		}
		if count > 0 {
			buf = append(buf, ',')
		}
		buf = it.appendJSONWith(buf, e.lsn)
		count++
		last = e.lsn
	}
	if count == 0 {
		resp := &response{status: http.StatusNotModified, charge: 1, lsn: view.lsn}
		setSession(resp, c, ranges)
		etag := view.lsn
		if from > etag {
			etag = from
		}
		resp.setHeader("etag", `"`+strconv.FormatUint(etag, 10)+`"`)
		resp.setHeader("x-ms-item-count", "0")
		return resp
	}
	buf = append(buf, `],"_count":`...)
	buf = strconv.AppendInt(buf, int64(count), 10)
	buf = append(buf, '}')
	resp = jsonResponse(http.StatusOK, buf)
	resp.items = count
	resp.lsn = view.lsn
	setSession(resp, c, ranges)
	resp.charge = 2 + float64(count)*0.5
	resp.setHeader("etag", `"`+strconv.FormatUint(last, 10)+`"`)
	resp.setHeader("x-ms-item-count", strconv.Itoa(count))
	return resp
}

// parseHTTPDate parses the date formats clients send: RFC 1123 with "GMT"
// (net/http) or with another zone name such as "UTC" (azcosmos), RFC 850
// and ANSI C.
func parseHTTPDate(s string) (time.Time, error) {
	if t, err := http.ParseTime(s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC1123, s)
}

// readFeedQuery is the query a plain read feed of documents runs.
var readFeedQuery, _ = parseQuery("SELECT * FROM root")

// handleReadFeed lists the documents of a container (or of one logical
// partition) in rid order, paged with x-ms-max-item-count and continuation.
func (s *Server) handleReadFeed(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	size, resp := pageSize(rq.r)
	if resp != nil {
		return resp
	}
	var pkKey *string
	if rq.pkHeader != "" {
		key, resp := requestPK(rq)
		if resp != nil {
			return resp
		}
		pkKey = &key
	}
	c.mu.RLock()
	ranges := c.rangesOf(pkKey, nil)
	view, resp := s.chooseReplica(rq, c, ranges)
	if resp != nil {
		c.mu.RUnlock()
		return resp
	}
	docs := c.docsAt(view, c.snapshot(pkKey), func(it *item) bool { return pkKey == nil || it.part.key == *pkKey })
	lsn := view.lsn
	rid := c.ridString()
	c.mu.RUnlock()
	pg, err := readFeedQuery.execute(execInput{docs: docs}, pageRequest{
		maxItems: size,
		token:    rq.r.Header.Get("x-ms-continuation"),
	})
	if err != nil {
		return badRequest("Invalid Continuation Token")
	}
	resp = pageResponse(rid, "Documents", pg)
	resp.lsn = lsn
	setSession(resp, c, ranges)
	return resp
}
