package emulator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The write-ahead log of a server with a data directory (Options.DataDir).
//
// Every change a snapshot would capture (persist.go) is appended to the log
// as one record, under the lock that makes the change visible (the
// container's for documents, scripts and splits, the server's for
// databases, containers and offers), so the log's order is the order in
// which the changes became visible, and each container's records are in
// LSN order. A request that changed something is answered only once the
// log is synced past its record (http.go): nothing is acknowledged before
// it is durable.
//
// Group commit: writers append records to an in-memory buffer and wait; one
// syncer goroutine writes what has accumulated, fsyncs the file, and wakes
// every writer whose record that sync covered. While it syncs, the next
// batch accumulates, so concurrent writers share one fsync.
//
// Files: DataDir/wal-<generation>.log, each a sequence of frames
// [length uint32 LE][CRC-32C of the payload uint32 LE][payload]. Records of
// a later generation are written only after every record of the earlier
// one was synced, so only the tail of the newest non-empty file can be
// torn; a frame whose length runs past the end of the file or whose
// checksum does not match ends the log there (it was never acknowledged).
// Compaction (persist.go) rotates the log to a new generation at the
// moment it captures the state, writes the snapshot naming that
// generation as the first one to replay, and then deletes the older
// files.

// walPrefix and walSuffix frame a log file's name around its generation.
const (
	walPrefix = "wal-"
	walSuffix = ".log"
)

// walFrameHeader is the size of a frame's length and checksum.
const walFrameHeader = 8

// maxWALRecord bounds a frame's length when reading: a length beyond it
// is a torn or damaged frame (a record holds at most one transactional
// batch, a few megabytes).
const maxWALRecord = 64 << 20

// walTable is the CRC-32C (Castagnoli) table of the frames' checksums.
var walTable = crc32.MakeTable(crc32.Castagnoli)

// walFileName is the name of the log file of generation gen.
func walFileName(gen uint64) string {
	return fmt.Sprintf("%s%016x%s", walPrefix, gen, walSuffix)
}

// walSegment is one log file with the bytes appended to it and not yet
// written. Only the last segment of a wal receives appends; the others
// were rotated away and are closed once written and synced.
type walSegment struct {
	f   *os.File
	gen uint64
	buf []byte
}

// wal is the write-ahead log of a server.
type wal struct {
	mu     sync.Mutex
	synced *sync.Cond // broadcast when syncedSeq or err changes; uses mu
	segs   []*walSegment
	// appendedSeq numbers the records appended; syncedSeq is the last one
	// written and synced. size is the current segment's length in bytes.
	appendedSeq, syncedSeq uint64
	size                   int64
	err                    error // sticky: the first write or sync failure
	closing                bool

	kick chan struct{} // wakes the syncer; capacity 1
	done chan struct{} // closed when the syncer ends

	// compactAt is the current segment's size that asks for a compaction;
	// onFull is called (once per segment, without mu) when it is reached.
	compactAt int64
	onFull    func()
	full      bool

	// Counters for PersistenceStats.
	syncs, records, bytes atomic.Int64
}

// openWAL starts a log whose records go to f, the file of generation gen,
// currently size bytes long, and its syncer goroutine.
func openWAL(f *os.File, gen uint64, size int64, compactAt int64, onFull func()) *wal {
	w := &wal{segs: []*walSegment{{f: f, gen: gen}}, size: size, kick: make(chan struct{}, 1), done: make(chan struct{}),
		compactAt: compactAt, onFull: onFull}
	w.synced = sync.NewCond(&w.mu)
	go w.syncLoop()
	return w
}

// appendFrame frames payload (a record encoded by the caller) and appends
// it, returning its sequence number. The caller holds the lock that made
// the record's change visible; appendFrame does no I/O.
func (w *wal) appendFrame(payload []byte) uint64 {
	var h [walFrameHeader]byte
	binary.LittleEndian.PutUint32(h[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(payload, walTable))
	w.mu.Lock()
	seg := w.segs[len(w.segs)-1]
	seg.buf = append(seg.buf, h[:]...)
	seg.buf = append(seg.buf, payload...)
	w.appendedSeq++
	seq := w.appendedSeq
	w.size += int64(len(h) + len(payload))
	full := !w.full && w.compactAt > 0 && w.size >= w.compactAt
	if full {
		w.full = true
	}
	w.mu.Unlock()
	w.records.Add(1)
	w.bytes.Add(int64(len(h) + len(payload)))
	select {
	case w.kick <- struct{}{}:
	default:
	}
	if full && w.onFull != nil {
		w.onFull()
	}
	return seq
}

// lastSeq returns the sequence number of the last record appended.
func (w *wal) lastSeq() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendedSeq
}

// waitSynced waits until record seq (and so every record before it) is
// written and synced, and returns the log's error if it failed first.
func (w *wal) waitSynced(seq uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncedSeq < seq && w.err == nil {
		w.synced.Wait()
	}
	if w.syncedSeq >= seq {
		return nil
	}
	return w.err
}

