package emulator

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Persistence (Options.DataDir). The emulator keeps everything in memory;
// with a data directory it also keeps a snapshot of its whole state in
// DataDir/state.jsonl and loads it at Start. A snapshot is written at most
// PersistInterval after a write (Options.PersistInterval, default and at
// most 500 ms), each one whole to a temporary file that is synced and then
// renamed over the previous one (the directory synced too), so the file is
// always one complete snapshot: a process killed at any moment (SIGKILL, a
// power cut after the sync) loses only the writes of the last interval and
// of the snapshot being written, under a second while a snapshot takes
// under half a second to write. Close writes a last snapshot, so a
// graceful stop loses nothing.
//
// The file holds JSON lines: a header, then each database followed by its
// containers, each container followed by its documents (in rid order) and
// scripts, then the throughput offers, then an end marker (a file without
// it is refused). Documents keep their id, body, _rid, _etag, _ts and _lsn;
// containers their definition (partition key, indexing policy, TTL, unique
// keys), rid, ETag, _ts, last LSN, document numbering and partition key
// ranges (splits included). The change feed restarts from the documents'
// LSNs: continuations taken before a restart stay valid, and each live
// document is listed once at its latest version, as before the restart.

// stateFile is the snapshot's name in the data directory.
const stateFile = "state.jsonl"

// persistFormat is the version of the snapshot format.
const persistFormat = 1

// MaxPersistInterval is the longest Options.PersistInterval: with it, a
// crash loses at most the last second of writes while a snapshot takes
// under half a second to write.
const MaxPersistInterval = 500 * time.Millisecond

// persistRecord is one line of the snapshot; exactly one field is set.
type persistRecord struct {
	Header *persistHeader `json:"header,omitempty"`
	DB     *persistDB     `json:"db,omitempty"`
	Coll   *persistColl   `json:"coll,omitempty"`
	Item   *persistItem   `json:"item,omitempty"`
	Script *persistScript `json:"script,omitempty"`
	Offer  *persistOffer  `json:"offer,omitempty"`
	End    *persistEnd    `json:"end,omitempty"`
}

type persistHeader struct {
	Format  int    `json:"format"`
	NextRID uint32 `json:"nextRid"`
	Written string `json:"written"`
}

// persistEnd closes a snapshot. The ETag counter is read after every
// resource was captured, so it is at least every ETag in the snapshot.
type persistEnd struct {
	ETagSeq uint64 `json:"etagSeq"`
}

type persistDB struct {
	ID     string `json:"id"`
	Num    uint32 `json:"num"`
	Shared bool   `json:"shared,omitempty"`
	ETag   uint64 `json:"etag"`
	TS     int64  `json:"ts"`
}

type persistColl struct {
	Definition    json.RawMessage `json:"definition"` // as read from the service
	Num           uint32          `json:"num"`
	ETag          uint64          `json:"etag"`
	TS            int64           `json:"ts"`
	NextSeq       uint64          `json:"nextSeq"`
	LSN           uint64          `json:"lsn"`
	Ranges        []persistRange  `json:"ranges,omitempty"`
	GoneRanges    []string        `json:"goneRanges,omitempty"`
	RangesVersion uint64          `json:"rangesVersion,omitempty"`
	ScriptNext    uint64          `json:"scriptNext,omitempty"`
}

type persistRange struct {
	ID      string   `json:"id"`
	Min     string   `json:"min"`
	Max     string   `json:"max"`
	Parents []string `json:"parents,omitempty"`
}

type persistItem struct {
	Seq  uint64          `json:"seq"`
	ETag uint64          `json:"etag"`
	TS   int64           `json:"ts"`
	LSN  uint64          `json:"lsn"`
	Body json.RawMessage `json:"body"`
}

type persistScript struct {
	Kind  string          `json:"kind"`
	Num   uint64          `json:"num"`
	ETag  uint64          `json:"etag"`
	TS    int64           `json:"ts"`
	Props json.RawMessage `json:"props"`
}

type persistOffer struct {
	ID          string          `json:"id"`
	Num         uint32          `json:"num"`
	Resource    string          `json:"resource"`
	ResourceRID string          `json:"resourceRid"`
	Content     json.RawMessage `json:"content"`
	ETag        uint64          `json:"etag"`
	TS          int64           `json:"ts"`
}

