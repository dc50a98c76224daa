package emulator

import "strconv"

// The request charge model: every answer carries x-ms-request-charge, the
// request units (RU) the service would bill for it. The service does not
// publish its formula, so these are ESTIMATES built from Microsoft's public
// figures; each rule names its source. The figures to rely on are those of
// a real account (the same header, read the same way); the model exists so
// that cost regressions show up in tests and benchmarks without one.
//
// Sources:
//   - [reads] "Optimize request cost in Azure Cosmos DB",
//     https://learn.microsoft.com/azure/cosmos-db/optimize-cost-reads-writes
//     ("Point reads": 1 KB item 1 RU, 100 KB item 10 RU; "Queries": the charge
//     depends on the items loaded and returned and the index lookups, and
//     the pages of a query add up to the charge of the whole query;
//     "Writing data": the charge of a write depends on the item's size and
//     on the properties the indexing policy indexes; inserting a 1 KB item
//     without indexing costs about 5.5 RU, and replacing an item twice what
//     inserting it costs).
//   - [factors] "Request units in Azure Cosmos DB",
//     https://learn.microsoft.com/azure/cosmos-db/request-units ("Request
//     unit considerations": item size, indexed properties and property count
//     raise the cost of a write; a point read of a 1 KB item is 1 RU).
//   - [measure] "Measure point operation cost" (Microsoft Learn training,
//     https://learn.microsoft.com/training/modules/measure-index-azure-cosmos-db-sql-api/5-measure-point-operation-cost):
//     creating a small item of five properties with the default policy
//     (every property indexed) reports 7.05 RU.
//   - [batch] "Transactional batch operations in Azure Cosmos DB",
//     https://learn.microsoft.com/azure/cosmos-db/nosql/transactional-batch
//     (a batch is one request whose operations each report their own
//     charge; the request is billed their sum).

// Constants of the model, in request units (RU).
const (
	// readRUPerKB: 1 KB read 1 RU, 100 KB read 10 RU [reads]: 1 RU for the
	// first KB and 9/99 RU per further KB, linear between the two.
	readRUBase  = 1.0
	readRUPerKB = 9.0 / 99
	// insertRUBase: a 1 KB insert without indexing costs about 5.5 RU
	// [reads, "Writing data"].
	insertRUBase = 5.5
	// insertRUPerKB: the size slope of a write is taken five times the
	// read's, the ratio of the two 1 KB figures (5.5 : 1). An estimate:
	// [factors] says that size raises the cost, not by how much.
	insertRUPerKB = 5 * readRUPerKB
	// indexedValueRU: each indexed value adds this much to a write,
	// calibrated on [measure]: (7.05 - 5.5) / 5 = 0.31 RU ([factors] says
	// indexed properties raise the cost, not by how much).
	indexedValueRU = 0.31
	// queryRUBase is what a query page costs before it loads anything
	// (compilation and index lookups, [reads] "Queries"). An estimate, close
	// to the smallest query charges real accounts report.
	queryRUBase = 2.3
	// queryRULoadedKB is the charge per KB of documents a query page loads
	// (its candidates after the index narrowed them), and queryRUReturned
	// the charge per document it returns [reads, "Queries"]. Estimates.
	queryRULoadedKB = 0.1
	queryRUReturned = 0.1
	// errorRU is the charge of a refused request (404, 409, 412 and the
	// like): the service reports about one RU for them. An estimate.
	errorRU = 1.0
)

// kb returns size bytes in KB, at least 1 (a 10-byte document costs what a
// 1 KB one does).
func kb(size int) float64 { return max(float64(size)/1024, 1) }

// pointReadCharge is the charge of reading a size-byte document [reads].
func pointReadCharge(size int) float64 { return readRUBase + (kb(size)-1)*readRUPerKB }

// insertCharge is the charge of creating a size-byte document with
// indexed indexed values [reads, factors].
func insertCharge(size, indexed int) float64 {
	return insertRUBase + (kb(size)-1)*insertRUPerKB + float64(indexed)*indexedValueRU
}

// queryPageCharge is the charge of one query page that loaded loadedBytes
// of documents and returned returned documents [reads, "Queries"]; the
// pages of a query sum to the whole query's charge, as on the service.
func queryPageCharge(loadedBytes, returned int) float64 {
	return queryRUBase + float64(loadedBytes)/1024*queryRULoadedKB + float64(returned)*queryRUReturned
}

