package duroxide

import (
	"strconv"
	"unicode/utf8"
)

// This file writes JSON byte for byte as serde_json's compact formatter
// does: no insignificant whitespace, object keys in the order the caller
// writes them, integers in decimal, and strings escaped the serde_json way
// (see appendJSONString).

// appendJSONString appends s as a JSON string literal, escaped as
// serde_json's format_escaped_str does: '"' and '\\' get a backslash; the
// control characters U+0008, U+0009, U+000A, U+000C and U+000D become \b,
// \t, \n, \f and \r; the other control characters below U+0020 become
// \u00xx with lowercase hex digits; everything else, including '<', '>',
// '&', U+007F, U+2028, U+2029 and all non-ASCII text, is written as is
// (encoding/json differs on the HTML characters and the separators).
//
// Rust strings are always valid UTF-8; a Go string that is not has each
// invalid byte replaced by U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\t':
				b = append(b, '\\', 't')
			case '\n':
				b = append(b, '\\', 'n')
			case '\f':
				b = append(b, '\\', 'f')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = utf8.AppendRune(b, utf8.RuneError)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// objectWriter appends one JSON object, key by key, in the order of the
// calls; the helpers name the serde attribute each one implements.
type objectWriter struct {
	b []byte
	n int // keys written so far
}

// beginObject starts an object at the end of b.
func beginObject(b []byte) *objectWriter {
	return &objectWriter{b: append(b, '{')}
}

// key writes the separator and "k":.
func (o *objectWriter) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':')
}

// str writes a String field.
func (o *objectWriter) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

// strOrNull writes an Option<String> field without skip_serializing_if:
// null when v is nil.
func (o *objectWriter) strOrNull(k string, v *string) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = appendJSONString(o.b, *v)
}

// strOmitNil writes an Option<String> field marked
// #[serde(skip_serializing_if = "Option::is_none")]: nothing when v is nil.
func (o *objectWriter) strOmitNil(k string, v *string) {
	if v != nil {
		o.str(k, *v)
	}
}

// u64 writes an integer field (u64 or u32).
func (o *objectWriter) u64(k string, v uint64) {
	o.key(k)
	o.b = strconv.AppendUint(o.b, v, 10)
}

// u64OrNull writes an Option<u64> field without skip_serializing_if: null
// when v is nil.
func (o *objectWriter) u64OrNull(k string, v *uint64) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = strconv.AppendUint(o.b, *v, 10)
}

// u64OmitNil writes an Option<u64> field marked
// #[serde(skip_serializing_if = "Option::is_none")]: nothing when v is nil.
func (o *objectWriter) u64OmitNil(k string, v *uint64) {
	if v != nil {
		o.u64(k, *v)
	}
}

// boolean writes a bool field.
func (o *objectWriter) boolean(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

// nameDataList writes a Vec<(String, String)> field: an array of
// two-element arrays ([] when v is empty).
func (o *objectWriter) nameDataList(k string, v []NameData) {
	o.key(k)
	o.b = appendNameDataList(o.b, v)
}

// errorDetails writes an ErrorDetails field.
func (o *objectWriter) errorDetails(k string, d ErrorDetails) error {
	o.key(k)
	var err error
	o.b, err = appendErrorDetails(o.b, d)
	return err
}

// end closes the object and returns the buffer.
func (o *objectWriter) end() []byte {
	return append(o.b, '}')
}

// appendNameData appends the Rust tuple (name, data): ["name","data"].
func appendNameData(b []byte, nd NameData) []byte {
	b = append(b, '[')
	b = appendJSONString(b, nd.Name)
	b = append(b, ',')
	b = appendJSONString(b, nd.Data)
	return append(b, ']')
}

// appendNameDataList appends a Vec<(String, String)>: [["a","1"],["b","2"]].
func appendNameDataList(b []byte, list []NameData) []byte {
	b = append(b, '[')
	for i, nd := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendNameData(b, nd)
	}
	return append(b, ']')
}

// appendExternallyTagged appends {"tag": and leaves the value to the
// caller, who closes with '}'. It is how serde writes a struct or newtype
// variant of an externally tagged enum.
func appendExternallyTagged(b []byte, tag string) []byte {
	b = append(b, '{')
	b = appendJSONString(b, tag)
	return append(b, ':')
}
