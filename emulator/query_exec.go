package emulator

import (
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
)

// maxResponseBytes is the service's cap on one page of results (4 MB).
const maxResponseBytes = 4 << 20

// execInput is what a query runs over: stored documents or, for database
// and container queries, plain values. Both are in rid order.
type execInput struct {
	docs []*item
	vals []value
}

func (in execInput) len() int {
	if in.docs != nil {
		return len(in.docs)
	}
	return len(in.vals)
}

func (in execInput) value(i int) value {
	if in.docs != nil {
		return docValue(in.docs[i])
	}
	return in.vals[i]
}

func (in execInput) seq(i int) uint64 {
	if in.docs != nil {
		return in.docs[i].seq
	}
	return uint64(i + 1)
}

// pageRequest carries the paging inputs of one query request.
type pageRequest struct {
	params   map[string]value
	maxItems int    // documents per page; <= 0 means no count limit
	token    string // continuation from the previous page, "" for the first
	maxBytes int
	// eager returns a continuation as soon as a page is full, without
	// looking for one more result (the gateway does this for cross-partition
	// queries, so the last page may be empty).
	eager bool
}

// page is one page of query results.
type page struct {
	buf   []byte // the documents, comma-separated JSON
	count int
	next  string // continuation token, "" when done
}

// resultRow is one row of the FROM/JOIN product that passed WHERE.
type resultRow struct {
	row  []value // nil when the row is just the stored document doc
	doc  *item   // the stored document behind row[0], if any
	seq  uint64
	sub  int
	keys []value
}

// contToken is the decoded continuation token.
type contToken struct {
	Hash uint64   `json:"h"`
	Kind string   `json:"k"`
	Seq  uint64   `json:"s,omitempty"`
	Sub  int      `json:"u,omitempty"`
	N    int      `json:"n,omitempty"`
	Keys []string `json:"o,omitempty"`
	I    int      `json:"i,omitempty"`
}

// queryHash ties a continuation token to its query. An ORDER BY token
// (and an ordered DISTINCT one) resumes after its sort keys whatever the
// filter, and the SDKs rely on
// that: resuming a cross-partition ORDER BY, they rewrite the WHERE clause
// of the plan's query (the filter placeholder becomes "c.n > 1" and the
// like, @azure/cosmos's OrderByQueryRangeStrategy) and send the range's
// continuation with it. So for ORDER BY the WHERE text is left out.
func queryHash(q *query) uint64 {
	h := fnv.New64a()
	text := q.text
	if (q.mode() == modeOrdered || q.orderedDistinct()) && q.src.where != "" {
		text = strings.Replace(text, q.src.where, "", 1)
	}
	h.Write([]byte(text))
	return h.Sum64()
}

func encodeToken(t contToken) string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string, q *query) (contToken, error) {
	var t contToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &t) != nil || t.Hash != queryHash(q) {
		return t, errAt(0, "Invalid Continuation Token")
	}
	return t, nil
}

// queryMode is how a query pages.
type queryMode int

const (
	modeStream   queryMode = iota // rid order, resumable by position
	modeOrdered                   // ORDER BY, resumable by the last sort keys
	modeBuffered                  // aggregates, GROUP BY, DISTINCT: computed whole
)

func (q *query) mode() queryMode {
	switch {
	case q.hasAgg || len(q.groupBy) > 0 || q.distinct:
		return modeBuffered
	case len(q.orderBy) > 0:
		return modeOrdered
	}
	return modeStream
}

// countLimits resolves TOP and OFFSET/LIMIT: results [skip, skip+take).
func (q *query) countLimits(ev *evaluator) (skip, take int, err error) {
	take = math.MaxInt
	num := func(e expr) (int, error) {
		v := ev.eval(e, nil)
		if ev.err != nil {
			return 0, ev.err
		}
		if v.k != kNumber || v.n < 0 || v.n != math.Trunc(v.n) {
			return 0, errAt(0, "The count value provided for a TOP, OFFSET or LIMIT clause must be a non-negative integer.")
		}
		if v.n > math.MaxInt32 {
			return math.MaxInt32, nil
		}
		return int(v.n), nil
	}
	if q.top != nil {
		n, err := num(q.top)
		if err != nil {
			return 0, 0, err
		}
		take = n
	}
	if q.offset != nil {
		o, err := num(q.offset)
		if err != nil {
			return 0, 0, err
		}
		l, err := num(q.limit)
		if err != nil {
			return 0, 0, err
		}
		skip = o
		if l < take {
			take = l
		}
	}
	return skip, take, nil
}

