package emulator

import (
	"math"
	"sync"
)

// OpKind names a kind of REST operation, for counters and fault rules.
type OpKind string

// The operation kinds the emulator distinguishes.
const (
	OpAccount     OpKind = "Account"     // GET / (database account)
	OpDatabase    OpKind = "Database"    // create, read, list, query, delete databases
	OpContainer   OpKind = "Container"   // create, read, list, query, replace, delete containers
	OpPKRanges    OpKind = "PKRanges"    // partition key ranges of a container
	OpOffer       OpKind = "Offer"       // throughput (offer) reads, queries and replaces
	OpReadItem    OpKind = "ReadItem"    // GET one document
	OpCreateItem  OpKind = "CreateItem"  // POST a document
	OpReplaceItem OpKind = "ReplaceItem" // PUT a document
	OpUpsertItem  OpKind = "UpsertItem"  // POST a document with x-ms-documentdb-is-upsert
	OpDeleteItem  OpKind = "DeleteItem"  // DELETE a document
	OpPatchItem   OpKind = "PatchItem"   // PATCH a document
	OpBatch       OpKind = "Batch"       // transactional batch
	OpQuery       OpKind = "Query"       // document query (one page)
	OpChangeFeed  OpKind = "ChangeFeed"  // change feed read (one page)
	OpReadFeed    OpKind = "ReadFeed"    // list documents without a query (one page)
	OpOther       OpKind = "Other"       // anything else (offers, unknown paths)
)

// OpCounters are the totals for one operation kind since the server started
// or counters were last reset.
type OpCounters struct {
	// Requests is the number of requests received, including refused and
	// fault-injected ones.
	Requests int64
	// ItemsReturned is the number of documents in response bodies: one per
	// successful point read or write that returns content, the documents of
	// each query, change feed or read feed page, and the operation results of
	// a batch that carry a document.
	ItemsReturned int64
	// RequestBytes is the total size of request bodies.
	RequestBytes int64
	// ResponseBytes is the total size of response bodies.
	ResponseBytes int64
	// RequestCharge is the total of the request charges answered
	// (x-ms-request-charge, request units; README "Request charges": an
	// estimate); requests dropped unanswered are not charged.
	RequestCharge float64
}

type counterSet struct {
	mu sync.Mutex
	m  map[OpKind]OpCounters
}

func (c *counterSet) record(op OpKind, reqBytes, respBytes, items int, charge float64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[OpKind]OpCounters)
	}
	v := c.m[op]
	v.Requests++
	v.ItemsReturned += int64(items)
	v.RequestBytes += int64(reqBytes)
	v.ResponseBytes += int64(respBytes)
	v.RequestCharge += math.Round(charge*100) / 100 // as the header carries it
	c.m[op] = v
	c.mu.Unlock()
}

// Counters returns a snapshot of the counters of every operation kind that
// has seen at least one request.
func (s *Server) Counters() map[OpKind]OpCounters {
	s.counters.mu.Lock()
	defer s.counters.mu.Unlock()
	out := make(map[OpKind]OpCounters, len(s.counters.m))
	for k, v := range s.counters.m {
		out[k] = v
	}
	return out
}

// ResetCounters sets every counter back to zero.
func (s *Server) ResetCounters() {
	s.counters.mu.Lock()
	s.counters.m = nil
	s.counters.mu.Unlock()
}
