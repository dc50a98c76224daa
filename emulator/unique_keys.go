package emulator

import (
	"net/http"
	"strings"
)

// Unique key policies, as the service enforces them (Learn: "Unique key
// constraints in Azure Cosmos DB",
// https://learn.microsoft.com/azure/cosmos-db/unique-keys): each unique key is
// a set of paths whose values must be unique within a logical partition; an
// item missing a path counts as null there ("sparse unique keys are not
// supported"), so two items both missing it collide; a write that would
// duplicate a key is refused with 409 Conflict; the policy is set when the
// container is created and cannot change afterwards.

// parseUniqueKeyPolicy reads {"uniqueKeys": [{"paths": ["/a", "/b/c"]}, ...]}
// into the paths of each key, split into segments. Absent or null means no
// unique keys; a malformed policy is a 400.
func parseUniqueKeyPolicy(v value) ([][][]string, *response) {
	if !v.defined() || v.k == kNull {
		return nil, nil
	}
	keys := v.get("uniqueKeys")
	if v.k != kObject || (keys.defined() && keys.k != kArray) {
		return nil, badRequest("The unique key policy is invalid: it must be an object with a 'uniqueKeys' array.")
	}
	var out [][][]string
	for _, k := range keys.elems() {
		paths := k.get("paths").elems()
		if len(paths) == 0 || len(paths) > 16 {
			return nil, badRequest("The unique key policy is invalid: each unique key needs 1 to 16 'paths'.")
		}
		var key [][]string
		for _, p := range paths {
			segs, ok := parsePKPath(p.s)
			if p.k != kString || !ok {
				return nil, badRequest("The unique key path '" + p.jsonText() + "' is invalid.")
			}
			key = append(key, segs)
		}
		out = append(out, key)
	}
	return out, nil
}

// equalUniqueKeys reports whether two parsed policies are the same.
func equalUniqueKeys(a, b [][][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if !equalSegs(a[i][j], b[i][j]) {
				return false
			}
		}
	}
	return true
}

// uniqueValues returns the text of it's values under unique key k, missing
// values as null.
func uniqueValues(it *item, k [][]string) string {
	var b strings.Builder
	for _, path := range k {
		v := it.getPath(path)
		if !v.defined() {
			b.WriteString("null")
		} else {
			b.WriteString(v.jsonText())
		}
		b.WriteByte(0)
	}
	return b.String()
}

// uniqueConflict returns the 409 answer when writing it into logical
// partition pkKey would duplicate a unique key of another item there, as the
// view sees the partition; nil otherwise. It scans the partition, so it costs
// nothing for containers without unique keys.
func (v *view) uniqueConflict(pkKey string, it *item) *response {
	if len(v.c.unique) == 0 {
		return nil
	}
	clash := func(other *item) bool {
		if other == nil || other.id == it.id {
			return false
		}
		for _, k := range v.c.unique {
			if uniqueValues(other, k) == uniqueValues(it, k) {
				return true
			}
		}
		return false
	}
	prefix := pkKey + "\x00"
	if p := v.c.parts[pkKey]; p != nil {
		for id, other := range p.byID {
			if _, overlaid := v.overlay[prefix+id]; overlaid {
				continue
			}
			if clash(other) {
				return uniqueViolation()
			}
		}
	}
	for k, other := range v.overlay {
		if strings.HasPrefix(k, prefix) && clash(other) {
			return uniqueViolation()
		}
	}
	return nil
}

func uniqueViolation() *response {
	return errorResponse(http.StatusConflict, 0, "Unique index constraint violation.")
}
