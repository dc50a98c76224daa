package emulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// The records of the write-ahead log (wal.go): one per change a snapshot
// would capture, appended under the lock that makes the change visible.
// A record is a JSON object; the fields set say what changed, applied in
// the order of walRecord's fields. Resources are named by their creation
// numbers (unique in a server and never reused), documents by their
// partition key and id, which the body carries.

// walRecord is one record of the log.
type walRecord struct {
	// Reset: Server.Reset deleted every database.
	Reset bool `json:"reset,omitempty"`
	// DropDB and DropColl: a database or container (by number) was
	// deleted, with its offers.
	DropDB   uint32 `json:"dropDb,omitempty"`
	DropColl uint32 `json:"dropColl,omitempty"`
	// DB: a database was created.
	DB *persistDB `json:"db,omitempty"`
	// Coll: a container was created, or replaced (its definition, ETag
	// and _ts) when its number exists.
	Coll *walColl `json:"coll,omitempty"`
	// Offers were created or replaced (by id).
	Offers []persistOffer `json:"offers,omitempty"`
	// Script was created or replaced; DropScript deleted.
	Script     *walScript    `json:"script,omitempty"`
	DropScript *walScriptRef `json:"dropScript,omitempty"`
	// Ranges: a container's physical partitions changed (a split).
	Ranges *walRanges `json:"ranges,omitempty"`
	// Items: documents written or deleted in one transaction.
	Items *walItems `json:"items,omitempty"`
	// NextRID is the server's resource counter after the change, when it
	// handed out numbers.
	NextRID uint32 `json:"nextRid,omitempty"`
}

type walColl struct {
	DB uint32 `json:"db"`
	persistColl
}

type walScript struct {
	Coll uint32 `json:"coll"`
	persistScript
}

