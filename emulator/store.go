package emulator

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// database is one Cosmos DB database and its containers.
type database struct {
	id  string
	num uint32 // creation number, for listing order
	rid [4]byte
	// shared reports database-level (shared) throughput; its containers
	// then get no offer of their own unless they ask for one.
	shared bool
	etag   uint64
	ts     int64
	colls  map[string]*container // guarded by Server.mu
}

// container holds the documents of one Cosmos DB container. Documents are
// immutable *item values: a write builds a new item and swaps pointers, so a
// reader may keep a snapshot of pointers and evaluate it without the lock.
type container struct {
	mu sync.RWMutex

	db   *database
	id   string
	num  uint32  // creation number, for listing order
	rid  [8]byte // database rid (4 bytes) + collection number (4 bytes)
	etag uint64
	ts   int64

	// props are the user-supplied container properties, system ones excluded
	// (id, partitionKey, indexingPolicy, defaultTtl, ...), as raw members.
	props   []member
	pkPaths [][]string // partition key paths split into segments
	pkKind  string
	pkLarge bool // partition key version 2 ("large" keys hashed in full)
	index   *indexPolicy

	parts   map[string]*partition // by canonical partition key text
	all     []*item               // every live item in rid order; nil = removed
	allDead int
	feed    []feedEntry // change feed log in LSN order; stale entries are skipped
	nextSeq uint64      // last document number handed out
	lsn     uint64      // last logical sequence number
	count   int         // live documents
	bytes   int64       // sum of live document body sizes
	// ranges are the physical partitions (partitions.go) in EPK order;
	// goneRanges the ids of ranges that split; rangesVersion counts
	// splits (the partition key ranges feed's ETag).
	ranges        []pkRange
	goneRanges    map[string]bool
	rangesVersion uint64
	// wlog records the writes of the last Options.ReplicaLag, in LSN
	// order from wlogHead, for the secondary replicas (replicas.go).
	wlog     []writeRecord
	wlogHead int
	// paths caches contentPaths.
	paths atomic.Pointer[[2]string]
	// eqIdx holds the equality indexes of top-level properties
	// (eq_index.go), by property name; nil until a query needs one.
	eqIdx map[string]*eqIndex

	// ttl is the container's defaultTtl (ttl.go); expiries the scheduled
	// expirations of live items, earliest first; nextExpiry the earliest
	// (seconds since the epoch, 0 = none), read without the lock.
	ttl        ttlPolicy
	expiries   expiryHeap
	nextExpiry atomic.Int64
	// unique are the paths of each unique key of the container's unique
	// key policy (unique_keys.go).
	unique [][][]string
	// scripts are the container's stored procedures, triggers and
	// user-defined functions (scripts.go).
	scripts scriptSet
	// wal is the server's write-ahead log (wal.go), nil without a data
	// directory: every change to the container is recorded there under
	// mu.
	wal *wal
}

// partition is one logical partition: the documents sharing a partition key.
type partition struct {
	key  string
	epk  string // effective partition key (partitions.go)
	byID map[string]*item
	list []*item // rid order; nil = removed
	dead int
	// ranges holds the range indexes of top-level properties
	// (range_index.go), by property name; nil until a query needs one.
	ranges map[string]*rangeIndex
}

// item is one stored document version. It is never modified once published,
// except for the list positions, which only writers (holding the container
// lock) read or write.
type item struct {
	id   string
	body []byte // compact JSON object, system properties stripped
	// index holds, for each top-level property in order, the offset of its
	// key (after the opening quote) and of its value in body, as
	// little-endian uint16 pairs. nil when the body is over 64 KB or a key
	// needs escaping; lookups then scan body.
	index []byte
	coll  *container
	part  *partition
	seq   uint64 // document number: the _rid, stable across replaces
	etag  uint64
	ts    int64 // _ts, seconds since the Unix epoch
	lsn   uint64

	allIdx  int32
	partIdx int32
}

// feedEntry records that it was written at lsn; the entry is stale once the
// item has been replaced or deleted.
type feedEntry struct {
	lsn uint64
	it  *item
}

// ridString encodes resource-id bytes the way Cosmos DB does: base64 with
// '/' replaced by '-'.
func ridString(b []byte) string {
	return strings.ReplaceAll(base64.StdEncoding.EncodeToString(b), "/", "-")
}

func (d *database) ridString() string  { return ridString(d.rid[:]) }
func (c *container) ridString() string { return ridString(c.rid[:]) }

func (c *container) selfLink() string {
	return "dbs/" + c.db.ridString() + "/colls/" + c.ridString() + "/"
}

// docRID returns the 16-byte resource id of document number seq.
func (c *container) docRID(seq uint64) string {
	var b [16]byte
	copy(b[:8], c.rid[:])
	binary.LittleEndian.PutUint64(b[8:], seq)
	return ridString(b[:])
}

