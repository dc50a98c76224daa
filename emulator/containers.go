package emulator

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// containerSpec is a validated container definition from a request body.
type containerSpec struct {
	id      string
	props   []member
	pkPaths [][]string
	pkKind  string
	pkLarge bool
	index   *indexPolicy
	ttl     ttlPolicy
	unique  [][][]string
}

// parseContainerSpec validates a container create/replace body.
func parseContainerSpec(body []byte) (*containerSpec, *response) {
	v, err := parseJSON(body)
	if err != nil || v.k != kObject {
		return nil, badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	id := v.get("id")
	if id.k != kString {
		return nil, badRequest("The input name presented is empty or missing an 'id' property.")
	}
	if resp := validateID(id.s); resp != nil {
		return nil, resp
	}
	spec := &containerSpec{id: id.s}
	var resp *response
	if spec.ttl, resp = parseDefaultTTL(v.get("defaultTtl")); resp != nil {
		return nil, resp
	}
	if spec.unique, resp = parseUniqueKeyPolicy(v.get("uniqueKeyPolicy")); resp != nil {
		return nil, resp
	}
	pk := v.get("partitionKey")
	paths := pk.get("paths").elems()
	if pk.k != kObject || len(paths) == 0 {
		return nil, badRequest("The partition key definition is missing or has no paths. The emulator only serves partitioned containers.")
	}
	spec.pkKind = pk.get("kind").s
	if spec.pkKind == "" {
		spec.pkKind = "Hash"
	}
	switch spec.pkKind {
	case "Hash":
		if len(paths) != 1 {
			return nil, badRequest("A partition key definition of kind Hash must have exactly one path.")
		}
	case "MultiHash":
		if len(paths) > 3 {
			return nil, badRequest("A hierarchical partition key can have at most 3 paths.")
		}
	default:
		return nil, badRequest("The partition key kind '" + spec.pkKind + "' is invalid.")
	}
	for _, p := range paths {
		segs, ok := parsePKPath(p.s)
		if p.k != kString || !ok {
			return nil, badRequest("The partition key path '" + p.jsonText() + "' is invalid.")
		}
		spec.pkPaths = append(spec.pkPaths, segs)
	}
	pkMembers := []member{{key: "paths", val: pk.get("paths")}, {key: "kind", val: stringValue(spec.pkKind)}}
	if ver := pk.get("version"); ver.k == kNumber && ver.n != 0 {
		pkMembers = append(pkMembers, member{key: "version", val: ver})
		spec.pkLarge = ver.n >= 2
	}
	if spec.pkKind == "MultiHash" {
		spec.pkLarge = true
	}
	ip := normalizeIndexingPolicy(v.get("indexingPolicy"))
	spec.index = parseIndexPolicy(ip)
	spec.props = append(spec.props, member{key: "indexingPolicy", val: ip}, member{key: "partitionKey", val: objectValue(pkMembers)})
	for _, m := range v.members() {
		switch m.key {
		case "id", "indexingPolicy", "partitionKey":
			continue
		}
		if strings.HasPrefix(m.key, "_") {
			continue
		}
		spec.props = append(spec.props, m)
	}
	has := func(k string) bool {
		for _, m := range spec.props {
			if m.key == k {
				return true
			}
		}
		return false
	}
	if !has("conflictResolutionPolicy") {
		spec.props = append(spec.props, member{key: "conflictResolutionPolicy", val: objectValue([]member{
			{key: "mode", val: stringValue("LastWriterWins")},
			{key: "conflictResolutionPath", val: stringValue("/_ts")},
			{key: "conflictResolutionProcedure", val: stringValue("")},
		})})
	}
	if !has("geospatialConfig") {
		spec.props = append(spec.props, member{key: "geospatialConfig", val: objectValue([]member{{key: "type", val: stringValue("Geography")}})})
	}
	return spec, nil
}

// setRID sets the resource id of container number n of database d.
func (c *container) setRID(d *database, n uint32) {
	copy(c.rid[:4], d.rid[:])
	c.rid[4], c.rid[5], c.rid[6], c.rid[7] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)|0x02
}

