package emulator

import (
	"encoding/base64"
	"encoding/binary"
	"sort"
	"strings"
)

// Resource-id links. Besides names (dbs/db/colls/c/docs/a), the service
// addresses resources by their resource ids, the "_self" links it returns
// (dbs/AQAAAQ==/colls/AQAAAQIAAAI=/docs/AQAAAQIAAAIBAAAAAAAAAA==/), and
// the Python SDK 3.x uses them throughout. A client signs such a request
// with the lower-cased resource id of the resource (or, for a feed, of its
// parent) instead of the path. The emulator resolves a resource-id path to
// the names it routes by before routing.

// ridBytes decodes a resource id as the service renders it (base64 with
// '-' for '/').
func ridBytes(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "-", "/"))
	return b, err == nil
}

// resolveRIDLink rewrites a resource-id path (segs[1] is no database's id
// but a database's resource id) into the names the emulator routes by. It
// returns the named segments and the link the client signs: the
// lower-cased resource id of the resource the path names or, for a feed,
// of its parent. A resource id under the database that names nothing is
// left as it is, to be answered 404 as a missing name is. ok is false for
// a name path.
func (s *Server) resolveRIDLink(segs []string) (named []string, link string, ok bool) {
	if len(segs) < 2 || !strings.EqualFold(segs[0], "dbs") {
		return nil, "", false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, byName := s.dbs[segs[1]]; byName {
		return nil, "", false
	}
	var d *database
	for _, x := range s.dbs {
		if x.ridString() == segs[1] {
			d = x
			break
		}
	}
	if d == nil {
		return nil, "", false
	}
	named = append([]string(nil), segs...)
	named[1] = d.id
	if len(segs) >= 4 && strings.EqualFold(segs[2], "colls") {
		for _, c := range d.colls {
			if c.ridString() != segs[3] {
				continue
			}
			named[3] = c.id
			if len(segs) >= 6 {
				if id, found := c.idOfRID(strings.ToLower(segs[4]), segs[5]); found {
					named[5] = id
				}
			}
			break
		}
	}
	last := len(segs) - 1
	if len(segs)%2 == 1 {
		last-- // a feed: its parent
	}
	return named, strings.ToLower(segs[last]), true
}

// idOfRID returns the id of the document or script of kind (a path
// segment: "docs", "sprocs", ...) whose resource id is rid.
func (c *container) idOfRID(kind, rid string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if kind != "docs" {
		for _, sc := range c.scripts.byKind[kind] {
			if c.scriptRID(kind, sc.num) == rid {
				return sc.id, true
			}
		}
		return "", false
	}
	b, ok := ridBytes(rid)
	if !ok || len(b) != 16 || string(b[:8]) != string(c.rid[:]) {
		return "", false
	}
	seq := binary.LittleEndian.Uint64(b[8:])
	// c.all is in document number order, with holes (nil) for deleted ones.
	i := sort.Search(len(c.all), func(i int) bool {
		for j := i; j < len(c.all); j++ {
			if c.all[j] != nil {
				return c.all[j].seq >= seq
			}
		}
		return true
	})
	for ; i < len(c.all); i++ {
		if it := c.all[i]; it != nil {
			return it.id, it.seq == seq
		}
	}
	return "", false
}
