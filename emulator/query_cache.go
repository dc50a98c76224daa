package emulator

import "sync"

// queryCache keeps parsed queries by their text, so that a query a client
// runs again and again (the same text with new parameters, as a provider's
// polling does) is lexed, parsed and bound once. A parsed *query is never
// modified after parseQuery returns, so requests share it. Parse errors
// are not cached.
type queryCache struct {
	mu      sync.Mutex
	queries map[string]*query
}

// maxCachedQueries bounds the cache; when it is full it starts over, which
// keeps the queries in current use without bookkeeping per entry.
const maxCachedQueries = 512

// parse returns the parsed query of text, from the cache when it is there.
func (qc *queryCache) parse(text string) (*query, error) {
	qc.mu.Lock()
	q := qc.queries[text]
	qc.mu.Unlock()
	if q != nil {
		return q, nil
	}
	q, err := parseQuery(text)
	if err != nil {
		return nil, err
	}
	qc.mu.Lock()
	if qc.queries == nil || len(qc.queries) >= maxCachedQueries {
		qc.queries = make(map[string]*query)
	}
	qc.queries[text] = q
	qc.mu.Unlock()
	return q, nil
}
