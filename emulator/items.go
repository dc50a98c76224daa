package emulator

import (
	"net/http"
	"strings"
	"unsafe"
)

// maxItemBytes is the service's limit on one document (and on a
// transactional batch request): 2 MB.
const maxItemBytes = 2 * 1024 * 1024

// preparedDoc is a validated document body ready to be stored.
type preparedDoc struct {
	id    string
	body  []byte // compact JSON, system properties stripped
	index []byte // top-level property offsets, see item.index
	pkKey string // canonical partition key
}

// prepareDoc validates a document for a write: JSON object, valid id,
// primitive partition key value, size limit.
func (c *container) prepareDoc(raw []byte) (*preparedDoc, *response) {
	if len(raw) > maxItemBytes {
		return nil, tooLarge()
	}
	v, err := parseJSON(raw)
	if err != nil {
		return nil, badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	return c.prepareValue(v)
}

// prepareValue validates a parsed document for a write.
func (c *container) prepareValue(v value) (*preparedDoc, *response) {
	if v.k != kObject {
		return nil, badRequest("The request payload is invalid. A document must be a JSON object.")
	}
	id := v.get("id")
	if id.k != kString {
		return nil, badRequest("The input content is invalid because the required properties - 'id; ' - are missing")
	}
	if resp := validateItemID(id.s); resp != nil {
		return nil, resp
	}
	comps := c.pkOf(v)
	if !pkValid(comps) {
		return nil, badRequest("The partition key value of the document must be a string, number, boolean or null.")
	}
	if resp := c.checkPKLength(comps); resp != nil {
		return nil, resp
	}
	body := make([]byte, 0, 256)
	body = append(body, '{')
	ms := v.members()
	index := make([]uint16, 0, 2*len(ms))
	indexable := true
	for _, m := range ms {
		if isSystemProperty(m.key) {
			continue
		}
		if len(body) > 1 {
			body = append(body, ',')
		}
		keyStart := len(body) + 1
		body = appendString(body, m.key)
		if len(body)-keyStart-1 != len(m.key) {
			indexable = false // the key needed escapes
		}
		body = append(body, ':')
		index = append(index, uint16(keyStart), uint16(len(body)))
		body = m.val.appendJSON(body)
	}
	body = append(body, '}')
	if len(body) > maxItemBytes {
		return nil, tooLarge()
	}
	d := &preparedDoc{id: id.s, pkKey: canonicalPK(comps)}
	if !indexable || len(body) > 0xFFFF {
		d.body = body
		return d, nil
	}
	// One allocation holds the index followed by the body, so a lookup
	// touches neighbouring memory.
	buf := make([]byte, 2*len(index)+len(body))
	for i, off := range index {
		buf[2*i] = byte(off)
		buf[2*i+1] = byte(off >> 8)
	}
	copy(buf[2*len(index):], body)
	d.index = buf[: 2*len(index) : 2*len(index)]
	d.body = buf[2*len(index):]
	// Share the id's bytes with the body (which is never modified) instead
	// of keeping a second copy.
	it := item{body: d.body, index: d.index}
	if off, ok := it.offset("id"); ok {
		if end := off + 1 + len(d.id); end < len(d.body) && d.body[end] == '"' && string(d.body[off+1:end]) == d.id {
			d.id = unsafe.String(&d.body[off+1], len(d.id))
		}
	}
	return d, nil
}

// requestPK parses the partition key header of a point operation.
func requestPK(rq *request) (string, *response) {
	if rq.pkHeader == "" {
		return "", badRequest("PartitionKey value must be supplied for this operation.")
	}
	comps, err := parsePKHeader(rq.pkHeader)
	if err != nil {
		return "", badRequest("The partition key supplied in x-ms-partitionkey header has an invalid format: " + err.Error())
	}
	return canonicalPK(comps), nil
}

// checkPKComponents verifies the header has as many components as the
// container's partition key definition.
func (c *container) checkPKComponents(key string) *response {
	comps, err := parsePKHeader(key)
	if err != nil {
		return badRequest("The partition key supplied in x-ms-partitionkey header has an invalid format.")
	}
	if len(comps) != len(c.pkPaths) {
		return badRequest("Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document.")
	}
	return nil
}

func pkMismatch() *response {
	return errorResponse(http.StatusBadRequest, 1001,
		"PartitionKey extracted from document doesn't match the one specified in the header. Learn more: https://aka.ms/CosmosDB/sql/errors/wrong-pk-value")
}

// view is a container as a batch sees it: committed documents overlaid with
// the effects of the batch's earlier operations.
type view struct {
	c       *container
	overlay map[string]*item // pkKey + "\x00" + id -> version; nil = deleted
}

func (v *view) get(pkKey, id string) *item {
	if v.overlay != nil {
		if it, ok := v.overlay[pkKey+"\x00"+id]; ok {
			return it
		}
	}
	return v.c.lookup(pkKey, id)
}

func (v *view) set(pkKey, id string, it *item) {
	if v.overlay == nil {
		v.overlay = make(map[string]*item)
	}
	v.overlay[pkKey+"\x00"+id] = it
}

// plan is the outcome of one document operation before it is committed.
type plan struct {
	status int
	pkKey  string
	prev   *item // version replaced or deleted
	next   *item // version written
	read   *item // version read
	fail   *response
	charge float64 // request units (charges.go), set under the container lock
}

// newVersion builds the next version of a document.
func (s *Server) newVersion(c *container, d *preparedDoc, lsn uint64) *item {
	return &item{id: d.id, body: d.body, index: d.index, coll: c, etag: s.newETag(), ts: s.unixNow(), lsn: lsn}
}

func etagMatches(it *item, ifMatch string) bool {
	return ifMatch == "" || ifMatch == "*" || ifMatch == formatETag(it.etag)
}

func (s *Server) planCreate(v *view, d *preparedDoc, lsn uint64) plan {
	if v.get(d.pkKey, d.id) != nil {
		return plan{fail: conflict()}
	}
	it := s.newVersion(v.c, d, lsn)
	if fail := v.uniqueConflict(d.pkKey, it); fail != nil {
		return plan{fail: fail}
	}
	v.set(d.pkKey, d.id, it)
	return plan{status: http.StatusCreated, pkKey: d.pkKey, next: it}
}

func (s *Server) planUpsert(v *view, d *preparedDoc, ifMatch string, lsn uint64) plan {
	prev := v.get(d.pkKey, d.id)
	if prev == nil {
		// The service follows create semantics when the document does not
		// exist, whatever If-Match says.
		it := s.newVersion(v.c, d, lsn)
		if fail := v.uniqueConflict(d.pkKey, it); fail != nil {
			return plan{fail: fail}
		}
		v.set(d.pkKey, d.id, it)
		return plan{status: http.StatusCreated, pkKey: d.pkKey, next: it}
	}
	if !etagMatches(prev, ifMatch) {
		return plan{fail: preconditionFailed()}
	}
	it := s.newVersion(v.c, d, lsn)
	if fail := v.uniqueConflict(d.pkKey, it); fail != nil {
		return plan{fail: fail}
	}
	v.set(d.pkKey, d.id, it)
	return plan{status: http.StatusOK, pkKey: d.pkKey, prev: prev, next: it}
}

func (s *Server) planReplace(v *view, id string, d *preparedDoc, ifMatch string, lsn uint64) plan {
	if d.id != id {
		return plan{fail: badRequest("The id of the document in the request body does not match the id in the request.")}
	}
	prev := v.get(d.pkKey, d.id)
	if prev == nil {
		return plan{fail: notFound()}
	}
	if !etagMatches(prev, ifMatch) {
		return plan{fail: preconditionFailed()}
	}
	it := s.newVersion(v.c, d, lsn)
	if fail := v.uniqueConflict(d.pkKey, it); fail != nil {
		return plan{fail: fail}
	}
	v.set(d.pkKey, d.id, it)
	return plan{status: http.StatusOK, pkKey: d.pkKey, prev: prev, next: it}
}

func (s *Server) planDelete(v *view, pkKey, id, ifMatch string) plan {
	prev := v.get(pkKey, id)
	if prev == nil {
		return plan{fail: notFound()}
	}
	if !etagMatches(prev, ifMatch) {
		return plan{fail: preconditionFailed()}
	}
	v.set(pkKey, id, nil)
	return plan{status: http.StatusNoContent, pkKey: pkKey, prev: prev}
}

func (s *Server) planRead(v *view, pkKey, id string) plan {
	it := v.get(pkKey, id)
	if it == nil {
		return plan{fail: notFound()}
	}
	return plan{status: http.StatusOK, pkKey: pkKey, read: it}
}

func (s *Server) planPatch(v *view, pkKey, id string, spec *patchSpec, ifMatch string, lsn uint64) plan {
	prev := v.get(pkKey, id)
	if prev == nil {
		return plan{fail: notFound()}
	}
	if !etagMatches(prev, ifMatch) {
		return plan{fail: preconditionFailed()}
	}
	doc, fail := spec.apply(v.c, prev)
	if fail != nil {
		return plan{fail: fail}
	}
	d, fail := v.c.prepareValue(doc)
	if fail != nil {
		return plan{fail: fail}
	}
	if d.pkKey != pkKey || d.id != id {
		return plan{fail: badRequest("The id and the partition key of a document cannot be patched.")}
	}
	it := s.newVersion(v.c, d, lsn)
	if fail := v.uniqueConflict(pkKey, it); fail != nil {
		return plan{fail: fail}
	}
	v.set(pkKey, id, it)
	return plan{status: http.StatusOK, pkKey: pkKey, prev: prev, next: it}
}

// commit publishes the effects of successful plans in order, advances the
// container's LSN once and logs the writes for the secondary replicas
// (replicas.go). The caller holds c.mu for writing.
func (s *Server) commit(c *container, plans []plan, lsn uint64) {
	if c.commit(plans, lsn) {
		s.logWrites(c, plans, lsn)
	}
}

// commit publishes the effects of successful plans in order and advances the
// container's LSN once; it reports whether anything was written. The caller
// holds c.mu for writing.
func (c *container) commit(plans []plan, lsn uint64) bool {
	wrote := false
	for _, p := range plans {
		switch {
		case p.next != nil:
			p.next.part = c.partition(p.pkKey, true)
			c.put(p.next, p.prev)
			wrote = true
		case p.prev != nil:
			c.remove(p.prev)
			wrote = true
		}
	}
	if wrote {
		c.lsn = lsn
		c.logCommit(plans, lsn)
	}
	return wrote
}

// itemResponse answers a point operation from its plan.
func itemResponse(rq *request, p plan, lsn uint64) *response {
	if p.fail != nil {
		return p.fail
	}
	resp := &response{status: p.status, lsn: lsn}
	it := p.next
	if it == nil {
		it = p.read
	}
	switch {
	case it != nil:
		resp.setHeader("etag", formatETag(it.etag))
		minimal := p.read == nil && strings.EqualFold(rq.r.Header.Get("Prefer"), "return=minimal")
		if !minimal {
			resp.body = it.appendJSON(make([]byte, 0, len(it.body)+160))
			resp.items = 1
		}
		resp.charge = p.charge
		if p.read != nil {
			resp.charge = pointReadCharge(it.size())
		}
	case p.prev != nil:
		resp.charge = p.charge
	}
	return resp
}

// pointWrite runs one single-document write under the container lock.
func (s *Server) pointWrite(c *container, rq *request, key string, do func(v *view, lsn uint64) plan) *response {
	c.mu.Lock()
	lsn := c.lsn + 1
	v := &view{c: c}
	p := do(v, lsn)
	if p.fail == nil {
		s.commit(c, []plan{p}, lsn)
	}
	p.charge = planCharge(c.index, p)
	rg := c.rangeOfKey(key)
	c.mu.Unlock()
	resp := itemResponse(rq, p, lsn)
	resp.rng, resp.owner = rg.id, c
	if resp.lsn == 0 {
		resp.lsn = lsn - 1
	}
	return resp
}

// docRequest resolves the container and partition key of a document request
// and, for writes with a body, validates the document against the header.
func (s *Server) docRequest(rq *request, withBody bool) (*container, string, *preparedDoc, *response) {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return nil, "", nil, resp
	}
	if len(rq.segs) == 6 {
		if resp := urlAddressingRefusal(rq.segs[5]); resp != nil {
			return nil, "", nil, resp
		}
	}
	var d *preparedDoc
	if withBody {
		d, resp = c.prepareDoc(rq.body)
		if resp != nil {
			return nil, "", nil, resp
		}
	}
	pkKey, resp := requestPK(rq)
	if resp != nil {
		return nil, "", nil, resp
	}
	if resp := c.checkPKComponents(pkKey); resp != nil {
		return nil, "", nil, resp
	}
	if d != nil && d.pkKey != pkKey {
		return nil, "", nil, pkMismatch()
	}
	return c, pkKey, d, nil
}