// formatETag renders an ETag counter as the quoted GUID-like text the service
// uses, e.g. "00000000-0000-0000-0000-00000000002a" with quotes.
func formatETag(n uint64) string {
	return string(appendETag(nil, n))
}

func appendETag(buf []byte, n uint64) []byte {
	buf = append(buf, `"00000000-0000-0000-`...)
	var h [16]byte
	for i := 15; i >= 0; i-- {
		h[i] = hexDigits[n&0xf]
		n >>= 4
	}
	buf = append(buf, h[0:4]...)
	buf = append(buf, '-')
	buf = append(buf, h[4:16]...)
	return append(buf, '"')
}

func (it *item) rid() string { return it.coll.docRID(it.seq) }

func (it *item) self() string {
	return it.coll.selfLink() + "docs/" + it.rid() + "/"
}

// systemProperty returns one of the system properties the service adds to
// every document.
func (it *item) systemProperty(key string) (value, bool) {
	switch key {
	case "_rid":
		return stringValue(it.rid()), true
	case "_self":
		return stringValue(it.self()), true
	case "_etag":
		return stringValue(formatETag(it.etag)), true
	case "_attachments":
		return stringValue("attachments/"), true
	case "_ts":
		return numberValue(float64(it.ts)), true
	}
	return undefined, false
}

// isSystemProperty reports whether a top-level key is owned by the service.
func isSystemProperty(key string) bool {
	switch key {
	case "_rid", "_self", "_etag", "_attachments", "_ts", "_lsn":
		return true
	}
	return false
}

// get returns a top-level property of the document, system ones included.
func (it *item) get(key string) value {
	if len(key) > 0 && key[0] == '_' {
		if v, ok := it.systemProperty(key); ok {
			return v
		}
	}
	off, ok := it.offset(key)
	if !ok {
		return undefined
	}
	return lazyValueAt(it.body, off)
}

// offset returns where the value of top-level property key starts in body.
func (it *item) offset(key string) (int, bool) {
	if it.index == nil {
		return rawKeyOffset(it.body, 0, key)
	}
	b, ix := it.body, it.index
	for i := len(ix) - 4; i >= 0; i -= 4 {
		ks := int(ix[i]) | int(ix[i+1])<<8
		vs := int(ix[i+2]) | int(ix[i+3])<<8
		// The key is followed by `":`, so its length is known from the
		// index alone; only keys of the right length touch the body.
		if vs-ks-2 == len(key) && string(b[ks:ks+len(key)]) == key {
			return vs, true
		}
	}
	return 0, false
}

// pathOffset returns where the value at a property path starts in body.
// System properties (not stored in body) are never found.
func (it *item) pathOffset(path []string) (int, bool) {
	off, ok := it.offset(path[0])
	if !ok {
		return 0, false
	}
	b := it.body
	for _, seg := range path[1:] {
		if off >= len(b) || b[off] != '{' {
			return 0, false
		}
		if off, ok = rawKeyOffset(b, off, seg); !ok {
			return 0, false
		}
	}
	return off, true
}

// getPath returns the value at a property path (a.b.c, or a.0 for array
// elements written as a[0]) without materializing the objects on the way.
func (it *item) getPath(path []string) value {
	if len(path) == 1 || (len(path[0]) > 0 && path[0][0] == '_') {
		v := it.get(path[0])
		for _, seg := range path[1:] {
			v = v.get(seg)
		}
		return v
	}
	off, ok := it.offset(path[0])
	if !ok {
		return undefined
	}
	b := it.body
	for _, seg := range path[1:] {
		switch {
		case off < len(b) && b[off] == '{':
			if off, ok = rawKeyOffset(b, off, seg); !ok {
				return undefined
			}
		case off < len(b) && b[off] == '[':
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 {
				return undefined
			}
			if off, ok = rawIndexOffset(b, off, n); !ok {
				return undefined
			}
		default:
			return undefined
		}
	}
	return lazyValueAt(b, off)
}

// members parses the whole document, system properties last.
func (it *item) members() []member {
	v, err := parseJSON(it.body)
	var ms []member
	if err == nil && v.k == kObject {
		ms = v.c.obj
	}
	for _, k := range []string{"_rid", "_self", "_etag", "_attachments", "_ts"} {
		sv, _ := it.systemProperty(k)
		ms = append(ms, member{key: k, val: sv})
	}
	return ms
}

// appendJSON writes the document as the service returns it.
func (it *item) appendJSON(buf []byte) []byte {
	return it.appendJSONWith(buf, 0)
}

