package emulator

import (
	"math"
	"strings"
)

// evaluator evaluates expressions of one query execution.
type evaluator struct {
	params map[string]value
	names  []string    // aliases bound in a row, outer query first
	group  []resultRow // rows of the current group, for aggregates
	err    error
	rowBuf []value // reusable one-value row for simple FROM clauses
	// paramJSON caches encoded scalar parameters for the equality fast path.
	paramJSON map[string][]byte
}

// eval evaluates e against row, whose values correspond to ev.names.
func (ev *evaluator) eval(e expr, row []value) value {
	switch x := e.(type) {
	case litExpr:
		return x.v
	case paramExpr:
		v, ok := ev.params[x.name]
		if !ok {
			if ev.err == nil {
				ev.err = errAt(0, "The parameter %s is not defined in the query parameters.", x.name)
			}
			return undefined
		}
		return v
	case identExpr:
		return ev.ident(x.name, row)
	case propExpr:
		if x.root != "" {
			base := ev.ident(x.root, row)
			if base.d != nil {
				return base.d.getPath(x.path)
			}
			for _, seg := range x.path {
				base = base.get(seg)
			}
			return base
		}
		return ev.eval(x.base, row).get(x.name)
	case indexExpr:
		base := ev.eval(x.base, row)
		idx := ev.eval(x.index, row)
		switch {
		case base.k == kArray && idx.k == kNumber && idx.n == math.Trunc(idx.n):
			return base.at(int(idx.n))
		case base.k == kObject && idx.k == kString:
			return base.get(idx.s)
		}
		return undefined
	case unaryExpr:
		v := ev.eval(x.x, row)
		switch x.op {
		case "NOT":
			if v.k == kBool {
				return boolValue(!v.b)
			}
		case "-":
			if v.k == kNumber {
				return numberValue(-v.n)
			}
		case "+":
			if v.k == kNumber {
				return v
			}
		case "~":
			if v.k == kNumber {
				return numberValue(float64(^toInt32(v.n)))
			}
		}
		return undefined
	case binaryExpr:
		return ev.binary(x, row)
	case betweenExpr:
		v := ev.eval(x.x, row)
		lo := ev.eval(x.lo, row)
		hi := ev.eval(x.hi, row)
		r := and3(compareOp(">=", v, lo), compareOp("<=", v, hi))
		if x.not {
			return not3(r)
		}
		return r
	case inExpr:
		v := ev.eval(x.x, row)
		r := jsonFalse
		if x.set != nil {
			r = x.set.eval(v)
			if x.not {
				return not3(r)
			}
			return r
		}
		for _, le := range x.list {
			r = or3(r, compareOp("=", v, ev.eval(le, row)))
			if r.truthy() {
				break
			}
		}
		if x.not {
			return not3(r)
		}
		return r
	case likeExpr:
		v := ev.eval(x.x, row)
		pat := ev.eval(x.pattern, row)
		if v.k != kString || pat.k != kString {
			return undefined
		}
		esc := rune(0)
		if x.escape != nil {
			ev := ev.eval(x.escape, row)
			if ev.k != kString || len([]rune(ev.s)) != 1 {
				return undefined
			}
			esc = []rune(ev.s)[0]
		}
		m := likeMatch([]rune(v.s), []rune(pat.s), esc)
		if x.not {
			m = !m
		}
		return boolValue(m)
	case ternaryExpr:
		if ev.eval(x.cond, row).truthy() {
			return ev.eval(x.a, row)
		}
		return ev.eval(x.b, row)
	case callExpr:
		if isAggregate(x.name) {
			return ev.aggregate(x, row)
		}
		args := make([]value, len(x.args))
		for i, a := range x.args {
			args[i] = ev.eval(a, row)
		}
		return callBuiltin(x.name, args)
	case arrayLit:
		out := make([]value, 0, len(x.elems))
		for _, el := range x.elems {
			out = append(out, ev.eval(el, row))
		}
		return arrayValue(out)
	case objectLit:
		out := make([]member, 0, len(x.keys))
		for i, k := range x.keys {
			if v := ev.eval(x.vals[i], row); v.defined() {
				out = append(out, member{key: k, val: v})
			}
		}
		return objectValue(out)
	case subqueryExpr:
		return ev.subquery(x, row)
	}
	return undefined
}

