package emulator

import "slices"

// inSet is the plan of "x IN (literal, ...)" when every listed value is a
// scalar literal, as in the provider's dispatch slot filter
// "c.dispatchSlot IN (0, 2, 4, ...)" with up to 256 numbers: a set lookup
// instead of one comparison per element. Its result is the generic
// evaluation's (an OR of "x = element" in three-valued logic): true when
// an element equals x; otherwise undefined when x is undefined or some
// element has another type than x (that comparison is undefined), and
// false when every comparison was defined.
type inSet struct {
	nums  map[float64]struct{}
	strs  map[string]struct{}
	bools [2]bool // false, true listed
	null  bool
	kinds uint8 // bit 1<<kind for each kind listed
	// texts are the distinct listed values as compact JSON, in list order,
	// for the equality index (query_index.go).
	texts []string
}

// newIn builds an IN expression, planning the set when the list allows it.
func newIn(x expr, list []expr, not bool) inExpr {
	in := inExpr{x: x, list: list, not: not}
	s := &inSet{}
	for _, e := range list {
		lit, ok := e.(litExpr)
		if !ok {
			return in
		}
		v := lit.v
		switch v.k {
		case kNull:
			s.null = true
		case kBool:
			if v.b {
				s.bools[1] = true
			} else {
				s.bools[0] = true
			}
		case kNumber:
			if s.nums == nil {
				s.nums = make(map[float64]struct{})
			}
			s.nums[v.n] = struct{}{}
		case kString:
			if s.strs == nil {
				s.strs = make(map[string]struct{})
			}
			s.strs[v.s] = struct{}{}
		default:
			return in
		}
		s.kinds |= 1 << v.k
		if t := string(v.appendJSON(nil)); !slices.Contains(s.texts, t) {
			s.texts = append(s.texts, t)
		}
	}
	in.set = s
	return in
}

// eval returns the value of "v IN (the set)", before NOT.
func (s *inSet) eval(v value) value {
	if !v.defined() {
		return undefined
	}
	found := false
	switch v.k {
	case kNull:
		found = s.null
	case kBool:
		if v.b {
			found = s.bools[1]
		} else {
			found = s.bools[0]
		}
	case kNumber:
		_, found = s.nums[v.n]
	case kString:
		_, found = s.strs[v.s]
	}
	switch {
	case found:
		return jsonTrue
	case s.kinds&^(1<<v.k) != 0:
		return undefined // an element of another type: that comparison is undefined
	}
	return jsonFalse
}