// rotate makes f, the new empty file of generation gen, the one later
// records go to. The caller holds every lock under which records are
// appended, so the records before the rotation are exactly those whose
// changes the state it is capturing holds.
func (w *wal) rotate(f *os.File, gen uint64) {
	w.mu.Lock()
	w.segs = append(w.segs, &walSegment{f: f, gen: gen})
	w.size, w.full = 0, false
	w.mu.Unlock()
}

// generation returns the generation of the file records now go to.
func (w *wal) generation() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.segs[len(w.segs)-1].gen
}

// failure returns the log's sticky error, if any.
func (w *wal) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// syncLoop writes and syncs what was appended, batch by batch, oldest
// segment first, until close.
func (w *wal) syncLoop() {
	defer close(w.done)
	for {
		<-w.kick
		w.mu.Lock()
		if w.err != nil || (w.closing && w.syncedSeq == w.appendedSeq) {
			w.mu.Unlock()
			return
		}
		target := w.appendedSeq
		type batch struct {
			seg  *walSegment
			buf  []byte
			last bool
		}
		var batches []batch
		for i, seg := range w.segs {
			batches = append(batches, batch{seg: seg, buf: seg.buf, last: i == len(w.segs)-1})
			seg.buf = nil
		}
		w.mu.Unlock()

		var err error
		done := 0
		for _, b := range batches {
			if len(b.buf) > 0 {
				if _, err = b.seg.f.Write(b.buf); err == nil {
					err = b.seg.f.Sync()
					w.syncs.Add(1)
				}
			}
			if err == nil && !b.last {
				err = b.seg.f.Close() // rotated away: nothing more goes to it
			}
			if err != nil {
				err = fmt.Errorf("emulator: write-ahead log %s: %w", b.seg.f.Name(), err)
				break
			}
			done++
		}

		w.mu.Lock()
		if err != nil {
			w.err = err
		} else {
			w.syncedSeq = target
			w.segs = w.segs[done-1:] // the last one stays: records go to it
		}
		more := w.appendedSeq > w.syncedSeq || w.closing
		w.synced.Broadcast()
		w.mu.Unlock()
		if more {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
	}
}

// close syncs every record appended, stops the syncer and closes the
// current file. Nothing may be appended after it.
func (w *wal) close() error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	for _, seg := range w.segs {
		if cerr := seg.f.Close(); err == nil {
			err = cerr
		}
	}
	w.segs = nil
	if w.err != nil {
		return w.err
	}
	return err
}

// walFile is one log file found in a data directory.
type walFile struct {
	gen  uint64
	path string
}

// listWAL returns the log files of dir in generation order.
func listWAL(dir string) ([]walFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []walFile
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, walPrefix) || !strings.HasSuffix(name, walSuffix) {
			continue
		}
		gen, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, walPrefix), walSuffix), 16, 64)
		if err != nil {
			continue
		}
		out = append(out, walFile{gen: gen, path: filepath.Join(dir, name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gen < out[j].gen })
	return out, nil
}

// errTornFrame reports a frame cut short or failing its checksum: the end
// of what was written before a crash.
var errTornFrame = errors.New("torn frame")

// readFrames calls apply with the payload of each whole frame of data, in
// order. It returns the length of the valid prefix, and errTornFrame when
// the data goes on past it; an error of apply stops it and is returned.
func readFrames(data []byte, apply func(payload []byte) error) (int, error) {
	off := 0
	for off < len(data) {
		if len(data)-off < walFrameHeader {
			return off, errTornFrame
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		if n == 0 || n > maxWALRecord || n > len(data)-off-walFrameHeader {
			return off, errTornFrame
		}
		payload := data[off+walFrameHeader : off+walFrameHeader+n]
		if crc32.Checksum(payload, walTable) != sum {
			return off, errTornFrame
		}
		if err := apply(payload); err != nil {
			return off, err
		}
		off += walFrameHeader + n
	}
	return off, nil
}

// replayWAL applies the records of the log files of generation from and
// later, in order, with apply. A torn tail ends the log: records after it
// were never acknowledged. It returns the number of records applied and
// whether a torn tail was found; an error when a torn frame is followed by
// records of a later file (which the syncer's order rules out: damage, not
// a crash) or when apply fails.
func replayWAL(files []walFile, from uint64, apply func(payload []byte) error) (records int, torn bool, err error) {
	tornAt := ""
	for _, wf := range files {
		if wf.gen < from {
			continue
		}
		data, err := os.ReadFile(wf.path)
		if err != nil {
			return records, torn, fmt.Errorf("read %s: %w", wf.path, err)
		}
		if tornAt != "" {
			if len(data) > 0 {
				return records, torn, fmt.Errorf("%s ends in a damaged record but the later log %s is not empty", tornAt, wf.path)
			}
			continue
		}
		_, err = readFrames(data, func(p []byte) error {
			if err := apply(p); err != nil {
				return err
			}
			records++
			return nil
		})
		switch {
		case errors.Is(err, errTornFrame):
			torn, tornAt = true, wf.path
		case err != nil:
			return records, torn, fmt.Errorf("%s: record %d: %w", wf.path, records+1, err)
		}
	}
	return records, torn, nil
}

// fileSize returns the length of f, 0 when it cannot be read.
func fileSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}
