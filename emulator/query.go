package emulator

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// defaultPageSize is the page size when x-ms-max-item-count is absent.
const defaultPageSize = 100

// queryRequest is the body of a query request.
type queryRequest struct {
	q      *query
	params map[string]value
}

// queryErrorResponse renders a query error as the service does: 400 with
// the query compiler's error list in the message.
func queryErrorResponse(err error) *response {
	msg := err.Error()
	pos := 0
	if qe, ok := err.(*queryError); ok {
		pos = qe.pos
	}
	code := "SC1001"
	if strings.Contains(msg, "could not be resolved") || strings.Contains(msg, "not defined") {
		code = "SC2001"
	}
	detail := []byte(`{"errors":[{"severity":"Error","location":{"start":`)
	detail = strconv.AppendInt(detail, int64(pos), 10)
	detail = append(detail, `,"end":`...)
	detail = strconv.AppendInt(detail, int64(pos+1), 10)
	detail = append(detail, `},"code":"`...)
	detail = append(detail, code...)
	detail = append(detail, `","message":`...)
	detail = appendString(detail, msg)
	detail = append(detail, `}]}`...)
	return badRequest("Message: " + string(detail))
}

// parseQueryRequest parses {"query": "...", "parameters": [{"name", "value"}]}.
func (s *Server) parseQueryRequest(body []byte) (*queryRequest, *response) {
	v, err := parseJSON(body)
	if err != nil || v.k != kObject {
		return nil, badRequest("The query request body is invalid. Ensure to provide a valid request payload.")
	}
	text := v.get("query")
	if text.k != kString || strings.TrimSpace(text.s) == "" {
		return nil, badRequest("The query text is missing.")
	}
	q, err := s.queries.parse(text.s)
	if err != nil {
		return nil, queryErrorResponse(err)
	}
	if q.from != nil && q.from.sub != nil {
		return nil, badRequest("Subqueries in the FROM clause are not supported by the emulator.")
	}
	params := make(map[string]value)
	ps := v.get("parameters")
	if ps.defined() && ps.k != kArray && ps.k != kNull {
		return nil, badRequest("The query parameters must be an array.")
	}
	for _, p := range ps.elems() {
		name := p.get("name")
		if name.k != kString || !strings.HasPrefix(name.s, "@") || len(name.s) < 2 {
			return nil, badRequest("Query parameter names must be strings starting with '@'.")
		}
		params[name.s] = p.get("value")
	}
	return &queryRequest{q: q, params: params}, nil
}

// pageSize reads x-ms-max-item-count: absent or 0 means the default page
// size, a negative value means no count limit (the 4 MB cap still applies).
func pageSize(r *http.Request) (int, *response) {
	h := r.Header.Get("x-ms-max-item-count")
	if h == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(h)
	if err != nil {
		return 0, badRequest("Invalid value for header x-ms-max-item-count: " + h)
	}
	switch {
	case n == 0:
		return defaultPageSize, nil
	case n < 0:
		return -1, nil
	}
	return n, nil
}

// needsQueryPlan reports whether a cross-partition query uses a feature the
// gateway cannot serve without a client-side query plan.
func (q *query) needsQueryPlan() bool {
	return q.top != nil || len(q.orderBy) > 0 || q.offset != nil || q.distinct || q.hasAgg || len(q.groupBy) > 0
}

// orderByPath returns the document path an ORDER BY expression sorts on.
func (q *query) orderByPath(e expr) ([]string, bool) {
	var segs []string
	for {
		switch x := e.(type) {
		case propExpr:
			segs = append([]string{x.name}, segs...)
			e = x.base
			continue
		case indexExpr:
			lit, ok := x.index.(litExpr)
			if !ok || lit.v.k != kNumber {
				return nil, false
			}
			segs = append([]string{strconv.Itoa(int(lit.v.n))}, segs...)
			e = x.base
			continue
		case identExpr:
			if q.from == nil || q.from.e != nil || x.name != q.from.alias || len(segs) == 0 {
				return nil, false
			}
			return segs, true
		}
		return nil, false
	}
}