type walScriptRef struct {
	Coll uint32 `json:"coll"`
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

type walRanges struct {
	Coll    uint32         `json:"coll"`
	Ranges  []persistRange `json:"ranges"`
	Gone    []string       `json:"gone,omitempty"`
	Version uint64         `json:"version"`
}

// walItems is one transaction on a container's documents: LSN is the
// container's LSN after it (0 for TTL deletions, which take none).
type walItems struct {
	Coll uint32  `json:"coll"`
	LSN  uint64  `json:"lsn"`
	Ops  []walOp `json:"ops"`
}

// walOp writes a document version (Body set) or deletes one (Del set).
type walOp struct {
	Seq  uint64          `json:"seq,omitempty"`
	ETag uint64          `json:"etag,omitempty"`
	TS   int64           `json:"ts,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
	Del  *walDel         `json:"del,omitempty"`
}

// walDel names a deleted document by its canonical partition key and id,
// as bytes (base64 in JSON), so that any id survives exactly.
type walDel struct {
	PK []byte `json:"pk"`
	ID []byte `json:"id"`
}

// logRecord encodes rec and appends it to the server's log, if it has
// one. The caller holds the lock under which the change became visible.
func (s *Server) logRecord(rec *walRecord) {
	if s.dur == nil {
		return
	}
	b, err := json.Marshal(rec)
	if err != nil {
		panic(fmt.Sprintf("emulator: encode a log record: %v", err)) // plain data: cannot fail
	}
	s.dur.wal.appendFrame(b)
}

// collRecord is the persisted form of c without its documents and
// scripts. The caller holds c.mu.
func collRecord(c *container) *persistColl {
	rec := &persistColl{Definition: c.appendJSON(nil), Num: c.num, ETag: c.etag, TS: c.ts,
		NextSeq: c.nextSeq, LSN: c.lsn, RangesVersion: c.rangesVersion, ScriptNext: c.scripts.next}
	rec.Ranges, rec.GoneRanges = rangesRecord(c)
	return rec
}

func rangesRecord(c *container) ([]persistRange, []string) {
	var rs []persistRange
	for _, r := range c.ranges {
		rs = append(rs, persistRange{ID: r.id, Min: r.min, Max: r.max, Parents: r.parents})
	}
	var gone []string
	for g := range c.goneRanges {
		gone = append(gone, g)
	}
	sort.Strings(gone)
	return rs, gone
}

// offersOf returns the persisted form of the offers of the resource with
// self link resource. The caller holds s.mu.
func (s *Server) offersOf(resource string) []persistOffer {
	var out []persistOffer
	for _, o := range s.offers {
		if o.resource == resource {
			out = append(out, offerRecord(o))
		}
	}
	return out
}

func offerRecord(o *offer) persistOffer {
	return persistOffer{ID: o.id, Num: o.num, Resource: o.resource, ResourceRID: o.resourceRID,
		Content: o.content.appendJSON(nil), ETag: o.etag, TS: o.ts}
}

// logDatabase records the creation of d and its offer. The caller holds
// s.mu for writing.
func (s *Server) logDatabase(d *database) {
	if s.dur == nil {
		return
	}
	s.logRecord(&walRecord{DB: &persistDB{ID: d.id, Num: d.num, Shared: d.shared, ETag: d.etag, TS: d.ts},
		Offers: s.offersOf("dbs/" + d.ridString() + "/"), NextRID: s.nextRID})
}

// logDropDatabase records the deletion of d. The caller holds s.mu.
func (s *Server) logDropDatabase(d *database) { s.logRecord(&walRecord{DropDB: d.num}) }

// logContainer records the creation of c (and its offer), or its new
// definition after a replace, and attaches c to the log. The caller holds
// s.mu (a creation) or c.mu (a replace) for writing.
func (s *Server) logContainer(c *container, created bool) {
	if s.dur == nil {
		return
	}
	c.wal = s.dur.wal
	rec := &walRecord{Coll: &walColl{DB: c.db.num, persistColl: *collRecord(c)}}
	if created {
		rec.Offers, rec.NextRID = s.offersOf(c.selfLink()), s.nextRID
	}
	s.logRecord(rec)
}

// logDropContainer records the deletion of c. The caller holds s.mu.
func (s *Server) logDropContainer(c *container) { s.logRecord(&walRecord{DropColl: c.num}) }

// logOffer records a replaced offer. The caller holds s.mu.
func (s *Server) logOffer(o *offer) {
	if s.dur != nil {
		s.logRecord(&walRecord{Offers: []persistOffer{offerRecord(o)}})
	}
}

// logReset records Server.Reset. The caller holds s.mu.
func (s *Server) logReset() { s.logRecord(&walRecord{Reset: true}) }

// logScript records a created or replaced script of c. The caller holds
// c.mu for writing.
func (s *Server) logScript(c *container, kind string, sc *script) {
	s.logRecord(&walRecord{Script: &walScript{Coll: c.num, persistScript: persistScript{Kind: kind, Num: sc.num, ETag: sc.etag, TS: sc.ts, Props: sc.props}}})
}

// logDropScript records a deleted script. The caller holds c.mu.
func (s *Server) logDropScript(c *container, kind, id string) {
	s.logRecord(&walRecord{DropScript: &walScriptRef{Coll: c.num, Kind: kind, ID: id}})
}

// logRanges records c's physical partitions after a split. The caller
// holds c.mu for writing.
func (s *Server) logRanges(c *container) {
	if s.dur == nil {
		return
	}
	rs, gone := rangesRecord(c)
	s.logRecord(&walRecord{Ranges: &walRanges{Coll: c.num, Ranges: rs, Gone: gone, Version: c.rangesVersion}})
}

// logCommit records the documents a commit wrote and deleted, as one
// record (a transactional batch stays atomic). The caller holds c.mu for
// writing; the plans' versions are published (their numbers set).
func (c *container) logCommit(plans []plan, lsn uint64) {
	if c.wal == nil {
		return
	}
	buf := c.itemsRecordStart(lsn)
	n := 0
	for _, p := range plans {
		switch {
		case p.next != nil:
			buf = appendPutOp(buf, n, p.next)
		case p.prev != nil:
			buf = appendDelOp(buf, n, p.prev)
		default:
			continue
		}
		n++
	}
	if n > 0 {
		c.wal.appendFrame(append(buf, "]}}"...))
	}
}

// logExpired records the deletion of expired documents (ttl.go). The
// caller holds c.mu for writing.
func (c *container) logExpired(gone []*item) {
	if c.wal == nil || len(gone) == 0 {
		return
	}
	buf := c.itemsRecordStart(0)
	for i, it := range gone {
		buf = appendDelOp(buf, i, it)
	}
	c.wal.appendFrame(append(buf, "]}}"...))
}

// itemsRecordStart begins an Items record by hand (documents are most of
// the log: their bodies, compact JSON, are copied as they are).
func (c *container) itemsRecordStart(lsn uint64) []byte {
	buf := make([]byte, 0, 512)
	buf = append(buf, `{"items":{"coll":`...)
	buf = strconv.AppendUint(buf, uint64(c.num), 10)
	buf = append(buf, `,"lsn":`...)
	buf = strconv.AppendUint(buf, lsn, 10)
	return append(buf, `,"ops":[`...)
}

func appendPutOp(buf []byte, i int, it *item) []byte {
	if i > 0 {
		buf = append(buf, ',')
	}
	buf = append(buf, `{"seq":`...)
	buf = strconv.AppendUint(buf, it.seq, 10)
	buf = append(buf, `,"etag":`...)
	buf = strconv.AppendUint(buf, it.etag, 10)
	buf = append(buf, `,"ts":`...)
	buf = strconv.AppendInt(buf, it.ts, 10)
	buf = append(buf, `,"body":`...)
	buf = append(buf, it.body...)
	return append(buf, '}')
}

func appendDelOp(buf []byte, i int, it *item) []byte {
	if i > 0 {
		buf = append(buf, ',')
	}
	buf = append(buf, `{"del":{"pk":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, []byte(it.part.key))
	buf = append(buf, `","id":"`...)
	buf = base64.StdEncoding.AppendEncode(buf, []byte(it.id))
	return append(buf, `"}}`...)
}

// replay applies log records to a server being loaded (not serving yet).
type replay struct {
	s     *Server
	dbs   map[uint32]*database
	colls map[uint32]*container
	// maxETag is the highest ETag the records hold.
	maxETag uint64
}

func newReplay(s *Server) *replay {
	r := &replay{s: s, dbs: map[uint32]*database{}, colls: map[uint32]*container{}}
	for _, d := range s.dbs {
		r.dbs[d.num] = d
		for _, c := range d.colls {
			r.colls[c.num] = c
		}
	}
	return r
}

func (r *replay) coll(num uint32) (*container, error) {
	c := r.colls[num]
	if c == nil {
		return nil, fmt.Errorf("container number %d does not exist", num)
	}
	return c, nil
}

func (r *replay) etag(e uint64) { r.maxETag = max(r.maxETag, e) }

// apply applies one record.
func (r *replay) apply(payload []byte) error {
	var rec walRecord
	if err := json.Unmarshal(payload, &rec); err != nil {
		return err
	}
	s := r.s
	if rec.Reset {
		s.dbs = make(map[string]*database)
		s.offers = nil
		clear(r.dbs)
		clear(r.colls)
	}
	if rec.DropDB != 0 {
		d := r.dbs[rec.DropDB]
		if d == nil {
			return fmt.Errorf("database number %d does not exist", rec.DropDB)
		}
		s.removeOffers("dbs/" + d.ridString() + "/")
		for _, c := range d.colls {
			delete(r.colls, c.num)
		}
		delete(s.dbs, d.id)
		delete(r.dbs, d.num)
	}
	if rec.DropColl != 0 {
		c, err := r.coll(rec.DropColl)
		if err != nil {
			return err
		}
		s.removeOffers(c.selfLink())
		delete(c.db.colls, c.id)
		delete(r.colls, c.num)
	}
	if rec.DB != nil {
		d := loadDatabase(rec.DB)
		s.dbs[d.id] = d
		r.dbs[d.num] = d
		r.etag(d.etag)
	}
	if rec.Coll != nil {
		if err := r.applyColl(rec.Coll); err != nil {
			return err
		}
	}
	for i := range rec.Offers {
		o, err := loadOffer(&rec.Offers[i])
		if err != nil {
			return err
		}
		if s.offers == nil {
			s.offers = make(map[string]*offer)
		}
		s.offers[o.id] = o
		r.etag(o.etag)
	}
	if rec.Script != nil {
		c, err := r.coll(rec.Script.Coll)
		if err != nil {
			return err
		}
		if err := c.loadScript(&rec.Script.persistScript); err != nil {
			return err
		}
		c.scripts.next = max(c.scripts.next, rec.Script.Num)
		r.etag(rec.Script.ETag)
	}
	if x := rec.DropScript; x != nil {
		c, err := r.coll(x.Coll)
		if err != nil {
			return err
		}
		if c.scripts.byKind[x.Kind][x.ID] == nil {
			return fmt.Errorf("script %s/%s does not exist", x.Kind, x.ID)
		}
		delete(c.scripts.byKind[x.Kind], x.ID)
	}
	if x := rec.Ranges; x != nil {
		c, err := r.coll(x.Coll)
		if err != nil {
			return err
		}
		c.ranges = c.ranges[:0]
		for _, pr := range x.Ranges {
			c.ranges = append(c.ranges, pkRange{id: pr.ID, min: pr.Min, max: pr.Max, parents: pr.Parents})
		}
		c.goneRanges = nil
		if len(x.Gone) > 0 {
			c.goneRanges = make(map[string]bool, len(x.Gone))
			for _, g := range x.Gone {
				c.goneRanges[g] = true
			}
		}
		c.rangesVersion = x.Version
	}
	if rec.Items != nil {
		if err := r.applyItems(rec.Items); err != nil {
			return err
		}
	}
	s.nextRID = max(s.nextRID, rec.NextRID)
	return nil
}

// applyColl creates a container, or replaces the definition of the one
// with the record's number.
func (r *replay) applyColl(x *walColl) error {
	r.etag(x.ETag)
	if c := r.colls[x.Num]; c != nil {
		spec, resp := parseContainerSpec(x.Definition)
		if resp != nil {
			return fmt.Errorf("container definition: %s", resp.errMsg)
		}
		c.redefine(spec, x.ETag, x.TS)
		return nil
	}
	d := r.dbs[x.DB]
	if d == nil {
		return fmt.Errorf("database number %d does not exist", x.DB)
	}
	c, err := loadContainer(d, &x.persistColl)
	if err != nil {
		return err
	}
	c.wal = nil // attached when the server starts serving
	r.colls[c.num] = c
	return nil
}

// applyItems applies one transaction on a container's documents.
func (r *replay) applyItems(x *walItems) error {
	c, err := r.coll(x.Coll)
	if err != nil {
		return err
	}
	for _, op := range x.Ops {
		if op.Del != nil {
			it := c.lookup(string(op.Del.PK), string(op.Del.ID))
			if it == nil {
				return fmt.Errorf("deleted document %q does not exist", op.Del.ID)
			}
			c.remove(it)
			continue
		}
		pd, resp := c.prepareDoc(op.Body)
		if resp != nil {
			return fmt.Errorf("document: %s", resp.errMsg)
		}
		it := &item{id: pd.id, body: pd.body, index: pd.index, coll: c, etag: op.ETag, ts: op.TS, lsn: x.LSN}
		it.part = c.partition(pd.pkKey, true)
		prev := it.part.byID[it.id]
		switch {
		case prev != nil && prev.seq != op.Seq:
			return fmt.Errorf("document %q: number %d, was %d", pd.id, op.Seq, prev.seq)
		case prev == nil && op.Seq <= c.nextSeq:
			return fmt.Errorf("document %q: new number %d not after %d", pd.id, op.Seq, c.nextSeq)
		case prev == nil:
			c.nextSeq = op.Seq - 1 // put numbers it op.Seq
		}
		c.put(it, prev)
		r.etag(op.ETag)
	}
	if x.LSN != 0 {
		c.lsn = x.LSN
	}
	return nil
}