func (s *Server) handleCreateItem(rq *request) *response {
	c, _, d, resp := s.docRequest(rq, true)
	if resp != nil {
		return resp
	}
	return s.pointWrite(c, rq, d.pkKey, func(v *view, lsn uint64) plan { return s.planCreate(v, d, lsn) })
}

func (s *Server) handleUpsertItem(rq *request) *response {
	c, _, d, resp := s.docRequest(rq, true)
	if resp != nil {
		return resp
	}
	ifMatch := rq.r.Header.Get("If-Match")
	return s.pointWrite(c, rq, d.pkKey, func(v *view, lsn uint64) plan { return s.planUpsert(v, d, ifMatch, lsn) })
}

func (s *Server) handleReplaceItem(rq *request) *response {
	c, _, d, resp := s.docRequest(rq, true)
	if resp != nil {
		return resp
	}
	ifMatch := rq.r.Header.Get("If-Match")
	id := rq.segs[5]
	return s.pointWrite(c, rq, d.pkKey, func(v *view, lsn uint64) plan { return s.planReplace(v, id, d, ifMatch, lsn) })
}

func (s *Server) handleDeleteItem(rq *request) *response {
	c, pkKey, _, resp := s.docRequest(rq, false)
	if resp != nil {
		return resp
	}
	ifMatch := rq.r.Header.Get("If-Match")
	id := rq.segs[5]
	return s.pointWrite(c, rq, pkKey, func(v *view, lsn uint64) plan { return s.planDelete(v, pkKey, id, ifMatch) })
}

