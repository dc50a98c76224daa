package emulator

import "strconv"

// aggState accumulates one aggregate over a stream of values, with the
// same semantics as evaluator.aggregate: undefined values are skipped, a
// non-number makes SUM and AVG undefined, an array or object makes MIN and
// MAX undefined.
type aggState struct {
	name    string
	n       int
	sum     float64
	best    value
	invalid bool
}

func (a *aggState) add(v value) {
	if !v.defined() || a.invalid {
		return
	}
	switch a.name {
	case "COUNT":
		a.n++
	case "SUM", "AVG":
		if v.k != kNumber {
			a.invalid = true
			return
		}
		a.sum += v.n
		a.n++
	case "MIN", "MAX":
		if v.k == kArray || v.k == kObject {
			a.invalid = true
			return
		}
		if !a.best.defined() {
			a.best = v
			return
		}
		c := compareValues(v, a.best)
		if (a.name == "MIN" && c < 0) || (a.name == "MAX" && c > 0) {
			a.best = v
		}
	}
}

func (a *aggState) result() value {
	if a.invalid {
		return undefined
	}
	switch a.name {
	case "COUNT":
		return numberValue(float64(a.n))
	case "SUM":
		return numberValue(a.sum)
	case "AVG":
		if a.n == 0 {
			return undefined
		}
		return numberValue(a.sum / float64(a.n))
	}
	return a.best
}

// streamAggregates lists the aggregate of each select item when the query
// is a plain aggregation (every item, or the VALUE, is one aggregate call;
// no GROUP BY, DISTINCT or ORDER BY), which can be computed without
// buffering rows.
func (q *query) streamAggregates() ([]callExpr, bool) {
	if !q.hasAgg || len(q.groupBy) > 0 || q.distinct || len(q.orderBy) > 0 {
		return nil, false
	}
	var exprs []expr
	if q.value != nil {
		exprs = []expr{q.value}
	} else {
		for _, it := range q.items {
			exprs = append(exprs, it.e)
		}
	}
	calls := make([]callExpr, len(exprs))
	for i, e := range exprs {
		c, ok := e.(callExpr)
		if !ok || !isAggregate(c.name) {
			return nil, false
		}
		calls[i] = c
	}
	return calls, true
}

// execStreamAggregate computes a plain aggregation in one pass.
func (q *query) execStreamAggregate(ev *evaluator, in execInput, calls []callExpr, skip, take int, w *pageWriter) page {
	states := make([]aggState, len(calls))
	for i, c := range calls {
		states[i].name = c.name
	}
	n := in.len()
	var pass []bool
	if q.canPrefilter(in, n) {
		pass = make([]bool, n)
		if err := q.prefilter(ev.params, in, 0, n, pass); err != nil {
			ev.err = err
			return w.p
		}
	}
	for i := 0; i < n; i++ {
		if pass != nil && !pass[i] {
			continue
		}
		q.rowsOf(ev, nil, in.value(i), func(row []value, _ int) bool {
			if pass == nil && !q.filter(ev, row) {
				return true
			}
			for j, c := range calls {
				states[j].add(ev.eval(c.args[0], row))
			}
			return true
		})
	}
	var out value
	if q.value != nil {
		out = states[0].result()
	} else {
		ms := make([]member, 0, len(calls))
		unnamed := 0
		for j, it := range q.items {
			name := it.alias
			if name == "" {
				unnamed++
				name = "$" + strconv.Itoa(unnamed)
			}
			if v := states[j].result(); v.defined() {
				ms = append(ms, member{key: name, val: v})
			}
		}
		out = objectValue(ms)
	}
	if out.defined() && skip == 0 && take > 0 {
		w.add(out, nil)
	}
	return w.p
}
