package emulator

import "strings"

// indexPolicy is the part of a container's indexing policy that decides
// which queries the service can serve: ORDER BY needs a range index on its
// path, and ORDER BY on several paths needs a matching composite index.
type indexPolicy struct {
	mode       string // "consistent", "lazy" or "none"
	included   []indexPath
	excluded   []indexPath
	composites [][]compositePath
}

// indexPath is one included or excluded path such as /type/? or /payload/*.
type indexPath struct {
	segs     []string // "[]" matches any array index
	wildcard bool     // ends in /* (the subtree) rather than /? (the scalar)
}

type compositePath struct {
	segs []string
	desc bool
}

// defaultIndexingPolicy is what the service stores when a container is
// created without one.
const defaultIndexingPolicy = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`

// normalizeIndexingPolicy fills in the defaults the service adds to a
// user-supplied indexing policy, returning the stored policy.
func normalizeIndexingPolicy(v value) value {
	if v.k != kObject {
		pv, _ := parseJSON([]byte(defaultIndexingPolicy))
		return pv
	}
	ms := append([]member(nil), v.members()...)
	has := func(k string) int {
		for i, m := range ms {
			if m.key == k {
				return i
			}
		}
		return -1
	}
	if i := has("indexingMode"); i < 0 || ms[i].val.k != kString || ms[i].val.s == "" {
		if i >= 0 {
			ms[i].val = stringValue("consistent")
		} else {
			ms = append([]member{{key: "indexingMode", val: stringValue("consistent")}}, ms...)
		}
	} else {
		ms[i].val = stringValue(strings.ToLower(ms[i].val.s))
	}
	if has("automatic") < 0 {
		ms = append(ms, member{key: "automatic", val: jsonTrue})
	}
	mode := ms[has("indexingMode")].val.s
	if mode != "none" {
		if i := has("includedPaths"); i < 0 || len(ms[i].val.elems()) == 0 {
			inc := arrayValue([]value{objectValue([]member{{key: "path", val: stringValue("/*")}})})
			if i < 0 {
				ms = append(ms, member{key: "includedPaths", val: inc})
			} else {
				ms[i].val = inc
			}
		}
		etag := objectValue([]member{{key: "path", val: stringValue(`/"_etag"/?`)}})
		if i := has("excludedPaths"); i < 0 {
			ms = append(ms, member{key: "excludedPaths", val: arrayValue([]value{etag})})
		} else {
			ex := ms[i].val.elems()
			found := false
			for _, e := range ex {
				if e.get("path").s == `/"_etag"/?` {
					found = true
				}
			}
			if !found {
				ms[i].val = arrayValue(append(append([]value(nil), ex...), etag))
			}
		}
	}
	return objectValue(ms)
}

// parseIndexPolicy reads a stored (normalized) indexing policy.
func parseIndexPolicy(v value) *indexPolicy {
	ip := &indexPolicy{mode: strings.ToLower(v.get("indexingMode").s)}
	for _, e := range v.get("includedPaths").elems() {
		if p, ok := parseIndexPath(e.get("path").s); ok {
			ip.included = append(ip.included, p)
		}
	}
	for _, e := range v.get("excludedPaths").elems() {
		if p, ok := parseIndexPath(e.get("path").s); ok {
			ip.excluded = append(ip.excluded, p)
		}
	}
	for _, set := range v.get("compositeIndexes").elems() {
		var comp []compositePath
		for _, e := range set.elems() {
			segs, ok := parsePKPath(e.get("path").s)
			if !ok {
				comp = nil
				break
			}
			comp = append(comp, compositePath{segs: segs, desc: strings.EqualFold(e.get("order").s, "descending")})
		}
		if len(comp) > 1 {
			ip.composites = append(ip.composites, comp)
		}
	}
	return ip
}

func parseIndexPath(p string) (indexPath, bool) {
	var ip indexPath
	switch {
	case p == "/*":
		ip.wildcard = true
		return ip, true
	case strings.HasSuffix(p, "/*"):
		ip.wildcard = true
		p = strings.TrimSuffix(p, "/*")
	case strings.HasSuffix(p, "/?"):
		p = strings.TrimSuffix(p, "/?")
	default:
		return ip, false
	}
	segs, ok := parsePKPath(p)
	if !ok {
		return ip, false
	}
	ip.segs = segs
	return ip, true
}

// matches reports whether the policy path covers the document path segs,
// and how precisely (higher wins when included and excluded paths overlap).
func (ip indexPath) matches(segs []string) (bool, int) {
	if ip.wildcard {
		if len(ip.segs) > len(segs) {
			return false, 0
		}
	} else if len(ip.segs) != len(segs) {
		return false, 0
	}
	for i, s := range ip.segs {
		if s != segs[i] && !(s == "[]" && isArrayIndex(segs[i])) {
			return false, 0
		}
	}
	precision := 2 * len(ip.segs)
	if !ip.wildcard {
		precision++
	}
	return true, precision
}

func isArrayIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fixedIndexing decides the paths whose indexing does not depend on the
// included and excluded paths: everything under a nil policy, nothing
// under indexing mode none, id and _ts always.
func (p *indexPolicy) fixedIndexing(segs []string) (indexed, decided bool) {
	switch {
	case p == nil:
		return true, true
	case p.mode == "none":
		return false, true
	case len(segs) == 1 && (segs[0] == "id" || segs[0] == "_ts"):
		return true, true
	}
	return false, false
}

// rangeIndexed reports whether the scalar at document path segs is indexed.
// id and _ts are always indexed under consistent indexing.
func (p *indexPolicy) rangeIndexed(segs []string) bool {
	if indexed, decided := p.fixedIndexing(segs); decided {
		return indexed
	}
	best, bestIncluded := -1, false
	for _, ip := range p.included {
		if ok, prec := ip.matches(segs); ok && prec > best {
			best, bestIncluded = prec, true
		}
	}
	for _, ip := range p.excluded {
		if ok, prec := ip.matches(segs); ok && prec >= best {
			best, bestIncluded = prec, false
		}
	}
	return bestIncluded
}

// hasComposite reports whether a composite index serves ORDER BY on paths
// with the given directions: same paths in the same order, with the same
// directions or all of them inverted.
func (p *indexPolicy) hasComposite(paths [][]string, desc []bool) bool {
	if p == nil {
		return false
	}
	for _, comp := range p.composites {
		if len(comp) != len(paths) {
			continue
		}
		same, inverted := true, true
		for i, cp := range comp {
			if !equalSegs(cp.segs, paths[i]) {
				same, inverted = false, false
				break
			}
			if cp.desc != desc[i] {
				same = false
			} else {
				inverted = false
			}
		}
		if same || inverted {
			return true
		}
	}
	return false
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
