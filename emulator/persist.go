package emulator

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Persistence (Options.DataDir). The emulator keeps everything in memory;
// with a data directory it also keeps its state there, so that nothing it
// acknowledged is lost, whatever stops the process (a graceful Close,
// SIGKILL, a power cut):
//
//   - every change is appended to a write-ahead log (wal.go) under the lock
//     that makes it visible, and the request is answered only once the log
//     is synced past it (group commit: one fsync for every write that came
//     in while the previous one ran);
//   - a snapshot of the whole state (DataDir/state.jsonl) is the log's
//     compaction: written when the log has grown past the snapshot's size
//     (and 64 MB), and at Close, each one whole to a temporary file that is
//     synced and then renamed over the previous one; it names the first
//     log file to replay after it, and the older log files are deleted;
//   - Start takes the directory's lock (dirlock.go), loads the snapshot,
//     replays the log from the generation it names (a torn last record,
//     never acknowledged, is dropped) and, when the log held anything,
//     writes a new snapshot at once.
//
// The snapshot holds JSON lines: a header, then each database followed by
// its containers, each container followed by its documents (in rid order)
// and scripts, then the throughput offers, then an end marker (a file
// without it is refused). Documents keep their id, body, _rid, _etag, _ts
// and _lsn; containers their definition (partition key, indexing policy,
// TTL, unique keys), rid, ETag, _ts, last LSN, document numbering and
// partition key ranges (splits included). The change feed restarts from the
// documents' LSNs: continuations taken before a restart stay valid, and
// each live document is listed once at its latest version, as before the
// restart.

// stateFile is the snapshot's name in the data directory.
const stateFile = "state.jsonl"

// persistFormat is the version of the snapshot format: 2 names the first
// log generation to replay; 1 (before the log) is still read.
const persistFormat = 2

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
	// Log is the first write-ahead log generation to replay after the
	// snapshot (format 2).
	Log     uint64 `json:"log,omitempty"`
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

