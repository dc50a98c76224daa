package emulator

import "slices"

// Serving cross-partition queries from the equality index (eq_index.go).
// A query whose WHERE clause requires a top-level property to equal a
// scalar (c.type = 'x', c.type = @t, c.slot IN (1, 2)), alone or combined
// with AND and OR, is evaluated on the documents the index lists for those
// values instead of on every document of the container. WHERE is still
// evaluated in full on each of them, so the results, their order and the
// continuations are those of a full scan.

// indexPlan describes a superset of the documents a WHERE clause can
// accept, in terms of indexed property values.
type indexPlan struct {
	// key and texts (a leaf): the documents whose property key holds one
	// of the scalar JSON texts.
	key   string
	texts []string
	// and (a conjunction): any child's documents will do; the smallest
	// serves.
	and []*indexPlan
	// or (a disjunction): the union of every child's documents.
	or []*indexPlan
	// rng (a leaf of a single-partition query's plan): the documents of
	// the partition whose property key holds a number in the range
	// (range_index.go).
	rng *rangeBound
}

// indexPlan returns the plan of q's WHERE clause, or nil when the index
// cannot narrow the scan: no WHERE, a FROM other than the container's
// documents, a subquery or an undefined parameter in WHERE (their errors
// depend on the documents evaluated), or no usable equality (or, with
// ranges, for a query of one logical partition, range of numbers).
func (q *query) indexPlan(params map[string]value, ranges bool) *indexPlan {
	if q.where == nil || !q.simpleFrom() || !indexSafe(q.where, params) {
		return nil
	}
	return planOf(q.where, q.from.alias, params, ranges)
}

// indexSafe reports whether evaluating e can fail on no document: it holds
// no subquery and every parameter it names is defined.
func indexSafe(e expr, params map[string]value) bool {
	switch x := e.(type) {
	case nil, litExpr, identExpr:
		return true
	case paramExpr:
		_, ok := params[x.name]
		return ok
	case subqueryExpr:
		return false
	}
	children, known := exprChildren(e)
	if !known {
		return false
	}
	for _, c := range children {
		if !indexSafe(c, params) {
			return false
		}
	}
	return true
}

// exprChildren returns the direct subexpressions of an inner expression
// node; known is false for the leaves (literals, parameters, identifiers),
// subqueries and any other node.
func exprChildren(e expr) (children []expr, known bool) {
	switch x := e.(type) {
	case propExpr:
		return []expr{x.base}, true
	case indexExpr:
		return []expr{x.base, x.index}, true
	case unaryExpr:
		return []expr{x.x}, true
	case binaryExpr:
		return []expr{x.l, x.r}, true
	case betweenExpr:
		return []expr{x.x, x.lo, x.hi}, true
	case inExpr:
		return append([]expr{x.x}, x.list...), true
	case likeExpr:
		return []expr{x.x, x.pattern, x.escape}, true
	case ternaryExpr:
		return []expr{x.cond, x.a, x.b}, true
	case callExpr:
		return x.args, true
	case arrayLit:
		return x.elems, true
	case objectLit:
		return x.vals, true
	}
	return nil, false
}

// planOf returns the plan of a WHERE clause (sub)expression over the
// documents bound to alias, or nil; ranges allows range leaves.
func planOf(e expr, alias string, params map[string]value, ranges bool) *indexPlan {
	switch x := e.(type) {
	case binaryExpr:
		switch x.op {
		case "AND":
			l, r := planOf(x.l, alias, params, ranges), planOf(x.r, alias, params, ranges)
			switch {
			case l == nil:
				return r
			case r == nil:
				return l
			}
			return &indexPlan{and: []*indexPlan{l, r}}
		case "OR":
			l, r := planOf(x.l, alias, params, ranges), planOf(x.r, alias, params, ranges)
			if l == nil || r == nil {
				return nil
			}
			return &indexPlan{or: []*indexPlan{l, r}}
		case "=":
			if key, ok := indexedProperty(x.l, alias); ok {
				return leafPlan(key, []expr{x.r}, params)
			}
			if key, ok := indexedProperty(x.r, alias); ok {
				return leafPlan(key, []expr{x.l}, params)
			}
		case "<", ">", "<=", ">=":
			if !ranges {
				return nil
			}
			if key, ok := indexedProperty(x.l, alias); ok {
				return rangePlan(key, x.op, x.r, params, true)
			}
			if key, ok := indexedProperty(x.r, alias); ok {
				return rangePlan(key, x.op, x.l, params, false)
			}
		}
	case betweenExpr:
		if key, ok := indexedProperty(x.x, alias); ok && ranges && !x.not {
			lo, hi := rangePlan(key, ">=", x.lo, params, true), rangePlan(key, "<=", x.hi, params, true)
			if lo == nil || hi == nil {
				return nil
			}
			lo.rng.hi, lo.rng.hiIncl = hi.rng.hi, true
			return lo
		}
	case inExpr:
		if key, ok := indexedProperty(x.x, alias); ok && !x.not {
			if x.set != nil {
				return &indexPlan{key: key, texts: x.set.texts} // computed once, at parse time
			}
			return leafPlan(key, x.list, params)
		}
	}
	return nil
}

