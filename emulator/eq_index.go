package emulator

import "sort"

// The equality index: for a top-level document property, the live documents
// of the container grouped by the property's scalar value, each group in rid
// order. Cosmos DB serves equality filters from its inverted index instead
// of reading every document; the emulator keeps such an index for the
// properties that cross-partition queries filter on, so that a query such as
// "SELECT ... FROM c WHERE c.type = 'orch_queue' AND ..." reads the few
// documents of that type instead of scanning the whole container. Results
// are unchanged: the index only narrows the documents the WHERE clause is
// evaluated on (see query_index.go).
//
// An index is built on a property the first time a query can use it, then
// kept current by every write (container.put and container.remove), under
// the container's write lock.

// maxEqIndexes caps the indexed properties per container, so that queries
// filtering on ever new properties cannot make every write slower.
const maxEqIndexes = 16

// eqIndex indexes one top-level property.
type eqIndex struct {
	// byValue maps the compact JSON text of a scalar value (stored
	// documents are canonical, so equal scalars have equal texts) to the
	// live documents holding it, in rid (seq) order.
	byValue map[string][]*item
}

// scalarText returns the JSON text of it's top-level property key when it
// is a scalar (string, number, boolean or null); ok is false when the
// property is missing or an object or array, which no scalar equals.
func (it *item) scalarText(key string) (text []byte, ok bool) {
	off, found := it.offset(key)
	if !found || off >= len(it.body) {
		return nil, false
	}
	switch it.body[off] {
	case '{', '[':
		return nil, false
	}
	p := jsonParser{b: it.body, i: off, borrow: true}
	if p.skip() != nil {
		return nil, false
	}
	return it.body[off:p.i], true
}

// buildEqIndex returns the index of property key over c's live documents.
// The caller holds c.mu for writing.
func (c *container) buildEqIndex(key string) *eqIndex {
	ix := &eqIndex{byValue: make(map[string][]*item)}
	for _, it := range c.all {
		if it == nil {
			continue
		}
		if t, ok := it.scalarText(key); ok {
			ix.byValue[string(t)] = append(ix.byValue[string(t)], it) // c.all is in rid order
		}
	}
	return ix
}

// ensureEqIndexes builds the missing indexes of keys, within
// maxEqIndexes, and reports whether every key is indexed. The caller holds
// c.mu for writing.
func (c *container) ensureEqIndexes(keys []string) bool {
	for _, k := range keys {
		if c.eqIdx[k] != nil {
			continue
		}
		if len(c.eqIdx) >= maxEqIndexes {
			return false
		}
		if c.eqIdx == nil {
			c.eqIdx = make(map[string]*eqIndex)
		}
		c.eqIdx[k] = c.buildEqIndex(k)
	}
	return true
}

// hasEqIndexes reports whether every key is indexed. The caller holds c.mu.
func (c *container) hasEqIndexes(keys []string) bool {
	for _, k := range keys {
		if c.eqIdx[k] == nil {
			return false
		}
	}
	return true
}

// indexWrite updates every index for a write: prev replaced by next (a
// new document when prev is nil, a deletion when next is nil). next.seq
// is set. The caller holds c.mu for writing.
func (c *container) indexWrite(prev, next *item) {
	part := next
	if part == nil {
		part = prev
	}
	for key, rx := range part.part.ranges {
		rx.write(key, prev, next)
	}
	for key, ix := range c.eqIdx {
		var oldText, newText []byte
		oldOK, newOK := false, false
		if prev != nil {
			oldText, oldOK = prev.scalarText(key)
		}
		if next != nil {
			newText, newOK = next.scalarText(key)
		}
		if oldOK && newOK && string(oldText) == string(newText) {
			ix.replace(oldText, prev, next)
			continue
		}
		if oldOK {
			ix.delete(oldText, prev)
		}
		if newOK {
			ix.insert(newText, next)
		}
	}
}

// position returns where a document numbered seq is or belongs in list.
func position(list []*item, seq uint64) int {
	return sort.Search(len(list), func(i int) bool { return list[i].seq >= seq })
}

// insert adds it to the documents holding value text.
func (ix *eqIndex) insert(text []byte, it *item) {
	list := ix.byValue[string(text)]
	if n := len(list); n == 0 || list[n-1].seq < it.seq {
		ix.byValue[string(text)] = append(list, it) // new documents come last
		return
	}
	i := position(list, it.seq)
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = it
	ix.byValue[string(text)] = list
}

// delete removes it from the documents holding value text.
func (ix *eqIndex) delete(text []byte, it *item) {
	list := ix.byValue[string(text)]
	i := position(list, it.seq)
	if i == len(list) || list[i] != it {
		return
	}
	if len(list) == 1 {
		delete(ix.byValue, string(text))
		return
	}
	copy(list[i:], list[i+1:])
	list[len(list)-1] = nil
	ix.byValue[string(text)] = list[:len(list)-1]
}

// replace swaps prev for next (same seq, same value text) in place.
func (ix *eqIndex) replace(text []byte, prev, next *item) {
	list := ix.byValue[string(text)]
	if i := position(list, prev.seq); i < len(list) && list[i] == prev {
		list[i] = next
	}
}

// count returns how many documents hold one of the value texts.
func (ix *eqIndex) count(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(ix.byValue[t])
	}
	return n
}
