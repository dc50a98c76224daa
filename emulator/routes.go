package emulator

import (
	"net/http"
	"strings"
)

// route classifies rq and picks its handler. It has no side effects.
func (s *Server) route(rq *request) (OpKind, func(*request) *response) {
	segs := rq.segs
	m := rq.r.Method
	n := len(segs)
	if n == 0 {
		if m == http.MethodGet || m == http.MethodHead {
			return OpAccount, s.handleAccount
		}
		return OpAccount, methodNotAllowed
	}
	if strings.EqualFold(segs[0], "offers") {
		switch {
		case n == 1 && m == http.MethodPost && isQuery(rq.r):
			return OpOffer, s.handleQueryOffers
		case n == 1 && m == http.MethodGet:
			return OpOffer, s.handleListOffers
		case n == 2 && m == http.MethodGet:
			return OpOffer, s.handleReadOffer
		case n == 2 && m == http.MethodPut:
			return OpOffer, s.handleReplaceOffer
		case n <= 2:
			return OpOffer, methodNotAllowed
		}
		return OpOffer, unsupportedResource
	}
	if !strings.EqualFold(segs[0], "dbs") {
		return OpOther, unsupportedResource
	}
	switch n {
	case 1:
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			return OpDatabase, s.handleQueryDatabases
		case m == http.MethodPost:
			return OpDatabase, s.handleCreateDatabase
		case m == http.MethodGet:
			return OpDatabase, s.handleListDatabases
		}
		return OpDatabase, methodNotAllowed
	case 2:
		switch m {
		case http.MethodGet:
			return OpDatabase, s.handleReadDatabase
		case http.MethodDelete:
			return OpDatabase, s.handleDeleteDatabase
		}
		return OpDatabase, methodNotAllowed
	}
	if !strings.EqualFold(segs[2], "colls") {
		if strings.EqualFold(segs[2], "users") {
			return OpOther, s.handleUsers
		}
		return OpOther, unsupportedResource
	}
	switch n {
	case 3:
		switch {
		case m == http.MethodPost && isQuery(rq.r):
			return OpContainer, s.handleQueryContainers
		case m == http.MethodPost:
			return OpContainer, s.handleCreateContainer
		case m == http.MethodGet:
			return OpContainer, s.handleListContainers
		}
		return OpContainer, methodNotAllowed
	case 4:
		switch m {
		case http.MethodGet:
			return OpContainer, s.handleReadContainer
		case http.MethodPut:
			return OpContainer, s.handleReplaceContainer
		case http.MethodDelete:
			return OpContainer, s.handleDeleteContainer
		}
		return OpContainer, methodNotAllowed
	}
	switch strings.ToLower(segs[4]) {
	case "pkranges":
		if n == 5 && m == http.MethodGet {
			return OpPKRanges, s.handlePKRanges
		}
		if n == 5 {
			return OpPKRanges, methodNotAllowed
		}
		return OpPKRanges, unsupportedResource
	case "docs":
	default:
		if _, ok := scriptKinds[strings.ToLower(segs[4])]; ok {
			return OpOther, s.scriptRoute(rq)
		}
		return OpOther, unsupportedResource
	}
	if n <= 6 && m != http.MethodGet && m != http.MethodHead && !isQuery(rq.r) && namesTriggers(rq.r) {
		op, _ := s.routeDocs(rq)
		return op, s.handleTriggeredWrite
	}
	return s.routeDocs(rq)
}

// routeDocs routes a request under a container's documents
// (rq.segs[4] is "docs").
func (s *Server) routeDocs(rq *request) (OpKind, func(*request) *response) {
	m := rq.r.Method
	switch len(rq.segs) {
	case 5:
		switch {
		case m == http.MethodPost && headerBool(rq.r, "x-ms-cosmos-is-batch-request"):
			rq.itemIDs = s.batchIDsForFaults(rq.body)
			return OpBatch, s.handleBatch
		case m == http.MethodPost && isQuery(rq.r):
			return OpQuery, s.handleQuery
		case m == http.MethodPost && headerBool(rq.r, "x-ms-documentdb-is-upsert"):
			rq.itemIDs = bodyID(rq.body)
			return OpUpsertItem, s.handleUpsertItem
		case m == http.MethodPost:
			rq.itemIDs = bodyID(rq.body)
			return OpCreateItem, s.handleCreateItem
		case m == http.MethodGet && rq.r.Header.Get("A-IM") != "":
			return OpChangeFeed, s.handleChangeFeed
		case m == http.MethodGet:
			return OpReadFeed, s.handleReadFeed
		}
		return OpOther, methodNotAllowed
	case 6:
		rq.itemIDs = []string{rq.segs[5]}
		switch m {
		case http.MethodGet, http.MethodHead:
			return OpReadItem, s.handleReadItem
		case http.MethodPut:
			return OpReplaceItem, s.handleReplaceItem
		case http.MethodDelete:
			return OpDeleteItem, s.handleDeleteItem
		case http.MethodPatch:
			return OpPatchItem, s.handlePatchItem
		}
		return OpOther, methodNotAllowed
	}
	return OpOther, unsupportedResource
}

func isQuery(r *http.Request) bool {
	return headerBool(r, "x-ms-documentdb-isquery") ||
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json")
}

func methodNotAllowed(*request) *response {
	return errorResponse(http.StatusMethodNotAllowed, 0, "The requested verb is not supported.")
}

func unsupportedResource(rq *request) *response {
	return errorResponse(http.StatusNotFound, 0,
		"The emulator does not serve this resource path: /"+strings.Join(rq.segs, "/"))
}

// bodyID extracts the "id" of a document body for fault matching.
func bodyID(body []byte) []string {
	if _, err := parseJSONLazyObject(body); err != nil {
		return nil
	}
	if v := rawLookup(body, "id"); v.k == kString {
		return []string{v.s}
	}
	return nil
}

// batchIDsForFaults lists the ids a batch touches, only when fault rules
// exist (it costs a parse).
func (s *Server) batchIDsForFaults(body []byte) []string {
	s.faults.mu.Lock()
	n := len(s.faults.rules)
	s.faults.mu.Unlock()
	if n == 0 {
		return nil
	}
	ops, err := parseBatchOps(body)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(ops))
	for _, op := range ops {
		if op.id != "" {
			ids = append(ids, op.id)
		}
	}
	return ids
}

// parseJSONLazyObject validates that b is one JSON object, keeping nested
// values as raw text.
func parseJSONLazyObject(b []byte) (value, error) {
	p := jsonParser{b: b}
	p.ws()
	if p.i >= len(b) || b[p.i] != '{' {
		return undefined, errBadJSON
	}
	if err := p.skip(); err != nil {
		return undefined, err
	}
	p.ws()
	if p.i != len(b) {
		return undefined, errBadJSON
	}
	return rawValue(kObject, b), nil
}