// indexedProperty reports whether e is a top-level, user-defined property
// of the document bound to alias (c.type), and returns its name.
func indexedProperty(e expr, alias string) (string, bool) {
	pe, ok := e.(propExpr)
	if !ok || pe.root != alias || len(pe.path) != 1 || pe.path[0] == "" || pe.path[0][0] == '_' {
		return "", false
	}
	return pe.path[0], true
}

// operandValue returns the value of e when it is a literal or a parameter;
// ok is false for any other expression.
func operandValue(e expr, params map[string]value) (v value, ok bool) {
	switch x := e.(type) {
	case litExpr:
		return x.v, true
	case paramExpr:
		return params[x.name], true
	}
	return value{}, false
}

// leafPlan returns the plan "property key equals one of vals", or nil when
// a value is not a scalar literal or parameter.
func leafPlan(key string, vals []expr, params map[string]value) *indexPlan {
	p := &indexPlan{key: key, texts: make([]string, 0, len(vals))}
	for _, e := range vals {
		v, ok := operandValue(e, params)
		if !ok {
			return nil
		}
		switch v.k {
		case kNull, kBool, kNumber, kString:
		default:
			return nil
		}
		if t := string(v.appendJSON(nil)); !slices.Contains(p.texts, t) {
			p.texts = append(p.texts, t)
		}
	}
	return p
}

// rangePlan returns the plan "property key op v" (v a literal or a
// parameter), or nil when v is not a number.
func rangePlan(key, op string, v expr, params map[string]value, propOnLeft bool) *indexPlan {
	val, ok := operandValue(v, params)
	if !ok {
		return nil
	}
	b, ok := rangeOf(op, val, propOnLeft)
	if !ok {
		return nil
	}
	return &indexPlan{key: key, rng: &b}
}

// withEqIndexes returns the plan with only the equality leaves whose
// property c indexes: a conjunction keeps its children that remain, a
// disjunction remains only if every child does (nil when nothing
// remains). Range leaves remain. The caller holds c.mu; indexes are never
// dropped, so the plan stays servable.
func (p *indexPlan) withEqIndexes(c *container) *indexPlan {
	switch {
	case p == nil:
		return nil
	case p.and != nil:
		var kids []*indexPlan
		for _, k := range p.and {
			if q := k.withEqIndexes(c); q != nil {
				kids = append(kids, q)
			}
		}
		switch len(kids) {
		case 0:
			return nil
		case 1:
			return kids[0]
		}
		return &indexPlan{and: kids}
	case p.or != nil:
		kids := make([]*indexPlan, 0, len(p.or))
		for _, k := range p.or {
			q := k.withEqIndexes(c)
			if q == nil {
				return nil
			}
			kids = append(kids, q)
		}
		return &indexPlan{or: kids}
	case p.rng != nil || c.eqIdx[p.key] != nil:
		return p
	}
	return nil
}

// keys returns the properties the plan's equality leaves read, each once.
func (p *indexPlan) keys() []string { return p.leafKeys(false) }

// rangeKeys returns the properties the plan's range leaves read, each once.
func (p *indexPlan) rangeKeys() []string { return p.leafKeys(true) }

// leafKeys returns the properties of the plan's range leaves (ranges) or
// equality leaves, each once.
func (p *indexPlan) leafKeys(ranges bool) []string {
	var out []string
	var walk func(*indexPlan)
	walk = func(n *indexPlan) {
		if n.and == nil && n.or == nil {
			if (n.rng != nil) != ranges {
				return
			}
			for _, k := range out {
				if k == n.key {
					return
				}
			}
			out = append(out, n.key)
			return
		}
		for _, c := range n.and {
			walk(c)
		}
		for _, c := range n.or {
			walk(c)
		}
	}
	walk(p)
	return out
}