// rowsOf expands one input value into the rows of FROM and JOIN, calling fn
// for each; fn returns false to stop.
func (q *query) rowsOf(ev *evaluator, outer []value, doc value, fn func(row []value, sub int) bool) bool {
	if len(outer) == 0 && q.simpleFrom() {
		if ev.rowBuf == nil {
			ev.rowBuf = make([]value, 1)
		}
		ev.rowBuf[0] = doc
		return fn(ev.rowBuf, 0)
	}
	base := make([]value, len(outer), len(outer)+1+len(q.joins))
	copy(base, outer)
	var firsts []value
	switch {
	case q.from == nil:
		return fn(base, 0)
	case q.from.e == nil:
		firsts = []value{doc}
	default:
		v := ev.evalFrom(q.from.e, outer, doc)
		if q.from.iterate {
			if v.k != kArray {
				return true
			}
			firsts = v.elems()
		} else if v.defined() {
			firsts = []value{v}
		}
	}
	sub := 0
	for _, f := range firsts {
		row := append(base[:len(outer):len(outer)], f)
		if !q.joinRows(ev, row, 0, &sub, fn) {
			return false
		}
	}
	return true
}

func (q *query) joinRows(ev *evaluator, row []value, j int, sub *int, fn func([]value, int) bool) bool {
	if j == len(q.joins) {
		*sub++
		return fn(row, *sub-1)
	}
	v := ev.eval(q.joins[j].e, row)
	if q.joins[j].sub != nil {
		res, err := runSubquery(q.joins[j].sub, ev, row)
		if err != nil {
			if ev.err == nil {
				ev.err = err
			}
			return false
		}
		v = arrayValue(res)
	}
	if v.k != kArray {
		return true
	}
	for _, e := range v.elems() {
		next := append(row[:len(row):len(row)], e)
		if !q.joinRows(ev, next, j+1, sub, fn) {
			return false
		}
	}
	return true
}

// evalFrom evaluates a FROM path: its root names either an alias of an
// enclosing query or the container (then it is the document itself).
func (ev *evaluator) evalFrom(e expr, outer []value, doc value) value {
	root := e
	for {
		switch x := root.(type) {
		case propExpr:
			root = x.base
			continue
		case indexExpr:
			root = x.base
			continue
		}
		break
	}
	id, _ := root.(identExpr)
	if inScope(id.name, ev.names[:len(outer)]) {
		return ev.eval(e, outer)
	}
	sub := &evaluator{params: ev.params, names: []string{id.name}}
	v := sub.eval(e, []value{doc})
	if sub.err != nil && ev.err == nil {
		ev.err = sub.err
	}
	return v
}

// filter reports whether row passes WHERE.
func (q *query) filter(ev *evaluator, row []value) bool {
	return q.where == nil || ev.eval(q.where, row).truthy()
}

// matches reports whether a single document satisfies the query's WHERE
// (used by patch conditions).
func (q *query) matches(doc value) (bool, error) {
	ev := &evaluator{names: q.aliases}
	ok := false
	q.rowsOf(ev, nil, doc, func(row []value, _ int) bool {
		if q.filter(ev, row) {
			ok = true
			return false
		}
		return true
	})
	return ok, ev.err
}

// project computes the output of one row; undefined means "no result".
// selectItemName is the property name of a select item in each result: its
// alias, else the last property name of a path (or the identifier), else
// "$1", "$2", ... counting such unnamed items (*unnamed).
func selectItemName(it selectItem, unnamed *int) string {
	if it.alias != "" {
		return it.alias
	}
	switch x := it.e.(type) {
	case propExpr:
		return x.name
	case identExpr:
		return x.name
	}
	*unnamed++
	return "$" + strconv.Itoa(*unnamed)
}

func (q *query) project(ev *evaluator, row []value) value {
	switch {
	case q.star:
		return row[len(row)-1]
	case q.value != nil:
		return ev.eval(q.value, row)
	}
	ms := make([]member, 0, len(q.items))
	unnamed := 0
	for _, it := range q.items {
		name := selectItemName(it, &unnamed)
		v := ev.eval(it.e, row)
		if !v.defined() {
			continue
		}
		ms = append(ms, member{key: name, val: v})
	}
	return objectValue(ms)
}

