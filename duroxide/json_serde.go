package duroxide

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// This file reads a parsed jsonValue the way serde's derived Deserialize
// impls read JSON through serde_json:
//
//   - a struct (or struct variant) is an object whose members are matched
//     by name; unknown members are ignored, a repeated known member is an
//     error ("duplicate field"), a missing member is an error unless the
//     field is an Option (then None) or has #[serde(default)]. serde_json
//     also accepts a struct as an array of its fields in declaration order;
//     trailing fields that have #[serde(default)] may be left out there.
//   - an externally tagged enum is "Variant" (unit variants; {"Variant":null}
//     too) or an object with exactly one member {"Variant": payload}.
//   - integers are u64 or u32: a non-negative integer literal in range;
//     "-1", "1.0", "1e2", "-0" and out-of-range values are errors.
//   - null is accepted only where the Rust type is an Option.
//
// Error texts follow serde's ("missing field `x`", "invalid type: string
// \"x\", expected u64", "unknown variant `X`, expected one of ...").

// describe names v the way serde's Unexpected does in error messages.
func (v *jsonValue) describe() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return fmt.Sprintf("boolean `%t`", v.boolean)
	case jsonNumber:
		if strings.ContainsAny(v.text, ".eE") || v.text == "-0" || !fitsInteger(v.text, true) {
			return fmt.Sprintf("floating point `%s`", v.text)
		}
		return fmt.Sprintf("integer `%s`", v.text)
	case jsonString:
		return fmt.Sprintf("string %q", v.text)
	case jsonArray:
		return "sequence"
	}
	return "map"
}

// invalidType is serde's "invalid type" error.
func (v *jsonValue) invalidType(expected string) error {
	return fmt.Errorf("invalid type: %s, expected %s", v.describe(), expected)
}

// str reads a Rust String.
func (v *jsonValue) str() (string, error) {
	if v.kind != jsonString {
		return "", v.invalidType("a string")
	}
	if v.loneSurrogate {
		return "", fmt.Errorf("lone leading surrogate in hex escape")
	}
	return v.text, nil
}