// appendJSONWith writes the document; a non-zero lsn adds the "_lsn" property
// that change feed responses carry.
func (it *item) appendJSONWith(buf []byte, lsn uint64) []byte {
	body := it.body
	buf = append(buf, body[:len(body)-1]...)
	if len(body) > 2 {
		buf = append(buf, ',')
	}
	buf = append(buf, `"_rid":"`...)
	buf = append(buf, it.rid()...)
	buf = append(buf, `","_self":"`...)
	buf = append(buf, it.self()...)
	buf = append(buf, `","_etag":`...)
	buf = appendString(buf, formatETag(it.etag))
	buf = append(buf, `,"_attachments":"attachments/","_ts":`...)
	buf = strconv.AppendInt(buf, it.ts, 10)
	if lsn != 0 {
		buf = append(buf, `,"_lsn":`...)
		buf = strconv.AppendUint(buf, lsn, 10)
	}
	return append(buf, '}')
}

// size is the document size the 2 MB limit applies to.
func (it *item) size() int { return len(it.body) }

// partition returns the logical partition for key, creating it if asked.
func (c *container) partition(key string, create bool) *partition {
	p := c.parts[key]
	if p == nil && create {
		p = &partition{key: key, epk: epkOfKey(key, strings.EqualFold(c.pkKind, "MultiHash")), byID: make(map[string]*item)}
		c.parts[key] = p
	}
	return p
}

// lookup returns the live document id in the logical partition key.
func (c *container) lookup(key, id string) *item {
	p := c.parts[key]
	if p == nil {
		return nil
	}
	return p.byID[id]
}

// put publishes it: a new document (prev == nil) or a new version of prev.
// The caller holds c.mu for writing and has set it.lsn.
func (c *container) put(it, prev *item) {
	p := it.part
	if prev != nil {
		it.seq = prev.seq
		it.allIdx = prev.allIdx
		it.partIdx = prev.partIdx
		c.all[it.allIdx] = it
		p.list[it.partIdx] = it
		c.bytes += int64(len(it.body) - len(prev.body))
	} else {
		c.nextSeq++
		it.seq = c.nextSeq
		it.allIdx = int32(len(c.all))
		c.all = append(c.all, it)
		it.partIdx = int32(len(p.list))
		p.list = append(p.list, it)
		c.count++
		c.bytes += int64(len(it.body))
	}
	p.byID[it.id] = it
	c.indexWrite(prev, it)
	c.scheduleExpiry(it)
	c.feed = append(c.feed, feedEntry{lsn: it.lsn, it: it})
	c.maybeCompactFeed()
}

// remove deletes the live document it. The caller holds c.mu for writing.
func (c *container) remove(it *item) {
	p := it.part
	delete(p.byID, it.id)
	c.indexWrite(it, nil)
	c.all[it.allIdx] = nil
	c.allDead++
	p.list[it.partIdx] = nil
	p.dead++
	c.count--
	c.bytes -= int64(len(it.body))
	if len(p.byID) == 0 {
		delete(c.parts, p.key)
	} else if p.dead > 32 && p.dead > len(p.list)/2 {
		p.compact()
	}
	if c.allDead > 1024 && c.allDead > len(c.all)/2 {
		c.compactAll()
	}
}

func (p *partition) compact() {
	out := make([]*item, 0, len(p.byID))
	for _, it := range p.list {
		if it != nil {
			it.partIdx = int32(len(out))
			out = append(out, it)
		}
	}
	p.list = out
	p.dead = 0
}

func (c *container) compactAll() {
	out := make([]*item, 0, c.count)
	for _, it := range c.all {
		if it != nil {
			it.allIdx = int32(len(out))
			out = append(out, it)
		}
	}
	c.all = out
	c.allDead = 0
}

// live reports whether it is still the current version of its document.
// The caller holds c.mu.
func (c *container) live(it *item) bool {
	return int(it.allIdx) < len(c.all) && c.all[it.allIdx] == it
}

// maybeCompactFeed drops stale change feed entries once they dominate,
// keeping those a lagging replica still serves (replicas.go).
func (c *container) maybeCompactFeed() {
	if len(c.feed) < 4096 || len(c.feed) < 2*c.count {
		return
	}
	logged := c.loggedVersions()
	out := make([]feedEntry, 0, c.count+c.count/2)
	for _, e := range c.feed {
		if c.live(e.it) || logged[e.it] {
			out = append(out, e)
		}
	}
	c.feed = out
}

// snapshot returns the live documents of one logical partition (key != nil)
// or of the whole container, in rid order. The caller holds c.mu.
func (c *container) snapshot(key *string) []*item {
	var src []*item
	var n int
	if key != nil {
		p := c.parts[*key]
		if p == nil {
			return nil
		}
		src, n = p.list, len(p.byID)
	} else {
		src, n = c.all, c.count
	}
	out := make([]*item, 0, n)
	for _, it := range src {
		if it != nil {
			out = append(out, it)
		}
	}
	return out
}
