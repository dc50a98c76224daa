package emulator

import (
	"bytes"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// errBadJSON is returned for any malformed JSON text.
var errBadJSON = errors.New("malformed JSON")

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 512

// jsonParser is a small strict JSON parser over a byte slice.
type jsonParser struct {
	b     []byte
	i     int
	depth int
	lazy  bool // keep nested arrays/objects as raw text instead of parsing them
	// borrow lets strings share memory with b. Only for text that is never
	// modified afterwards (stored documents) and already validated.
	borrow bool
}

// parseJSON parses a complete JSON text into a fully materialized value.
func parseJSON(b []byte) (value, error) {
	p := jsonParser{b: b}
	v, err := p.value()
	if err != nil {
		return undefined, err
	}
	p.ws()
	if p.i != len(p.b) {
		return undefined, errBadJSON
	}
	return v, nil
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (value, error) {
	p.ws()
	if p.i >= len(p.b) {
		return undefined, errBadJSON
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if p.lazy {
			return p.lazyCompound(kObject)
		}
		return p.object()
	case c == '[':
		if p.lazy {
			return p.lazyCompound(kArray)
		}
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return undefined, err
		}
		return stringValue(s), nil
	case c == 't':
		return p.literal("true", jsonTrue)
	case c == 'f':
		return p.literal("false", jsonFalse)
	case c == 'n':
		return p.literal("null", jsonNull)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return undefined, errBadJSON
}

func (p *jsonParser) lazyCompound(k kind) (value, error) {
	start := p.i
	if err := p.skip(); err != nil {
		return undefined, err
	}
	return rawValue(k, p.b[start:p.i]), nil
}

func (p *jsonParser) literal(word string, v value) (value, error) {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return undefined, errBadJSON
	}
	p.i += len(word)
	return v, nil
}

func (p *jsonParser) numberEnd() (int, error) {
	i := p.i
	b := p.b
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return 0, errBadJSON
	}
	if b[i] == '0' {
		i++
	} else if b[i] >= '1' && b[i] <= '9' {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	} else {
		return 0, errBadJSON
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, errBadJSON
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, errBadJSON
		}
	}
	return i, nil
}

func (p *jsonParser) number() (value, error) {
	end, err := p.numberEnd()
	if err != nil {
		return undefined, err
	}
	// Fast path: small integers, by far the most common numbers.
	if digits := p.b[p.i:end]; len(digits) > 0 && len(digits) <= 15 {
		neg := digits[0] == '-'
		if neg {
			digits = digits[1:]
		}
		var n int64
		ok := len(digits) > 0
		for _, c := range digits {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			n = n*10 + int64(c-'0')
		}
		if ok {
			if neg {
				n = -n
			}
			p.i = end
			return numberValue(float64(n)), nil
		}
	}
	f, err := strconv.ParseFloat(string(p.b[p.i:end]), 64)
	if err != nil {
		// Out-of-range numbers saturate to ±Inf, which JSON cannot carry.
		return undefined, errBadJSON
	}
	p.i = end
	return numberValue(f), nil
}

// str parses a string literal at p.i.
func (p *jsonParser) str() (string, error) {
	b := p.b
	i := p.i + 1
	start := i
	if p.borrow {
		q := bytes.IndexByte(b[start:], '"')
		if q >= 0 && bytes.IndexByte(b[start:start+q], '\\') < 0 {
			p.i = start + q + 1
			return unsafe.String(unsafe.SliceData(b[start:]), q), nil
		}
	}
	for i < len(b) {
		c := b[i]
		if c == '"' {
			if !utf8.Valid(b[start:i]) {
				return "", errBadJSON
			}
			s := string(b[start:i])
			p.i = i + 1
			return s, nil
		}
		if c == '\\' {
			if !utf8.Valid(b[start:i]) {
				return "", errBadJSON
			}
			return p.strSlow(start)
		}
		if c < 0x20 {
			return "", errBadJSON
		}
		i++
	}
	return "", errBadJSON
}

func (p *jsonParser) strSlow(start int) (string, error) {
	b := p.b
	out := make([]byte, 0, 16)
	i := start
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return string(out), nil
		case c < 0x20:
			return "", errBadJSON
		case c != '\\':
			if c >= utf8.RuneSelf {
				r, size := utf8.DecodeRune(b[i:])
				if r == utf8.RuneError && size == 1 {
					return "", errBadJSON
				}
				out = append(out, b[i:i+size]...)
				i += size
				continue
			}
			out = append(out, c)
			i++
			continue
		}
		i++
		if i >= len(b) {
			return "", errBadJSON
		}
		switch b[i] {
		case '"', '\\', '/':
			out = append(out, b[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, ok := hex4(b, i+1)
			if !ok {
				return "", errBadJSON
			}
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, n2, ok2 := hex4(b, i+3)
					if ok2 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							r = dec
							i += 2 + n2
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", errBadJSON
		}
		i++
	}
	return "", errBadJSON
}

// hex4 decodes four hex digits at b[i:]; n is the count of bytes consumed.
func hex4(b []byte, i int) (rune, int, bool) {
	if i+4 > len(b) {
		return 0, 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, 0, false
		}
	}
	return r, 4, true
}

