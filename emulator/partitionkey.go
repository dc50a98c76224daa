package emulator

import (
	"errors"
	"strings"
)

// parsePKHeader parses the x-ms-documentdb-partitionkey header: a JSON array
// of primitive values, with {} standing for an undefined component.
func parsePKHeader(h string) ([]value, error) {
	v, err := parseJSON([]byte(h))
	if err != nil || v.k != kArray {
		return nil, errors.New("partition key header is not a JSON array")
	}
	comps := v.elems()
	if len(comps) == 0 {
		return nil, errors.New("partition key header is empty")
	}
	out := make([]value, len(comps))
	for i, c := range comps {
		switch c.k {
		case kNull, kBool, kNumber, kString:
			out[i] = c
		case kObject:
			if len(c.members()) != 0 {
				return nil, errors.New("partition key component is an object")
			}
			out[i] = undefined
		default:
			return nil, errors.New("partition key component is not a primitive")
		}
	}
	return out, nil
}

// canonicalPK renders partition key components as the key of a logical
// partition: equal keys give equal texts.
func canonicalPK(comps []value) string {
	buf := make([]byte, 0, 32)
	buf = append(buf, '[')
	for i, c := range comps {
		if i > 0 {
			buf = append(buf, ',')
		}
		if !c.defined() {
			buf = append(buf, "{}"...)
			continue
		}
		buf = c.appendJSON(buf)
	}
	return string(append(buf, ']'))
}

// parsePKPath splits a partition key path such as "/instanceId" or
// "/address/city" into its segments. Quoted segments ("/\"a b\"") lose
// their quotes.
func parsePKPath(p string) ([]string, bool) {
	if !strings.HasPrefix(p, "/") || len(p) < 2 {
		return nil, false
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if s == "" {
			return nil, false
		}
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			parts[i] = s[1 : len(s)-1]
		}
	}
	return parts, true
}

// pkOf extracts the partition key components of a document body.
func (c *container) pkOf(doc value) []value {
	out := make([]value, len(c.pkPaths))
	for i, path := range c.pkPaths {
		v := doc
		for _, seg := range path {
			v = v.get(seg)
		}
		out[i] = v
	}
	return out
}

// maxPKBytes is the longest partition key string the service accepts
// (2,048 bytes). A version 1 key (what the REST API creates when no
// version is sent) is accepted up to the same size, as the service does:
// the service hashes only its first 100 bytes, so longer values sharing a
// prefix share a logical partition there; the emulator keeps them apart
// (emulator/README.md, "The strict side").
const maxPKBytes = 2048

// checkPKLength refuses partition key strings over maxPKBytes.
func (c *container) checkPKLength(comps []value) *response {
	for _, v := range comps {
		if v.k == kString && len(v.s) > maxPKBytes {
			return badRequest("The partition key value exceeds the maximum size of 2048 bytes.")
		}
	}
	return nil
}

// pkValid reports whether extracted components can be a partition key: each
// is a primitive or undefined.
func pkValid(comps []value) bool {
	for _, c := range comps {
		if c.k == kArray || c.k == kObject {
			return false
		}
	}
	return true
}
