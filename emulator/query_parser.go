package emulator

import (
	"fmt"
	"regexp"
	"strings"
)

// expr is a node of a query expression tree.
type expr interface{}

type (
	litExpr   struct{ v value }
	paramExpr struct{ name string }
	identExpr struct{ name string }
	propExpr  struct {
		base expr
		name string
		// root and path describe a pure property chain such as c.a.b
		// (root "c", path [a b]); root is "" otherwise.
		root string
		path []string
	}
	indexExpr struct{ base, index expr }
	unaryExpr struct {
		op string // "-", "+", "~", "NOT"
		x  expr
	}
	binaryExpr struct {
		op   string
		l, r expr
		// eq describes "path = scalar" (or !=), compared on stored bytes.
		eq *eqFast
	}
	betweenExpr struct {
		x, lo, hi expr
		not       bool
	}
	inExpr struct {
		x    expr
		list []expr
		not  bool
		// set answers for a list of scalar literals (query_in.go).
		set *inSet
	}
	likeExpr struct {
		x, pattern, escape expr
		not                bool
	}
	ternaryExpr struct{ cond, a, b expr }
	callExpr    struct {
		name string // upper case
		args []expr
	}
	arrayLit  struct{ elems []expr }
	objectLit struct {
		keys []string
		vals []expr
	}
	// subqueryExpr is EXISTS(SELECT ...), ARRAY(SELECT ...) or a scalar (SELECT ...).
	subqueryExpr struct {
		kind string // "EXISTS", "ARRAY", "SCALAR"
		q    *query
	}
)

// selectItem is one projection of a select list.
type selectItem struct {
	e     expr
	alias string
}

type orderItem struct {
	e    expr
	desc bool
}

// fromSource is one input of FROM or JOIN: alias bound to each value of
// the expression (iterate) or to the expression itself.
type fromSource struct {
	alias   string
	e       expr // nil: the container's documents
	iterate bool // "alias IN expr"
	sub     *query
}

// query is a parsed SELECT statement.
type query struct {
	text     string
	distinct bool
	top      expr
	star     bool
	value    expr // SELECT VALUE expr
	items    []selectItem
	from     *fromSource
	joins    []fromSource
	where    expr
	groupBy  []expr
	orderBy  []orderItem
	offset   expr
	limit    expr
	hasAgg   bool
	aliases  []string
	outerRef []string // aliases of enclosing queries visible in a subquery
	// src is the source text of the clauses, for the query plan's
	// rewritten query (query_plan.go).
	src querySource
}

// querySource is the source text of a query's clauses, each trimmed: the
// select items' and VALUE expressions, the FROM clause with its JOINs
// ("FROM ..."), and the WHERE, GROUP BY and ORDER BY expressions.
type querySource struct {
	items   []string
	value   string
	from    string
	where   string
	groupBy []string
	orderBy []string
}

type parser struct {
	toks []token
	i    int
	text string
}

// parseQuery parses a Cosmos DB SQL SELECT statement and checks that every
// identifier refers to a FROM alias.
func parseQuery(text string) (*query, error) {
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, text: text}
	q, err := p.selectStmt()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.syntaxErr(t)
	}
	q.text = text
	if err := q.bind(nil); err != nil {
		return nil, err
	}
	return q, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isKeyword(k string) bool {
	t := p.peek()
	return t.kind == tokKeyword && t.text == k
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) acceptKeyword(k string) bool {
	if p.isKeyword(k) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if p.isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) syntaxErr(t token) error {
	if t.kind == tokEOF {
		return errAt(t.pos, "Syntax error, unexpected end-of-input.")
	}
	near := t.text
	if t.kind == tokString {
		near = t.str
	}
	return errAt(t.pos, "Syntax error, incorrect syntax near '%s'.", near)
}

func (p *parser) expectKeyword(k string) error {
	if !p.acceptKeyword(k) {
		return p.syntaxErr(p.peek())
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.syntaxErr(p.peek())
	}
	return nil
}