func (p *jsonParser) object() (value, error) {
	p.depth++
	if p.depth > maxJSONDepth {
		return undefined, errBadJSON
	}
	defer func() { p.depth-- }()
	p.i++ // '{'
	members := make([]member, 0, 8)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return objectValue(members), nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return undefined, errBadJSON
		}
		key, err := p.str()
		if err != nil {
			return undefined, err
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return undefined, errBadJSON
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return undefined, err
		}
		members = append(members, member{key: key, val: v})
		p.ws()
		if p.i >= len(p.b) {
			return undefined, errBadJSON
		}
		if p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.b[p.i] == '}' {
			p.i++
			return objectValue(members), nil
		}
		return undefined, errBadJSON
	}
}

func (p *jsonParser) array() (value, error) {
	p.depth++
	if p.depth > maxJSONDepth {
		return undefined, errBadJSON
	}
	defer func() { p.depth-- }()
	p.i++ // '['
	elems := make([]value, 0, 4)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arrayValue(elems), nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return undefined, err
		}
		elems = append(elems, v)
		p.ws()
		if p.i >= len(p.b) {
			return undefined, errBadJSON
		}
		if p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.b[p.i] == ']' {
			p.i++
			return arrayValue(elems), nil
		}
		return undefined, errBadJSON
	}
}

// skip advances past one value without building it.
func (p *jsonParser) skip() error {
	p.ws()
	if p.i >= len(p.b) {
		return errBadJSON
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.skipString()
	case c == '{' || c == '[':
		// Nesting-aware scan; strings may contain brackets.
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if err := p.skipString(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
				if depth > maxJSONDepth {
					return errBadJSON
				}
			case '}', ']':
				depth--
				if depth == 0 {
					p.i++
					return nil
				}
			}
			p.i++
		}
		return errBadJSON
	case c == 't':
		_, err := p.literal("true", jsonTrue)
		return err
	case c == 'f':
		_, err := p.literal("false", jsonFalse)
		return err
	case c == 'n':
		_, err := p.literal("null", jsonNull)
		return err
	default:
		end, err := p.numberEnd()
		if err != nil {
			return err
		}
		p.i = end
		return nil
	}
}

func (p *jsonParser) skipString() error {
	i := p.i + 1
	for {
		q := bytes.IndexByte(p.b[i:], '"')
		if q < 0 {
			return errBadJSON
		}
		end := i + q
		// The quote is escaped when an odd number of backslashes precede it.
		bs := 0
		for j := end - 1; j >= p.i+1 && p.b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			p.i = end + 1
			return nil
		}
		i = end + 1
	}
}

// lazyValueAt parses the value starting at b[off]: scalars fully, arrays
// and objects as raw text. b must be valid, never-modified JSON.
func lazyValueAt(b []byte, off int) value {
	p := jsonParser{b: b, i: off, lazy: true, borrow: true}
	v, err := p.value()
	if err != nil {
		return undefined
	}
	return v
}

// rawKeyOffset finds property key of the object starting at b[start] and
// returns the offset of its value. With duplicate keys the last one wins.
// b must be valid JSON (stored, validated documents).
func rawKeyOffset(b []byte, start int, key string) (int, bool) {
	p := jsonParser{b: b, i: start, borrow: true}
	p.ws()
	if p.i >= len(b) || b[p.i] != '{' {
		return 0, false
	}
	p.i++
	found, ok := 0, false
	for {
		p.ws()
		if p.i >= len(b) || b[p.i] == '}' {
			return found, ok
		}
		if b[p.i] == ',' {
			p.i++
			p.ws()
		}
		if p.i >= len(b) || b[p.i] != '"' {
			return found, ok
		}
		match, valid := p.keyEquals(key)
		if !valid {
			return found, ok
		}
		p.ws()
		if p.i >= len(b) || b[p.i] != ':' {
			return found, ok
		}
		p.i++
		p.ws()
		if match {
			found, ok = p.i, true
		}
		if p.skip() != nil {
			return found, ok
		}
	}
}

// rawIndexOffset finds element idx of the array starting at b[start].
func rawIndexOffset(b []byte, start, idx int) (int, bool) {
	p := jsonParser{b: b, i: start, borrow: true}
	p.ws()
	if p.i >= len(b) || b[p.i] != '[' {
		return 0, false
	}
	p.i++
	for n := 0; ; n++ {
		p.ws()
		if p.i >= len(b) || b[p.i] == ']' {
			return 0, false
		}
		if b[p.i] == ',' {
			p.i++
			p.ws()
		}
		if n == idx {
			return p.i, true
		}
		if p.skip() != nil {
			return 0, false
		}
	}
}

// rawLookup finds property key in the JSON object text raw and returns its
// value, parsing scalars and keeping nested compounds raw.
func rawLookup(raw []byte, key string) value {
	off, ok := rawKeyOffset(raw, 0, key)
	if !ok {
		return undefined
	}
	return lazyValueAt(raw, off)
}

// rawIndex returns element i of the JSON array text raw.
func rawIndex(raw []byte, idx int) value {
	off, ok := rawIndexOffset(raw, 0, idx)
	if !ok {
		return undefined
	}
	return lazyValueAt(raw, off)
}

// keyEquals consumes the string at p.i and reports whether it equals key.
func (p *jsonParser) keyEquals(key string) (match, ok bool) {
	b := p.b
	start := p.i + 1
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '"':
			p.i = i + 1
			return string(b[start:i]) == key, true
		case '\\':
			s, err := p.str()
			if err != nil {
				return false, false
			}
			return s == key, true
		}
	}
	return false, false
}
