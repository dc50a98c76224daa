package duroxide

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file parses JSON text into a jsonValue tree that keeps what serde
// needs and encoding/json throws away: the order of object members, their
// duplicates, and each number's literal text. The grammar is RFC 8259's,
// checked as strictly as serde_json checks it: no leading zeros, no control
// characters inside strings, valid escapes only, valid UTF-8 only (a Rust
// &str cannot hold anything else), nothing but whitespace after the value,
// and at most maxJSONDepth nested arrays and objects (serde_json's recursion
// limit of 128 includes the outermost value).
//
// Why its own parser, and why not the emulator's. encoding/json decodes into
// maps and float64s, losing member order, duplicate members and number
// literals, all of which decide what serde accepts; this tree keeps them.
// The emulator has a JSON value of its own (package emulator's json_value
// and json_parse) built for another job: Cosmos DB's query semantics
// (undefined, type order, lazily parsed stored documents, 512 levels). The
// package map keeps duroxide free of every project import, and the two
// answer different questions about the same bytes, so they are not shared.
// Both would give way to encoding/json/v2's jsontext (member order,
// duplicates and raw number literals, streaming) once it leaves the
// GOEXPERIMENT and the module can require it.

// maxJSONDepth is the deepest nesting of arrays and objects accepted.
const maxJSONDepth = 127

// jsonKind is the JSON type of a jsonValue.
type jsonKind uint8

// The JSON types.
const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is one parsed JSON value.
type jsonValue struct {
	kind jsonKind
	// boolean is the value of a jsonBool.
	boolean bool
	// text is the decoded contents of a jsonString, or the literal of a
	// jsonNumber ("-12", "1.5e3").
	text string
	// loneSurrogate is set on a jsonString whose escapes hold an unpaired
	// UTF-16 surrogate (\ud800 alone). serde_json refuses such a string
	// when it reads it, but skips it unread in an ignored field, so the
	// refusal happens when the string is used (see jsonValue.str).
	loneSurrogate bool
	// items are the elements of a jsonArray.
	items []jsonValue
	// members are the members of a jsonObject, in document order,
	// duplicates included.
	members []jsonMember
}

// jsonMember is one "key": value pair of an object.
type jsonMember struct {
	key string
	// keyLoneSurrogate is the key's jsonValue.loneSurrogate.
	keyLoneSurrogate bool
	value            jsonValue
}

// parseMode selects how strictly strings and numbers that the decoder may
// never read are checked.
type parseMode uint8

const (
	// parseLazy defers the checks serde_json skips for ignored values
	// (unpaired surrogates) to the moment a value is read; this is how
	// serde_json reads a plain struct or externally tagged enum.
	parseLazy parseMode = iota
	// parseEager fails at once on an unpaired surrogate or on a number
	// too large for an f64, as serde_json does when it buffers a whole
	// object (serde's Content), which it does for Event because of
	// #[serde(flatten)].
	parseEager
)

// parseJSON parses data as exactly one JSON value.
func parseJSON(data []byte, mode parseMode) (jsonValue, error) {
	p := jsonParser{data: data, mode: mode}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return jsonValue{}, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return jsonValue{}, p.errorf("trailing characters")
	}
	return v, nil
}

// jsonParser is a recursive-descent parser over data.
type jsonParser struct {
	data []byte
	pos  int
	mode parseMode
}

// errorf returns a syntax error that names the byte offset.
func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// literal consumes word (true, false, null) or fails.
func (p *jsonParser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.errorf("expected value")
	}
	p.pos += len(word)
	return nil
}

// value parses one value at nesting depth (0 for the outermost).
func (p *jsonParser) value(depth int) (jsonValue, error) {
	if p.pos >= len(p.data) {
		return jsonValue{}, p.errorf("EOF while parsing a value")
	}
	switch c := p.data[p.pos]; {
	case c == 'n':
		return jsonValue{kind: jsonNull}, p.literal("null")
	case c == 't':
		return jsonValue{kind: jsonBool, boolean: true}, p.literal("true")
	case c == 'f':
		return jsonValue{kind: jsonBool}, p.literal("false")
	case c == '"':
		s, lone, err := p.str()
		if err != nil {
			return jsonValue{}, err
		}
		return jsonValue{kind: jsonString, text: s, loneSurrogate: lone}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == '[':
		return p.array(depth + 1)
	case c == '{':
		return p.object(depth + 1)
	}
	return jsonValue{}, p.errorf("expected value")
}

func (p *jsonParser) array(depth int) (jsonValue, error) {
	if depth > maxJSONDepth {
		return jsonValue{}, p.errorf("recursion limit exceeded")
	}
	p.pos++ // '['
	v := jsonValue{kind: jsonArray}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth)
		if err != nil {
			return jsonValue{}, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jsonValue{}, p.errorf("EOF while parsing a list")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return jsonValue{}, p.errorf("expected `,` or `]`")
		}
	}
}