// ident returns the value bound to an alias in row.
func (ev *evaluator) ident(name string, row []value) value {
	for i := len(ev.names) - 1; i >= 0; i-- {
		if ev.names[i] == name {
			if i < len(row) {
				return row[i]
			}
			return undefined
		}
	}
	return undefined
}

func (ev *evaluator) binary(x binaryExpr, row []value) value {
	switch x.op {
	case "AND":
		l := ev.eval(x.l, row)
		if l.k == kBool && !l.b {
			return jsonFalse
		}
		return and3(l, ev.eval(x.r, row))
	case "OR":
		l := ev.eval(x.l, row)
		if l.truthy() {
			return jsonTrue
		}
		return or3(l, ev.eval(x.r, row))
	case "??":
		l := ev.eval(x.l, row)
		if l.defined() {
			return l
		}
		return ev.eval(x.r, row)
	}
	if x.eq != nil {
		if v, ok := ev.evalEq(x, row); ok {
			return v
		}
	}
	l := ev.eval(x.l, row)
	r := ev.eval(x.r, row)
	switch x.op {
	case "=", "!=", "<", ">", "<=", ">=":
		return compareOp(x.op, l, r)
	case "||":
		if l.k == kString && r.k == kString {
			return stringValue(l.s + r.s)
		}
		return undefined
	}
	if l.k != kNumber || r.k != kNumber {
		return undefined
	}
	a, b := l.n, r.n
	switch x.op {
	case "+":
		return numberValue(a + b)
	case "-":
		return numberValue(a - b)
	case "*":
		return numberValue(a * b)
	case "/":
		if b == 0 {
			return undefined
		}
		return numberValue(a / b)
	case "%":
		if b == 0 {
			return undefined
		}
		return numberValue(math.Mod(a, b))
	case "&":
		return numberValue(float64(toInt32(a) & toInt32(b)))
	case "|":
		return numberValue(float64(toInt32(a) | toInt32(b)))
	case "^":
		return numberValue(float64(toInt32(a) ^ toInt32(b)))
	case "<<":
		return numberValue(float64(toInt32(a) << (uint32(toInt32(b)) & 31)))
	case ">>":
		return numberValue(float64(toInt32(a) >> (uint32(toInt32(b)) & 31)))
	case ">>>":
		return numberValue(float64(uint32(toInt32(a)) >> (uint32(toInt32(b)) & 31)))
	}
	return undefined
}

// toInt32 converts like JavaScript's ToInt32.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return int32(uint32(int64(math.Mod(math.Trunc(f), 4294967296))))
}

// compareOp implements the comparison operators: values of different types,
// and ordering comparisons of arrays or objects, are undefined.
func compareOp(op string, l, r value) value {
	if !l.defined() || !r.defined() || l.k != r.k {
		return undefined
	}
	switch op {
	case "=":
		return boolValue(equalValues(l, r))
	case "!=":
		return boolValue(!equalValues(l, r))
	}
	if l.k == kArray || l.k == kObject {
		return undefined
	}
	c := compareValues(l, r)
	switch op {
	case "<":
		return boolValue(c < 0)
	case ">":
		return boolValue(c > 0)
	case "<=":
		return boolValue(c <= 0)
	case ">=":
		return boolValue(c >= 0)
	}
	return undefined
}

// Three-valued logic: anything but a boolean is undefined.
func and3(a, b value) value {
	if (a.k == kBool && !a.b) || (b.k == kBool && !b.b) {
		return jsonFalse
	}
	if a.k == kBool && b.k == kBool {
		return jsonTrue
	}
	return undefined
}

func or3(a, b value) value {
	if a.truthy() || b.truthy() {
		return jsonTrue
	}
	if a.k == kBool && b.k == kBool {
		return jsonFalse
	}
	return undefined
}