// checkOrderByIndex refuses ORDER BY clauses the container's indexing
// policy cannot serve, as the service does.
func (q *query) checkOrderByIndex(ip *indexPolicy) *response {
	if len(q.orderBy) == 0 {
		return nil
	}
	paths := make([][]string, len(q.orderBy))
	desc := make([]bool, len(q.orderBy))
	for i, o := range q.orderBy {
		segs, ok := q.orderByPath(o.e)
		if !ok {
			return queryErrorResponse(errAt(0, "Unsupported ORDER BY clause. ORDER BY item expression could not be mapped to a document path."))
		}
		paths[i], desc[i] = segs, o.desc
	}
	if len(paths) == 1 {
		if !ip.rangeIndexed(paths[0]) {
			return badRequest("Order-by item requires a range index to be defined on the corresponding index path.")
		}
		return nil
	}
	if !ip.hasComposite(paths, desc) {
		return badRequest("The order by query does not have a corresponding composite index that it can be served from.")
	}
	return nil
}

func (s *Server) handleQuery(rq *request) *response {
	c, resp := s.containerOf(rq)
	if resp != nil {
		return resp
	}
	qr, resp := s.parseQueryRequest(rq.body)
	if resp != nil {
		return resp
	}
	if headerBool(rq.r, queryPlanHeader) {
		return planResponse(qr.q, qr.params, compositeAggregates(rq.r))
	}
	size, resp := pageSize(rq.r)
	if resp != nil {
		return resp
	}
	var pkKey *string
	var prefix string
	if rq.pkHeader != "" {
		key, resp := requestPK(rq)
		if resp != nil {
			return resp
		}
		if p, ok := c.keyPrefix(key); ok {
			prefix = p
		} else {
			if resp := c.checkPKComponents(key); resp != nil {
				return resp
			}
			pkKey = &key
		}
	}
	crossPartition := false
	if pkKey == nil && prefix == "" && rq.r.Header.Get("x-ms-documentdb-partitionkeyrangeid") == "" {
		if !headerBool(rq.r, "x-ms-documentdb-query-enablecrosspartition") {
			return badRequest("Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
		}
		if key, ok := qr.q.pinnedPartition(c.pkPaths, qr.params); ok {
			// The filter pins one logical partition: the gateway routes the
			// query there and serves it like a single-partition query.
			pkKey = &key
		} else {
			if qr.q.needsQueryPlan() {
				return crossPartitionNotServable(qr.q, qr.params, compositeAggregates(rq.r))
			}
			crossPartition = true
		}
	}
	plan := qr.q.indexPlan(qr.params, pkKey != nil)
	if pkKey != nil {
		// A single-partition query uses the equality indexes that exist
		// (cross-partition queries build them) but builds none: each
		// costs every write of the container, for a scan of one
		// partition only.
		c.mu.RLock()
		plan = plan.withEqIndexes(c)
		c.mu.RUnlock()
	}
	c.prepareIndexes(plan, pkKey)
	c.mu.RLock()
	rf, resp := c.requestRange(rq.r)
	if resp != nil {
		c.mu.RUnlock()
		return resp
	}
	rf = rf.withPrefix(prefix)
	idx := c.index
	docs := c.querySnapshot(pkKey, plan)
	if rf != nil {
		kept := make([]*item, 0, len(docs))
		for _, it := range docs {
			if rf.admits(it.part.epk) {
				kept = append(kept, it)
			}
		}
		docs = kept
	}
	ranges := c.rangesOf(pkKey, rf)
	view, resp := s.chooseReplica(rq, c, ranges)
	if resp != nil {
		c.mu.RUnlock()
		return resp
	}
	docs = c.docsAt(view, docs, func(it *item) bool {
		return (pkKey == nil || it.part.key == *pkKey) && rf.admits(it.part.epk)
	})
	lsn := view.lsn
	rid := c.ridString()
	c.mu.RUnlock()
	if resp := qr.q.checkOrderByIndex(idx); resp != nil {
		return resp
	}
	start := time.Now()
	pg, err := qr.q.execute(execInput{docs: docs}, pageRequest{
		params:   qr.params,
		maxItems: size,
		token:    rq.r.Header.Get("x-ms-continuation"),
		eager:    crossPartition,
	})
	if err != nil {
		return queryErrorResponse(err)
	}
	resp = pageResponse(rid, "Documents", pg)
	addQueryMetrics(rq, resp, len(docs), pg, time.Since(start))
	resp.lsn = lsn
	setSession(resp, c, ranges)
	resp.charge = queryPageCharge(loadedBytes(docs), pg.count)
	return resp
}

// pinnedPartition reports whether the WHERE clause fixes every partition key
// path to a scalar with top-level AND-ed equalities (c.pk = 'x' or
// c.pk = @p), and returns that partition key.
func (q *query) pinnedPartition(pkPaths [][]string, params map[string]value) (string, bool) {
	if q.where == nil || q.from == nil || q.from.e != nil {
		return "", false
	}
	var conjuncts []expr
	var flatten func(e expr)
	flatten = func(e expr) {
		if b, ok := e.(binaryExpr); ok && b.op == "AND" {
			flatten(b.l)
			flatten(b.r)
			return
		}
		conjuncts = append(conjuncts, e)
	}
	flatten(q.where)
	comps := make([]value, len(pkPaths))
	for i, path := range pkPaths {
		found := false
		for _, e := range conjuncts {
			b, ok := e.(binaryExpr)
			if !ok || b.op != "=" {
				continue
			}
			for _, pair := range [][2]expr{{b.l, b.r}, {b.r, b.l}} {
				pe, ok := pair[0].(propExpr)
				if !ok || pe.root != q.from.alias || !equalSegs(pe.path, path) {
					continue
				}
				var v value
				switch o := pair[1].(type) {
				case litExpr:
					v = o.v
				case paramExpr:
					v = params[o.name]
				default:
					continue
				}
				switch v.k {
				case kNull, kBool, kNumber, kString:
					comps[i], found = v, true
				}
			}
			if found {
				break
			}
		}
		if !found {
			return "", false
		}
	}
	return canonicalPK(comps), true
}

// addQueryMetrics adds the query metrics header the SDK asks for with
// x-ms-documentdb-populatequerymetrics, and index metrics when asked with
// x-ms-cosmos-populateindexmetrics. The figures are the emulator's own.
func addQueryMetrics(rq *request, resp *response, scanned int, pg page, took time.Duration) {
	if headerBool(rq.r, "x-ms-documentdb-populatequerymetrics") {
		ms := float64(took.Microseconds()) / 1000
		resp.setHeader("x-ms-documentdb-query-metrics", fmt.Sprintf(
			"totalExecutionTimeInMs=%.2f;queryCompileTimeInMs=0.01;queryLogicalPlanBuildTimeInMs=0.01;queryPhysicalPlanBuildTimeInMs=0.01;"+
				"queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=%.2f;indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.00;"+
				"systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=%d;retrievedDocumentSize=0;"+
				"outputDocumentCount=%d;outputDocumentSize=%d;writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00",
			ms, ms, scanned, pg.count, len(pg.buf)))
	}
	if headerBool(rq.r, "x-ms-cosmos-populateindexmetrics") {
		resp.setHeader("x-ms-cosmos-index-utilization", base64.StdEncoding.EncodeToString(
			[]byte(`{"UtilizedSingleIndexes":[],"PotentialSingleIndexes":[],"UtilizedCompositeIndexes":[],"PotentialCompositeIndexes":[]}`)))
	}
}

// queryResources runs a query over database or container resources.
func (s *Server) queryResources(rq *request, rid, name string, vals []value) *response {
	qr, resp := s.parseQueryRequest(rq.body)
	if resp != nil {
		return resp
	}
	size, resp := pageSize(rq.r)
	if resp != nil {
		return resp
	}
	pg, err := qr.q.execute(execInput{vals: vals}, pageRequest{
		params:   qr.params,
		maxItems: size,
		token:    rq.r.Header.Get("x-ms-continuation"),
	})
	if err != nil {
		return queryErrorResponse(err)
	}
	resp = pageResponse(rid, name, pg)
	resp.items = 0
	return resp
}

// pageResponse renders {"_rid":..., "<name>":[...], "_count":n} with the
// continuation header.
func pageResponse(rid, name string, pg page) *response {
	buf := make([]byte, 0, len(pg.buf)+64)
	buf = append(buf, `{"_rid":`...)
	buf = appendString(buf, rid)
	buf = append(buf, `,"`...)
	buf = append(buf, name...)
	buf = append(buf, `":[`...)
	buf = append(buf, pg.buf...)
	buf = append(buf, `],"_count":`...)
	buf = strconv.AppendInt(buf, int64(pg.count), 10)
	buf = append(buf, '}')
	resp := jsonResponse(http.StatusOK, buf)
	resp.items = pg.count
	resp.setHeader("x-ms-item-count", strconv.Itoa(pg.count))
	if pg.next != "" {
		resp.setHeader("x-ms-continuation", pg.next)
	}
	return resp
}