func (s *Server) handlePatchItem(rq *request) *response {
	c, pkKey, _, resp := s.docRequest(rq, false)
	if resp != nil {
		return resp
	}
	spec, resp := parsePatchSpec(&s.queries, rq.body)
	if resp != nil {
		return resp
	}
	ifMatch := rq.r.Header.Get("If-Match")
	id := rq.segs[5]
	return s.pointWrite(c, rq, pkKey, func(v *view, lsn uint64) plan { return s.planPatch(v, pkKey, id, spec, ifMatch, lsn) })
}

func (s *Server) handleReadItem(rq *request) *response {
	c, pkKey, _, resp := s.docRequest(rq, false)
	if resp != nil {
		return resp
	}
	c.mu.RLock()
	rg := c.rangeOfKey(pkKey)
	view, resp := s.chooseReplica(rq, c, []pkRange{rg})
	if resp != nil {
		c.mu.RUnlock()
		return resp
	}
	it := c.versionAt(view, pkKey, rq.segs[5])
	c.mu.RUnlock()
	lsn := view.lsn
	if it == nil {
		resp := notFound()
		resp.lsn, resp.rng, resp.owner = lsn, rg.id, c
		return resp
	}
	if inm := rq.r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == formatETag(it.etag)) {
		resp := &response{status: http.StatusNotModified, lsn: lsn, rng: rg.id, owner: c, charge: 1}
		resp.setHeader("etag", formatETag(it.etag))
		return resp
	}
	resp = itemResponse(rq, plan{status: http.StatusOK, read: it}, lsn)
	resp.rng, resp.owner = rg.id, c
	return resp
}