// optStr reads an Option<String>: null is nil.
func (v *jsonValue) optStr() (*string, error) {
	if v.kind == jsonNull {
		return nil, nil
	}
	s, err := v.str()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// uint reads an unsigned integer of at most max; expected names the Rust
// type for errors.
func (v *jsonValue) uint(max uint64, expected string) (uint64, error) {
	if v.kind != jsonNumber {
		return 0, v.invalidType(expected)
	}
	if strings.ContainsAny(v.text, ".eE") || v.text == "-0" || !fitsInteger(v.text, true) {
		// serde_json reads these as f64, which no integer type accepts.
		return 0, v.invalidType(expected)
	}
	if v.text[0] == '-' {
		return 0, fmt.Errorf("invalid value: integer `%s`, expected %s", v.text, expected)
	}
	n, err := strconv.ParseUint(v.text, 10, 64)
	if err != nil || n > max {
		return 0, fmt.Errorf("invalid value: integer `%s`, expected %s", v.text, expected)
	}
	return n, nil
}

// u64 reads a Rust u64.
func (v *jsonValue) u64() (uint64, error) { return v.uint(math.MaxUint64, "u64") }

// u32 reads a Rust u32.
func (v *jsonValue) u32() (uint32, error) {
	n, err := v.uint(math.MaxUint32, "u32")
	return uint32(n), err
}

// optU64 reads an Option<u64>: null is nil.
func (v *jsonValue) optU64() (*uint64, error) {
	if v.kind == jsonNull {
		return nil, nil
	}
	n, err := v.u64()
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// boolValue reads a Rust bool.
func (v *jsonValue) boolValue() (bool, error) {
	if v.kind != jsonBool {
		return false, v.invalidType("a boolean")
	}
	return v.boolean, nil
}

// nameData reads the tuple (String, String).
func (v *jsonValue) nameData() (NameData, error) {
	const expected = "a tuple of size 2"
	if v.kind != jsonArray {
		return NameData{}, v.invalidType(expected)
	}
	if len(v.items) != 2 {
		return NameData{}, fmt.Errorf("invalid length %d, expected %s", len(v.items), expected)
	}
	name, err := v.items[0].str()
	if err != nil {
		return NameData{}, err
	}
	data, err := v.items[1].str()
	if err != nil {
		return NameData{}, err
	}
	return NameData{Name: name, Data: data}, nil
}

// nameDataList reads a Vec<(String, String)>; an empty array gives a
// non-nil empty slice, so that Some(vec![]) survives a round trip.
func (v *jsonValue) nameDataList() ([]NameData, error) {
	if v.kind != jsonArray {
		return nil, v.invalidType("a sequence")
	}
	list := make([]NameData, 0, len(v.items))
	for i := range v.items {
		nd, err := v.items[i].nameData()
		if err != nil {
			return nil, err
		}
		list = append(list, nd)
	}
	return list, nil
}

// structFields holds the members of one struct (or struct variant) by
// field name, and the first error met while reading them.
type structFields struct {
	what   string // "WorkItem::ActivityExecute", for errors
	names  []string
	values []*jsonValue // by field; nil when absent
	seq    bool         // read from the array form
	seqLen int          // number of array elements in the array form
	// content is set for the fields of an Event kind, which serde reads
	// from its buffered Content (#[serde(flatten)]); there a unit variant
	// also accepts {} as its payload.
	content bool
	err     error
}

// readStruct collects v's members for the fields names. allowSeq admits
// serde_json's array form, which every struct accepts except through
// #[serde(flatten)] (the Event kinds).
func readStruct(what string, v *jsonValue, allowSeq bool, names ...string) *structFields {
	f := &structFields{what: what, names: names, values: make([]*jsonValue, len(names))}
	switch {
	case v.kind == jsonObject:
		for i := range v.members {
			m := &v.members[i]
			if m.keyLoneSurrogate {
				// serde_json reads every key of a struct as a str, even
				// the key of an ignored member.
				f.fail(fmt.Errorf("%s: lone leading surrogate in hex escape", what))
				return f
			}
			j := slices.Index(names, m.key)
			if j < 0 {
				continue // unknown fields are ignored
			}
			if f.values[j] != nil {
				f.fail(fmt.Errorf("%s: duplicate field `%s`", what, m.key))
				return f
			}
			f.values[j] = &m.value
		}
	case v.kind == jsonArray && allowSeq:
		f.seq, f.seqLen = true, len(v.items)
		if len(v.items) > len(names) {
			f.fail(fmt.Errorf("%s: invalid length %d, expected struct with %d elements", what, len(v.items), len(names)))
			return f
		}
		for i := range v.items {
			f.values[i] = &v.items[i]
		}
	default:
		f.fail(fmt.Errorf("%s: %w", what, v.invalidType("struct "+what)))
	}
	return f
}

// fail records err unless an error is already recorded.
func (f *structFields) fail(err error) {
	if f.err == nil {
		f.err = err
	}
}

// field returns the member for name, or nil when absent. In the array form
// a field that is absent and has no #[serde(default)] is an error.
func (f *structFields) field(name string, serdeDefault bool) *jsonValue {
	i := slices.Index(f.names, name)
	if i < 0 {
		f.fail(fmt.Errorf("%s: no field `%s` (decoder bug)", f.what, name))
		return nil
	}
	v := f.values[i]
	if v == nil && f.seq && !serdeDefault {
		f.fail(fmt.Errorf("%s: invalid length %d, expected struct with %d elements", f.what, f.seqLen, len(f.names)))
	}
	return v
}

// required returns the member for a field that must be present.
func (f *structFields) required(name string) *jsonValue {
	v := f.field(name, false)
	if v == nil {
		f.fail(fmt.Errorf("%s: missing field `%s`", f.what, name))
	}
	return v
}

// check records err, prefixed with the field it came from.
func (f *structFields) check(name string, err error) {
	if err != nil {
		f.fail(fmt.Errorf("%s.%s: %w", f.what, name, err))
	}
}

// str reads a required String field.
func (f *structFields) str(name string) string {
	v := f.required(name)
	if v == nil {
		return ""
	}
	s, err := v.str()
	f.check(name, err)
	return s
}

// optStr reads an Option<String> field; absent is nil. serdeDefault says
// whether the field has #[serde(default)] (it matters in the array form).
func (f *structFields) optStr(name string, serdeDefault bool) *string {
	v := f.field(name, serdeDefault)
	if v == nil {
		return nil
	}
	s, err := v.optStr()
	f.check(name, err)
	return s
}

// optNameDataList reads an Option<Vec<(String, String)>> field with
// #[serde(default)]: absent or null is nil, [] is a non-nil empty slice.
func (f *structFields) optNameDataList(name string) []NameData {
	v := f.field(name, true)
	if v == nil || v.kind == jsonNull {
		return nil
	}
	list, err := v.nameDataList()
	f.check(name, err)
	return list
}

// nameDataListDefault reads a Vec<(String, String)> field with
// #[serde(default)]: absent is empty. Empty decodes as nil, since Rust's
// Vec has no nil/empty distinction.
func (f *structFields) nameDataListDefault(name string) []NameData {
	v := f.field(name, true)
	if v == nil {
		return nil
	}
	list, err := v.nameDataList()
	f.check(name, err)
	if len(list) == 0 {
		return nil
	}
	return list
}

// u64 reads a required u64 field.
func (f *structFields) u64(name string) uint64 {
	v := f.required(name)
	if v == nil {
		return 0
	}
	n, err := v.u64()
	f.check(name, err)
	return n
}

// u64Default reads a u64 field with #[serde(default)]: absent is 0.
func (f *structFields) u64Default(name string) uint64 {
	v := f.field(name, true)
	if v == nil {
		return 0
	}
	n, err := v.u64()
	f.check(name, err)
	return n
}

// optU64 reads an Option<u64> field; absent is nil. serdeDefault says
// whether the field has #[serde(default)] (it matters in the array form).
func (f *structFields) optU64(name string, serdeDefault bool) *uint64 {
	v := f.field(name, serdeDefault)
	if v == nil {
		return nil
	}
	n, err := v.optU64()
	f.check(name, err)
	return n
}

// u32 reads a required u32 field.
func (f *structFields) u32(name string) uint32 {
	v := f.required(name)
	if v == nil {
		return 0
	}
	n, err := v.u32()
	f.check(name, err)
	return n
}

// boolean reads a required bool field.
func (f *structFields) boolean(name string) bool {
	v := f.required(name)
	if v == nil {
		return false
	}
	b, err := v.boolValue()
	f.check(name, err)
	return b
}

// errorDetails reads a required ErrorDetails field.
func (f *structFields) errorDetails(name string) ErrorDetails {
	v := f.required(name)
	if v == nil {
		return ErrorDetails{}
	}
	d, err := decodeErrorDetailsFrom(v, f.content)
	f.check(name, err)
	return d
}

// enumVariant reads an externally tagged enum: a string is a unit variant
// (payload nil); an object must have exactly one member, whose key is the
// variant and whose value is the payload.
func enumVariant(what string, v *jsonValue) (string, *jsonValue, error) {
	switch {
	case v.kind == jsonString:
		s, err := v.str()
		return s, nil, err
	case v.kind == jsonObject && len(v.members) == 1:
		m := &v.members[0]
		if m.keyLoneSurrogate {
			return "", nil, fmt.Errorf("%s: lone leading surrogate in hex escape", what)
		}
		return m.key, &m.value, nil
	case v.kind == jsonObject:
		return "", nil, fmt.Errorf("%s: invalid value: map with %d entries, expected map with a single key", what, len(v.members))
	}
	return "", nil, fmt.Errorf("%s: %w", what, v.invalidType("enum "+what))
}

// unknownVariant is serde's error for a tag that names no variant.
func unknownVariant(what, tag string, variants ...string) error {
	return fmt.Errorf("%s: unknown variant `%s`, expected one of `%s`", what, tag, strings.Join(variants, "`, `"))
}

// unitVariantFrom checks the payload of a unit variant: none, or null; with
// content (a value serde buffered as Content, as it does for an Event) an
// empty object is a unit payload too, as serde's
// ContentRefDeserializer::deserialize_unit accepts it.
func unitVariantFrom(what string, payload *jsonValue, content bool) error {
	if payload == nil || payload.kind == jsonNull || (content && payload.kind == jsonObject && len(payload.members) == 0) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, payload.invalidType("unit variant"))
}

// structVariant checks that a struct variant has a payload (the string form
// names a unit variant) and collects its fields.
func structVariant(what string, payload *jsonValue, names ...string) *structFields {
	if payload == nil {
		f := &structFields{what: what}
		f.fail(fmt.Errorf("%s: invalid type: unit variant, expected struct variant", what))
		return f
	}
	return readStruct(what, payload, true, names...)
}