// planCharge is the charge of one point operation or batch operation
// planned on a container with index policy idx (read under the container
// lock): a read by size; a create (and an upsert that creates) as an
// insert; a replace, an upsert that replaces and a patch as twice the
// insert of the new version [reads, "Writing data"]; a delete as the insert
// of the deleted version (an estimate: [factors] lists deletes as variable);
// a refused operation errorRU.
func planCharge(idx *indexPolicy, p plan) float64 {
	switch {
	case p.fail != nil:
		return errorRU
	case p.read != nil:
		return pointReadCharge(p.read.size())
	case p.next != nil && p.prev == nil:
		return insertCharge(p.next.size(), indexedValues(idx, p.next.body))
	case p.next != nil:
		return 2 * insertCharge(p.next.size(), indexedValues(idx, p.next.body))
	case p.prev != nil:
		return insertCharge(p.prev.size(), indexedValues(idx, p.prev.body))
	}
	return errorRU // a 304 or another answer without a document
}

// chargePlans sets the charge of every plan; the caller holds the
// container's lock (the index policy may be replaced otherwise).
func (c *container) chargePlans(plans []plan) {
	for i := range plans {
		plans[i].charge = planCharge(c.index, plans[i])
	}
}

// indexedValues counts the scalar values of the document body that the
// index policy indexes (id included), scanning the text without building
// values; subtrees no included path reaches are skipped. body is a stored,
// validated document; should it not parse, the count so far is returned.
func indexedValues(idx *indexPolicy, body []byte) int {
	c := indexCounter{p: jsonParser{b: body, borrow: true}, idx: idx, segs: make([]string, 0, 8)}
	_ = c.value()
	return c.n
}

// indexCounter walks one JSON text for indexedValues.
type indexCounter struct {
	p    jsonParser
	idx  *indexPolicy
	segs []string
	n    int
}

// value counts the indexed scalars of the value at the parser's position,
// whose path is c.segs.
func (c *indexCounter) value() error {
	c.p.ws()
	if c.p.i >= len(c.p.b) {
		return errBadJSON
	}
	switch c.p.b[c.p.i] {
	case '{':
		c.p.i++
		for {
			c.p.ws()
			if c.p.i < len(c.p.b) && c.p.b[c.p.i] == '}' {
				c.p.i++
				return nil
			}
			key, err := c.p.str()
			if err != nil {
				return err
			}
			c.p.ws()
			if c.p.i >= len(c.p.b) || c.p.b[c.p.i] != ':' {
				return errBadJSON
			}
			c.p.i++
			if err := c.child(key); err != nil {
				return err
			}
			if done, err := c.next('}'); done || err != nil {
				return err
			}
		}
	case '[':
		c.p.i++
		for i := 0; ; i++ {
			c.p.ws()
			if c.p.i < len(c.p.b) && c.p.b[c.p.i] == ']' {
				c.p.i++
				return nil
			}
			if err := c.child(strconv.Itoa(i)); err != nil {
				return err
			}
			if done, err := c.next(']'); done || err != nil {
				return err
			}
		}
	}
	if err := c.p.skip(); err != nil {
		return err
	}
	if c.idx.rangeIndexed(c.segs) {
		c.n++
	}
	return nil
}

// child counts the member or element seg, or skips it when no included
// path reaches it.
func (c *indexCounter) child(seg string) error {
	c.segs = append(c.segs, seg)
	defer func() { c.segs = c.segs[:len(c.segs)-1] }()
	if c.idx.reaches(c.segs) {
		return c.value()
	}
	c.p.ws()
	return c.p.skip()
}

// next consumes the "," between members or elements (false) or the
// closing delimiter (true).
func (c *indexCounter) next(closing byte) (bool, error) {
	c.p.ws()
	switch {
	case c.p.i < len(c.p.b) && c.p.b[c.p.i] == ',':
		c.p.i++
		return false, nil
	case c.p.i < len(c.p.b) && c.p.b[c.p.i] == closing:
		c.p.i++
		return true, nil
	}
	return false, errBadJSON
}

// reaches reports whether an included path of the policy covers segs or
// lies beneath it, so that walking the subtree at segs can find an
// indexed value (a nil policy indexes everything).
func (p *indexPolicy) reaches(segs []string) bool {
	if indexed, decided := p.fixedIndexing(segs); decided {
		return indexed
	}
	for _, ip := range p.included {
		n := min(len(ip.segs), len(segs))
		if !ip.wildcard && len(ip.segs) < len(segs) {
			continue
		}
		prefix := true
		for i := 0; i < n; i++ {
			if ip.segs[i] != segs[i] && !(ip.segs[i] == "[]" && isArrayIndex(segs[i])) {
				prefix = false
				break
			}
		}
		if prefix {
			return true
		}
	}
	return false
}

// loadedBytes is the size of the documents a query page loads.
func loadedBytes(docs []*item) int {
	n := 0
	for _, d := range docs {
		n += d.size()
	}
	return n
}