func (p *parser) selectStmt() (*query, error) {
	if err := p.expectKeyword("SELECT"); err != nil {
		return nil, err
	}
	q := &query{}
	if p.acceptKeyword("DISTINCT") {
		q.distinct = true
	}
	if p.acceptKeyword("TOP") {
		t := p.next()
		switch t.kind {
		case tokNumber:
			q.top = litExpr{numberValue(t.num)}
		case tokParam:
			q.top = paramExpr{t.text}
		default:
			return nil, p.syntaxErr(t)
		}
	}
	switch {
	case p.acceptPunct("*"):
		q.star = true
	case p.acceptKeyword("VALUE"):
		start := p.peek().pos
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		q.value, q.src.value = e, p.since(start)
	default:
		for {
			start := p.peek().pos
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			q.src.items = append(q.src.items, p.since(start))
			item := selectItem{e: e}
			if p.acceptKeyword("AS") {
				t := p.next()
				if t.kind != tokIdent {
					return nil, p.syntaxErr(t)
				}
				item.alias = t.text
			} else if t := p.peek(); t.kind == tokIdent {
				p.i++
				item.alias = t.text
			}
			q.items = append(q.items, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	fromStart := p.peek().pos
	if p.acceptKeyword("FROM") {
		src, err := p.fromSource(true)
		if err != nil {
			return nil, err
		}
		q.from = &src
		for p.acceptKeyword("JOIN") {
			j, err := p.fromSource(false)
			if err != nil {
				return nil, err
			}
			q.joins = append(q.joins, j)
		}
		q.src.from = p.since(fromStart)
	}
	if p.acceptKeyword("WHERE") {
		start := p.peek().pos
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		q.where, q.src.where = e, p.since(start)
	}
	if p.acceptKeyword("GROUP") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		for {
			start := p.peek().pos
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			q.groupBy, q.src.groupBy = append(q.groupBy, e), append(q.src.groupBy, p.since(start))
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptKeyword("ORDER") {
		if err := p.expectKeyword("BY"); err != nil {
			return nil, err
		}
		for {
			start := p.peek().pos
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			q.src.orderBy = append(q.src.orderBy, p.since(start))
			item := orderItem{e: e}
			if p.acceptKeyword("DESC") {
				item.desc = true
			} else {
				p.acceptKeyword("ASC")
			}
			q.orderBy = append(q.orderBy, item)
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	if p.acceptKeyword("OFFSET") {
		off, err := p.countArg()
		if err != nil {
			return nil, err
		}
		if err := p.expectKeyword("LIMIT"); err != nil {
			return nil, err
		}
		lim, err := p.countArg()
		if err != nil {
			return nil, err
		}
		q.offset, q.limit = off, lim
	}
	return q, nil
}

// since returns the query text from byte offset start up to the next
// token, trimmed.
func (p *parser) since(start int) string {
	return strings.TrimSpace(p.text[start:p.peek().pos])
}

func (p *parser) countArg() (expr, error) {
	t := p.next()
	switch t.kind {
	case tokNumber:
		return litExpr{numberValue(t.num)}, nil
	case tokParam:
		return paramExpr{t.text}, nil
	}
	return nil, p.syntaxErr(t)
}

// fromSource parses "name [AS] [alias]", "name.path [AS] alias",
// "alias IN expr" or "(SELECT ...) [AS] alias".
func (p *parser) fromSource(root bool) (fromSource, error) {
	if p.isPunct("(") && p.toks[p.i+1].kind == tokKeyword && p.toks[p.i+1].text == "SELECT" {
		p.i++
		sub, err := p.selectStmt()
		if err != nil {
			return fromSource{}, err
		}
		if err := p.expectPunct(")"); err != nil {
			return fromSource{}, err
		}
		p.acceptKeyword("AS")
		t := p.next()
		if t.kind != tokIdent {
			return fromSource{}, p.syntaxErr(t)
		}
		return fromSource{alias: t.text, sub: sub, iterate: true}, nil
	}
	t := p.next()
	if t.kind != tokIdent {
		return fromSource{}, p.syntaxErr(t)
	}
	if p.acceptKeyword("IN") {
		e, err := p.postfix()
		if err != nil {
			return fromSource{}, err
		}
		return fromSource{alias: t.text, e: e, iterate: true}, nil
	}
	var e expr = identExpr{t.text}
	hasPath := false
	for p.isPunct(".") || p.isPunct("[") {
		var err error
		e, err = p.postfixOp(e)
		if err != nil {
			return fromSource{}, err
		}
		hasPath = true
	}
	alias := t.text
	if p.acceptKeyword("AS") {
		a := p.next()
		if a.kind != tokIdent {
			return fromSource{}, p.syntaxErr(a)
		}
		alias = a.text
	} else if a := p.peek(); a.kind == tokIdent {
		p.i++
		alias = a.text
	}
	if !root && !hasPath {
		return fromSource{}, errAt(t.pos, "Syntax error, JOIN requires 'alias IN expression'.")
	}
	src := fromSource{alias: alias}
	if hasPath {
		src.e = e
	}
	return src, nil
}

// Expression grammar, lowest precedence first.

func (p *parser) expr() (expr, error) {
	c, err := p.coalesce()
	if err != nil {
		return nil, err
	}
	if p.acceptPunct("?") {
		a, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(":"); err != nil {
			return nil, err
		}
		b, err := p.expr()
		if err != nil {
			return nil, err
		}
		return ternaryExpr{c, a, b}, nil
	}
	return c, nil
}

func (p *parser) coalesce() (expr, error) {
	return p.binaryLevel(tokPunct, []string{"??"}, p.or)
}

func (p *parser) or() (expr, error) { return p.binaryLevel(tokKeyword, []string{"OR"}, p.and) }

func (p *parser) and() (expr, error) { return p.binaryLevel(tokKeyword, []string{"AND"}, p.not) }

func (p *parser) not() (expr, error) {
	if p.acceptKeyword("NOT") {
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return unaryExpr{"NOT", x}, nil
	}
	return p.comparison()
}

func (p *parser) comparison() (expr, error) {
	l, err := p.bitOr()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tokPunct && (t.text == "=" || t.text == "!=" || t.text == "<>" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
			p.i++
			r, err := p.bitOr()
			if err != nil {
				return nil, err
			}
			op := t.text
			if op == "<>" {
				op = "!="
			}
			l = newComparison(op, l, r)
		case t.kind == tokKeyword && (t.text == "IN" || t.text == "BETWEEN" || t.text == "LIKE"),
			t.kind == tokKeyword && t.text == "NOT" && p.toks[p.i+1].kind == tokKeyword &&
				(p.toks[p.i+1].text == "IN" || p.toks[p.i+1].text == "BETWEEN" || p.toks[p.i+1].text == "LIKE"):
			not := p.acceptKeyword("NOT")
			kw := p.next().text
			switch kw {
			case "IN":
				if err := p.expectPunct("("); err != nil {
					return nil, err
				}
				var list []expr
				for {
					e, err := p.expr()
					if err != nil {
						return nil, err
					}
					list = append(list, e)
					if !p.acceptPunct(",") {
						break
					}
				}
				if err := p.expectPunct(")"); err != nil {
					return nil, err
				}
				l = newIn(l, list, not)
			case "BETWEEN":
				lo, err := p.bitOr()
				if err != nil {
					return nil, err
				}
				if err := p.expectKeyword("AND"); err != nil {
					return nil, err
				}
				hi, err := p.bitOr()
				if err != nil {
					return nil, err
				}
				l = betweenExpr{l, lo, hi, not}
			case "LIKE":
				pat, err := p.bitOr()
				if err != nil {
					return nil, err
				}
				var esc expr
				if p.acceptKeyword("ESCAPE") {
					esc, err = p.bitOr()
					if err != nil {
						return nil, err
					}
				}
				l = likeExpr{l, pat, esc, not}
			}
		default:
			return l, nil
		}
	}
}

// binaryLevel parses one left-associative precedence level: operands from
// next joined by any of ops, tokens of the given kind (punctuation such as
// "+", or keywords such as "AND", which the lexer upper-cases).
func (p *parser) binaryLevel(kind tokenKind, ops []string, next func() (expr, error)) (expr, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		matched := ""
		if t.kind == kind {
			for _, op := range ops {
				if t.text == op {
					matched = op
					break
				}
			}
		}
		if matched == "" {
			return l, nil
		}
		p.i++
		r, err := next()
		if err != nil {
			return nil, err
		}
		l = binaryExpr{op: matched, l: l, r: r}
	}
}

func (p *parser) bitOr() (expr, error)  { return p.binaryLevel(tokPunct, []string{"|"}, p.bitXor) }
func (p *parser) bitXor() (expr, error) { return p.binaryLevel(tokPunct, []string{"^"}, p.bitAnd) }
func (p *parser) bitAnd() (expr, error) { return p.binaryLevel(tokPunct, []string{"&"}, p.shift) }
func (p *parser) shift() (expr, error) {
	return p.binaryLevel(tokPunct, []string{"<<", ">>>", ">>"}, p.additive)
}
func (p *parser) additive() (expr, error) {
	return p.binaryLevel(tokPunct, []string{"+", "-", "||"}, p.multiplicative)
}
func (p *parser) multiplicative() (expr, error) {
	return p.binaryLevel(tokPunct, []string{"*", "/", "%"}, p.unary)
}

func (p *parser) unary() (expr, error) {
	t := p.peek()
	if t.kind == tokPunct && (t.text == "-" || t.text == "+" || t.text == "~") {
		p.i++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if lit, ok := x.(litExpr); ok && lit.v.k == kNumber && t.text == "-" {
			return litExpr{numberValue(-lit.v.n)}, nil
		}
		return unaryExpr{t.text, x}, nil
	}
	return p.postfix()
}

func (p *parser) postfix() (expr, error) {
	e, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.isPunct(".") || p.isPunct("[") {
		e, err = p.postfixOp(e)
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (p *parser) postfixOp(base expr) (expr, error) {
	if p.acceptPunct(".") {
		t := p.next()
		if t.kind != tokIdent && t.kind != tokKeyword {
			return nil, p.syntaxErr(t)
		}
		name := t.text
		if t.kind == tokKeyword {
			// Keywords are upper-cased by the lexer; recover the source text.
			name = p.text[t.pos : t.pos+len(t.text)]
		}
		return newPropExpr(base, name), nil
	}
	p.i++ // '['
	idx, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct("]"); err != nil {
		return nil, err
	}
	if lit, ok := idx.(litExpr); ok && lit.v.k == kString {
		return newPropExpr(base, lit.v.s), nil
	}
	return indexExpr{base, idx}, nil
}

// newPropExpr builds base.name, recording the path of pure property chains.
func newPropExpr(base expr, name string) propExpr {
	pe := propExpr{base: base, name: name}
	switch b := base.(type) {
	case identExpr:
		pe.root, pe.path = b.name, []string{name}
	case propExpr:
		if b.root != "" {
			pe.root = b.root
			pe.path = append(append(make([]string, 0, len(b.path)+1), b.path...), name)
		}
	}
	return pe
}

func (p *parser) primary() (expr, error) {
	t := p.next()
	switch t.kind {
	case tokNumber:
		return litExpr{numberValue(t.num)}, nil
	case tokString:
		return litExpr{stringValue(t.str)}, nil
	case tokParam:
		return paramExpr{t.text}, nil
	case tokKeyword:
		switch t.text {
		case "TRUE":
			return litExpr{jsonTrue}, nil
		case "FALSE":
			return litExpr{jsonFalse}, nil
		case "NULL":
			return litExpr{jsonNull}, nil
		case "UNDEFINED":
			return litExpr{undefined}, nil
		case "EXISTS", "ARRAY":
			if err := p.expectPunct("("); err != nil {
				return nil, err
			}
			sub, err := p.selectStmt()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			return subqueryExpr{kind: t.text, q: sub}, nil
		case "UDF":
			return nil, errAt(t.pos, "User-defined functions are not supported by the emulator.")
		}
		return nil, p.syntaxErr(t)
	case tokIdent:
		if p.isPunct("(") {
			p.i++
			call := callExpr{name: strings.ToUpper(t.text)}
			if !p.acceptPunct(")") {
				for {
					if call.name == "COUNT" && p.isPunct("*") {
						return nil, p.syntaxErr(p.peek())
					}
					e, err := p.expr()
					if err != nil {
						return nil, err
					}
					call.args = append(call.args, e)
					if !p.acceptPunct(",") {
						break
					}
				}
				if err := p.expectPunct(")"); err != nil {
					return nil, err
				}
			}
			if err := checkCall(call, t.pos); err != nil {
				return nil, err
			}
			return call, nil
		}
		return identExpr{t.text}, nil
	case tokPunct:
		switch t.text {
		case "(":
			if p.isKeyword("SELECT") {
				sub, err := p.selectStmt()
				if err != nil {
					return nil, err
				}
				if err := p.expectPunct(")"); err != nil {
					return nil, err
				}
				return subqueryExpr{kind: "SCALAR", q: sub}, nil
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			return e, nil
		case "[":
			var arr arrayLit
			if !p.acceptPunct("]") {
				for {
					e, err := p.expr()
					if err != nil {
						return nil, err
					}
					arr.elems = append(arr.elems, e)
					if !p.acceptPunct(",") {
						break
					}
				}
				if err := p.expectPunct("]"); err != nil {
					return nil, err
				}
			}
			return arr, nil
		case "{":
			var obj objectLit
			if !p.acceptPunct("}") {
				for {
					k := p.next()
					var key string
					switch k.kind {
					case tokIdent:
						key = k.text
					case tokString:
						key = k.str
					case tokKeyword:
						key = p.text[k.pos : k.pos+len(k.text)]
					default:
						return nil, p.syntaxErr(k)
					}
					if err := p.expectPunct(":"); err != nil {
						return nil, err
					}
					v, err := p.expr()
					if err != nil {
						return nil, err
					}
					obj.keys = append(obj.keys, key)
					obj.vals = append(obj.vals, v)
					if !p.acceptPunct(",") {
						break
					}
				}
				if err := p.expectPunct("}"); err != nil {
					return nil, err
				}
			}
			return obj, nil
		}
	}
	return nil, p.syntaxErr(t)
}

// bind resolves identifiers against the FROM aliases (and, for subqueries,
// the aliases of the enclosing query) and finds aggregates.
func (q *query) bind(outer []string) error {
	q.outerRef = outer
	scope := append([]string(nil), outer...)
	if q.from != nil {
		if q.from.sub != nil {
			if err := q.from.sub.bind(nil); err != nil {
				return err
			}
		}
		if q.from.e != nil && q.from.iterate {
			// "alias IN container.path": the root name is the container.
			if err := checkRootedAtContainer(q.from.e); err != nil {
				return err
			}
		}
		q.aliases = append(q.aliases, q.from.alias)
		scope = append(scope, q.from.alias)
		for _, j := range q.joins {
			if j.sub != nil {
				if err := j.sub.bind(scope); err != nil {
					return err
				}
			} else if err := bindExpr(j.e, scope, false); err != nil {
				return err
			}
			q.aliases = append(q.aliases, j.alias)
			scope = append(scope, j.alias)
		}
	}
	if q.star && len(q.aliases) > 1 {
		return errAt(0, "'SELECT *' is only valid with a single input set.")
	}
	if q.star && q.from == nil {
		return errAt(0, "'SELECT *' is not valid if FROM clause is omitted.")
	}
	if q.where != nil {
		if err := bindExpr(q.where, scope, false); err != nil {
			return err
		}
	}
	for _, g := range q.groupBy {
		if err := bindExpr(g, scope, false); err != nil {
			return err
		}
	}
	for _, o := range q.orderBy {
		if err := bindExpr(o.e, scope, false); err != nil {
			return err
		}
	}
	agg := false
	check := func(e expr) error {
		if hasAggregate(e) {
			agg = true
		}
		return bindExpr(e, scope, true)
	}
	if q.value != nil {
		if err := check(q.value); err != nil {
			return err
		}
	}
	for _, it := range q.items {
		if err := check(it.e); err != nil {
			return err
		}
	}
	q.hasAgg = agg
	if len(q.groupBy) > 0 && q.star {
		return errAt(0, "'SELECT *' is not allowed with GROUP BY.")
	}
	if agg || len(q.groupBy) > 0 {
		keys := make([]string, len(q.groupBy))
		for i, g := range q.groupBy {
			keys[i] = exprKey(g)
		}
		sel := []expr{q.value}
		for _, it := range q.items {
			sel = append(sel, it.e)
		}
		for _, e := range sel {
			if e != nil && !groupedExpr(e, keys) {
				return errAt(0, "Property reference is invalid in the select list because it is not contained in either an aggregate function or the GROUP BY clause.")
			}
		}
	}
	return nil
}

// exprKey renders an expression structurally, to compare select items with
// GROUP BY expressions. The evaluation plans of comparisons and IN lists
// (pointers derived from the rest of their node) are left out: their
// addresses differ between two parses of the same text.
func exprKey(e expr) string {
	return planPointer.ReplaceAllString(fmt.Sprintf("%#v", e), "")
}

// planPointer matches how %#v prints the plan pointers exprKey leaves out.
var planPointer = regexp.MustCompile(`\(\*emulator\.(eqFast|inSet)\)\((0x[0-9a-f]+|nil)\)`)

// groupedExpr reports whether e only reads the rows through aggregates or
// GROUP BY expressions.
func groupedExpr(e expr, keys []string) bool {
	k := exprKey(e)
	for _, g := range keys {
		if k == g {
			return true
		}
	}
	switch x := e.(type) {
	case litExpr, paramExpr:
		return true
	case identExpr, propExpr, indexExpr:
		return false
	case callExpr:
		if isAggregate(x.name) {
			return true
		}
		for _, a := range x.args {
			if !groupedExpr(a, keys) {
				return false
			}
		}
		return true
	case unaryExpr:
		return groupedExpr(x.x, keys)
	case binaryExpr:
		return groupedExpr(x.l, keys) && groupedExpr(x.r, keys)
	case ternaryExpr:
		return groupedExpr(x.cond, keys) && groupedExpr(x.a, keys) && groupedExpr(x.b, keys)
	case betweenExpr:
		return groupedExpr(x.x, keys) && groupedExpr(x.lo, keys) && groupedExpr(x.hi, keys)
	case inExpr:
		if !groupedExpr(x.x, keys) {
			return false
		}
		for _, l := range x.list {
			if !groupedExpr(l, keys) {
				return false
			}
		}
		return true
	case arrayLit:
		for _, l := range x.elems {
			if !groupedExpr(l, keys) {
				return false
			}
		}
		return true
	case objectLit:
		for _, l := range x.vals {
			if !groupedExpr(l, keys) {
				return false
			}
		}
		return true
	}
	return false
}

// checkRootedAtContainer accepts "name.path" forms in FROM ... IN.
func checkRootedAtContainer(e expr) error {
	switch x := e.(type) {
	case identExpr:
		return nil
	case propExpr:
		return checkRootedAtContainer(x.base)
	case indexExpr:
		return checkRootedAtContainer(x.base)
	}
	return errAt(0, "Syntax error, the FROM source must be a path of the container.")
}

func inScope(name string, scope []string) bool {
	for _, s := range scope {
		if s == name {
			return true
		}
	}
	return false
}

// bindExpr checks identifiers; aggregates are only allowed where allowAgg.
func bindExpr(e expr, scope []string, allowAgg bool) error {
	switch x := e.(type) {
	case nil, litExpr, paramExpr:
		return nil
	case identExpr:
		if !inScope(x.name, scope) {
			return errAt(0, "Identifier '%s' could not be resolved.", x.name)
		}
		return nil
	case propExpr:
		return bindExpr(x.base, scope, allowAgg)
	case indexExpr:
		if err := bindExpr(x.base, scope, allowAgg); err != nil {
			return err
		}
		return bindExpr(x.index, scope, allowAgg)
	case unaryExpr:
		return bindExpr(x.x, scope, allowAgg)
	case binaryExpr:
		if err := bindExpr(x.l, scope, allowAgg); err != nil {
			return err
		}
		return bindExpr(x.r, scope, allowAgg)
	case betweenExpr:
		for _, s := range []expr{x.x, x.lo, x.hi} {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case inExpr:
		if err := bindExpr(x.x, scope, allowAgg); err != nil {
			return err
		}
		for _, s := range x.list {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case likeExpr:
		for _, s := range []expr{x.x, x.pattern, x.escape} {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case ternaryExpr:
		for _, s := range []expr{x.cond, x.a, x.b} {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case callExpr:
		if isAggregate(x.name) {
			if !allowAgg {
				return errAt(0, "Aggregate function '%s' is not allowed in this context.", x.name)
			}
			for _, a := range x.args {
				if hasAggregate(a) {
					return errAt(0, "Cannot perform an aggregate function on an expression containing an aggregate or a subquery.")
				}
				if err := bindExpr(a, scope, false); err != nil {
					return err
				}
			}
			return nil
		}
		for _, a := range x.args {
			if err := bindExpr(a, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case arrayLit:
		for _, s := range x.elems {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case objectLit:
		for _, s := range x.vals {
			if err := bindExpr(s, scope, allowAgg); err != nil {
				return err
			}
		}
		return nil
	case subqueryExpr:
		return x.q.bind(scope)
	}
	return errAt(0, "Unsupported expression.")
}

func isAggregate(name string) bool {
	switch name {
	case "COUNT", "SUM", "MIN", "MAX", "AVG":
		return true
	}
	return false
}

// hasAggregate reports whether e contains an aggregate call outside
// subqueries.
func hasAggregate(e expr) bool {
	switch x := e.(type) {
	case callExpr:
		if isAggregate(x.name) {
			return true
		}
		for _, a := range x.args {
			if hasAggregate(a) {
				return true
			}
		}
	case propExpr:
		return hasAggregate(x.base)
	case indexExpr:
		return hasAggregate(x.base) || hasAggregate(x.index)
	case unaryExpr:
		return hasAggregate(x.x)
	case binaryExpr:
		return hasAggregate(x.l) || hasAggregate(x.r)
	case betweenExpr:
		return hasAggregate(x.x) || hasAggregate(x.lo) || hasAggregate(x.hi)
	case inExpr:
		if hasAggregate(x.x) {
			return true
		}
		for _, s := range x.list {
			if hasAggregate(s) {
				return true
			}
		}
	case ternaryExpr:
		return hasAggregate(x.cond) || hasAggregate(x.a) || hasAggregate(x.b)
	case arrayLit:
		for _, s := range x.elems {
			if hasAggregate(s) {
				return true
			}
		}
	case objectLit:
		for _, s := range x.vals {
			if hasAggregate(s) {
				return true
			}
		}
	}
	return false
}
