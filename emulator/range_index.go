package emulator

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// The range index of a logical partition: for a top-level property, the
// partition's live documents holding a number there, ordered by that
// number. Cosmos DB serves range filters (c.eventId > @a) from its range
// index instead of reading every document of the partition; the emulator
// keeps such an index for the properties that single-partition queries
// filter on by range, so that a query such as "... OR (c.type = 'history'
// AND c.eventId > @a)" over an instance with 20,000 history documents
// reads the few documents past @a instead of all of them. As with the
// equality index (eq_index.go), results are unchanged: the index only
// narrows the documents the WHERE clause is evaluated on, and a document
// whose property is not a number never satisfies a range against a
// number.
//
// An index is built for a partition the first time a query of that
// partition can use it (at most maxRangeIndexes properties per partition),
// then kept current by every write to the partition (container.put and
// container.remove, through indexWrite), under the container's write
// lock; it goes away with the partition.

// maxRangeIndexes caps the range-indexed properties per logical partition.
const maxRangeIndexes = 4

// rangeEntry is a document holding number n; it is nil once the document
// is gone (a tombstone, kept so that the entries stay ordered and
// searchable until the next compaction).
type rangeEntry struct {
	n   float64
	seq uint64
	it  *item
}

// rangeIndex indexes one top-level property of one logical partition.
type rangeIndex struct {
	entries []rangeEntry // by (n, seq)
	dead    int
}

// numberAt returns the number it holds at top-level property key; ok is
// false when the property is missing or not a number.
func (it *item) numberAt(key string) (float64, bool) {
	t, ok := it.scalarText(key)
	if !ok || len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, false
	}
	p := jsonParser{b: t, borrow: true}
	v, err := p.number()
	if err != nil || v.k != kNumber {
		return 0, false
	}
	return v.n, true
}

// buildRangeIndex returns the index of property key over p's live
// documents.
func buildRangeIndex(p *partition, key string) *rangeIndex {
	rx := &rangeIndex{}
	for _, it := range p.list {
		if it == nil {
			continue
		}
		if n, ok := it.numberAt(key); ok {
			rx.entries = append(rx.entries, rangeEntry{n: n, seq: it.seq, it: it})
		}
	}
	slices.SortFunc(rx.entries, func(a, b rangeEntry) int { return rangeCmp(a.n, a.seq, b.n, b.seq) })
	return rx
}

// rangeCmp orders (n, seq) pairs.
func rangeCmp(an float64, aseq uint64, bn float64, bseq uint64) int {
	switch {
	case an < bn:
		return -1
	case an > bn:
		return 1
	case aseq < bseq:
		return -1
	case aseq > bseq:
		return 1
	}
	return 0
}

// position returns where (n, seq) is or belongs in the entries.
func (rx *rangeIndex) position(n float64, seq uint64) int {
	return sort.Search(len(rx.entries), func(i int) bool {
		e := &rx.entries[i]
		return rangeCmp(e.n, e.seq, n, seq) >= 0
	})
}

// insert adds it, holding n.
func (rx *rangeIndex) insert(n float64, it *item) {
	if k := len(rx.entries); k == 0 || rangeCmp(rx.entries[k-1].n, rx.entries[k-1].seq, n, it.seq) < 0 {
		rx.entries = append(rx.entries, rangeEntry{n: n, seq: it.seq, it: it}) // ascending numbers come last
		return
	}
	i := rx.position(n, it.seq)
	if i < len(rx.entries) && rx.entries[i].n == n && rx.entries[i].seq == it.seq {
		if rx.entries[i].it == nil {
			rx.dead--
		}
		rx.entries[i].it = it // the tombstone of an earlier version
		return
	}
	rx.entries = slices.Insert(rx.entries, i, rangeEntry{n: n, seq: it.seq, it: it})
}

