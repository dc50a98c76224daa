package emulator

import (
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Replicas. On the service, each physical partition is a replica set: a
// primary, which decides every write (conditions, ETags, batches, unique
// keys), and three secondaries applying the primary's writes in LSN
// order, a little late. A Strong or BoundedStaleness read is answered
// with every committed write; a Session, ConsistentPrefix or Eventual
// read by one replica, which may not have applied the last writes yet:
// it sees a consistent prefix of the partition (every write up to its
// LSN, none after). A session token on the request names the LSN of the
// client's last write or read per partition key range; only a replica at
// least that far may serve it, and when none is, the service answers 404
// with substatus 1002 (ReadSessionNotAvailable), which the SDKs retry.
//
// The emulator keeps one store (the primary's) and, while
// Options.ReplicaLag is positive, a log of the writes of the last
// ReplicaLag per container: each record names the document and the
// version the write replaced (nil for a creation). Secondary k of a range
// trails by a fixed lag drawn in (0, ReplicaLag] when the server starts
// (per container, range and replica); it has applied every write
// committed at least that long ago. The state at LSN n is the store
// with, for every document written after n, the version its first write
// after n replaced: the log holds exactly that, and records older than
// ReplicaLag (applied by every replica) are dropped at the next write,
// so memory is bounded by the writes of the last ReplicaLag. Time-to-live
// deletions are not logged (every replica drops an expired document at
// once).

// writeRecord is one document write a secondary may not have applied.
type writeRecord struct {
	lsn  uint64
	at   time.Duration // commit time, since the server started
	key  string        // partition key (canonical text)
	id   string
	prev *item // the version replaced or deleted; nil for a creation
}

// replicaSet is the state of a server's replicas: the lag and the
// generator for the choice of a replica.
type replicaSet struct {
	lag time.Duration
	// regionLag is how far a read region trails the write region
	// (Options.RegionLag, regions.go).
	regionLag time.Duration
	seed      uint64
	start     time.Time
}

// secondaries is the number of secondary replicas of a partition.
const secondaries = 3

// lagOf returns the fixed lag of secondary k (0-based) of range id of
// container c: in (0, ReplicaLag], so that the slowest may be a whole
// ReplicaLag behind and the fastest almost in step.
func (rs *replicaSet) lagOf(c *container, rangeID string, k int) time.Duration {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(rs.seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write(c.rid[:])
	h.Write([]byte(rangeID))
	h.Write([]byte{byte(k)})
	frac := float64(h.Sum64()%1000+1) / 1000
	return time.Duration(frac * float64(rs.lag))
}

// since returns the time since the server started, on the server's clock.
func (s *Server) since() time.Duration { return s.now().Sub(s.replicas.start) }

// logWrites records the writes of one commit at lsn. The caller holds
// c.mu for writing; it does nothing without replica lag.
func (s *Server) logWrites(c *container, plans []plan, lsn uint64) {
	if s.replicas.lag <= 0 && s.replicas.regionLag <= 0 {
		return
	}
	now := s.since()
	c.pruneLog(now - s.replicas.lag - s.replicas.regionLag)
	for _, p := range plans {
		var id string
		switch {
		case p.next != nil:
			id = p.next.id
		case p.prev != nil:
			id = p.prev.id
		default:
			continue
		}
		c.wlog = append(c.wlog, writeRecord{lsn: lsn, at: now, key: p.pkKey, id: id, prev: p.prev})
	}
}

// pruneLog drops the records every replica has applied (committed at or
// before horizon). The caller holds c.mu for writing.
func (c *container) pruneLog(horizon time.Duration) {
	i := c.wlogHead
	for i < len(c.wlog) && c.wlog[i].at <= horizon {
		c.wlog[i] = writeRecord{}
		i++
	}
	c.wlogHead = i
	if i == len(c.wlog) {
		c.wlog, c.wlogHead = c.wlog[:0], 0
	} else if i > 1024 && i > len(c.wlog)/2 {
		n := copy(c.wlog, c.wlog[i:])
		clear(c.wlog[n:])
		c.wlog, c.wlogHead = c.wlog[:n], 0
	}
}

// pending returns the log records a replica at LSN n has not applied.
// The caller holds c.mu.
func (c *container) pending(n uint64) []writeRecord {
	recs := c.wlog[c.wlogHead:]
	i := sort.Search(len(recs), func(i int) bool { return recs[i].lsn > n })
	return recs[i:]
}

// appliedAt returns the LSN a replica trailing by lag has applied at now:
// every write committed at least lag ago. The caller holds c.mu.
func (c *container) appliedAt(now, lag time.Duration) uint64 {
	if lag <= 0 {
		return c.lsn
	}
	recs := c.wlog[c.wlogHead:]
	i := sort.Search(len(recs), func(i int) bool { return recs[i].at > now-lag })
	if i == len(recs) {
		return c.lsn
	}
	return recs[i].lsn - 1
}

// readView is the state a read is answered from: the container at LSN
// lsn, seen by one replica.
type readView struct {
	lsn uint64
	// pending are the writes after lsn (nil when the view is the
	// primary's, or a replica that is up to date).
	pending []writeRecord
}

// stale reports whether the view trails the primary.
func (v readView) stale() bool { return len(v.pending) > 0 }

// chooseReplica picks the replica that serves a read of the ranges
// (the ranges a request spans) and returns its view. Strong and
// BoundedStaleness reads (the request's level, see requestConsistency)
// see the primary; others one replica at random among the primary and
// the secondaries that have applied what the request's session token
// names for each range. When none has, the answer is 404 with substatus
// 1002 (ReadSessionNotAvailable). A read spanning several ranges is
// served at the lowest LSN its replica index has reached over them. The
// caller holds c.mu.
func (s *Server) chooseReplica(rq *request, c *container, ranges []pkRange) (readView, *response) {
	level, resp := s.requestConsistency(rq.r)
	if resp != nil {
		return readView{}, resp
	}
	primary := readView{lsn: c.lsn}
	if level.readsPrimary() {
		return primary, nil
	}
	need, resp := parseSessionToken(firstHeader(rq.r.Header, "X-Ms-Session-Token"))
	if resp != nil {
		return readView{}, resp
	}
	var want uint64
	for _, r := range ranges {
		want = max(want, need.of(r))
	}
	if c.wlogHead == len(c.wlog) {
		// Every replica is up to date.
		if want > c.lsn {
			return readView{}, sessionNotAvailable()
		}
		return primary, nil
	}
	now := s.since()
	// A read region's replicas trail the write region's by RegionLag.
	base := s.regions.lagOf(rq.r, s.replicas.regionLag)
	var cands [secondaries + 1]uint64
	n := 0
	if lsn := c.appliedAt(now, base); lsn >= want {
		cands[n] = lsn
		n++
	}
	for k := 0; k < secondaries; k++ {
		lsn := c.lsn
		for _, r := range ranges {
			lsn = min(lsn, c.appliedAt(now, base+s.replicas.lagOf(c, r.id, k)))
		}
		if lsn >= want {
			cands[n] = lsn
			n++
		}
	}
	if n == 0 {
		return readView{}, sessionNotAvailable()
	}
	lsn := cands[rand.IntN(n)]
	if lsn >= c.lsn {
		return primary, nil
	}
	return readView{lsn: lsn, pending: c.pending(lsn)}, nil
}

// sessionNotAvailable is the service's answer when no replica has caught
// up with the request's session token.
func sessionNotAvailable() *response {
	return errorResponse(http.StatusNotFound, 1002, "The read session is not available for the input session token.")
}

// versionAt returns the version of document (key, id) a view sees: the
// current one unless the document was written after the view's LSN. The
// caller holds c.mu.
func (c *container) versionAt(v readView, key, id string) *item {
	for _, r := range v.pending {
		if r.id == id && r.key == key {
			return r.prev
		}
	}
	return c.lookup(key, id)
}

// docsAt turns a snapshot of current documents (rid order) into what a
// view sees: documents written after its LSN are left out and the
// versions it sees of them added, when admit accepts them. Extra
// documents are harmless to a query, which evaluates its filter on every
// document it is given. The caller holds c.mu.
func (c *container) docsAt(v readView, docs []*item, admit func(*item) bool) []*item {
	if !v.stale() {
		return docs
	}
	seen := make(map[writeKey]bool, len(v.pending))
	var old []*item
	for _, r := range v.pending {
		k := writeKey{r.key, r.id}
		if seen[k] {
			continue
		}
		seen[k] = true
		if r.prev != nil && admit(r.prev) {
			old = append(old, r.prev)
		}
	}
	// Merge the old versions (few, sorted here) into the documents kept
	// (in rid order already).
	sort.Slice(old, func(i, j int) bool { return old[i].seq < old[j].seq })
	out := make([]*item, 0, len(docs)+len(old))
	j := 0
	for _, it := range docs {
		if it.lsn > v.lsn {
			continue
		}
		for j < len(old) && old[j].seq < it.seq {
			out = append(out, old[j])
			j++
		}
		out = append(out, it)
	}
	return append(out, old[j:]...)
}

// writeKey names a document within a container.
type writeKey struct{ key, id string }

// visibleOld returns, for a view, the set of versions it sees of the
// documents written after its LSN (the change feed includes them though
// they are no longer current). The caller holds c.mu.
func (v readView) visibleOld() map[*item]bool {
	seen := make(map[writeKey]bool, len(v.pending))
	out := make(map[*item]bool, len(v.pending))
	for _, r := range v.pending {
		k := writeKey{r.key, r.id}
		if seen[k] {
			continue
		}
		seen[k] = true
		if r.prev != nil {
			out[r.prev] = true
		}
	}
	return out
}

// loggedVersions returns the versions the log still references, which the
// change feed's compaction must keep. The caller holds c.mu.
func (c *container) loggedVersions() map[*item]bool {
	recs := c.wlog[c.wlogHead:]
	if len(recs) == 0 {
		return nil
	}
	out := make(map[*item]bool, len(recs))
	for _, r := range recs {
		if r.prev != nil {
			out[r.prev] = true
		}
	}
	return out
}

// rangeOfKey returns the range serving logical partition key. The caller
// holds c.mu.
func (c *container) rangeOfKey(key string) pkRange {
	ranges := c.currentRanges()
	if len(ranges) == 1 {
		return ranges[0]
	}
	epk := ""
	if p := c.parts[key]; p != nil {
		epk = p.epk
	} else {
		epk = epkOfKey(key, c.isMultiHash())
	}
	for _, r := range ranges {
		if r.contains(epk) {
			return r
		}
	}
	return ranges[len(ranges)-1]
}

// rangesOf returns the ranges a query or feed request spans: the one of
// its partition key, the one it names, or all (those overlapping its EPK
// bounds). The caller holds c.mu.
func (c *container) rangesOf(key *string, f *rangeFilter) []pkRange {
	if key != nil {
		return []pkRange{c.rangeOfKey(*key)}
	}
	all := c.currentRanges()
	if f == nil {
		return all
	}
	if f.r.id != "" {
		return []pkRange{f.r}
	}
	var out []pkRange
	for _, r := range all {
		if (f.end == "" || f.end == maxEPK || r.min < f.end) && (f.start == "" || r.max == maxEPK || r.max > f.start) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// setSession makes resp's session token name container c and the ranges
// it read (resp.lsn set).
func setSession(resp *response, c *container, ranges []pkRange) {
	resp.owner = c
	if len(ranges) == 1 {
		resp.rng = ranges[0].id
		return
	}
	resp.session = sessionToken(ranges, resp.lsn)
}

// isMultiHash reports whether the container has a hierarchical partition
// key.
func (c *container) isMultiHash() bool { return strings.EqualFold(c.pkKind, "MultiHash") }

// contentPaths returns the values of x-ms-content-path (the container's
// rid) and x-ms-alt-content-path (its name path), computed once (ids
// never change).
func (c *container) contentPaths() []string {
	if p := c.paths.Load(); p != nil {
		return p[:]
	}
	p := &[2]string{c.ridString(), "dbs/" + c.db.id + "/colls/" + c.id}
	c.paths.Store(p)
	return p[:]
}