func (p *jsonParser) object(depth int) (jsonValue, error) {
	if depth > maxJSONDepth {
		return jsonValue{}, p.errorf("recursion limit exceeded")
	}
	p.pos++ // '{'
	v := jsonValue{kind: jsonObject}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return jsonValue{}, p.errorf("key must be a string")
		}
		key, lone, err := p.str()
		if err != nil {
			return jsonValue{}, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return jsonValue{}, p.errorf("expected `:`")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value(depth)
		if err != nil {
			return jsonValue{}, err
		}
		v.members = append(v.members, jsonMember{key: key, keyLoneSurrogate: lone, value: val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return jsonValue{}, p.errorf("EOF while parsing an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return jsonValue{}, p.errorf("expected `,` or `}`")
		}
	}
}

// number scans a number literal: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonParser) number() (jsonValue, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos >= len(p.data) {
		return jsonValue{}, p.errorf("EOF while parsing a value")
	}
	switch c := p.data[p.pos]; {
	case c == '0':
		p.pos++
		if p.pos < len(p.data) && isDigit(p.data[p.pos]) {
			return jsonValue{}, p.errorf("invalid number")
		}
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return jsonValue{}, p.errorf("invalid number")
	}
	integer := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		integer = false
		p.pos++
		if p.digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		integer = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return jsonValue{}, p.errorf("invalid number")
		}
	}
	text := string(p.data[start:p.pos])
	if p.mode == parseEager && !fitsInteger(text, integer) {
		// serde_json parses every number it buffers; one that is not an
		// i64 or u64 becomes an f64, and an f64 overflow is an error.
		if f, err := strconv.ParseFloat(text, 64); err != nil && math.IsInf(f, 0) {
			return jsonValue{}, p.errorf("number out of range")
		}
	}
	return jsonValue{kind: jsonNumber, text: text}, nil
}

// fitsInteger reports whether text is an integer literal that fits in a
// u64 (non-negative) or an i64 (negative).
func fitsInteger(text string, integer bool) bool {
	if !integer {
		return false
	}
	if text[0] == '-' {
		_, err := strconv.ParseInt(text, 10, 64)
		return err == nil
	}
	_, err := strconv.ParseUint(text, 10, 64)
	return err == nil
}

// digits consumes [0-9]* and returns how many it consumed.
func (p *jsonParser) digits() int {
	start := p.pos
	for p.pos < len(p.data) && isDigit(p.data[p.pos]) {
		p.pos++
	}
	return p.pos - start
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// errLoneSurrogate is the eager-mode error for an unpaired surrogate.
var errLoneSurrogate = errors.New("lone leading surrogate in hex escape")

// str parses a string literal starting at the opening quote and returns its
// contents and whether an escape held an unpaired surrogate (replaced by
// U+FFFD in the contents; an error at once in eager mode).
func (p *jsonParser) str() (string, bool, error) {
	p.pos++ // opening quote
	var buf []byte
	lone := false
	start := p.pos
	for {
		if p.pos >= len(p.data) {
			return "", false, p.errorf("EOF while parsing a string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := string(p.data[start:p.pos])
			if buf != nil {
				s = string(append(buf, p.data[start:p.pos]...))
			}
			p.pos++
			return s, lone, nil
		case c == '\\':
			buf = append(buf, p.data[start:p.pos]...)
			p.pos++
			var err error
			var l bool
			buf, l, err = p.escape(buf)
			if err != nil {
				return "", false, err
			}
			if l {
				if p.mode == parseEager {
					return "", false, p.errorf("%v", errLoneSurrogate)
				}
				lone = true
			}
			start = p.pos
		case c < 0x20:
			return "", false, p.errorf("control character (\\u0000-\\u001F) found while parsing a string")
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", false, p.errorf("invalid UTF-8")
			}
			p.pos += size
		}
	}
}

// escape decodes the escape after a backslash, appending it to buf; it
// reports an unpaired surrogate, which it appends as U+FFFD.
func (p *jsonParser) escape(buf []byte) ([]byte, bool, error) {
	if p.pos >= len(p.data) {
		return nil, false, p.errorf("EOF while parsing a string")
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		return append(buf, c), false, nil
	case 'b':
		return append(buf, '\b'), false, nil
	case 'f':
		return append(buf, '\f'), false, nil
	case 'n':
		return append(buf, '\n'), false, nil
	case 'r':
		return append(buf, '\r'), false, nil
	case 't':
		return append(buf, '\t'), false, nil
	case 'u':
	default:
		return nil, false, p.errorf("invalid escape")
	}
	r1, err := p.hex4()
	if err != nil {
		return nil, false, err
	}
	switch {
	case !utf16.IsSurrogate(r1):
		return utf8.AppendRune(buf, r1), false, nil
	case r1 >= 0xDC00:
		// A trailing surrogate with no leading one.
		return utf8.AppendRune(buf, utf8.RuneError), true, nil
	}
	// A leading surrogate must be followed by \u and a trailing one.
	if p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
		return utf8.AppendRune(buf, utf8.RuneError), true, nil
	}
	save := p.pos
	p.pos += 2
	r2, err := p.hex4()
	if err != nil {
		return nil, false, err
	}
	if r := utf16.DecodeRune(r1, r2); r != utf8.RuneError {
		return utf8.AppendRune(buf, r), false, nil
	}
	// Not a pair: keep the second escape for the next round.
	p.pos = save
	return utf8.AppendRune(buf, utf8.RuneError), true, nil
}

// hex4 reads four hex digits.
func (p *jsonParser) hex4() (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.errorf("EOF while parsing a string")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errorf("invalid escape")
		}
	}
	p.pos += 4
	return r, nil
}