// orderKeys evaluates the ORDER BY expressions of a row.
func (q *query) orderKeys(ev *evaluator, row []value) []value {
	keys := make([]value, len(q.orderBy))
	for i, o := range q.orderBy {
		keys[i] = ev.eval(o.e, row)
	}
	return keys
}

func (q *query) compareRows(a, b *resultRow) int {
	if c := q.compareKeys(a.keys, b.keys); c != 0 {
		return c
	}
	switch {
	case a.seq < b.seq:
		return -1
	case a.seq > b.seq:
		return 1
	case a.sub < b.sub:
		return -1
	case a.sub > b.sub:
		return 1
	}
	return 0
}

// pageWriter accumulates output documents within the page limits.
type pageWriter struct {
	p        page
	maxItems int
	maxBytes int
	eager    bool
}

func (w *pageWriter) full() bool {
	return (w.maxItems > 0 && w.p.count >= w.maxItems) || (w.p.count > 0 && len(w.p.buf) >= w.maxBytes)
}

func (w *pageWriter) add(v value, doc *item) {
	if w.p.count > 0 {
		w.p.buf = append(w.p.buf, ',')
	}
	if doc != nil {
		w.p.buf = doc.appendJSON(w.p.buf)
	} else {
		w.p.buf = v.appendJSON(w.p.buf)
	}
	w.p.count++
}

// execute runs q over in and returns one page.
func (q *query) execute(in execInput, req pageRequest) (page, error) {
	ev := &evaluator{params: req.params, names: q.aliases}
	skip, take, err := q.countLimits(ev)
	if err != nil {
		return page{}, err
	}
	var tok contToken
	if req.token != "" {
		if tok, err = decodeToken(req.token, q); err != nil {
			return page{}, err
		}
	}
	if req.maxBytes <= 0 {
		req.maxBytes = maxResponseBytes
	}
	if q.from == nil {
		// Without FROM a query evaluates its select list once.
		in = execInput{vals: []value{undefined}}
	}
	w := &pageWriter{maxItems: req.maxItems, maxBytes: req.maxBytes, eager: req.eager}
	var p page
	switch q.mode() {
	case modeStream:
		p = q.execStream(ev, in, tok, skip, take, w)
	case modeOrdered:
		p = q.execOrdered(ev, in, tok, skip, take, w)
	default:
		p = q.execBuffered(ev, in, tok, skip, take, w)
	}
	if ev.err != nil {
		return page{}, ev.err
	}
	return p, nil
}

// starDoc returns the stored document to emit verbatim for SELECT * over
// a plain FROM, or nil.
func (q *query) starDoc(r *resultRow) *item {
	if q.star && q.from != nil && q.from.e == nil {
		return r.doc
	}
	return nil
}

func (q *query) execStream(ev *evaluator, in execInput, tok contToken, skip, take int, w *pageWriter) page {
	n := tok.N // results produced so far, including those OFFSET skipped
	start := sort.Search(in.len(), func(i int) bool { return in.seq(i) >= tok.Seq })
	var last resultRow
	more, done := false, false
	prefiltered := q.canPrefilter(in, in.len()-start)
	var pass []bool
	chunkLo, chunkHi := 0, 0
	for i := start; i < in.len() && !more && !done; i++ {
		if prefiltered {
			if i >= chunkHi {
				chunkLo, chunkHi = i, i+streamChunk
				if chunkHi > in.len() {
					chunkHi = in.len()
				}
				if pass == nil {
					pass = make([]bool, streamChunk)
				}
				if err := q.prefilter(ev.params, in, chunkLo, chunkHi, pass); err != nil {
					ev.err = err
					break
				}
			}
			if !pass[i-chunkLo] {
				continue
			}
		}
		seq := in.seq(i)
		var doc *item
		if in.docs != nil {
			doc = in.docs[i]
		}
		q.rowsOf(ev, nil, in.value(i), func(row []value, sub int) bool {
			if tok.Kind != "" && seq == tok.Seq && sub <= tok.Sub {
				return true
			}
			if !prefiltered && !q.filter(ev, row) {
				return true
			}
			r := resultRow{row: row, doc: doc, seq: seq, sub: sub}
			out := q.project(ev, row)
			if !out.defined() {
				return true
			}
			if take != math.MaxInt && n >= skip+take {
				done = true
				return false
			}
			if w.full() {
				more = true
				return false
			}
			n++
			if n > skip {
				w.add(out, q.starDoc(&r))
			}
			last = r
			if w.eager && w.full() {
				more = true
				return false
			}
			return true
		})
		if ev.err != nil {
			break
		}
	}
	if more {
		w.p.next = encodeToken(contToken{Hash: queryHash(q), Kind: "s", Seq: last.seq, Sub: last.sub, N: n})
	}
	return w.p
}