// persister writes the snapshots of a server with a data directory.
type persister struct {
	dir      string
	interval time.Duration
	onError  func(error) // Options.PersistErrors; may be nil
	stop     chan struct{}
	done     chan struct{}
}

// touch records that the state changed, so the next tick writes a
// snapshot. It is cheap and safe without a data directory.
func (s *Server) touch() { s.dirty.Store(true) }

// persistLoop writes a snapshot after each interval in which the state
// changed, until stop closes.
func (s *Server) persistLoop(p *persister) {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if s.dirty.Swap(false) {
				if err := s.saveState(); err != nil {
					// Try again at the next tick; Close reports a
					// failure that persists.
					s.dirty.Store(true)
					if p.onError != nil {
						p.onError(err)
					}
				}
			}
		}
	}
}

// saveState writes the whole state to a temporary file in the data
// directory, syncs it and renames it over the previous snapshot.
func (s *Server) saveState() error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	dir := s.persist.dir
	f, err := os.CreateTemp(dir, stateFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("emulator: write state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	w := bufio.NewWriterSize(f, 1<<20)
	werr := s.writeState(w)
	if werr == nil {
		werr = w.Flush()
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, stateFile))
	}
	if werr == nil {
		werr = syncDir(dir)
	}
	if werr != nil {
		return fmt.Errorf("emulator: write state to %s: %w", dir, werr)
	}
	return nil
}

// syncDir makes a rename in dir durable (where the platform allows).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && errors.Is(err, os.ErrInvalid) {
		return nil // directories cannot be synced here (Windows)
	}
	return err
}

// writeState encodes the state as JSON lines. Each container is captured
// under its read lock (documents are immutable, so their bytes are
// encoded after it is released); the ETag counter is read last, so it is
// at least every ETag written.
func (s *Server) writeState(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	s.mu.RLock()
	dbs := make([]*database, 0, len(s.dbs))
	for _, d := range s.dbs {
		dbs = append(dbs, d)
	}
	nextRID := s.nextRID
	// Offers change in place (under s.mu): copy them now.
	offers := make([]persistOffer, 0, len(s.offers))
	for _, o := range s.offers {
		offers = append(offers, persistOffer{ID: o.id, Num: o.num, Resource: o.resource, ResourceRID: o.resourceRID,
			Content: o.content.appendJSON(nil), ETag: o.etag, TS: o.ts})
	}
	type collRef struct {
		d *database
		c *container
	}
	var colls []collRef
	for _, d := range dbs {
		for _, c := range d.colls {
			colls = append(colls, collRef{d, c})
		}
	}
	s.mu.RUnlock()
	sort.Slice(dbs, func(i, j int) bool { return dbs[i].num < dbs[j].num })
	sort.Slice(colls, func(i, j int) bool {
		if colls[i].d.num != colls[j].d.num {
			return colls[i].d.num < colls[j].d.num
		}
		return colls[i].c.num < colls[j].c.num
	})
	sort.Slice(offers, func(i, j int) bool { return offers[i].Num < offers[j].Num })

	if err := enc.Encode(persistRecord{Header: &persistHeader{Format: persistFormat, NextRID: nextRID, Written: s.now().UTC().Format(time.RFC3339Nano)}}); err != nil {
		return err
	}
	next := 0
	for _, d := range dbs {
		if err := enc.Encode(persistRecord{DB: &persistDB{ID: d.id, Num: d.num, Shared: d.shared, ETag: d.etag, TS: d.ts}}); err != nil {
			return err
		}
		for ; next < len(colls) && colls[next].d == d; next++ {
			if err := writeContainer(w, enc, colls[next].c); err != nil {
				return err
			}
		}
	}
	for i := range offers {
		if err := enc.Encode(persistRecord{Offer: &offers[i]}); err != nil {
			return err
		}
	}
	return enc.Encode(persistRecord{End: &persistEnd{ETagSeq: s.etagSeq.Load()}})
}