// delete removes it, which held n.
func (rx *rangeIndex) delete(n float64, it *item) {
	i := rx.position(n, it.seq)
	if i == len(rx.entries) || rx.entries[i].it != it {
		return
	}
	rx.entries[i].it = nil
	rx.dead++
	if rx.dead > 32 && rx.dead > len(rx.entries)/2 {
		rx.entries = slices.DeleteFunc(rx.entries, func(e rangeEntry) bool { return e.it == nil })
		rx.dead = 0
	}
}

// write updates the index of key for prev replaced by next (either nil).
func (rx *rangeIndex) write(key string, prev, next *item) {
	var on, nn float64
	oldOK, newOK := false, false
	if prev != nil {
		on, oldOK = prev.numberAt(key)
	}
	if next != nil {
		nn, newOK = next.numberAt(key)
	}
	if oldOK && newOK && on == nn {
		if i := rx.position(on, prev.seq); i < len(rx.entries) && rx.entries[i].it == prev {
			rx.entries[i].it = next
		}
		return
	}
	if oldOK {
		rx.delete(on, prev)
	}
	if newOK {
		rx.insert(nn, next)
	}
}

// rangeBound is a range of numbers: lo to hi, each bound included or not
// (an open side is an infinity).
type rangeBound struct {
	lo, hi         float64
	loIncl, hiIncl bool
}

// span returns the entries' indexes [i, j) whose numbers are in b.
func (rx *rangeIndex) span(b rangeBound) (int, int) {
	i := sort.Search(len(rx.entries), func(k int) bool {
		n := rx.entries[k].n
		return n > b.lo || (b.loIncl && n == b.lo)
	})
	j := sort.Search(len(rx.entries), func(k int) bool {
		n := rx.entries[k].n
		return n > b.hi || (!b.hiIncl && n == b.hi)
	})
	return i, max(i, j)
}

// count returns (an upper bound of) the documents with a number in b.
func (rx *rangeIndex) count(b rangeBound) int {
	i, j := rx.span(b)
	return j - i
}

// list returns the live documents with a number in b, in rid order.
func (rx *rangeIndex) list(b rangeBound) []*item {
	i, j := rx.span(b)
	out := make([]*item, 0, j-i)
	for _, e := range rx.entries[i:j] {
		if e.it != nil {
			out = append(out, e.it)
		}
	}
	slices.SortFunc(out, func(a, b *item) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// rangeOf returns the numbers a comparison "property op v" accepts, with
// the property on the left (flipped when it was on the right); ok is false
// when v is not a number or op is no ordering.
func rangeOf(op string, v value, propOnLeft bool) (rangeBound, bool) {
	if v.k != kNumber || math.IsNaN(v.n) {
		return rangeBound{}, false
	}
	if !propOnLeft {
		switch op {
		case "<":
			op = ">"
		case ">":
			op = "<"
		case "<=":
			op = ">="
		case ">=":
			op = "<="
		}
	}
	b := rangeBound{lo: math.Inf(-1), hi: math.Inf(1), loIncl: true, hiIncl: true}
	switch op {
	case ">":
		b.lo, b.loIncl = v.n, false
	case ">=":
		b.lo = v.n
	case "<":
		b.hi, b.hiIncl = v.n, false
	case "<=":
		b.hi = v.n
	default:
		return rangeBound{}, false
	}
	return b, true
}

// ensureRangeIndexes builds p's missing range indexes of keys (within
// maxRangeIndexes) and reports whether every key is indexed. The caller holds c.mu for writing.
func (p *partition) ensureRangeIndexes(keys []string) bool {
	for _, k := range keys {
		if p.ranges[k] != nil {
			continue
		}
		if len(p.ranges) >= maxRangeIndexes {
			return false
		}
		if p.ranges == nil {
			p.ranges = make(map[string]*rangeIndex)
		}
		p.ranges[k] = buildRangeIndex(p, k)
	}
	return true
}

// hasRangeIndexes reports whether p indexes every key. The caller holds
// c.mu.
func (p *partition) hasRangeIndexes(keys []string) bool {
	for _, k := range keys {
		if p.ranges[k] == nil {
			return false
		}
	}
	return true
}
