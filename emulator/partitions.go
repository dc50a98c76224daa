package emulator

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
)

// Physical partitions. The service spreads a container's logical partitions
// over physical partitions, each serving one range of effective partition
// keys (EPK): the hash of the partition key value, an upper-case hex string
// compared as text, the whole space being ["", "FF"). Clients see them as
// the partition key ranges feed (pkranges) and address one with
// x-ms-documentdb-partitionkeyrangeid on queries and the change feed
// (x-ms-start-epk and x-ms-end-epk narrow it to a sub-range, a "feed
// range"). When a range splits, requests naming it get 410 Gone with
// substatus 1002 (PartitionKeyRangeGone) and clients re-read the feed,
// where the two children list it as their parent.
//
// The hash is the service's version 2 hashing (the one of containers with
// large partition keys, which New creates, and of hierarchical keys): each
// component is written as a type marker (0x00 undefined, 0x01 null, 0x02
// false, 0x03 true, 0x05 number followed by its IEEE 754 bits little-endian,
// 0x08 string followed by its UTF-8 bytes and 0xFF), the bytes hashed with
// MurmurHash3 x64 128 (seed 0), the 16 hash bytes written in reverse order
// and the two top bits of the first cleared. A hierarchical key (MultiHash)
// concatenates the hash of each component, so a key prefix owns a
// contiguous EPK range. This is the hashing of the official SDKs
// (Azure/azure-sdk-for-go sdk/data/azcosmos internal/epk, checked against
// its baseline test data; Azure Cosmos DB documentation "Partitioning and
// horizontal scaling"). Version 1 hashing (containers with small keys) is
// not emulated: such containers are routed with version 2 hashes too, which
// only matters to a client that computes EPKs itself.

// maxEPK is the exclusive upper bound of the EPK space.
const maxEPK = "FF"

// pkRange is one physical partition of a container.
type pkRange struct {
	id       string
	min, max string // EPK bounds, [min, max)
	parents  []string
}

// contains reports whether epk lies in the range.
func (r pkRange) contains(epk string) bool {
	return epk >= r.min && (r.max == maxEPK || epk < r.max)
}

// initialRanges splits the EPK space into n ranges of equal width (the
// hashes are uniform over [0, 0x40 << 120) once their top bits are
// cleared), with ids "0" to n-1.
func initialRanges(n int) []pkRange {
	if n < 1 {
		n = 1
	}
	space := new(big.Int).Lsh(big.NewInt(0x40), 120)
	out := make([]pkRange, n)
	prev := ""
	for i := 0; i < n; i++ {
		next := maxEPK
		if i < n-1 {
			b := new(big.Int).Mul(space, big.NewInt(int64(i+1)))
			next = epkHex(b.Div(b, big.NewInt(int64(n))))
		}
		out[i] = pkRange{id: strconv.Itoa(i), min: prev, max: next}
		prev = next
	}
	return out
}

// epkHex renders a 128-bit boundary as 32 upper-case hex digits.
func epkHex(v *big.Int) string { return fmt.Sprintf("%032X", v) }

// epkValue parses a boundary ("" is 0, "FF" the end of the space).
func epkValue(s string) *big.Int {
	switch s {
	case "":
		return new(big.Int)
	case maxEPK:
		return new(big.Int).Lsh(big.NewInt(0x40), 120)
	}
	if len(s) > 32 {
		s = s[:32]
	}
	s += strings.Repeat("0", 32-len(s))
	v, _ := new(big.Int).SetString(s, 16)
	return v
}

// epkOfKey returns the EPK of a logical partition from its canonical key
// text (a JSON array, {} for an undefined component).
func epkOfKey(key string, multiHash bool) string {
	v, err := parseJSON([]byte(key))
	if err != nil || v.k != kArray {
		return ""
	}
	comps := v.elems()
	if !multiHash {
		var buf []byte
		for _, c := range comps {
			buf = appendHashInput(buf, c)
		}
		return hashToEPK(buf)
	}
	var sb strings.Builder
	for _, c := range comps {
		sb.WriteString(hashToEPK(appendHashInput(nil, c)))
	}
	return sb.String()
}

// appendHashInput writes one component in the version 2 hash encoding.
func appendHashInput(buf []byte, c value) []byte {
	switch {
	case !c.defined() || c.k == kObject:
		return append(buf, 0x00)
	case c.k == kNull:
		return append(buf, 0x01)
	case c.k == kBool && !c.b:
		return append(buf, 0x02)
	case c.k == kBool:
		return append(buf, 0x03)
	case c.k == kNumber:
		buf = append(buf, 0x05)
		return binary.LittleEndian.AppendUint64(buf, math.Float64bits(c.n))
	default:
		buf = append(buf, 0x08)
		buf = append(buf, c.s...)
		return append(buf, 0xFF)
	}
}