// writeContainer encodes one container, its documents and its scripts, to
// w through enc.
func writeContainer(w io.Writer, enc *json.Encoder, c *container) error {
	type scriptRef struct {
		kind string
		sc   *script
	}
	c.mu.RLock()
	rec := &persistColl{Definition: c.appendJSON(nil), Num: c.num, ETag: c.etag, TS: c.ts,
		NextSeq: c.nextSeq, LSN: c.lsn, RangesVersion: c.rangesVersion, ScriptNext: c.scripts.next}
	for _, r := range c.ranges {
		rec.Ranges = append(rec.Ranges, persistRange{ID: r.id, Min: r.min, Max: r.max, Parents: r.parents})
	}
	for g := range c.goneRanges {
		rec.GoneRanges = append(rec.GoneRanges, g)
	}
	items := c.snapshot(nil)
	var scripts []scriptRef
	for kind, set := range c.scripts.byKind {
		for _, sc := range set {
			scripts = append(scripts, scriptRef{kind, sc})
		}
	}
	c.mu.RUnlock()
	sort.Strings(rec.GoneRanges)
	sort.Slice(scripts, func(i, j int) bool { return scripts[i].sc.num < scripts[j].sc.num })
	if err := enc.Encode(persistRecord{Coll: rec}); err != nil {
		return err
	}
	// Documents are most of a snapshot: their lines are written by hand,
	// the stored body (compact JSON) as it is, as the encoder would write
	// a persistRecord with Item set.
	var line []byte
	for _, it := range items {
		line = append(line[:0], `{"item":{"seq":`...)
		line = strconv.AppendUint(line, it.seq, 10)
		line = append(line, `,"etag":`...)
		line = strconv.AppendUint(line, it.etag, 10)
		line = append(line, `,"ts":`...)
		line = strconv.AppendInt(line, it.ts, 10)
		line = append(line, `,"lsn":`...)
		line = strconv.AppendUint(line, it.lsn, 10)
		line = append(line, `,"body":`...)
		line = append(line, it.body...)
		line = append(line, "}}\n"...)
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	for _, x := range scripts {
		if err := enc.Encode(persistRecord{Script: &persistScript{Kind: x.kind, Num: x.sc.num, ETag: x.sc.etag, TS: x.sc.ts, Props: x.sc.props}}); err != nil {
			return err
		}
	}
	return nil
}

// loadState reads the snapshot in dir, if there is one, into s (a server
// not yet serving). It fails on a snapshot it cannot read whole.
func (s *Server) loadState(dir string) error {
	f, err := os.Open(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("emulator: read state: %w", err)
	}
	defer f.Close()
	if err := s.readState(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return fmt.Errorf("emulator: read state %s: %w", f.Name(), err)
	}
	return nil
}

func (s *Server) readState(r io.Reader) error {
	dec := json.NewDecoder(r)
	var (
		d      *database
		c      *container
		header bool
		end    bool
	)
	finish := func() {
		if c != nil {
			c.finishLoad()
			c = nil
		}
	}
	for n := 0; ; n++ {
		var rec persistRecord
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		if end {
			return fmt.Errorf("record %d after the end marker", n)
		}
		if !header && rec.Header == nil {
			return errors.New("the snapshot does not start with its header")
		}
		switch {
		case rec.Header != nil:
			if header {
				return fmt.Errorf("record %d: a second header", n)
			}
			if rec.Header.Format != persistFormat {
				return fmt.Errorf("format %d, want %d", rec.Header.Format, persistFormat)
			}
			header = true
			s.nextRID = rec.Header.NextRID
		case rec.DB != nil:
			finish()
			x := rec.DB
			d = &database{id: x.ID, num: x.Num, rid: databaseRID(x.Num), shared: x.Shared, etag: x.ETag, ts: x.TS, colls: make(map[string]*container)}
			s.dbs[d.id] = d
		case rec.Coll != nil:
			finish()
			if d == nil {
				return fmt.Errorf("record %d: a container before any database", n)
			}
			var err error
			if c, err = loadContainer(d, rec.Coll); err != nil {
				return fmt.Errorf("record %d: %w", n, err)
			}
		case rec.Item != nil:
			if c == nil {
				return fmt.Errorf("record %d: a document outside a container", n)
			}
			if err := c.loadItem(rec.Item); err != nil {
				return fmt.Errorf("record %d: %w", n, err)
			}
		case rec.Script != nil:
			if c == nil {
				return fmt.Errorf("record %d: a script outside a container", n)
			}
			x := rec.Script
			if _, ok := scriptKinds[x.Kind]; !ok {
				return fmt.Errorf("record %d: unknown script kind %q", n, x.Kind)
			}
			id, props, resp := parseScript(x.Kind, x.Props)
			if resp != nil {
				return fmt.Errorf("record %d: script: %s", n, resp.errMsg)
			}
			if c.scripts.byKind == nil {
				c.scripts.byKind = make(map[string]map[string]*script)
			}
			if c.scripts.byKind[x.Kind] == nil {
				c.scripts.byKind[x.Kind] = make(map[string]*script)
			}
			c.scripts.byKind[x.Kind][id] = &script{id: id, props: props, num: x.Num, etag: x.ETag, ts: x.TS}
		case rec.Offer != nil:
			finish()
			x := rec.Offer
			content, err := parseJSON(x.Content)
			if err != nil {
				return fmt.Errorf("record %d: offer content: %w", n, err)
			}
			if s.offers == nil {
				s.offers = make(map[string]*offer)
			}
			s.offers[x.ID] = &offer{id: x.ID, num: x.Num, resource: x.Resource, resourceRID: x.ResourceRID, content: content, etag: x.ETag, ts: x.TS}
		case rec.End != nil:
			finish()
			s.etagSeq.Store(rec.End.ETagSeq)
			end = true
		default:
			return fmt.Errorf("record %d is empty", n)
		}
	}
	if !end {
		return errors.New("the snapshot has no end marker (truncated)")
	}
	return nil
}

// loadContainer rebuilds a container of d from its record, its definition
// validated as a create request's body is.
func loadContainer(d *database, x *persistColl) (*container, error) {
	spec, resp := parseContainerSpec(x.Definition)
	if resp != nil {
		return nil, fmt.Errorf("container definition: %s", resp.errMsg)
	}
	c := &container{
		db: d, id: spec.id, num: x.Num, etag: x.ETag, ts: x.TS,
		props: spec.props, pkPaths: spec.pkPaths, pkKind: spec.pkKind, pkLarge: spec.pkLarge, index: spec.index,
		ttl: spec.ttl, unique: spec.unique,
		parts:         make(map[string]*partition),
		rangesVersion: x.RangesVersion,
	}
	c.setRID(d, x.Num)
	for _, r := range x.Ranges {
		c.ranges = append(c.ranges, pkRange{id: r.ID, min: r.Min, max: r.Max, parents: r.Parents})
	}
	if len(x.GoneRanges) > 0 {
		c.goneRanges = make(map[string]bool, len(x.GoneRanges))
		for _, g := range x.GoneRanges {
			c.goneRanges[g] = true
		}
	}
	c.nextSeq, c.lsn, c.scripts.next = x.NextSeq, x.LSN, x.ScriptNext
	d.colls[c.id] = c
	return c, nil
}

// loadItem adds a document from its record, keeping its number (_rid),
// ETag, _ts and LSN.
func (c *container) loadItem(x *persistItem) error {
	pd, resp := c.prepareDoc(x.Body)
	if resp != nil {
		return fmt.Errorf("document: %s", resp.errMsg)
	}
	if x.Seq == 0 || x.Seq > c.nextSeq || (len(c.all) > 0 && c.all[len(c.all)-1].seq >= x.Seq) {
		return fmt.Errorf("document %q: number %d out of order or outside 1..%d", pd.id, x.Seq, c.nextSeq)
	}
	it := &item{id: pd.id, body: pd.body, index: pd.index, coll: c, etag: x.ETag, ts: x.TS, lsn: x.LSN}
	it.part = c.partition(pd.pkKey, true)
	if it.part.byID[it.id] != nil {
		return fmt.Errorf("document %q appears twice in its partition", pd.id)
	}
	last := c.nextSeq
	c.nextSeq = x.Seq - 1 // put numbers the document x.Seq
	c.put(it, nil)
	c.nextSeq = last
	return nil
}

// finishLoad puts the change feed log in LSN order once every document of
// the container is loaded (they are loaded in rid order).
func (c *container) finishLoad() {
	sort.SliceStable(c.feed, func(i, j int) bool { return c.feed[i].lsn < c.feed[j].lsn })
}
