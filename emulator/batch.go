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
	pkKey, resp := requestPK(rq)
	if resp != nil {
		return resp
	}
	if resp := c.checkPKComponents(pkKey); resp != nil {
		return resp
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
	docs := make([]*preparedDoc, len(ops))
	patches := make([]*patchSpec, len(ops))
	early := make([]*response, len(ops))
	for i, op := range ops {
		if op.pk != "" {
			if comps, err := parsePKHeader(op.pk); err != nil || canonicalPK(comps) != pkKey {
				early[i] = badRequest("The partition key of a batch operation must match the partition key of the batch.")
				continue
			}
		}
		switch op.kind {
		case "create", "upsert", "replace":
			d, r := c.prepareValue(op.body)
			if r == nil && d.pkKey != pkKey {
				r = pkMismatch()
			}
			docs[i], early[i] = d, r
		case "patch":
			patches[i], early[i] = patchSpecFromValue(op.body)
		case "read", "delete":
		default:
			early[i] = badRequest("Invalid batch operation type '" + op.kind + "'.")
		}
		if early[i] == nil && op.kind != "create" && op.kind != "upsert" && op.id == "" {
			early[i] = badRequest("The batch operation is missing the 'id' of the document.")
		}
	}

	c.mu.Lock()
	lsn := c.lsn + 1
	v := &view{c: c}
	plans := make([]plan, len(ops))
	failed := -1
	for i, op := range ops {
		var p plan
		switch {
		case early[i] != nil:
			p = plan{fail: early[i]}
		case op.kind == "create":
			p = s.planCreate(v, docs[i], lsn)
		case op.kind == "upsert":
			p = s.planUpsert(v, docs[i], op.ifMatch, lsn)
		case op.kind == "replace":
			p = s.planReplace(v, op.id, docs[i], op.ifMatch, lsn)
		case op.kind == "delete":
			p = s.planDelete(v, pkKey, op.id, op.ifMatch)
		case op.kind == "read":
			p = s.planRead(v, pkKey, op.id)
			if p.fail == nil && op.ifNoneMatch != "" && (op.ifNoneMatch == "*" || op.ifNoneMatch == formatETag(p.read.etag)) {
				p = plan{status: http.StatusNotModified, pkKey: pkKey}
			}
		case op.kind == "patch":
			p = s.planPatch(v, pkKey, op.id, patches[i], op.ifMatch, lsn)
		}
		plans[i] = p
		if p.fail != nil {
			failed = i
			break
		}
	}
	if failed < 0 {
		c.commit(plans, lsn)
	} else {
		lsn = c.lsn
	}
	c.chargePlans(plans)
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
			buf = append(buf, `{"statusCode":`...)
			buf = strconv.AppendInt(buf, int64(p.fail.status), 10)
			if p.fail.subst != 0 {
				buf = append(buf, `,"subStatusCode":`...)
				buf = strconv.AppendInt(buf, int64(p.fail.subst), 10)
			}
			buf = append(buf, `,"requestCharge":`...)
			buf = strconv.AppendFloat(buf, p.charge, 'f', 2, 64)
			buf = append(buf, '}')
			total += p.charge
		case failed >= 0:
			buf = append(buf, `{"statusCode":424,"requestCharge":0}`...)
		default:
			it := p.next
			if it == nil {
				it = p.read
			}
			charge := p.charge
			total += charge
			buf = append(buf, `{"statusCode":`...)
			buf = strconv.AppendInt(buf, int64(p.status), 10)
			buf = append(buf, `,"requestCharge":`...)
			buf = strconv.AppendFloat(buf, charge, 'f', 2, 64)
			if it != nil {
				buf = append(buf, `,"eTag":`...)
				buf = appendString(buf, formatETag(it.etag))
				if p.read != nil || !minimal {
					buf = append(buf, `,"resourceBody":`...)
					buf = it.appendJSON(buf)
					items++
				}
			}
			buf = append(buf, '}')
		}
	}
	buf = append(buf, ']')
	status := http.StatusOK
	if failed >= 0 {
		status = http.StatusMultiStatus
	}
	return &response{status: status, body: buf, items: items, charge: total, lsn: lsn}
}