// hashToEPK hashes data and renders the EPK of one component.
func hashToEPK(data []byte) string {
	lo, hi := murmur3x64128(data)
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], hi)
	binary.BigEndian.PutUint64(b[8:16], lo)
	b[0] &= 0x3F
	return fmt.Sprintf("%X", b[:])
}

// murmur3x64128 is MurmurHash3's x64 128-bit variant with seed 0 (Austin
// Appleby's public-domain reference), returning (h1, h2).
func murmur3x64128(data []byte) (uint64, uint64) {
	const c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
	var h1, h2 uint64
	n := len(data)
	i := 0
	for ; i+16 <= n; i += 16 {
		k1 := binary.LittleEndian.Uint64(data[i:])
		k2 := binary.LittleEndian.Uint64(data[i+8:])
		h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
		h1 = (bits.RotateLeft64(h1, 27)+h2)*5 + 0x52dce729
		h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
		h2 = (bits.RotateLeft64(h2, 31)+h1)*5 + 0x38495ab5
	}
	var k1, k2 uint64
	tail := data[i:]
	for j := len(tail) - 1; j >= 8; j-- {
		k2 ^= uint64(tail[j]) << (8 * (j - 8))
	}
	for j := min(len(tail), 8) - 1; j >= 0; j-- {
		k1 ^= uint64(tail[j]) << (8 * j)
	}
	// The reference mixes the tail words only when it has bytes for them;
	// the SDKs mix them unconditionally, which for zero words is the same
	// except for h2/h1 ^= 0: identical results.
	h2 ^= bits.RotateLeft64(k2*c2, 33) * c1
	h1 ^= bits.RotateLeft64(k1*c1, 31) * c2
	h1 ^= uint64(n)
	h2 ^= uint64(n)
	h1 += h2
	h2 += h1
	h1, h2 = fmix64(h1), fmix64(h2)
	h1 += h2
	h2 += h1
	return h1, h2
}

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// rangeFilter is the EPK restriction of one request: the partition key
// range it names and the feed range within it; nil means the whole
// container.
type rangeFilter struct {
	r          pkRange
	start, end string // x-ms-start-epk / x-ms-end-epk; "" when absent
	// prefix, when set, is the EPK of a hierarchical partition key prefix:
	// only logical partitions whose EPK starts with it are served.
	prefix string
}

// admits reports whether a logical partition with this EPK is served.
func (f *rangeFilter) admits(epk string) bool {
	if f == nil {
		return true
	}
	if f.prefix != "" && !strings.HasPrefix(epk, f.prefix) {
		return false
	}
	if !f.r.contains(epk) {
		return false
	}
	if f.start != "" && epk < f.start {
		return false
	}
	if f.end != "" && f.end != maxEPK && epk >= f.end {
		return false
	}
	return true
}

// requestRange reads x-ms-documentdb-partitionkeyrangeid and the EPK
// headers of a query or change feed request. A range that split answers
// 410 Gone with substatus 1002 (PartitionKeyRangeGone), as the service
// does, so that the client refreshes its routing map; a range that never
// existed is a 400. The EPK headers without a range id restrict the
// container-wide request to [start, end). The caller holds c.mu.
func (c *container) requestRange(r *http.Request) (*rangeFilter, *response) {
	id := r.Header.Get("x-ms-documentdb-partitionkeyrangeid")
	start, end := r.Header.Get("x-ms-start-epk"), r.Header.Get("x-ms-end-epk")
	if id == "" && start == "" && end == "" {
		return nil, nil
	}
	if i := strings.LastIndexByte(id, ','); i >= 0 {
		// "<collection rid>,<range id>", as some SDKs send it.
		id = id[i+1:]
	}
	ranges := c.currentRanges()
	f := &rangeFilter{r: pkRange{min: "", max: maxEPK}, start: start, end: end}
	if id != "" {
		found := false
		for _, rg := range ranges {
			if rg.id == id {
				f.r, found = rg, true
				break
			}
		}
		if !found {
			if c.goneRanges[id] {
				return nil, errorResponse(http.StatusGone, 1002, "The partition key range "+id+" is gone (it split); refresh the partition key ranges.")
			}
			return nil, badRequest("The partition key range id '" + id + "' does not exist in this container.")
		}
	}
	return f, nil
}

