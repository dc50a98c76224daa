package emulator

import "bytes"

// eqFast is the plan for "path = scalar" (or "!="), the most common filter:
// stored documents are canonical compact JSON, so two scalars are equal
// exactly when their JSON texts are, and the stored bytes can be compared
// with the encoded scalar without parsing the document.
type eqFast struct {
	root  string   // alias the path starts from
	path  []string // property path, no system properties
	other expr     // the literal or parameter side
	lit   []byte   // encoded literal; nil for a parameter
}

// newComparison builds a comparison, planning the fast path when one side
// is a plain property path and the other a scalar literal or a parameter.
func newComparison(op string, l, r expr) binaryExpr {
	b := binaryExpr{op: op, l: l, r: r}
	if op != "=" && op != "!=" {
		return b
	}
	path, other := l, r
	if _, ok := path.(propExpr); !ok {
		path, other = r, l
	}
	pe, ok := path.(propExpr)
	if !ok || pe.root == "" || len(pe.path[0]) > 0 && pe.path[0][0] == '_' {
		return b
	}
	f := &eqFast{root: pe.root, path: pe.path, other: other}
	switch o := other.(type) {
	case litExpr:
		switch o.v.k {
		case kNull, kBool, kNumber, kString:
			f.lit = o.v.appendJSON(nil)
		default:
			return b
		}
	case paramExpr:
	default:
		return b
	}
	b.eq = f
	return b
}

// jsonKindAt tells the kind of the JSON value starting with byte c.
func jsonKindAt(c byte) kind {
	switch {
	case c == '"':
		return kString
	case c == '{':
		return kObject
	case c == '[':
		return kArray
	case c == 't' || c == 'f':
		return kBool
	case c == 'n':
		return kNull
	}
	return kNumber
}

// evalEq evaluates a planned equality; ok is false when the fast path does
// not apply to this row (the caller then evaluates generically).
func (ev *evaluator) evalEq(x binaryExpr, row []value) (value, bool) {
	f := x.eq
	base := ev.ident(f.root, row)
	if base.d == nil {
		return undefined, false
	}
	lit := f.lit
	var litKind kind
	if lit == nil {
		pv, ok := ev.params[f.other.(paramExpr).name]
		if !ok {
			return undefined, false // let the generic path report it
		}
		switch pv.k {
		case kNull, kBool, kNumber, kString:
		default:
			return undefined, false
		}
		if ev.paramJSON == nil {
			ev.paramJSON = make(map[string][]byte)
		}
		name := f.other.(paramExpr).name
		lit = ev.paramJSON[name]
		if lit == nil {
			lit = pv.appendJSON(nil)
			ev.paramJSON[name] = lit
		}
	}
	litKind = jsonKindAt(lit[0])
	it := base.d
	off, ok := it.pathOffset(f.path)
	if !ok {
		return undefined, true // undefined path: comparison is undefined
	}
	b := it.body
	if jsonKindAt(b[off]) != litKind {
		return undefined, true
	}
	equal := bytes.HasPrefix(b[off:], lit)
	if equal && litKind == kNumber {
		// "1" must not match the prefix of "12" or "1.5".
		if end := off + len(lit); end < len(b) {
			switch b[end] {
			case ',', '}', ']':
			default:
				equal = false
			}
		}
	}
	if x.op == "!=" {
		equal = !equal
	}
	return boolValue(equal), true
}
