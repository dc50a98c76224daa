package emulator

import (
	"net/http"
	"strconv"
	"strings"
)

// maxPatchOperations is the service's limit on operations per patch.
const maxPatchOperations = 10

// patchSpec is a parsed partial document update.
type patchSpec struct {
	condition *query // optional "FROM c WHERE ..." filter
	ops       []patchOp
}

type patchOp struct {
	op   string // add, set, replace, remove, incr, move
	path []string
	from []string
	val  value
}

func patchError(msg string) *response { return badRequest(msg) }

// parsePatchSpec parses {"condition": "...", "operations": [...]}, the
// condition through qc.
func parsePatchSpec(qc *queryCache, body []byte) (*patchSpec, *response) {
	v, err := parseJSON(body)
	if err != nil || (v.k != kObject && v.k != kArray) {
		return nil, badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	return patchSpecFromValue(qc, v)
}

// patchSpecFromValue reads a patch body in every form the SDKs send: the
// REST form {"operations": [...], "condition": "FROM c WHERE ..."} (.NET,
// Java, Python, Go, and JavaScript given a PatchRequestBody) or a bare
// operations array (JavaScript's Item.patch given an array sends it as is,
// as does its batch and bulk Patch with an array resourceBody). The
// condition is parsed through qc: a client sends the same few conditions
// again and again.
func patchSpecFromValue(qc *queryCache, v value) (*patchSpec, *response) {
	spec := &patchSpec{}
	if v.k == kArray {
		return spec.withOperations(v)
	}
	if cond := v.get("condition"); cond.k == kString && strings.TrimSpace(cond.s) != "" {
		q, err := qc.parse("SELECT * " + cond.s)
		if err != nil || q.where == nil || q.from == nil {
			return nil, badRequest("The patch condition is invalid: it must be a predicate of the form 'FROM c WHERE ...'.")
		}
		spec.condition = q
	}
	return spec.withOperations(v.get("operations"))
}

// withOperations parses the operations array ops into spec.
func (spec *patchSpec) withOperations(ops value) (*patchSpec, *response) {
	if ops.k != kArray {
		return nil, patchError("The patch request must contain an 'operations' array.")
	}
	elems := ops.elems()
	if len(elems) == 0 {
		return nil, patchError("The patch request has no operations.")
	}
	if len(elems) > maxPatchOperations {
		return nil, patchError("The number of patch operations cannot exceed 10.")
	}
	for _, e := range elems {
		op := patchOp{op: strings.ToLower(e.get("op").s)}
		switch op.op {
		case "add", "set", "replace", "remove", "incr", "move":
		default:
			return nil, patchError("Invalid patch operation type '" + e.get("op").s + "'.")
		}
		path, ok := parsePatchPath(e.get("path"))
		if !ok {
			return nil, patchError("The patch operation path is invalid: " + e.get("path").jsonText())
		}
		op.path = path
		op.val = e.get("value")
		switch op.op {
		case "add", "set", "replace":
			if !op.val.defined() {
				op.val = jsonNull
			}
		case "incr":
			if op.val.k != kNumber {
				return nil, patchError("The value of an increment operation must be a number.")
			}
		case "move":
			from, ok := parsePatchPath(e.get("from"))
			if !ok {
				return nil, patchError("The 'from' path of a move operation is invalid.")
			}
			if len(from) <= len(op.path) && equalSegs(from, op.path[:len(from)]) {
				return nil, patchError("The 'path' of a move operation cannot be the 'from' path or one of its children.")
			}
			op.from = from
		}
		spec.ops = append(spec.ops, op)
	}
	return spec, nil
}

// parsePatchPath splits a JSON-pointer-like path ("/a/b/0") into segments.
func parsePatchPath(v value) ([]string, bool) {
	if v.k != kString || !strings.HasPrefix(v.s, "/") || len(v.s) < 2 {
		return nil, false
	}
	parts := strings.Split(v.s[1:], "/")
	for i, p := range parts {
		if p == "" {
			return nil, false
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, true
}

// apply evaluates the condition and applies the operations to a copy of it,
// returning the new document.
func (spec *patchSpec) apply(c *container, it *item) (value, *response) {
	if spec.condition != nil {
		ok, err := spec.condition.matches(docValue(it))
		if err != nil {
			return undefined, badRequest(err.Error())
		}
		if !ok {
			return undefined, preconditionFailed()
		}
	}
	doc, err := parseJSON(it.body)
	if err != nil {
		return undefined, errorResponse(http.StatusInternalServerError, 0, "stored document is corrupt")
	}
	for _, op := range spec.ops {
		if resp := checkPatchPath(c, op.path); resp != nil {
			return undefined, resp
		}
		var resp *response
		switch op.op {
		case "move":
			if r := checkPatchPath(c, op.from); r != nil {
				return undefined, r
			}
			var moved value
			doc, moved, resp = patchRemove(doc, op.from)
			if resp == nil {
				doc, resp = patchPut(doc, op.path, "set", moved)
			}
		case "remove":
			doc, _, resp = patchRemove(doc, op.path)
		case "incr":
			doc, resp = patchPut(doc, op.path, "incr", op.val)
		default:
			doc, resp = patchPut(doc, op.path, op.op, op.val)
		}
		if resp != nil {
			return undefined, resp
		}
	}
	return doc, nil
}

// checkPatchPath refuses operations on id, the partition key and system
// properties.
func checkPatchPath(c *container, path []string) *response {
	if path[0] == "id" || isSystemProperty(path[0]) {
		return patchError("The property '/" + path[0] + "' cannot be patched.")
	}
	for _, pk := range c.pkPaths {
		if len(path) <= len(pk) && equalSegs(path, pk[:len(path)]) {
			return patchError("The partition key property '/" + strings.Join(pk, "/") + "' cannot be patched.")
		}
	}
	return nil
}

// patchPut applies add/set/replace/incr at path in a copy of doc.
func patchPut(doc value, path []string, op string, val value) (value, *response) {
	if len(path) == 0 {
		return doc, patchError("The patch path is empty.")
	}
	key := path[0]
	switch doc.k {
	case kObject:
		ms := doc.members()
		idx := -1
		for i, m := range ms {
			if m.key == key {
				idx = i
			}
		}
		if len(path) > 1 {
			if idx < 0 {
				return doc, patchError("The patch path '/" + strings.Join(path, "/") + "' does not exist.")
			}
			child, resp := patchPut(ms[idx].val, path[1:], op, val)
			if resp != nil {
				return doc, resp
			}
			out := append([]member(nil), ms...)
			out[idx].val = child
			return objectValue(out), nil
		}
		switch op {
		case "replace":
			if idx < 0 {
				return doc, patchError("The patch path '/" + key + "' for a replace operation does not exist.")
			}
		case "incr":
			if idx >= 0 {
				cur := ms[idx].val
				if cur.k != kNumber {
					return doc, patchError("The increment operation can only be applied to a number.")
				}
				val = numberValue(cur.n + val.n)
			}
		}
		out := append([]member(nil), ms...)
		if idx >= 0 {
			out[idx].val = val
		} else {
			out = append(out, member{key: key, val: val})
		}
		return objectValue(out), nil
	case kArray:
		elems := doc.elems()
		n := len(elems)
		var i int
		if key == "-" {
			i = n
		} else {
			x, err := strconv.Atoi(key)
			if err != nil || x < 0 {
				return doc, patchError("The patch path segment '" + key + "' is not a valid array index.")
			}
			i = x
		}
		if len(path) > 1 {
			if i >= n {
				return doc, patchError("The array index " + key + " is out of range.")
			}
			child, resp := patchPut(elems[i], path[1:], op, val)
			if resp != nil {
				return doc, resp
			}
			out := append([]value(nil), elems...)
			out[i] = child
			return arrayValue(out), nil
		}
		switch op {
		case "add":
			if i > n {
				return doc, patchError("The array index " + key + " is out of range.")
			}
			out := make([]value, 0, n+1)
			out = append(out, elems[:i]...)
			out = append(out, val)
			out = append(out, elems[i:]...)
			return arrayValue(out), nil
		case "set", "replace", "incr":
			if i == n && op == "set" {
				return arrayValue(append(append([]value(nil), elems...), val)), nil
			}
			if i >= n {
				return doc, patchError("The array index " + key + " is out of range.")
			}
			if op == "incr" {
				if elems[i].k != kNumber {
					return doc, patchError("The increment operation can only be applied to a number.")
				}
				val = numberValue(elems[i].n + val.n)
			}
			out := append([]value(nil), elems...)
			out[i] = val
			return arrayValue(out), nil
		}
	}
	return doc, patchError("The patch path '/" + strings.Join(path, "/") + "' does not exist.")
}

// patchRemove removes the value at path in a copy of doc and returns it.
func patchRemove(doc value, path []string) (value, value, *response) {
	key := path[0]
	missing := patchError("The patch path '/" + strings.Join(path, "/") + "' for a remove operation does not exist.")
	switch doc.k {
	case kObject:
		ms := doc.members()
		idx := -1
		for i, m := range ms {
			if m.key == key {
				idx = i
			}
		}
		if idx < 0 {
			return doc, undefined, missing
		}
		if len(path) > 1 {
			child, removed, resp := patchRemove(ms[idx].val, path[1:])
			if resp != nil {
				return doc, undefined, resp
			}
			out := append([]member(nil), ms...)
			out[idx].val = child
			return objectValue(out), removed, nil
		}
		removed := ms[idx].val
		out := make([]member, 0, len(ms))
		for i, m := range ms {
			if i != idx && m.key != key {
				out = append(out, m)
			}
		}
		return objectValue(out), removed, nil
	case kArray:
		elems := doc.elems()
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(elems) {
			return doc, undefined, missing
		}
		if len(path) > 1 {
			child, removed, resp := patchRemove(elems[i], path[1:])
			if resp != nil {
				return doc, undefined, resp
			}
			out := append([]value(nil), elems...)
			out[i] = child
			return arrayValue(out), removed, nil
		}
		out := make([]value, 0, len(elems)-1)
		out = append(out, elems[:i]...)
		out = append(out, elems[i+1:]...)
		return arrayValue(out), elems[i], nil
	}
	return doc, undefined, missing
}