// count returns (an upper bound of) the documents the plan lists. The
// caller holds c.mu and every key is indexed (the range leaves' in part,
// the logical partition of the query, which a plan with range leaves
// has).
func (p *indexPlan) count(c *container, part *partition) int {
	switch {
	case p.and != nil:
		return p.best(c, part).count(c, part)
	case p.or != nil:
		n := 0
		for _, k := range p.or {
			n += k.count(c, part)
		}
		return n
	case p.rng != nil:
		return part.ranges[p.key].count(*p.rng)
	}
	return c.eqIdx[p.key].count(p.texts)
}

// best returns the child of a conjunction that lists the fewest documents.
func (p *indexPlan) best(c *container, part *partition) *indexPlan {
	best, n := p.and[0], p.and[0].count(c, part)
	for _, k := range p.and[1:] {
		if m := k.count(c, part); m < n {
			best, n = k, m
		}
	}
	return best
}

// lists appends the index lists the plan reads to out, each in rid order.
// The caller holds c.mu and every key is indexed.
func (p *indexPlan) lists(c *container, part *partition, out [][]*item) [][]*item {
	switch {
	case p.and != nil:
		return p.best(c, part).lists(c, part, out)
	case p.or != nil:
		for _, k := range p.or {
			out = k.lists(c, part, out)
		}
		return out
	case p.rng != nil:
		if l := part.ranges[p.key].list(*p.rng); len(l) > 0 {
			out = append(out, l)
		}
		return out
	}
	ix := c.eqIdx[p.key]
	for _, t := range p.texts {
		if l := ix.byValue[t]; len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// candidates returns the documents the plan lists, in rid order, each
// once (a copy: the index lists change with the next write). The caller
// holds c.mu and every key is indexed.
func (p *indexPlan) candidates(c *container, part *partition) []*item {
	lists := p.lists(c, part, nil)
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]*item, 0, n)
	switch len(lists) {
	case 0:
		return out
	case 1:
		return append(out, lists[0]...)
	}
	// A k-way merge by seq; a document listed twice (under two properties
	// of a disjunction) is taken once.
	pos := make([]int, len(lists))
	for {
		min := -1
		for i, l := range lists {
			if pos[i] < len(l) && (min < 0 || l[pos[i]].seq < lists[min][pos[min]].seq) {
				min = i
			}
		}
		if min < 0 {
			return out
		}
		it := lists[min][pos[min]]
		pos[min]++
		if k := len(out); k == 0 || out[k-1].seq != it.seq {
			out = append(out, it)
		}
	}
}

// prepareIndexes builds the indexes plan reads that are missing (within
// maxEqIndexes, and maxRangeIndexes in the logical partition of key, which
// a plan with range leaves has). The caller does not hold c.mu.
func (c *container) prepareIndexes(plan *indexPlan, key *string) {
	if plan == nil {
		return
	}
	c.mu.RLock()
	ready := c.indexesReady(plan, key)
	c.mu.RUnlock()
	if !ready {
		c.mu.Lock()
		c.ensureEqIndexes(plan.keys())
		if rk := plan.rangeKeys(); len(rk) > 0 {
			if p := c.parts[*key]; p != nil {
				p.ensureRangeIndexes(rk)
			}
		}
		c.mu.Unlock()
	}
}

// indexesReady reports whether every index plan reads exists (the range
// ones in the logical partition of key). The caller holds c.mu.
func (c *container) indexesReady(plan *indexPlan, key *string) bool {
	if !c.hasEqIndexes(plan.keys()) {
		return false
	}
	rk := plan.rangeKeys()
	if len(rk) == 0 {
		return true
	}
	p := c.parts[*key]
	return p != nil && p.hasRangeIndexes(rk)
}

// querySnapshot returns the documents a query evaluates, in rid order:
// plan's candidates when its indexes exist and it lists fewer documents
// than the scan would read (every live document of the container, or of
// the logical partition of key when it is set, of which the candidates
// are then only those in that partition), and the scan's documents when
// not. The caller holds c.mu.
func (c *container) querySnapshot(key *string, plan *indexPlan) []*item {
	if plan == nil || !c.indexesReady(plan, key) {
		return c.snapshot(key)
	}
	if key == nil {
		if plan.count(c, nil) >= c.count {
			return c.snapshot(nil)
		}
		return plan.candidates(c, nil)
	}
	p := c.parts[*key]
	if p == nil {
		return nil
	}
	if plan.count(c, p) >= len(p.byID) {
		return c.snapshot(key)
	}
	docs := plan.candidates(c, p)
	out := docs[:0]
	for _, it := range docs {
		if it.part == p {
			out = append(out, it)
		}
	}
	return out
}