// durability keeps a server's state in its data directory: the lock, the
// write-ahead log and the compactions.
type durability struct {
	dir  string
	lock *dirLock
	wal  *wal
	// onError is Options.PersistErrors; may be nil.
	onError func(error)
	// minCompact is the smallest log that asks for a compaction.
	minCompact int64
	// compactMu serializes compactions; compactions counts them.
	compactMu   sync.Mutex
	compactions atomic.Int64
	// kick wakes the compactor goroutine; stop ends it, done closes when
	// it has ended.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// defaultCompactBytes is the smallest log that triggers a compaction; a
// log also waits to be as large as the last snapshot, so that compaction
// writes at most about twice what the log does.
const defaultCompactBytes = 64 << 20

// openDataDir locks dir, loads its snapshot and replays its log into s
// (not serving yet), and opens the log for appending. A log with records
// or a torn tail is compacted at once, so the server starts on a clean
// snapshot and an empty log.
func (s *Server) openDataDir(dir string, onError func(error), minCompact int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("emulator: data directory: %w", err)
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = lock.release()
		return err
	}
	from, err := s.loadState(dir)
	if err != nil {
		return fail(err)
	}
	files, err := listWAL(dir)
	if err != nil {
		return fail(fmt.Errorf("emulator: read data directory: %w", err))
	}
	r := newReplay(s)
	records, torn, err := replayWAL(files, from, r.apply)
	if err != nil {
		return fail(fmt.Errorf("emulator: replay the write-ahead log of %s: %w", dir, err))
	}
	if r.maxETag > s.etagSeq.Load() {
		s.etagSeq.Store(r.maxETag)
	}
	for _, d := range s.dbs {
		for _, c := range d.colls {
			c.finishLoad()
		}
	}
	if minCompact <= 0 {
		minCompact = defaultCompactBytes
	}
	d := &durability{dir: dir, lock: lock, onError: onError, minCompact: minCompact,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	gen := max(from, 1)
	clean := records == 0 && !torn
	if !clean {
		for _, wf := range files {
			gen = max(gen, wf.gen+1)
		}
	}
	// Records go to generation gen: the snapshot's first one to replay
	// when clean (an empty log), a new one after a compaction otherwise.
	f, err := os.OpenFile(filepath.Join(dir, walFileName(gen)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		err = syncDir(dir)
	}
	if err == nil && !clean {
		var size int64
		size, err = s.writeSnapshot(dir, s.captureState(nil), gen)
		minCompact = max(minCompact, size)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		return fail(fmt.Errorf("emulator: open the write-ahead log of %s: %w", dir, err))
	}
	removeLogsBefore(files, gen, gen)
	d.wal = openWAL(f, gen, fileSize(f), minCompact, d.requestCompaction)
	s.dur = d
	for _, db := range s.dbs {
		for _, c := range db.colls {
			c.wal = d.wal
		}
	}
	go s.compactLoop(d)
	return nil
}

// removeLogsBefore deletes the log files other than keep whose generation
// is below gen (their records are in the snapshot) or above it (empty
// files of an interrupted compaction, found by a clean replay).
func removeLogsBefore(files []walFile, gen, keep uint64) {
	for _, wf := range files {
		if wf.gen != keep && (wf.gen < gen || wf.gen > keep) {
			_ = os.Remove(wf.path)
		}
	}
}

// requestCompaction asks the compactor for a compaction; it never blocks
// (the log calls it under a writer's locks).
func (d *durability) requestCompaction() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// compactLoop compacts when the log asks, until stop closes. A failed
// compaction is reported and retried a second later; the log keeps
// everything meanwhile.
func (s *Server) compactLoop(d *durability) {
	defer close(d.done)
	for {
		select {
		case <-d.stop:
			return
		case <-d.kick:
		}
		for {
			err := s.compact()
			if err == nil {
				break
			}
			if d.onError != nil {
				d.onError(err)
			}
			select {
			case <-d.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// compact writes a snapshot and drops the log it replaces: it creates the
// next log file, captures the state and rotates the log to that file in
// one step (under every lock records are appended under), writes the
// snapshot naming the new file as the first to replay, and deletes the
// older files. A crash at any point leaves a snapshot and the log files
// from its generation on, which hold every acknowledged write.
func (s *Server) compact() error {
	d := s.dur
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	if err := d.wal.failure(); err != nil {
		return err
	}
	gen := d.wal.generation() + 1
	f, err := os.OpenFile(filepath.Join(d.dir, walFileName(gen)), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err == nil {
		if err = syncDir(d.dir); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("emulator: compact %s: %w", d.dir, err)
	}
	img := s.captureState(func() { d.wal.rotate(f, gen) })
	if s.testHookCompact != nil {
		s.testHookCompact("rotated")
	}
	size, err := s.writeSnapshot(d.dir, img, gen)
	if err != nil {
		return err
	}
	d.compactions.Add(1)
	d.wal.mu.Lock()
	d.wal.compactAt = max(d.minCompact, size)
	d.wal.mu.Unlock()
	if s.testHookCompact != nil {
		s.testHookCompact("snapshot written")
	}
	if files, err := listWAL(d.dir); err == nil {
		removeLogsBefore(files, gen, gen)
	}
	return nil
}

// closeDataDir syncs the log, compacts it into a last snapshot (so the
// next start replays nothing), closes the log and releases the lock.
func (s *Server) closeDataDir() error {
	d := s.dur
	close(d.stop)
	<-d.done
	err := s.compact()
	if cerr := d.wal.close(); err == nil {
		err = cerr
	}
	if lerr := d.lock.release(); err == nil {
		err = lerr
	}
	return err
}

// awaitDurable waits until every record appended so far is synced: a
// request that changed something is answered only then. It returns the
// log's error when it failed (the change is then visible but may not
// survive a restart).
func (s *Server) awaitDurable() error {
	if s.dur == nil {
		return nil
	}
	w := s.dur.wal
	return w.waitSynced(w.lastSeq())
}

// durabilityFailure answers a write whose log record could not be
// written: 503, as the service answers when it cannot commit.
func durabilityFailure(err error) *response {
	return errorResponse(http.StatusServiceUnavailable, 0, "The emulator could not write its data directory, so this change may not survive a restart; restart the emulator once the cause is fixed: "+err.Error())
}

// PersistenceStats counts the work of a server's data directory
// (Options.DataDir); all zero without one.
type PersistenceStats struct {
	// Records is the number of write-ahead log records appended: one per
	// write request that changed something (a transactional batch is one).
	Records int64
	// Syncs is the number of fsyncs of the log: with group commit, one
	// covers every record appended while the previous one ran.
	Syncs int64
	// LogBytes is the number of bytes appended to the log.
	LogBytes int64
	// Compactions is the number of snapshots written since Start,
	// Close's included.
	Compactions int64
}

// PersistenceStats returns the counters of the data directory since Start.
func (s *Server) PersistenceStats() PersistenceStats {
	if s.dur == nil {
		return PersistenceStats{}
	}
	w := s.dur.wal
	return PersistenceStats{Records: w.records.Load(), Syncs: w.syncs.Load(), LogBytes: w.bytes.Load(), Compactions: s.dur.compactions.Load()}
}

// stateImage is the whole state at one instant: what a snapshot holds.
// Documents and scripts are immutable, so their pointers suffice.
type stateImage struct {
	nextRID uint32
	etagSeq uint64
	dbs     []persistDB
	colls   []collImage
	offers  []persistOffer
}

type collImage struct {
	db      uint32
	rec     *persistColl
	items   []*item
	scripts []scriptImage
}

type scriptImage struct {
	kind string
	sc   *script
}

// captureState takes a stateImage under the server's lock and every
// container's, and calls rotate (when not nil) before releasing them, so
// that the log's rotation falls exactly between the changes the image
// holds and those it does not. Documents are not copied: the locks are
// held for about a pointer copy per document.
func (s *Server) captureState(rotate func()) *stateImage {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := &stateImage{nextRID: s.nextRID}
	var colls []*container
	for _, d := range s.dbs {
		img.dbs = append(img.dbs, persistDB{ID: d.id, Num: d.num, Shared: d.shared, ETag: d.etag, TS: d.ts})
		for _, c := range d.colls {
			colls = append(colls, c)
		}
	}
	sort.Slice(img.dbs, func(i, j int) bool { return img.dbs[i].Num < img.dbs[j].Num })
	sort.Slice(colls, func(i, j int) bool {
		if colls[i].db.num != colls[j].db.num {
			return colls[i].db.num < colls[j].db.num
		}
		return colls[i].num < colls[j].num
	})
	for _, o := range s.offers {
		img.offers = append(img.offers, offerRecord(o))
	}
	sort.Slice(img.offers, func(i, j int) bool { return img.offers[i].Num < img.offers[j].Num })
	for _, c := range colls {
		c.mu.RLock()
	}
	for _, c := range colls {
		ci := collImage{db: c.db.num, rec: collRecord(c), items: c.snapshot(nil)}
		for kind, set := range c.scripts.byKind {
			for _, sc := range set {
				ci.scripts = append(ci.scripts, scriptImage{kind, sc})
			}
		}
		img.colls = append(img.colls, ci)
	}
	img.etagSeq = s.etagSeq.Load()
	if rotate != nil {
		rotate()
	}
	for _, c := range colls {
		c.mu.RUnlock()
	}
	return img
}

// writeSnapshot writes img as the snapshot of dir, naming log generation
// logFrom as the first to replay after it: to a temporary file, synced,
// renamed over the previous snapshot, the directory synced. It returns
// the snapshot's size.
func (s *Server) writeSnapshot(dir string, img *stateImage, logFrom uint64) (int64, error) {
	f, err := os.CreateTemp(dir, stateFile+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("emulator: write state: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	cw := &countingWriter{w: f}
	w := bufio.NewWriterSize(cw, 1<<20)
	werr := s.writeState(w, img, logFrom)
	if werr == nil {
		werr = w.Flush()
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && s.testHookCompact != nil {
		s.testHookCompact("snapshot synced")
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, stateFile))
	}
	if werr == nil {
		werr = syncDir(dir)
	}
	if werr != nil {
		return 0, fmt.Errorf("emulator: write state to %s: %w", dir, werr)
	}
	return cw.n, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
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

// writeState encodes img as JSON lines.
func (s *Server) writeState(w io.Writer, img *stateImage, logFrom uint64) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(persistRecord{Header: &persistHeader{Format: persistFormat, NextRID: img.nextRID, Log: logFrom, Written: s.now().UTC().Format(time.RFC3339Nano)}}); err != nil {
		return err
	}
	next := 0
	for i := range img.dbs {
		if err := enc.Encode(persistRecord{DB: &img.dbs[i]}); err != nil {
			return err
		}
		for ; next < len(img.colls) && img.colls[next].db == img.dbs[i].Num; next++ {
			if err := writeContainer(w, enc, &img.colls[next]); err != nil {
				return err
			}
		}
	}
	for i := range img.offers {
		if err := enc.Encode(persistRecord{Offer: &img.offers[i]}); err != nil {
			return err
		}
	}
	return enc.Encode(persistRecord{End: &persistEnd{ETagSeq: img.etagSeq}})
}

// writeContainer encodes one container, its documents and its scripts, to
// w through enc.
func writeContainer(w io.Writer, enc *json.Encoder, ci *collImage) error {
	sort.Slice(ci.scripts, func(i, j int) bool { return ci.scripts[i].sc.num < ci.scripts[j].sc.num })
	if err := enc.Encode(persistRecord{Coll: ci.rec}); err != nil {
		return err
	}
	// Documents are most of a snapshot: their lines are written by hand,
	// the stored body (compact JSON) as it is, as the encoder would write
	// a persistRecord with Item set.
	var line []byte
	for _, it := range ci.items {
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
	for _, x := range ci.scripts {
		if err := enc.Encode(persistRecord{Script: &persistScript{Kind: x.kind, Num: x.sc.num, ETag: x.sc.etag, TS: x.sc.ts, Props: x.sc.props}}); err != nil {
			return err
		}
	}
	return nil
}

// loadState reads the snapshot in dir, if there is one, into s (a server
// not yet serving), and returns the first log generation to replay after
// it. It fails on a snapshot it cannot read whole.
func (s *Server) loadState(dir string) (uint64, error) {
	f, err := os.Open(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("emulator: read state: %w", err)
	}
	defer f.Close()
	logFrom, err := s.readState(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("emulator: read state %s: %w", f.Name(), err)
	}
	return logFrom, nil
}

func (s *Server) readState(r io.Reader) (logFrom uint64, err error) {
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
			return 0, fmt.Errorf("record %d: %w", n, err)
		}
		if end {
			return 0, fmt.Errorf("record %d after the end marker", n)
		}
		if !header && rec.Header == nil {
			return 0, errors.New("the snapshot does not start with its header")
		}
		switch {
		case rec.Header != nil:
			if header {
				return 0, fmt.Errorf("record %d: a second header", n)
			}
			if rec.Header.Format != persistFormat && rec.Header.Format != 1 {
				return 0, fmt.Errorf("format %d, want %d", rec.Header.Format, persistFormat)
			}
			header = true
			s.nextRID, logFrom = rec.Header.NextRID, rec.Header.Log
		case rec.DB != nil:
			finish()
			d = loadDatabase(rec.DB)
			s.dbs[d.id] = d
		case rec.Coll != nil:
			finish()
			if d == nil {
				return 0, fmt.Errorf("record %d: a container before any database", n)
			}
			var err error
			if c, err = loadContainer(d, rec.Coll); err != nil {
				return 0, fmt.Errorf("record %d: %w", n, err)
			}
		case rec.Item != nil:
			if c == nil {
				return 0, fmt.Errorf("record %d: a document outside a container", n)
			}
			if err := c.loadItem(rec.Item); err != nil {
				return 0, fmt.Errorf("record %d: %w", n, err)
			}
		case rec.Script != nil:
			if c == nil {
				return 0, fmt.Errorf("record %d: a script outside a container", n)
			}
			if err := c.loadScript(rec.Script); err != nil {
				return 0, fmt.Errorf("record %d: %w", n, err)
			}
		case rec.Offer != nil:
			finish()
			o, err := loadOffer(rec.Offer)
			if err != nil {
				return 0, fmt.Errorf("record %d: %w", n, err)
			}
			if s.offers == nil {
				s.offers = make(map[string]*offer)
			}
			s.offers[o.id] = o
		case rec.End != nil:
			finish()
			s.etagSeq.Store(rec.End.ETagSeq)
			end = true
		default:
			return 0, fmt.Errorf("record %d is empty", n)
		}
	}
	if !end {
		return 0, errors.New("the snapshot has no end marker (truncated)")
	}
	return logFrom, nil
}

// loadDatabase rebuilds a database from its record.
func loadDatabase(x *persistDB) *database {
	return &database{id: x.ID, num: x.Num, rid: databaseRID(x.Num), shared: x.Shared, etag: x.ETag, ts: x.TS, colls: make(map[string]*container)}
}

// loadOffer rebuilds an offer from its record.
func loadOffer(x *persistOffer) (*offer, error) {
	content, err := parseJSON(x.Content)
	if err != nil {
		return nil, fmt.Errorf("offer content: %w", err)
	}
	return &offer{id: x.ID, num: x.Num, resource: x.Resource, resourceRID: x.ResourceRID, content: content, etag: x.ETag, ts: x.TS}, nil
}

// loadScript adds (or replaces) a script of c from its record, its
// properties validated as a create request's are.
func (c *container) loadScript(x *persistScript) error {
	if _, ok := scriptKinds[x.Kind]; !ok {
		return fmt.Errorf("unknown script kind %q", x.Kind)
	}
	id, props, resp := parseScript(x.Kind, x.Props)
	if resp != nil {
		return fmt.Errorf("script: %s", resp.errMsg)
	}
	if c.scripts.byKind == nil {
		c.scripts.byKind = make(map[string]map[string]*script)
	}
	if c.scripts.byKind[x.Kind] == nil {
		c.scripts.byKind[x.Kind] = make(map[string]*script)
	}
	c.scripts.byKind[x.Kind][id] = &script{id: id, props: props, num: x.Num, etag: x.ETag, ts: x.TS}
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
