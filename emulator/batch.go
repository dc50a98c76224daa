package emulator

import (
	"net/http"
	"strconv"
	"strings"
)

// maxBatchOperations is the service's limit on operations per transactional
// batch.
const maxBatchOperations = 100

// batchOp is one operation of a transactional batch request.
type batchOp struct {
	kind        string // create, upsert, read, replace, delete, patch
	id          string
	body        value
	ifMatch     string
	ifNoneMatch string
	pk          string // per-operation partition key header, if any
}

// parseBatchOps parses the JSON array a batch request carries.
func parseBatchOps(body []byte) ([]batchOp, error) {
	v, err := parseJSON(body)
	if err != nil {
		return nil, err
	}
	if v.k != kArray {
		return nil, errBadJSON
	}
	elems := v.elems()
	ops := make([]batchOp, 0, len(elems))
	for _, e := range elems {
		if e.k != kObject {
			return nil, errBadJSON
		}
		op := batchOp{
			kind:        strings.ToLower(e.get("operationType").s),
			id:          e.get("id").s,
			body:        e.get("resourceBody"),
			ifMatch:     e.get("ifMatch").s,
			ifNoneMatch: e.get("ifNoneMatch").s,
		}
		if pk := e.get("partitionKey"); pk.k == kString {
			op.pk = pk.s
		}
		if op.id == "" && op.body.k == kObject && op.kind != "patch" {
			op.id = op.body.get("id").s
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func (s *Server) handleBatch(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	atomic := !strings.EqualFold(rq.r.Header.Get("x-ms-cosmos-batch-atomic"), "false")
	// A transactional batch names its one partition key in the header; a
	// non-atomic (bulk) batch may omit it and carry one per operation.
	pkKey := ""
	if atomic || rq.pkHeader != "" {
		if pkKey, resp = requestPK(rq); resp != nil {
			return resp
		}
		if resp := c.checkPKComponents(pkKey); resp != nil {
			return resp
		}
	}
	if len(rq.body) > maxItemBytes {
		return tooLarge()
	}
	ops, err := parseBatchOps(rq.body)
	if err != nil {
		return badRequest("The batch request payload is invalid. Ensure to provide a valid request payload.")
	}
	if len(ops) == 0 {
		return badRequest("The batch request did not have any operations to be executed.")
	}
	if len(ops) > maxBatchOperations {
		return badRequest("Batch request has more operations than what is supported (" + strconv.Itoa(maxBatchOperations) + ").")
	}

	// Validate bodies outside the lock.
	keys := make([]string, len(ops))
	docs := make([]*preparedDoc, len(ops))
	patches := make([]*patchSpec, len(ops))
	early := make([]*response, len(ops))
	for i, op := range ops {
		keys[i] = pkKey
		if op.pk != "" {
			comps, err := parsePKHeader(op.pk)
			switch {
			case err != nil:
				early[i] = badRequest("The partition key of a batch operation is invalid: " + err.Error())
				continue
			case pkKey != "" && canonicalPK(comps) != pkKey:
				early[i] = badRequest("The partition key of a batch operation must match the partition key of the batch.")
				continue
			}
			keys[i] = canonicalPK(comps)
		}
		if keys[i] == "" {
			early[i] = badRequest("PartitionKey value must be supplied for this operation.")
			continue
		}
		if r := c.checkPKComponents(keys[i]); r != nil {
			early[i] = r
			continue
		}
		switch op.kind {
		case "create", "upsert", "replace":
			d, r := c.prepareValue(op.body)
			if r == nil && d.pkKey != keys[i] {
				r = pkMismatch()
			}
			docs[i], early[i] = d, r
		case "patch":
			patches[i], early[i] = patchSpecFromValue(&s.queries, op.body)
		case "read", "delete":
		default:
			early[i] = badRequest("Invalid batch operation type '" + op.kind + "'.")
		}
		if early[i] == nil && op.kind != "create" && op.kind != "upsert" && op.id == "" {
			early[i] = badRequest("The batch operation is missing the 'id' of the document.")
		}
	}
	if !atomic {
		return s.runBulk(rq, c, ops, keys, docs, patches, early)
	}

	c.mu.Lock()
	lsn := c.lsn + 1
	v := &view{c: c}
	plans := make([]plan, len(ops))
	failed := -1
	for i, op := range ops {
		p := s.planBatchOp(v, op, keys[i], docs[i], patches[i], early[i], lsn)
		plans[i] = p
		if p.fail != nil {
			failed = i
			break
		}
	}
	if failed < 0 {
		s.commit(c, plans, lsn)
	}
	// The session token names the container's LSN after the batch: lsn
	// when it wrote, the current one when it failed or only read (a
	// read-only batch named an LSN no replica reached until the next write,
	// so reads carrying its token got 404/1002 until then).
	lsn = c.lsn
	c.chargePlans(plans)
	rg := c.rangeOfKey(pkKey)
	c.mu.Unlock()

	minimal := strings.EqualFold(rq.r.Header.Get("Prefer"), "return=minimal")
	buf := make([]byte, 0, 256*len(ops))
	buf = append(buf, '[')
	items := 0
	total := 0.0
	for i := range ops {
		if i > 0 {
			buf = append(buf, ',')
		}
		p := plans[i]
		switch {
		case failed >= 0 && i == failed:
			buf, _ = appendOpResult(buf, p, minimal)
			total += p.charge
		case failed >= 0:
			buf = append(buf, `{"statusCode":424,"requestCharge":0}`...)
		default:
			total += p.charge
			var n int
			buf, n = appendOpResult(buf, p, minimal)
			items += n
		}
	}
	buf = append(buf, ']')
	status := http.StatusOK
	if failed >= 0 {
		status = http.StatusMultiStatus
	}
	return &response{status: status, body: buf, items: items, charge: total, lsn: lsn, rng: rg.id, owner: c}
}

// planBatchOp plans one operation of a batch against the view; early is the
// operation's validation failure, if any.
func (s *Server) planBatchOp(v *view, op batchOp, key string, doc *preparedDoc, patch *patchSpec, early *response, lsn uint64) plan {
	switch {
	case early != nil:
		return plan{fail: early}
	case op.kind == "create":
		return s.planCreate(v, doc, lsn)
	case op.kind == "upsert":
		return s.planUpsert(v, doc, op.ifMatch, lsn)
	case op.kind == "replace":
		return s.planReplace(v, op.id, doc, op.ifMatch, lsn)
	case op.kind == "delete":
		return s.planDelete(v, key, op.id, op.ifMatch)
	case op.kind == "read":
		p := s.planRead(v, key, op.id)
		if p.fail == nil && op.ifNoneMatch != "" && (op.ifNoneMatch == "*" || op.ifNoneMatch == formatETag(p.read.etag)) {
			p = plan{status: http.StatusNotModified, pkKey: key}
		}
		return p
	default: // patch
		return s.planPatch(v, key, op.id, patch, op.ifMatch, lsn)
	}
}

// appendOpResult appends one operation's entry of a batch response: its
// status (and substatus when it failed), charge, ETag and body. It returns
// the number of documents it wrote.
func appendOpResult(buf []byte, p plan, minimal bool) ([]byte, int) {
	if p.fail != nil {
		buf = append(buf, `{"statusCode":`...)
		buf = strconv.AppendInt(buf, int64(p.fail.status), 10)
		if p.fail.subst != 0 {
			buf = append(buf, `,"subStatusCode":`...)
			buf = strconv.AppendInt(buf, int64(p.fail.subst), 10)
		}
		buf = append(buf, `,"requestCharge":`...)
		buf = strconv.AppendFloat(buf, p.charge, 'f', 2, 64)
		return append(buf, '}'), 0
	}
	it := p.next
	if it == nil {
		it = p.read
	}
	items := 0
	buf = append(buf, `{"statusCode":`...)
	buf = strconv.AppendInt(buf, int64(p.status), 10)
	buf = append(buf, `,"requestCharge":`...)
	buf = strconv.AppendFloat(buf, p.charge, 'f', 2, 64)
	if it != nil {
		buf = append(buf, `,"eTag":`...)
		buf = appendString(buf, formatETag(it.etag))
		if p.read != nil || !minimal {
			buf = append(buf, `,"resourceBody":`...)
			buf = it.appendJSON(buf)
			items++
		}
	}
	return append(buf, '}'), items
}
