package session

import (
	"sort"
	"strings"
	"sync"
)

// Container is a session container: the newest session token seen per
// partition key range of every Cosmos DB container a client talks to,
// merged by LSN. It is safe for concurrent use.
//
// Tokens are kept per range id, never merged across ranges (LSNs of two
// ranges are unrelated). A range that split keeps its token beside its
// children's: the service resolves a request's token from the range it
// reads or, when the header has none for it, from the range's parents, so
// a child inherits its parent's token.
type Container struct {
	mu    sync.Mutex
	colls map[string]*collTokens
}

// collTokens is one container's tokens.
type collTokens struct {
	// rid is the container's resource id when the service reported it
	// (x-ms-content-path): a container deleted and created again under
	// the same name starts afresh, its LSNs unrelated to the old one's.
	rid    string
	ranges map[string]Token
	// header is the tokens formatted for a request, "" when stale.
	header string
}

// NewContainer returns an empty session container.
func NewContainer() *Container {
	return &Container{colls: make(map[string]*collTokens)}
}

// Record merges the session token header h (one range's token, or several
// separated by commas) of a response from container coll (its path,
// "dbs/<db>/colls/<coll>") into the container. rid, when not empty, is the
// container's resource id the response reported: a different one than
// recorded so far forgets the old tokens first.
func (c *Container) Record(coll, rid, h string) {
	toks := ParseTokens(h)
	if len(toks) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ct := c.colls[coll]
	if ct == nil || (rid != "" && ct.rid != "" && rid != ct.rid) {
		ct = &collTokens{ranges: make(map[string]Token)}
		c.colls[coll] = ct
	}
	if rid != "" {
		ct.rid = rid
	}
	for _, t := range toks {
		if old, ok := ct.ranges[t.Range]; ok {
			t = old.Merge(t)
			if t.String() == old.String() {
				continue
			}
		}
		ct.ranges[t.Range] = t
		ct.header = ""
	}
}

// Header returns the session token header for a read of container coll:
// the token of every range seen, comma-separated in range id order (the
// service uses the one of the range it reads, or of that range's parent),
// or "" when none was seen.
func (c *Container) Header(coll string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct := c.colls[coll]
	if ct == nil || len(ct.ranges) == 0 {
		return ""
	}
	if ct.header == "" {
		ids := make([]string, 0, len(ct.ranges))
		for id := range ct.ranges {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = ct.ranges[id].String()
		}
		ct.header = strings.Join(parts, ",")
	}
	return ct.header
}

// Forget drops the tokens of container coll, or with a prefix ending in
// "/" ("dbs/<db>/") of every container under it: the container (or its
// database) was deleted, and one created again under that name starts its
// LSNs afresh.
func (c *Container) Forget(coll string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.HasSuffix(coll, "/") {
		for k := range c.colls {
			if strings.HasPrefix(k, coll) {
				delete(c.colls, k)
			}
		}
		return
	}
	delete(c.colls, coll)
}