func not3(a value) value {
	if a.k == kBool {
		return boolValue(!a.b)
	}
	return undefined
}

// likeMatch matches s against a LIKE pattern: % any run, _ one character,
// [abc] / [a-z] / [^abc] character classes, esc escaping the next character.
func likeMatch(s, p []rune, esc rune) bool {
	for len(p) > 0 {
		c := p[0]
		switch {
		case esc != 0 && c == esc && len(p) > 1:
			if len(s) == 0 || s[0] != p[1] {
				return false
			}
			s, p = s[1:], p[2:]
		case c == '%':
			for len(p) > 0 && p[0] == '%' {
				p = p[1:]
			}
			if len(p) == 0 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if likeMatch(s[i:], p, esc) {
					return true
				}
			}
			return false
		case c == '_':
			if len(s) == 0 {
				return false
			}
			s, p = s[1:], p[1:]
		case c == '[':
			end := -1
			for i := 1; i < len(p); i++ {
				if p[i] == ']' {
					end = i
					break
				}
			}
			if end < 0 {
				if len(s) == 0 || s[0] != c {
					return false
				}
				s, p = s[1:], p[1:]
				continue
			}
			if len(s) == 0 {
				return false
			}
			class := p[1:end]
			neg := len(class) > 0 && class[0] == '^'
			if neg {
				class = class[1:]
			}
			in := false
			for i := 0; i < len(class); i++ {
				if i+2 < len(class) && class[i+1] == '-' {
					if s[0] >= class[i] && s[0] <= class[i+2] {
						in = true
					}
					i += 2
				} else if class[i] == s[0] {
					in = true
				}
			}
			if in == neg {
				return false
			}
			s, p = s[1:], p[end+1:]
		default:
			if len(s) == 0 || s[0] != c {
				return false
			}
			s, p = s[1:], p[1:]
		}
	}
	return len(s) == 0
}

// aggregate evaluates an aggregate call over the current group.
func (ev *evaluator) aggregate(x callExpr, _ []value) value {
	group := ev.group
	arg := func(i int) value { return ev.eval(x.args[0], group[i].rowValues(ev)) }
	switch x.name {
	case "COUNT":
		n := 0
		for i := range group {
			if arg(i).defined() {
				n++
			}
		}
		return numberValue(float64(n))
	case "SUM", "AVG":
		sum, n := 0.0, 0
		for i := range group {
			v := arg(i)
			switch v.k {
			case kUndefined:
				continue
			case kNumber:
				sum += v.n
				n++
			default:
				return undefined
			}
		}
		if x.name == "SUM" {
			return numberValue(sum)
		}
		if n == 0 {
			return undefined
		}
		return numberValue(sum / float64(n))
	case "MIN", "MAX":
		best := undefined
		for i := range group {
			v := arg(i)
			switch v.k {
			case kUndefined:
				continue
			case kArray, kObject:
				return undefined
			}
			if !best.defined() {
				best = v
				continue
			}
			c := compareValues(v, best)
			if (x.name == "MIN" && c < 0) || (x.name == "MAX" && c > 0) {
				best = v
			}
		}
		return best
	}
	return undefined
}

// subquery evaluates a correlated subquery for one outer row.
func (ev *evaluator) subquery(x subqueryExpr, row []value) value {
	res, err := runSubquery(x.q, ev, row)
	if err != nil {
		if ev.err == nil {
			ev.err = err
		}
		return undefined
	}
	switch x.kind {
	case "EXISTS":
		return boolValue(len(res) > 0)
	case "ARRAY":
		return arrayValue(res)
	}
	if len(res) == 0 {
		return undefined
	}
	return res[0]
}

// strArgs reports whether every value is a string.
func allKind(k kind, vs ...value) bool {
	for _, v := range vs {
		if v.k != k {
			return false
		}
	}
	return true
}

// foldCase lower-cases s for the ignoreCase arguments of string functions.
func foldCase(s string, ignore bool) string {
	if ignore {
		return strings.ToLower(s)
	}
	return s
}
