package emulator

import (
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The emulator's JSON: a value tree for Cosmos DB's semantics (undefined,
// the type order of ORDER BY, stored documents kept as raw text and parsed
// lazily, 512 levels of nesting) and a strict parser (json_parse.go).
// encoding/json cannot serve here: it loses member order and number
// literals and has no undefined. package duroxide has its own tree, built
// to accept exactly what serde accepts; the emulator depends on the
// standard library only and neither may import the other, so the two stay
// apart. Both would give way to encoding/json/v2's jsontext once it leaves
// the GOEXPERIMENT.

// kind is the JSON type of a value, plus Cosmos DB's "undefined".
// The order of the constants is Cosmos DB's type order for ORDER BY.
type kind uint8

const (
	kUndefined kind = iota
	kNull
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is one JSON value as the query engine sees it. Scalars are held
// inline; arrays and objects live in a compound, possibly still as raw JSON
// text that is parsed only when something looks inside.
type value struct {
	k kind
	b bool
	n float64
	s string
	c *compound
	d *item // a stored document: its body plus the system properties
}

// compound holds the payload of an array or object value.
type compound struct {
	arr []value
	obj []member
	raw []byte // compact JSON text, parsed lazily when arr/obj are nil
}

// member is one property of an object, in document order.
type member struct {
	key string
	val value
}

var (
	undefined = value{}
	jsonNull  = value{k: kNull}
	jsonTrue  = value{k: kBool, b: true}
	jsonFalse = value{k: kBool, b: false}
)

func numberValue(f float64) value { return value{k: kNumber, n: f} }
func stringValue(s string) value  { return value{k: kString, s: s} }
func boolValue(b bool) value {
	if b {
		return jsonTrue
	}
	return jsonFalse
}
func arrayValue(a []value) value   { return value{k: kArray, c: &compound{arr: a}} }
func objectValue(m []member) value { return value{k: kObject, c: &compound{obj: m}} }
func docValue(it *item) value      { return value{k: kObject, d: it} }

// rawValue wraps compact JSON text of an array or object for lazy parsing.
func rawValue(k kind, raw []byte) value { return value{k: k, c: &compound{raw: raw}} }

func (v value) defined() bool { return v.k != kUndefined }

// elems returns the elements of an array value (parsing it if needed).
func (v value) elems() []value {
	if v.k != kArray || v.c == nil {
		return nil
	}
	if v.c.arr == nil && v.c.raw != nil {
		pv, err := parseJSON(v.c.raw)
		if err == nil && pv.k == kArray {
			v.c.arr = pv.c.arr
		}
		if v.c.arr == nil {
			v.c.arr = []value{}
		}
	}
	return v.c.arr
}

// members returns the properties of an object value (parsing it if needed).
func (v value) members() []member {
	if v.d != nil {
		return v.d.members()
	}
	if v.k != kObject || v.c == nil {
		return nil
	}
	if v.c.obj == nil {
		if v.c.raw != nil {
			pv, err := parseJSON(v.c.raw)
			if err == nil && pv.k == kObject {
				v.c.obj = pv.c.obj
			}
		}
		if v.c.obj == nil {
			v.c.obj = []member{}
		}
	}
	return v.c.obj
}

// get returns the property key of an object, or undefined.
func (v value) get(key string) value {
	if v.d != nil {
		return v.d.get(key)
	}
	if v.k != kObject || v.c == nil {
		return undefined
	}
	if v.c.obj != nil {
		for i := len(v.c.obj) - 1; i >= 0; i-- {
			if v.c.obj[i].key == key {
				return v.c.obj[i].val
			}
		}
		return undefined
	}
	if v.c.raw != nil {
		return rawLookup(v.c.raw, key)
	}
	return undefined
}

// at returns element i of an array, or undefined.
func (v value) at(i int) value {
	if v.k != kArray || v.c == nil || i < 0 {
		return undefined
	}
	if v.c.arr == nil && v.c.raw != nil {
		return rawIndex(v.c.raw, i)
	}
	if i >= len(v.c.arr) {
		return undefined
	}
	return v.c.arr[i]
}

// appendJSON appends the compact JSON text of v. Undefined writes nothing;
// callers decide how to skip it.
func (v value) appendJSON(buf []byte) []byte {
	switch v.k {
	case kNull:
		return append(buf, "null"...)
	case kBool:
		if v.b {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case kNumber:
		return appendNumber(buf, v.n)
	case kString:
		return appendString(buf, v.s)
	case kArray:
		if v.c.arr == nil && v.c.raw != nil {
			return append(buf, v.c.raw...)
		}
		buf = append(buf, '[')
		first := true
		for _, e := range v.c.arr {
			if !e.defined() {
				// Cosmos DB drops undefined elements from arrays it emits.
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = e.appendJSON(buf)
		}
		return append(buf, ']')
	case kObject:
		if v.d != nil {
			return v.d.appendJSON(buf)
		}
		if v.c.obj == nil {
			if v.c.raw != nil {
				return append(buf, v.c.raw...)
			}
		}
		buf = append(buf, '{')
		first := true
		for _, m := range v.c.obj {
			if !m.val.defined() {
				continue
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = appendString(buf, m.key)
			buf = append(buf, ':')
			buf = m.val.appendJSON(buf)
		}
		return append(buf, '}')
	}
	return buf
}

// jsonText returns the compact JSON text of v ("" for undefined).
func (v value) jsonText() string {
	if !v.defined() {
		return ""
	}
	return string(v.appendJSON(nil))
}

// appendNumber formats f the way JavaScript (and Cosmos DB) prints numbers.
func appendNumber(buf []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(buf, "null"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		if math.Abs(f) < 1<<53 {
			return strconv.AppendInt(buf, int64(f), 10)
		}
		return strconv.AppendFloat(buf, f, 'f', -1, 64)
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(buf, f, 'f', -1, 64)
	}
	return strconv.AppendFloat(buf, f, 'e', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string literal.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			buf = append(buf, s[start:i]...)
			switch c {
			case '"':
				buf = append(buf, '\\', '"')
			case '\\':
				buf = append(buf, '\\', '\\')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// compareValues orders two values the way ORDER BY does: by type first
// (undefined < null < boolean < number < string < array < object), then by
// value. Arrays and objects compare by their JSON text, which is arbitrary but
// stable, as the service's hash ordering is.
func compareValues(a, b value) int {
	if a.k != b.k {
		if a.k < b.k {
			return -1
		}
		return 1
	}
	switch a.k {
	case kBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		default:
			return 1
		}
	case kNumber:
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return 0
	case kString:
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return 0
	case kArray, kObject:
		as, bs := a.canonical(), b.canonical()
		switch {
		case as < bs:
			return -1
		case as > bs:
			return 1
		}
		return 0
	}
	return 0
}

// equalValues implements "=" between two defined values of the same kind:
// deep equality, with object properties compared regardless of order.
func equalValues(a, b value) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kNull:
		return true
	case kBool:
		return a.b == b.b
	case kNumber:
		return a.n == b.n
	case kString:
		return a.s == b.s
	case kArray:
		ae, be := a.elems(), b.elems()
		if len(ae) != len(be) {
			return false
		}
		for i := range ae {
			if !equalValues(ae[i], be[i]) {
				return false
			}
		}
		return true
	case kObject:
		return a.canonical() == b.canonical()
	}
	return false
}

// canonical returns a JSON text of v with object keys sorted, so that equal
// values have equal texts (used for DISTINCT, GROUP BY and partition keys).
func (v value) canonical() string {
	return string(v.appendCanonical(nil))
}

func (v value) appendCanonical(buf []byte) []byte {
	switch v.k {
	case kUndefined:
		return append(buf, "undefined"...)
	case kArray:
		buf = append(buf, '[')
		for i, e := range v.elems() {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = e.appendCanonical(buf)
		}
		return append(buf, ']')
	case kObject:
		ms := v.members()
		idx := make([]int, 0, len(ms))
		seen := make(map[string]int, len(ms))
		for i, m := range ms {
			if !m.val.defined() {
				continue
			}
			if j, ok := seen[m.key]; ok {
				idx[j] = i
				continue
			}
			seen[m.key] = len(idx)
			idx = append(idx, i)
		}
		sort.Slice(idx, func(x, y int) bool { return ms[idx[x]].key < ms[idx[y]].key })
		buf = append(buf, '{')
		for n, i := range idx {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, ms[i].key)
			buf = append(buf, ':')
			buf = ms[i].val.appendCanonical(buf)
		}
		return append(buf, '}')
	}
	return v.appendJSON(buf)
}

// truthy reports whether v is the boolean true (the only value a filter keeps).
func (v value) truthy() bool { return v.k == kBool && v.b }

// typeName is the name used in error messages.
func (k kind) String() string {
	switch k {
	case kNull:
		return "null"
	case kBool:
		return "boolean"
	case kNumber:
		return "number"
	case kString:
		return "string"
	case kArray:
		return "array"
	case kObject:
		return "object"
	}
	return "undefined"
}
