package emulator

import (
	"net/http"
	"strings"
)

// notEmulated answers a request for something the emulator does not
// implement (executing server-side JavaScript, creating users and
// permissions) with 501 Not Implemented, code "NotImplemented" and a
// message naming it. It is not a 404: a client must not take it for
// "container not found" (404 with substatus 1003) or "item not found", and
// no SDK retries a 501. A missing resource is still a 404 (scripts.go,
// handleUsers).
func notEmulated(what string) func(*request) *response {
	return func(rq *request) *response {
		return errorResponse(http.StatusNotImplemented, 0,
			"The emulator does not implement "+what+" (request /"+strings.Join(rq.segs, "/")+
				"); use the Azure Cosmos DB service or the official emulator for them.")
	}
}

// handleUsers answers requests under a database's users (rq.segs[2] is
// "users"). The emulator stores no users: listing them gives an empty feed,
// any one user or permission is a 404 (NotFound), as on the service for a
// missing one, and creating (or upserting) one is refused with 501. A
// missing database is a 404 too.
func (s *Server) handleUsers(rq *request) *response {
	s.mu.RLock()
	d := s.dbs[rq.segs[1]]
	var rid string
	if d != nil {
		rid = d.ridString()
	}
	s.mu.RUnlock()
	if d == nil {
		return notFound()
	}
	m := rq.r.Method
	n := len(rq.segs)
	switch {
	case n == 3 && m == http.MethodGet:
		return feedResponse(rq, rid, "Users", nil)
	case n == 3 && m == http.MethodPost && isQuery(rq.r):
		return s.queryResources(rq, rid, "Users", nil)
	case n == 3 && m == http.MethodPost:
		return notEmulated("users")(rq)
	}
	// Any one user, or anything under one (its permissions), does not
	// exist.
	return notFound()
}