func (c *container) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"id":`...)
	buf = appendString(buf, c.id)
	for _, m := range c.props {
		buf = append(buf, ',')
		buf = appendString(buf, m.key)
		buf = append(buf, ':')
		buf = m.val.appendJSON(buf)
	}
	buf = append(buf, `,"_rid":`...)
	buf = appendString(buf, c.ridString())
	buf = append(buf, `,"_ts":`...)
	buf = strconv.AppendInt(buf, c.ts, 10)
	buf = append(buf, `,"_self":`...)
	buf = appendString(buf, c.selfLink())
	buf = append(buf, `,"_etag":`...)
	buf = appendString(buf, formatETag(c.etag))
	buf = append(buf, `,"_docs":"docs/","_sprocs":"sprocs/","_triggers":"triggers/","_udfs":"udfs/","_conflicts":"conflicts/"}`...)
	return buf
}

// containerOf finds the container addressed by rq.segs[1] and rq.segs[3].
// For requests on resources inside it (documents, partition key ranges), a
// missing database or container is 404 with substatus 1003 (owner resource
// does not exist), as the service answers.
// Items of the container that have expired (ttl.go) are deleted first.
func (s *Server) containerOf(rq *request) (*container, *response) {
	c, resp := s.findContainer(rq)
	if c != nil {
		c.expireDue(s.now())
	}
	return c, resp
}

func (s *Server) findContainer(rq *request) (*container, *response) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	owner := len(rq.segs) > 4
	missing := func() *response {
		if owner {
			return errorResponse(http.StatusNotFound, 1003, "Owner resource does not exist")
		}
		return notFound()
	}
	d := s.dbs[rq.segs[1]]
	if d == nil {
		return nil, missing()
	}
	c := d.colls[rq.segs[3]]
	if c == nil {
		return nil, missing()
	}
	return c, nil
}

func (s *Server) handleCreateContainer(rq *request) *response {
	spec, resp := parseContainerSpec(rq.body)
	if resp != nil {
		return resp
	}
	content, hasOffer, resp := offerContent(rq.r)
	if resp != nil {
		return resp
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[rq.segs[1]]
	if d == nil {
		return notFound()
	}
	if _, ok := d.colls[spec.id]; ok {
		return conflict()
	}
	n := s.nextResourceNumber()
	c := &container{
		db: d, id: spec.id, num: n,
		etag: s.newETag(), ts: s.unixNow(),
		props: spec.props, pkPaths: spec.pkPaths, pkKind: spec.pkKind, pkLarge: spec.pkLarge, index: spec.index,
		ttl: spec.ttl, unique: spec.unique,
		parts:  make(map[string]*partition),
		ranges: initialRanges(s.partitions),
	}
	c.setRID(d, n)
	d.colls[spec.id] = c
	switch {
	case hasOffer:
		s.addOffer(c.selfLink(), c.ridString(), content)
	case !d.shared:
		// Dedicated throughput by default, as the service provisions it.
		s.addOffer(c.selfLink(), c.ridString(), objectValue([]member{{key: "offerThroughput", val: numberValue(400)}}))
	}
	s.logContainer(c, true)
	resp = jsonResponse(http.StatusCreated, c.appendJSON(nil))
	resp.setHeader("etag", formatETag(c.etag))
	return resp
}

func (s *Server) handleReadContainer(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	resp = jsonResponse(http.StatusOK, c.appendJSON(nil))
	resp.setHeader("etag", formatETag(c.etag))
	return resp
}

func (s *Server) handleReplaceContainer(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	spec, resp := parseContainerSpec(rq.body)
	if resp != nil {
		return resp
	}
	if spec.id != c.id {
		return badRequest("The id of the container in the request body does not match the one in the request path.")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if im := rq.r.Header.Get("If-Match"); im != "" && im != "*" && im != formatETag(c.etag) {
		return preconditionFailed()
	}
	if len(spec.pkPaths) != len(c.pkPaths) || spec.pkKind != c.pkKind {
		return badRequest("Partition key paths of a container cannot be changed.")
	}
	for i := range spec.pkPaths {
		if !equalSegs(spec.pkPaths[i], c.pkPaths[i]) {
			return badRequest("Partition key paths of a container cannot be changed.")
		}
	}
	if !equalUniqueKeys(spec.unique, c.unique) {
		return badRequest("The unique key policy of a container cannot be changed after it is created.")
	}
	c.redefine(spec, s.newETag(), s.unixNow())
	s.logContainer(c, false)
	resp = jsonResponse(http.StatusOK, c.appendJSON(nil))
	resp.setHeader("etag", formatETag(c.etag))
	return resp
}

func (s *Server) handleDeleteContainer(rq *request) *response {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dbs[rq.segs[1]]
	if d == nil || d.colls[rq.segs[3]] == nil {
		return notFound()
	}
	c := d.colls[rq.segs[3]]
	s.removeOffers(c.selfLink())
	delete(d.colls, rq.segs[3])
	s.logDropContainer(c)
	return &response{status: http.StatusNoContent, charge: 1}
}

// redefine applies a replace's definition (indexing policy, TTL, other
// properties; the partition key and unique keys cannot change) with its
// new ETag and _ts. The caller holds c.mu for writing.
func (c *container) redefine(spec *containerSpec, etag uint64, ts int64) {
	c.props, c.index = spec.props, spec.index
	if spec.ttl != c.ttl {
		c.ttl = spec.ttl
		c.rescheduleExpiries()
	}
	c.etag, c.ts = etag, ts
}

// containerValues returns the containers of database dbID as JSON values.
func (s *Server) containerValues(dbID string) ([]value, string, bool) {
	s.mu.RLock()
	d := s.dbs[dbID]
	if d == nil {
		s.mu.RUnlock()
		return nil, "", false
	}
	cs := make([]*container, 0, len(d.colls))
	for _, c := range d.colls {
		cs = append(cs, c)
	}
	rid := d.ridString()
	s.mu.RUnlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].num < cs[j].num })
	out := make([]value, 0, len(cs))
	for _, c := range cs {
		c.mu.RLock()
		v, _ := parseJSON(c.appendJSON(nil))
		c.mu.RUnlock()
		out = append(out, v)
	}
	return out, rid, true
}

func (s *Server) handleListContainers(rq *request) *response {
	vals, rid, ok := s.containerValues(rq.segs[1])
	if !ok {
		return notFound()
	}
	return feedResponse(rq, rid, "DocumentCollections", vals)
}

func (s *Server) handleQueryContainers(rq *request) *response {
	vals, rid, ok := s.containerValues(rq.segs[1])
	if !ok {
		return notFound()
	}
	return s.queryResources(rq, rid, "DocumentCollections", vals)
}

// handlePKRanges answers the partition key ranges feed: the container's
// physical partitions (partitions.go), each with its EPK bounds and the
// ranges it was split from. Its ETag changes when a range splits; read as
// a change feed (A-IM) with the current ETag in If-None-Match it answers
// 304.
func (s *Server) handlePKRanges(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	c.mu.RLock()
	lsn := c.lsn
	ranges := c.currentRanges()
	etag := `"` + strconv.FormatUint(1+c.rangesVersion, 10) + `"`
	c.mu.RUnlock()
	if rq.r.Header.Get("A-IM") != "" && rq.r.Header.Get("If-None-Match") == etag {
		resp := &response{status: http.StatusNotModified, charge: 1}
		resp.setHeader("etag", etag)
		return resp
	}
	buf := []byte(`{"_rid":`)
	buf = appendString(buf, c.ridString())
	buf = append(buf, `,"PartitionKeyRanges":[`...)
	for i, r := range ranges {
		n, _ := strconv.Atoi(r.id)
		rangeRID := ridString(append(append([]byte(nil), c.rid[:]...), 2+byte(n), byte(n>>8), 0, 0, 0, 0, 0, 0x50))
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"_rid":`...)
		buf = appendString(buf, rangeRID)
		buf = append(buf, `,"id":`...)
		buf = appendString(buf, r.id)
		buf = append(buf, `,"_etag":`...)
		buf = appendString(buf, formatETag(c.etag))
		buf = append(buf, `,"minInclusive":`...)
		buf = appendString(buf, r.min)
		buf = append(buf, `,"maxExclusive":`...)
		buf = appendString(buf, r.max)
		buf = append(buf, `,"ridPrefix":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, `,"_self":`...)
		buf = appendString(buf, c.selfLink()+"pkranges/"+rangeRID+"/")
		buf = append(buf, `,"throughputFraction":`...)
		buf = strconv.AppendFloat(buf, 1/float64(len(ranges)), 'g', -1, 64)
		buf = append(buf, `,"status":"online","parents":[`...)
		for j, p := range r.parents {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, p)
		}
		buf = append(buf, `],"ownedArchivalPKRangeIds":[],"_ts":`...)
		buf = strconv.AppendInt(buf, c.ts, 10)
		buf = append(buf, `,"lsn":`...)
		buf = strconv.AppendUint(buf, lsn, 10)
		buf = append(buf, '}')
	}
	buf = append(buf, `],"_count":`...)
	buf = strconv.AppendInt(buf, int64(len(ranges)), 10)
	buf = append(buf, '}')
	resp = jsonResponse(http.StatusOK, buf)
	resp.setHeader("etag", etag)
	resp.setHeader("x-ms-item-count", strconv.Itoa(len(ranges)))
	return resp
}