// keyPrefix reports whether key (canonical partition key text) is a
// proper prefix of the container's hierarchical partition key (MultiHash,
// fewer components than paths) and returns its EPK: the service serves a
// query or change feed for such a prefix from every logical partition
// whose key starts with it (Azure Cosmos DB documentation "Hierarchical
// partition keys": queries on a prefix are routed to the subset of
// physical partitions holding it).
func (c *container) keyPrefix(key string) (string, bool) {
	if !strings.EqualFold(c.pkKind, "MultiHash") {
		return "", false
	}
	comps, err := parsePKHeader(key)
	if err != nil || len(comps) == 0 || len(comps) >= len(c.pkPaths) {
		return "", false
	}
	return epkOfKey(key, true), true
}

// withPrefix returns f restricted to the EPK prefix (f may be nil).
func (f *rangeFilter) withPrefix(prefix string) *rangeFilter {
	if prefix == "" {
		return f
	}
	if f == nil {
		f = &rangeFilter{r: pkRange{min: "", max: maxEPK}}
	}
	f.prefix = prefix
	return f
}

// currentRanges returns the container's ranges (one covering everything
// when it never had more).
func (c *container) currentRanges() []pkRange {
	if len(c.ranges) == 0 {
		return []pkRange{{id: "0", min: "", max: maxEPK}}
	}
	return c.ranges
}

// PartitionKeyRange describes one physical partition of a container, as
// the partition key ranges feed lists it.
type PartitionKeyRange struct {
	// ID is the range id clients send in x-ms-documentdb-partitionkeyrangeid.
	ID string
	// MinInclusive and MaxExclusive bound the range's effective partition
	// keys (upper-case hex; "" and "FF" are the ends of the space).
	MinInclusive, MaxExclusive string
	// Parents are the ids of the ranges this one was split from.
	Parents []string
}

// PartitionKeyRanges returns the current physical partitions of a
// container, in EPK order; an error when the database or container does not
// exist.
func (s *Server) PartitionKeyRanges(database, containerID string) ([]PartitionKeyRange, error) {
	c, err := s.lookupContainer(database, containerID)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []PartitionKeyRange
	for _, r := range c.currentRanges() {
		out = append(out, PartitionKeyRange{ID: r.id, MinInclusive: r.min, MaxExclusive: r.max, Parents: append([]string(nil), r.parents...)})
	}
	return out, nil
}

// SplitPartitionKeyRange splits a physical partition of a container in two
// at the middle of its EPK range, as the service does when a partition
// grows or throughput rises: the children get new ids (returned, lower
// half first) and list the range as their parent; from then on, queries
// and change feed reads naming the old range get 410 Gone with substatus
// 1002. Continuations taken on the old range stay valid on its children.
// It fails when the database, container or range does not exist.
func (s *Server) SplitPartitionKeyRange(database, containerID, rangeID string) ([2]string, error) {
	c, err := s.lookupContainer(database, containerID)
	if err != nil {
		return [2]string{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ranges := c.currentRanges()
	for i, r := range ranges {
		if r.id != rangeID {
			continue
		}
		lo, hi := epkValue(r.min), epkValue(r.max)
		mid := new(big.Int).Add(lo, hi)
		mid.Rsh(mid, 1)
		if mid.Cmp(lo) <= 0 {
			return [2]string{}, fmt.Errorf("emulator: partition key range %s is too narrow to split", rangeID)
		}
		midHex := epkHex(mid)
		next := 0
		for _, x := range ranges {
			if n, err := strconv.Atoi(x.id); err == nil && n >= next {
				next = n + 1
			}
		}
		for g := range c.goneRanges {
			if n, err := strconv.Atoi(g); err == nil && n >= next {
				next = n + 1
			}
		}
		a := pkRange{id: strconv.Itoa(next), min: r.min, max: midHex, parents: append(append([]string(nil), r.parents...), r.id)}
		b := pkRange{id: strconv.Itoa(next + 1), min: midHex, max: r.max, parents: a.parents}
		nr := append(append(append([]pkRange(nil), ranges[:i]...), a, b), ranges[i+1:]...)
		c.ranges = nr
		if c.goneRanges == nil {
			c.goneRanges = map[string]bool{}
		}
		c.goneRanges[r.id] = true
		c.rangesVersion++
		s.logRanges(c)
		// Durable before it returns (Options.DataDir); rare enough to
		// wait under the container's lock.
		if err := s.awaitDurable(); err != nil {
			return [2]string{}, err
		}
		return [2]string{a.id, b.id}, nil
	}
	return [2]string{}, fmt.Errorf("emulator: container %s/%s has no partition key range %q", database, containerID, rangeID)
}

// lookupContainer finds a container by database and container id.
func (s *Server) lookupContainer(database, containerID string) (*container, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.dbs[database]
	if d == nil {
		return nil, fmt.Errorf("emulator: database %q does not exist", database)
	}
	c := d.colls[containerID]
	if c == nil {
		return nil, fmt.Errorf("emulator: container %q does not exist in database %q", containerID, database)
	}
	return c, nil
}