// simpleFrom reports whether each input value yields exactly one row
// (FROM without a path and without JOIN), the common case worth a fast path.
func (q *query) simpleFrom() bool {
	return q.from != nil && q.from.e == nil && q.from.sub == nil && len(q.joins) == 0
}

// rowValues returns the row of a collected result row.
func (r *resultRow) rowValues(ev *evaluator) []value {
	if r.row != nil {
		return r.row
	}
	if ev.rowBuf == nil {
		ev.rowBuf = make([]value, 1)
	}
	ev.rowBuf[0] = docValue(r.doc)
	return ev.rowBuf
}

func (q *query) execOrdered(ev *evaluator, in execInput, tok contToken, skip, take int, w *pageWriter) page {
	n := 0
	var last *resultRow
	if tok.Kind != "" {
		last = &resultRow{seq: tok.Seq, sub: tok.Sub, keys: make([]value, len(q.orderBy))}
		for i, k := range tok.Keys {
			if i < len(last.keys) && k != "undefined" {
				last.keys[i], _ = parseJSON([]byte(k))
			}
		}
		n = tok.N
	}
	// Collect the rows after the continuation point. Keys live in one arena
	// to keep allocations per row low.
	simple := q.simpleFrom()
	nk := len(q.orderBy)
	rows := make([]resultRow, 0, 64)
	if simple && q.where == nil {
		rows = make([]resultRow, 0, in.len())
	}
	var arena []value
	if simple && !q.canPrefilter(in, in.len()) {
		arena = make([]value, 0, in.len()*nk)
	}
	collected := false
	if q.canPrefilter(in, in.len()) {
		all, err := q.collectOrderedParallel(ev.params, in)
		if err != nil {
			ev.err = err
			return w.p
		}
		rows = all[:0]
		for i := range all {
			if last == nil || q.compareRows(&all[i], last) > 0 {
				rows = append(rows, all[i])
			}
		}
		collected = true
	}
	for i := 0; i < in.len() && !collected; i++ {
		seq := in.seq(i)
		var doc *item
		if in.docs != nil {
			doc = in.docs[i]
		}
		q.rowsOf(ev, nil, in.value(i), func(row []value, sub int) bool {
			if !q.filter(ev, row) {
				return true
			}
			r := resultRow{doc: doc, seq: seq, sub: sub}
			if simple {
				start := len(arena)
				for _, o := range q.orderBy {
					arena = append(arena, ev.eval(o.e, row))
				}
				r.keys = arena[start : start+nk : start+nk]
				if doc == nil {
					r.row = []value{row[0]}
				}
			} else {
				r.keys = q.orderKeys(ev, row)
				r.row = append([]value(nil), row...)
			}
			if last != nil && q.compareRows(&r, last) <= 0 {
				if simple {
					arena = arena[:len(arena)-nk]
				}
				return true
			}
			rows = append(rows, r)
			return true
		})
	}
	// Only the first rows are needed for one page: select them with a heap
	// instead of sorting everything, unless the page size is unbounded.
	needed := len(rows)
	if w.maxItems > 0 {
		needed = w.maxItems + 1
		if skip > n {
			needed += skip - n
		}
	}
	sorted := q.smallestRows(rows, needed)
	var lastRow *resultRow
	for i := 0; ; i++ {
		if i == len(sorted) {
			if len(sorted) == len(rows) {
				break
			}
			// Projections dropped rows: fall back to a full sort.
			sorted = q.smallestRows(rows, len(rows))
			if i == len(sorted) {
				break
			}
		}
		r := &sorted[i]
		out := q.project(ev, r.rowValues(ev))
		if !out.defined() {
			continue
		}
		if take != math.MaxInt && n >= skip+take {
			break
		}
		if w.full() {
			keys := make([]string, len(lastRow.keys))
			for k, v := range lastRow.keys {
				keys[k] = v.canonical()
			}
			w.p.next = encodeToken(contToken{Hash: queryHash(q), Kind: "o", Seq: lastRow.seq, Sub: lastRow.sub, N: n, Keys: keys})
			break
		}
		n++
		if n > skip {
			w.add(out, q.starDoc(r))
		}
		lastRow = r
	}
	return w.p
}

