package emulator

import (
	"testing"
)

// fuzzDocs is a small store the fuzzed queries run against.
func fuzzDocs(t testing.TB) []*item {
	e := newEngineStore(t)
	for _, d := range []string{
		`{"id":"1","pk":"p","n":1,"s":"a","arr":[1,"x",{"k":1}],"o":{"v":[null,true]}}`,
		`{"id":"2","pk":"p","n":"2","nul":null}`,
		`{"id":"3","pk":"p"}`,
	} {
		e.write([]byte(d), nil)
	}
	return e.c.snapshot(nil)
}

// FuzzQuery checks that no query text crashes the parser or the engine.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{
		"SELECT * FROM c",
		"SELECT VALUE c.id FROM c WHERE c.n > 1 AND NOT IS_DEFINED(c.x) ORDER BY c.n DESC",
		"SELECT DISTINCT TOP 2 c.s, c.o.v[1] AS v FROM c WHERE c.s IN ('a','b') OFFSET 0 LIMIT 5",
		"SELECT c.s, COUNT(1) AS n, MAX(c.n) FROM c GROUP BY c.s",
		"SELECT VALUE t FROM c JOIN t IN c.arr WHERE ARRAY_CONTAINS(c.arr, {\"k\":1}, true)",
		"SELECT VALUE EXISTS(SELECT VALUE x FROM x IN c.arr WHERE x = 1) FROM c",
		"SELECT VALUE c.n ?? (c.s || 'x') FROM c WHERE c.s LIKE '%a_' ESCAPE '!'",
		"SELECT VALUE [1, {a: @p}, -c.n * 2 % 3 << 1] FROM c",
		"SELECT VALUE SUBSTRING(UPPER(c.s), 0, 1) FROM root c WHERE c.n BETWEEN 0 AND 10",
		"SELECT * FROM c WHERE c['weird key'] = 0x1F",
	} {
		f.Add(q)
	}
	docs := fuzzDocs(f)
	f.Fuzz(func(t *testing.T, text string) {
		q, err := parseQuery(text)
		if err != nil {
			return
		}
		params := map[string]value{"@p": numberValue(1)}
		for _, size := range []int{1, -1} {
			pg, err := q.execute(execInput{docs: docs}, pageRequest{params: params, maxItems: size})
			if err != nil {
				continue
			}
			for pg.next != "" {
				if pg, err = q.execute(execInput{docs: docs}, pageRequest{params: params, maxItems: size, token: pg.next}); err != nil {
					t.Fatalf("continuation of %q failed: %v", text, err)
				}
			}
		}
	})
}

// FuzzJSON checks the JSON parser and the raw lookups on arbitrary input.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":"\u00e9\"x"}],"d":{"e":null}}`, `[1,2`, `{"a":`, `"\ud800"`, `-0.5e+3`, `{"a":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseJSON(b)
		_ = rawLookup(b, "a")
		_ = rawIndex(b, 1)
		_, _ = parseJSONLazyObject(b)
		if err != nil {
			return
		}
		out := v.appendJSON(nil)
		v2, err := parseJSON(out)
		if err != nil {
			t.Fatalf("re-parse of %q failed: %v", out, err)
		}
		if v.defined() && !equalValues(v, v2) {
			t.Fatalf("round trip changed %q into %q", b, out)
		}
		if v.k == kObject {
			_ = rawLookup(out, "a").appendJSON(nil)
		}
	})
}
