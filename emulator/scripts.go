package emulator

import (
	"encoding/binary"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Server-side scripts: stored procedures, triggers and user-defined
// functions are stored, listed, read, replaced and deleted like the
// service's, so that a missing one is a 404 (NotFound) as on the service
// and deployment code that creates them works. The emulator runs no
// JavaScript: executing a stored procedure that exists is refused with 501
// (not_emulated.go), the only place scripts are refused.

// scriptKinds maps the path segment of each script kind to the name of its
// list in a feed and its rid marker byte.
var scriptKinds = map[string]struct {
	feed   string
	marker byte
}{
	"sprocs":   {"StoredProcedures", 0x08},
	"triggers": {"Triggers", 0x09},
	"udfs":     {"UserDefinedFunctions", 0x0a},
}

// script is one stored script: its user properties as compact JSON without
// system properties ({"body": "...", "triggerType": ...}).
type script struct {
	id    string
	props []byte
	num   uint64 // resource number within the container, for the rid
	etag  uint64
	ts    int64
}

// scriptSet holds a container's scripts by kind ("sprocs", "triggers",
// "udfs") and id. It is guarded by the container's lock.
type scriptSet struct {
	byKind map[string]map[string]*script
	next   uint64
}

func (c *container) scriptRID(kind string, num uint64) string {
	var b [16]byte
	copy(b[:8], c.rid[:])
	binary.LittleEndian.PutUint64(b[8:], num)
	b[15] = scriptKinds[kind].marker
	return ridString(b[:])
}

func (c *container) appendScriptJSON(buf []byte, kind string, sc *script) []byte {
	buf = append(buf, sc.props[:len(sc.props)-1]...)
	if len(sc.props) > 2 {
		buf = append(buf, ',')
	}
	rid := c.scriptRID(kind, sc.num)
	buf = append(buf, `"_rid":`...)
	buf = appendString(buf, rid)
	buf = append(buf, `,"_self":`...)
	buf = appendString(buf, c.selfLink()+kind+"/"+rid+"/")
	buf = append(buf, `,"_etag":`...)
	buf = appendString(buf, formatETag(sc.etag))
	buf = append(buf, `,"_ts":`...)
	buf = strconv.AppendInt(buf, sc.ts, 10)
	return append(buf, '}')
}

// parseScript validates a script create or replace body: an object with an
// id and a string "body". It returns the id and the user properties.
func parseScript(kind string, body []byte) (string, []byte, *response) {
	v, err := parseJSON(body)
	if err != nil || v.k != kObject {
		return "", nil, badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	id := v.get("id")
	if id.k != kString {
		return "", nil, badRequest("The input name presented is empty or missing an 'id' property.")
	}
	if resp := validateID(id.s); resp != nil {
		return "", nil, resp
	}
	if v.get("body").k != kString {
		return "", nil, badRequest("The input content is invalid because the required property 'body' of the " +
			strings.TrimSuffix(scriptKinds[kind].feed, "s") + " is missing or not a string.")
	}
	var members []member
	for _, m := range v.members() {
		if !strings.HasPrefix(m.key, "_") {
			members = append(members, m)
		}
	}
	return id.s, objectValue(members).appendJSON(nil), nil
}

// scriptRoute picks the handler of a request under a container's scripts
// (rq.segs[4] is the kind).
func (s *Server) scriptRoute(rq *request) func(*request) *response {
	kind := strings.ToLower(rq.segs[4])
	m := rq.r.Method
	switch len(rq.segs) {
	case 5:
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			return s.scriptsHandler(kind, s.queryScripts)
		case m == http.MethodPost:
			return s.scriptsHandler(kind, s.createScript)
		case m == http.MethodGet:
			return s.scriptsHandler(kind, s.listScripts)
		}
		return methodNotAllowed
	case 6:
		switch {
		case m == http.MethodGet:
			return s.scriptsHandler(kind, s.readScript)
		case m == http.MethodPut:
			return s.scriptsHandler(kind, s.replaceScript)
		case m == http.MethodDelete:
			return s.scriptsHandler(kind, s.deleteScript)
		case m == http.MethodPost && kind == "sprocs":
			return s.scriptsHandler(kind, s.executeScript)
		}
		return methodNotAllowed
	}
	return unsupportedResource
}

// scriptsHandler finds the container (404 with substatus 1003 when it or
// its database is missing) and runs h on it.
func (s *Server) scriptsHandler(kind string, h func(*request, *container, string) *response) func(*request) *response {
	return func(rq *request) *response {
		c, resp := s.findContainer(rq)
		if resp != nil {
			return resp
		}
		return h(rq, c, kind)
	}
}

func (s *Server) createScript(rq *request, c *container, kind string) *response {
	id, props, resp := parseScript(kind, rq.body)
	if resp != nil {
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.scripts.byKind == nil {
		c.scripts.byKind = make(map[string]map[string]*script)
	}
	set := c.scripts.byKind[kind]
	if set == nil {
		set = make(map[string]*script)
		c.scripts.byKind[kind] = set
	}
	if _, ok := set[id]; ok {
		return conflict()
	}
	c.scripts.next++
	sc := &script{id: id, props: props, num: c.scripts.next, etag: s.newETag(), ts: s.unixNow()}
	set[id] = sc
	s.logScript(c, kind, sc)
	return c.scriptResponse(http.StatusCreated, kind, sc)
}

// scriptResponse answers with script sc and its ETag.
func (c *container) scriptResponse(status int, kind string, sc *script) *response {
	resp := jsonResponse(status, c.appendScriptJSON(nil, kind, sc))
	resp.setHeader("etag", formatETag(sc.etag))
	return resp
}

// ifMatchFails reports whether rq carries an If-Match other than etag.
func ifMatchFails(rq *request, etag uint64) bool {
	im := rq.r.Header.Get("If-Match")
	return im != "" && im != formatETag(etag)
}

func (s *Server) readScript(rq *request, c *container, kind string) *response {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sc := c.scripts.byKind[kind][rq.segs[5]]
	if sc == nil {
		return notFound()
	}
	if inm := rq.r.Header.Get("If-None-Match"); inm != "" && inm == formatETag(sc.etag) {
		return &response{status: http.StatusNotModified, charge: 1}
	}
	return c.scriptResponse(http.StatusOK, kind, sc)
}

func (s *Server) replaceScript(rq *request, c *container, kind string) *response {
	id, props, resp := parseScript(kind, rq.body)
	if resp != nil {
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sc := c.scripts.byKind[kind][rq.segs[5]]
	switch {
	case sc == nil:
		return notFound()
	case id != sc.id:
		return badRequest("The id of a script cannot be changed by a replace.")
	case ifMatchFails(rq, sc.etag):
		return preconditionFailed()
	}
	next := &script{id: id, props: props, num: sc.num, etag: s.newETag(), ts: s.unixNow()}
	c.scripts.byKind[kind][id] = next
	s.logScript(c, kind, next)
	return c.scriptResponse(http.StatusOK, kind, next)
}

func (s *Server) deleteScript(rq *request, c *container, kind string) *response {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc := c.scripts.byKind[kind][rq.segs[5]]
	switch {
	case sc == nil:
		return notFound()
	case ifMatchFails(rq, sc.etag):
		return preconditionFailed()
	}
	delete(c.scripts.byKind[kind], sc.id)
	s.logDropScript(c, kind, sc.id)
	return &response{status: http.StatusNoContent, charge: 1}
}

// executeScript answers the execution of a stored procedure: 404 when it
// does not exist, as the service answers, else 501, as the emulator runs no
// JavaScript.
func (s *Server) executeScript(rq *request, c *container, kind string) *response {
	c.mu.RLock()
	sc := c.scripts.byKind[kind][rq.segs[5]]
	c.mu.RUnlock()
	if sc == nil {
		return notFound()
	}
	return notEmulated("the execution of stored procedures")(rq)
}

// scriptValues returns a container's scripts of one kind in creation order.
func (c *container) scriptValues(kind string) []value {
	c.mu.RLock()
	defer c.mu.RUnlock()
	set := c.scripts.byKind[kind]
	list := make([]*script, 0, len(set))
	for _, sc := range set {
		list = append(list, sc)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].num < list[j].num })
	out := make([]value, 0, len(list))
	for _, sc := range list {
		v, _ := parseJSON(c.appendScriptJSON(nil, kind, sc))
		out = append(out, v)
	}
	return out
}

func (s *Server) listScripts(rq *request, c *container, kind string) *response {
	return feedResponse(rq, c.ridString(), scriptKinds[kind].feed, c.scriptValues(kind))
}

func (s *Server) queryScripts(rq *request, c *container, kind string) *response {
	return s.queryResources(rq, c.ridString(), scriptKinds[kind].feed, c.scriptValues(kind))
}

// The headers naming the triggers a write runs.
const (
	preTriggerHeader  = "x-ms-documentdb-pre-trigger-include"
	postTriggerHeader = "x-ms-documentdb-post-trigger-include"
)

// namesTriggers reports whether a request names triggers to run.
func namesTriggers(r *http.Request) bool {
	return r.Header.Get(preTriggerHeader) != "" || r.Header.Get(postTriggerHeader) != ""
}

// handleTriggeredWrite answers a document write that names triggers: 404
// when one of them does not exist in the container, as for any missing
// resource; else 501, as the emulator runs no JavaScript. The write is not
// applied either way.
func (s *Server) handleTriggeredWrite(rq *request) *response {
	c, resp := s.findContainer(rq)
	if resp != nil {
		return resp
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, h := range []string{preTriggerHeader, postTriggerHeader} {
		for _, id := range strings.Split(rq.r.Header.Get(h), ",") {
			if id = strings.TrimSpace(id); id != "" && c.scripts.byKind["triggers"][id] == nil {
				return notFound()
			}
		}
	}
	return notEmulated("triggers")(rq)
}
