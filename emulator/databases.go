package emulator

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxIDLength is the longest id the emulator accepts, in characters. The
// service documents 1,023 bytes for item ids; 255 characters is the long-
// standing limit for every resource and is always within it.
const maxIDLength = 255

// validateID checks a resource id: present, at most maxIDLength
// characters, none of the documented illegal characters / \ ? #. It also
// refuses ids the service accepts on create but cannot address afterwards
// (point operations on them fail with 401 or 400 through the gateway):
// control characters, trailing whitespace and percent-encoded sequences.
func validateID(id string) *response {
	invalid := func(why string) *response {
		return badRequest("The input name '" + id + "' is invalid. " + why)
	}
	switch {
	case id == "":
		return badRequest("The input name presented is empty or missing an 'id' property.")
	case utf8.RuneCountInString(id) > maxIDLength:
		return badRequest("The input name presented is too long. Ids must be at most 255 characters.")
	case strings.ContainsAny(id, `/\?#`):
		return invalid("Ensure to provide a unique non-empty string less than '255' characters. Illegal characters ['/', '\\', '?', '#'] cannot be used in the id.")
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return invalid("Ids cannot contain control characters.")
	}
	if r, _ := utf8.DecodeLastRuneInString(id); unicode.IsSpace(r) {
		return invalid("Ids cannot end with whitespace.")
	}
	for i := 0; i+2 < len(id); i++ {
		if id[i] == '%' && isHex(id[i+1]) && isHex(id[i+2]) {
			return invalid("Ids cannot contain percent-encoded sequences.")
		}
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (d *database) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, d.id)
	buf = append(buf, `,"_rid":`...)
	buf = appendString(buf, d.ridString())
	buf = append(buf, `,"_self":`...)
	buf = appendString(buf, "dbs/"+d.ridString()+"/")
	buf = append(buf, `,"_etag":`...)
	buf = appendString(buf, formatETag(d.etag))
	buf = append(buf, `,"_colls":"colls/","_users":"users/","_ts":`...)
	buf = strconv.AppendInt(buf, d.ts, 10)
	return append(buf, '}')
}

// databaseRID is the resource id of database number n.
func databaseRID(n uint32) [4]byte {
	return [4]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n>>24) | 0x01}
}

func (s *Server) handleCreateDatabase(rq *request) *response {
	v, err := parseJSON(rq.body)
	if err != nil || v.k != kObject {
		return badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	id := v.get("id")
	if id.k != kString {
		return badRequest("The input name presented is empty or missing an 'id' property.")
	}
	if resp := validateID(id.s); resp != nil {
		return resp
	}
	content, hasOffer, resp := offerContent(rq.r)
	if resp != nil {
		return resp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.dbs[id.s]; ok {
		return conflict()
	}
	d := &database{id: id.s, etag: s.newETag(), ts: s.unixNow(), colls: make(map[string]*container)}
	n := s.nextResourceNumber()
	d.num, d.rid = n, databaseRID(n)
	s.dbs[id.s] = d
	if hasOffer {
		d.shared = true
		s.addOffer("dbs/"+d.ridString()+"/", d.ridString(), content)
	}
	s.logDatabase(d)
	resp = jsonResponse(http.StatusCreated, d.appendJSON(nil))
	resp.setHeader("etag", formatETag(d.etag))
	return resp
}

func (s *Server) handleReadDatabase(rq *request) *response {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.dbs[rq.segs[1]]
	if d == nil {
		return notFound()
	}
	resp := jsonResponse(http.StatusOK, d.appendJSON(nil))
	resp.setHeader("etag", formatETag(d.etag))
	return resp
}

func (s *Server) handleDeleteDatabase(rq *request) *response {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.dbs[rq.segs[1]]
	if !ok {
		return notFound()
	}
	s.removeOffers("dbs/" + d.ridString() + "/")
	delete(s.dbs, rq.segs[1])
	s.logDropDatabase(d)
	return &response{status: http.StatusNoContent, charge: 1}
}

// databaseValues returns every database as a JSON value, in creation order.
func (s *Server) databaseValues() []value {
	s.mu.RLock()
	defer s.mu.RUnlock()
	dbs := make([]*database, 0, len(s.dbs))
	for _, d := range s.dbs {
		dbs = append(dbs, d)
	}
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].num < dbs[j].num })
	out := make([]value, 0, len(dbs))
	for _, d := range dbs {
		v, _ := parseJSON(d.appendJSON(nil))
		out = append(out, v)
	}
	return out
}

func (s *Server) handleListDatabases(rq *request) *response {
	return feedResponse(rq, "", "Databases", s.databaseValues())
}

func (s *Server) handleQueryDatabases(rq *request) *response {
	return s.queryResources(rq, "", "Databases", s.databaseValues())
}

// feedResponse answers a read feed of resources: {"_rid":..,"<name>":[..],"_count":n}.
func feedResponse(rq *request, rid, name string, vals []value) *response {
	buf := make([]byte, 0, 256)
	buf = append(buf, `{"_rid":`...)
	buf = appendString(buf, rid)
	buf = append(buf, `,"`...)
	buf = append(buf, name...)
	buf = append(buf, `":[`...)
	for i, v := range vals {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = v.appendJSON(buf)
	}
	buf = append(buf, `],"_count":`...)
	buf = strconv.AppendInt(buf, int64(len(vals)), 10)
	buf = append(buf, '}')
	resp := jsonResponse(http.StatusOK, buf)
	resp.setHeader("x-ms-item-count", strconv.Itoa(len(vals)))
	return resp
}