// smallestRows returns the k first rows in ORDER BY order (all rows, sorted,
// when k >= len(rows)). rows is not modified.
func (q *query) smallestRows(rows []resultRow, k int) []resultRow {
	if k >= len(rows) || k > len(rows)/4 {
		out := append([]resultRow(nil), rows...)
		sort.Slice(out, func(i, j int) bool { return q.compareRows(&out[i], &out[j]) < 0 })
		if k < len(out) {
			out = out[:k]
		}
		return out
	}
	// Max-heap of the k smallest rows seen so far.
	h := make([]int, 0, k)
	less := func(a, b int) bool { return q.compareRows(&rows[h[a]], &rows[h[b]]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(r, l) {
				m = r
			}
			if !less(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	up := func(i int) {
		for i > 0 {
			p := (i - 1) / 2
			if !less(i, p) {
				return
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
	}
	for i := range rows {
		if len(h) < k {
			h = append(h, i)
			up(len(h) - 1)
			continue
		}
		if q.compareRows(&rows[i], &rows[h[0]]) < 0 {
			h[0] = i
			down(0)
		}
	}
	out := make([]resultRow, len(h))
	for i, idx := range h {
		out[i] = rows[idx]
	}
	sort.Slice(out, func(i, j int) bool { return q.compareRows(&out[i], &out[j]) < 0 })
	return out
}

// collect evaluates FROM, JOIN and WHERE over in and returns the matching
// rows, with their ORDER BY keys when the query sorts.
func (q *query) collect(ev *evaluator, in execInput, outer []value) []resultRow {
	simple := len(outer) == 0 && q.simpleFrom()
	n := in.len()
	var rows []resultRow
	if simple && q.where == nil {
		rows = make([]resultRow, 0, n)
	}
	var pass []bool
	if len(outer) == 0 && q.canPrefilter(in, n) {
		pass = make([]bool, n)
		if err := q.prefilter(ev.params, in, 0, n, pass); err != nil {
			ev.err = err
			return nil
		}
	}
	for i := 0; i < n; i++ {
		if pass != nil && !pass[i] {
			continue
		}
		seq := in.seq(i)
		var doc *item
		if in.docs != nil {
			doc = in.docs[i]
		}
		var src value
		if in.docs != nil || in.vals != nil {
			src = in.value(i)
		}
		q.rowsOf(ev, outer, src, func(row []value, sub int) bool {
			if pass == nil && !q.filter(ev, row) {
				return true
			}
			r := resultRow{doc: doc, seq: seq, sub: sub}
			if !simple || doc == nil {
				r.row = append([]value(nil), row...)
			}
			if len(q.orderBy) > 0 {
				r.keys = q.orderKeys(ev, row)
			}
			rows = append(rows, r)
			return len(rows) < maxBufferedRows
		})
	}
	if len(q.orderBy) > 0 {
		sort.SliceStable(rows, func(i, j int) bool { return q.compareRows(&rows[i], &rows[j]) < 0 })
	}
	return rows
}

// maxBufferedRows bounds what one buffered query (or subquery) may hold.
const maxBufferedRows = 10_000_000

// outRow is one projected result of a buffered query.
type outRow struct {
	v    value
	doc  *item
	keys []value // ORDER BY keys (ungrouped queries)
}

// finish projects collected rows (grouping them when the query aggregates),
// then applies DISTINCT and OFFSET/LIMIT/TOP.
func (q *query) finish(ev *evaluator, rows []resultRow, skip, take int, outerRow []value) []outRow {
	var outs []outRow
	if q.hasAgg || len(q.groupBy) > 0 {
		for _, g := range q.groups(ev, rows) {
			var first []value
			switch {
			case len(g) > 0:
				first = append([]value(nil), g[0].rowValues(ev)...)
			case outerRow != nil:
				first = append(append([]value(nil), outerRow...), make([]value, len(q.aliases))...)
			default:
				first = make([]value, len(q.aliases))
			}
			ev.group = g
			if v := q.project(ev, first); v.defined() {
				outs = append(outs, outRow{v: v})
			}
			ev.group = nil
		}
	} else {
		for i := range rows {
			if v := q.project(ev, rows[i].rowValues(ev)); v.defined() {
				outs = append(outs, outRow{v: v, doc: q.starDoc(&rows[i]), keys: rows[i].keys})
			}
		}
	}
	if q.distinct {
		seen := make(map[string]bool, len(outs))
		kept := outs[:0]
		for _, o := range outs {
			k := o.v.canonical()
			if !seen[k] {
				seen[k] = true
				kept = append(kept, o)
			}
		}
		outs = kept
	}
	if skip > len(outs) {
		skip = len(outs)
	}
	outs = outs[skip:]
	if take < len(outs) {
		outs = outs[:take]
	}
	return outs
}

func (q *query) execBuffered(ev *evaluator, in execInput, tok contToken, skip, take int, w *pageWriter) page {
	if calls, ok := q.streamAggregates(); ok && tok.I == 0 {
		return q.execStreamAggregate(ev, in, calls, skip, take, w)
	}
	outs := q.finish(ev, q.collect(ev, in, nil), skip, take, nil)
	if q.orderedDistinct() {
		return q.pageOrderedDistinct(outs, tok, w)
	}
	for i := tok.I; i < len(outs); i++ {
		if w.full() {
			w.p.next = encodeToken(contToken{Hash: queryHash(q), Kind: "b", I: i})
			break
		}
		w.add(outs[i].v, outs[i].doc)
	}
	return w.p
}

// compareKeys orders two rows' ORDER BY keys as the query sorts them.
func (q *query) compareKeys(a, b []value) int {
	for i, o := range q.orderBy {
		c := compareValues(a[i], b[i])
		if o.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// orderedDistinct reports a DISTINCT query with ORDER BY (and no grouping),
// whose pages resume after the sort keys of the last result, as ORDER BY
// queries do: the SDKs resume it with a rewritten filter (queryHash).
func (q *query) orderedDistinct() bool {
	return q.distinct && len(q.orderBy) > 0 && !q.hasAgg && len(q.groupBy) == 0
}

// pageOrderedDistinct writes the page of an ordered DISTINCT query's
// results (in ORDER BY order) that follows tok: the results after its
// sort keys, and after the tok.N results equal to them already returned.
func (q *query) pageOrderedDistinct(outs []outRow, tok contToken, w *pageWriter) page {
	compare := q.compareKeys
	start, same := 0, 0
	if tok.Kind == "d" {
		last := make([]value, len(q.orderBy))
		for i, k := range tok.Keys {
			if i < len(last) && k != "undefined" {
				last[i], _ = parseJSON([]byte(k))
			}
		}
		for start < len(outs) && compare(outs[start].keys, last) < 0 {
			start++
		}
		for ; start < len(outs) && same < tok.N && compare(outs[start].keys, last) == 0; start++ {
			same++
		}
	}
	for i := start; i < len(outs); i++ {
		if i > start && w.full() {
			prev := outs[i-1].keys
			keys := make([]string, len(prev))
			for k, v := range prev {
				keys[k] = v.canonical()
			}
			// Results returned so far with the last one's keys.
			n := 0
			for j := i - 1; j >= 0 && compare(outs[j].keys, prev) == 0; j-- {
				n++
			}
			w.p.next = encodeToken(contToken{Hash: queryHash(q), Kind: "d", N: n, Keys: keys})
			break
		}
		w.add(outs[i].v, outs[i].doc)
	}
	return w.p
}

// groups partitions rows by the GROUP BY keys, in order of first
// appearance. Without GROUP BY (aggregates only) there is one group, even
// when empty.
func (q *query) groups(ev *evaluator, rows []resultRow) [][]resultRow {
	if len(q.groupBy) == 0 {
		return [][]resultRow{rows}
	}
	index := map[string]int{}
	var out [][]resultRow
	for i := range rows {
		row := rows[i].rowValues(ev)
		key := make([]byte, 0, 32)
		for _, g := range q.groupBy {
			key = ev.eval(g, row).appendCanonical(key)
			key = append(key, 0)
		}
		k := string(key)
		gi, ok := index[k]
		if !ok {
			gi = len(out)
			index[k] = gi
			out = append(out, nil)
		}
		out[gi] = append(out[gi], rows[i])
	}
	return out
}

// runSubquery evaluates a correlated subquery for one outer row and
// returns all its results.
func runSubquery(q *query, outer *evaluator, outerRow []value) ([]value, error) {
	names := append(append([]string(nil), outer.names[:len(outerRow)]...), q.aliases...)
	ev := &evaluator{params: outer.params, names: names}
	skip, take, err := q.countLimits(ev)
	if err != nil {
		return nil, err
	}
	in := execInput{vals: []value{undefined}}
	outs := q.finish(ev, q.collect(ev, in, outerRow), skip, take, outerRow)
	res := make([]value, len(outs))
	for i, o := range outs {
		res[i] = o.v
	}
	return res, ev.err
}
