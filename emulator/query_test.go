package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedQueryDocs loads a small, mixed data set into partition "p" (and a few
// documents into "q").
func seedQueryDocs(t *testing.T, e *env, c *azcosmos.ContainerClient) {
	docs := []string{
		`{"id":"1","pk":"p","type":"a","n":1,"s":"apple","tags":["x","y"],"nested":{"v":10},"flag":true}`,
		`{"id":"2","pk":"p","type":"a","n":2,"s":"banana","tags":["y"],"nested":{"v":20},"flag":false}`,
		`{"id":"3","pk":"p","type":"b","n":3,"s":"cherry","tags":[],"nested":{"v":30}}`,
		`{"id":"4","pk":"p","type":"b","n":"4","s":"date","nul":null}`,
		`{"id":"5","pk":"p","type":"c","n":5.5,"s":"Elder","tags":["x"],"objs":[{"k":1,"w":"a"},{"k":2}]}`,
		`{"id":"6","pk":"p","type":"c"}`,
		`{"id":"7","pk":"q","type":"a","n":7}`,
		`{"id":"8","pk":"q","type":"b","n":8}`,
	}
	for _, d := range docs {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(d), &m))
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(m["pk"].(string)), []byte(d), nil)
		require.NoError(t, err)
	}
}

func TestQueryLanguage(t *testing.T) {
	e := newEnv(t)
	c := e.container("q", nil)
	seedQueryDocs(t, e, c)

	cases := []struct {
		q    string
		want string // JSON array of results
	}{
		{`SELECT VALUE c.id FROM c`, `["1","2","3","4","5","6"]`},
		{`SELECT VALUE c.id FROM c WHERE c.type = 'a'`, `["1","2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.type = "a" AND c.n > 1`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.type = 'a' OR c.type = 'c'`, `["1","2","5","6"]`},
		{`SELECT VALUE c.id FROM c WHERE NOT (c.type = 'a')`, `["3","4","5","6"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n > 2`, `["3","5"]`},               // "4" is a string: undefined
		{`SELECT VALUE c.id FROM c WHERE c.n != 1`, `["2","3","5"]`},          // cross-type != is undefined
		{`SELECT VALUE c.id FROM c WHERE c.n <> 1`, `["2","3","5"]`},          // alias of !=
		{`SELECT VALUE c.id FROM c WHERE c.n >= 2 AND c.n <= 3`, `["2","3"]`}, // range
		{`SELECT VALUE c.id FROM c WHERE c.n BETWEEN 2 AND 5.5`, `["2","3","5"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n NOT BETWEEN 2 AND 5.5`, `["1"]`},
		{`SELECT VALUE c.id FROM c WHERE c.type IN ('b', 'c')`, `["3","4","5","6"]`},
		{`SELECT VALUE c.id FROM c WHERE c.type NOT IN ('b', 'c')`, `["1","2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n * 2 = 4`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n + 1 = 2 OR c.n - 1 = 2 OR c.n / 2 = 2.75 OR c.n % 2 = 0`, `["1","2","3","5"]`},
		{`SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.tags)`, `["1","2","3","5"]`},
		{`SELECT VALUE c.id FROM c WHERE NOT IS_DEFINED(c.n)`, `["6"]`},
		{`SELECT VALUE c.id FROM c WHERE IS_NULL(c.nul)`, `["4"]`},
		{`SELECT VALUE c.id FROM c WHERE c.nul = null`, `["4"]`},
		{`SELECT VALUE c.id FROM c WHERE IS_STRING(c.n)`, `["4"]`},
		{`SELECT VALUE c.id FROM c WHERE IS_NUMBER(c.n) AND IS_BOOL(c.flag)`, `["1","2"]`},
		{`SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.tags, 'x')`, `["1","5"]`},
		{`SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.objs, {"k": 1}, true)`, `["5"]`},
		{`SELECT VALUE c.id FROM c WHERE ARRAY_CONTAINS(c.objs, {"k": 1})`, `[]`},
		{`SELECT VALUE c.id FROM c WHERE ARRAY_LENGTH(c.tags) = 0`, `["3"]`},
		{`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 'b')`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 'e', true)`, `["5"]`},
		{`SELECT VALUE c.id FROM c WHERE STARTSWITH(c.s, 'e')`, `[]`},
		{`SELECT VALUE c.id FROM c WHERE CONTAINS(c.s, 'an')`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE ENDSWITH(c.s, 'RY', true)`, `["3"]`},
		{`SELECT VALUE c.id FROM c WHERE c.s LIKE 'b%a'`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.flag`, `["1"]`},
		{`SELECT VALUE c.id FROM c WHERE c.flag = false`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.nested.v > 15`, `["2","3"]`},
		{`SELECT VALUE c.id FROM c WHERE c["nested"]["v"] = 10`, `["1"]`},
		{`SELECT VALUE c.id FROM c WHERE c.tags[0] = 'y'`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.id = @id`, `["3"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n = 5`, `[]`}, // 5.5 only shares a prefix
		{`SELECT VALUE c.id FROM c WHERE c.n = 5.5`, `["5"]`},
		{`SELECT VALUE c.id FROM c WHERE 2 = c.n`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n = '4'`, `["4"]`},
		{`SELECT VALUE c.id FROM c WHERE c.s != 'apple'`, `["2","3","4","5"]`},
		{`SELECT VALUE c.id FROM c WHERE c.nested.v = 20`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c.flag = true`, `["1"]`},
		{`SELECT VALUE c.id FROM c WHERE c.nul = @nul`, `["4"]`},
		{`SELECT VALUE c.id FROM c WHERE c.tags = @tags`, `["2"]`},
		{`SELECT VALUE c.id FROM c WHERE c._ts = c._ts AND c.id = '1'`, `["1"]`},
		{`SELECT VALUE c.id FROM c WHERE c.n IN (@a, @b)`, `["1","3"]`},
		{`SELECT VALUE c.id FROM c WHERE (c.n ?? 0) = 0`, `["6"]`},
		{`SELECT VALUE c.n > 2 ? 'big' : 'small' FROM c WHERE IS_NUMBER(c.n)`, `["small","small","big","big"]`},
		{`SELECT VALUE UPPER(c.s) FROM c WHERE c.id = '1'`, `["APPLE"]`},
		{`SELECT VALUE IIF(c.flag, 'yes', 'no') FROM c WHERE c.id IN ('1', '2', '3')`, `["yes","no","no"]`},
		{`SELECT VALUE CONCAT(c.s, '-', c.type) FROM c WHERE c.id = '1'`, `["apple-a"]`},
		{`SELECT VALUE c.s || '!' FROM c WHERE c.id = '1'`, `["apple!"]`},
		{`SELECT VALUE LENGTH(c.s) FROM c WHERE c.id = '3'`, `[6]`},
		{`SELECT VALUE SUBSTRING(c.s, 1, 3) FROM c WHERE c.id = '3'`, `["her"]`},
		{`SELECT VALUE ABS(-c.n) FROM c WHERE c.id = '2'`, `[2]`},
		{`SELECT VALUE FLOOR(c.n) FROM c WHERE c.id = '5'`, `[5]`},
		{`SELECT VALUE TOSTRING(c.n) FROM c WHERE c.id = '5'`, `["5.5"]`},
		// projections
		{`SELECT c.id, c.n FROM c WHERE c.type = 'c'`, `[{"id":"5","n":5.5},{"id":"6"}]`},
		{`SELECT c.id AS ident, c.nested.v FROM c WHERE c.id = '1'`, `[{"ident":"1","v":10}]`},
		{`SELECT c.id, c.n * 2 FROM c WHERE c.id = '1'`, `[{"id":"1","$1":2}]`},
		{`SELECT {"a": c.id, "b": [c.n, 1]} AS o FROM c WHERE c.id = '1'`, `[{"o":{"a":"1","b":[1,1]}}]`},
		{`SELECT VALUE c.missing FROM c`, `[]`},
		{`SELECT VALUE {"id": c.id} FROM c WHERE c.id = '6'`, `[{"id":"6"}]`},
		{`SELECT c.nested FROM c WHERE c.id = '2'`, `[{"nested":{"v":20}}]`},
		{`SELECT TOP 2 VALUE c.id FROM c`, `["1","2"]`},
		{`SELECT TOP @top VALUE c.id FROM c`, `["1"]`},
		{`SELECT DISTINCT VALUE c.type FROM c`, `["a","b","c"]`},
		{`SELECT DISTINCT c.type FROM c WHERE c.type != 'b'`, `[{"type":"a"},{"type":"c"}]`},
		// ORDER BY with Cosmos type ordering: undefined < null < bool < number < string
		{`SELECT VALUE c.id FROM c ORDER BY c.n`, `["6","1","2","3","5","4"]`},
		{`SELECT VALUE c.id FROM c ORDER BY c.n DESC`, `["4","5","3","2","1","6"]`},
		{`SELECT VALUE c.id FROM c ORDER BY c.s`, `["6","5","1","2","3","4"]`},
		{`SELECT VALUE c.id FROM c ORDER BY c.nul`, `["1","2","3","5","6","4"]`},
		{`SELECT VALUE c.id FROM c ORDER BY c.flag DESC`, `["1","2","3","4","5","6"]`},
		{`SELECT TOP 2 VALUE c.id FROM c WHERE IS_NUMBER(c.n) ORDER BY c.n DESC`, `["5","3"]`},
		{`SELECT VALUE c.id FROM c ORDER BY c.id OFFSET 1 LIMIT 2`, `["2","3"]`},
		{`SELECT VALUE c.id FROM c OFFSET 4 LIMIT 10`, `["5","6"]`},
		{`SELECT VALUE c.id FROM c OFFSET @o LIMIT @l`, `["2"]`},
		// aggregates
		{`SELECT VALUE COUNT(1) FROM c`, `[6]`},
		{`SELECT VALUE COUNT(c.n) FROM c`, `[5]`},
		{`SELECT VALUE SUM(c.n) FROM c WHERE IS_NUMBER(c.n)`, `[11.5]`},
		{`SELECT VALUE SUM(c.n) FROM c`, `[]`}, // a string makes SUM undefined
		{`SELECT VALUE MIN(c.n) FROM c`, `[1]`},
		{`SELECT VALUE MAX(c.n) FROM c`, `["4"]`},
		{`SELECT VALUE AVG(c.nested.v) FROM c`, `[20]`},
		{`SELECT VALUE MAX(c.nothing) FROM c`, `[]`},
		{`SELECT COUNT(1) AS n, MAX(c.nested.v) AS m FROM c`, `[{"n":6,"m":30}]`},
		{`SELECT COUNT(1) FROM c WHERE c.type = 'zzz'`, `[{"$1":0}]`},
		{`SELECT c.type, COUNT(1) AS n FROM c GROUP BY c.type`, `[{"type":"a","n":2},{"type":"b","n":2},{"type":"c","n":2}]`},
		{`SELECT VALUE COUNT(1) FROM c GROUP BY c.type`, `[2,2,2]`},
		// JOIN and subqueries
		{`SELECT VALUE t FROM c JOIN t IN c.tags WHERE c.id = '1'`, `["x","y"]`},
		{`SELECT c.id, t AS tag FROM c JOIN t IN c.tags WHERE t = 'y'`, `[{"id":"1","tag":"y"},{"id":"2","tag":"y"}]`},
		{`SELECT VALUE c.id FROM c WHERE EXISTS(SELECT VALUE t FROM t IN c.tags WHERE t = 'x')`, `["1","5"]`},
		{`SELECT VALUE ARRAY(SELECT VALUE o.k FROM o IN c.objs) FROM c WHERE c.id = '5'`, `[[1,2]]`},
		{`SELECT VALUE t FROM t IN c.tags`, `["x","y","y","x"]`},
		// literals and no FROM
		{`SELECT VALUE 1 + 2`, `[3]`},
		{`SELECT VALUE [1, "a", null, true]`, `[[1,"a",null,true]]`},
		{`SELECT VALUE 'it''s'`, `[]`},
	}
	params := []azcosmos.QueryParameter{{Name: "@id", Value: "3"}, {Name: "@a", Value: 1}, {Name: "@b", Value: 3},
		{Name: "@top", Value: 1}, {Name: "@o", Value: 1}, {Name: "@l", Value: 1},
		{Name: "@nul", Value: nil}, {Name: "@tags", Value: []string{"y"}}}
	for _, tc := range cases {
		var used []azcosmos.QueryParameter
		for _, p := range params {
			if containsWord(tc.q, p.Name) {
				used = append(used, p)
			}
		}
		items, _, err := queryAll(e.ctx, c, tc.q, azcosmos.NewPartitionKeyString("p"), &azcosmos.QueryOptions{QueryParameters: used})
		if tc.q == `SELECT VALUE 'it''s'` {
			assert.Equal(t, http.StatusBadRequest, statusOf(err), tc.q)
			continue
		}
		if !assert.NoError(t, err, tc.q) {
			continue
		}
		got := "[" + string(joinItems(items)) + "]"
		assert.JSONEq(t, tc.want, got, tc.q)
	}
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i+len(w) == len(s) || !isWordByte(s[i+len(w)])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func joinItems(items [][]byte) []byte {
	var out []byte
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return out
}

func TestQuerySelectStarReturnsSystemProperties(t *testing.T) {
	e := newEnv(t)
	c := e.container("q", nil)
	seedQueryDocs(t, e, c)
	vals := e.queryValues(c, "SELECT * FROM c WHERE c.id = '1'", "p")
	require.Len(t, vals, 1)
	m := vals[0].(map[string]any)
	for _, k := range []string{"id", "pk", "_rid", "_self", "_etag", "_ts", "_attachments"} {
		assert.Contains(t, m, k)
	}
	vals = e.queryValues(c, "SELECT c._ts, c._etag FROM c WHERE c.id = '1'", "p")
	assert.Len(t, vals[0].(map[string]any), 2)
	vals = e.queryValues(c, "SELECT VALUE r FROM root r WHERE r.id = '2'", "p")
	assert.Equal(t, "2", vals[0].(map[string]any)["id"])
}

func TestQueryErrors(t *testing.T) {
	e := newEnv(t)
	c := e.container("q", nil)
	seedQueryDocs(t, e, c)
	for _, q := range []string{
		"SELECT",
		"SELECT * FROM",
		"SELECT * FROM c WHERE",
		"SELECT * FROM c WHERE c.id = 'unterminated",
		"SELECT id FROM c",              // unresolved identifier
		"SELECT * FROM c WHERE x.a = 1", // unresolved alias
		"SELECT NOSUCHFUNC(c.id) FROM c",
		"SELECT * FROM c WHERE COUNT(1) > 1",
		"SELECT * FROM c WHERE c.id = @missing",
		"SELECT * FROM c JOIN t IN c.tags",
		"SELECT * FROM c ORDER BY LOWER(c.s)",
		"SELECT TOP -1 * FROM c",
		"SELECT c.n, COUNT(1) AS k FROM c GROUP BY c.type", // not grouped
		"SELECT c.id, COUNT(1) AS k FROM c",                // aggregate mixed with a property
		"SELECT * FROM c GROUP BY c.type",
		"DELETE FROM c",
	} {
		_, _, err := queryAll(e.ctx, c, q, azcosmos.NewPartitionKeyString("p"), nil)
		assert.Equal(t, http.StatusBadRequest, statusOf(err), q)
	}
}

func TestQueryPaging(t *testing.T) {
	e := newEnv(t)
	c := e.container("page", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := 0; i < 25; i++ {
		_, err := c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprintf("%02d", i), "pk": "p", "n": 25 - i, "g": i % 3}), nil)
		require.NoError(t, err)
	}
	check := func(q string, size int32, wantN, wantPages int, first, last string) {
		t.Helper()
		items, pages, err := queryAll(e.ctx, c, q, pk, &azcosmos.QueryOptions{PageSizeHint: size})
		require.NoError(t, err, q)
		assert.Equal(t, wantN, len(items), q)
		assert.Equal(t, wantPages, pages, q)
		if len(items) > 0 {
			assert.Equal(t, first, string(items[0]), q)
			assert.Equal(t, last, string(items[len(items)-1]), q)
		}
	}
	check("SELECT VALUE c.id FROM c", 10, 25, 3, `"00"`, `"24"`)
	check("SELECT VALUE c.id FROM c", 5, 25, 5, `"00"`, `"24"`)
	check("SELECT VALUE c.id FROM c", -1, 25, 1, `"00"`, `"24"`)
	check("SELECT VALUE c.id FROM c", 0, 25, 1, `"00"`, `"24"`)
	check("SELECT VALUE c.id FROM c ORDER BY c.n", 10, 25, 3, `"24"`, `"00"`)
	check("SELECT TOP 12 VALUE c.id FROM c", 5, 12, 3, `"00"`, `"11"`)
	check("SELECT VALUE c.id FROM c ORDER BY c.n OFFSET 3 LIMIT 9", 4, 9, 3, `"21"`, `"13"`)
	check("SELECT DISTINCT VALUE c.g FROM c", 2, 3, 2, `0`, `2`)
	check("SELECT VALUE c.id FROM c WHERE c.g = 1", 3, 8, 3, `"01"`, `"22"`)
}

func TestQueryPagingSeesConcurrentInsertsInRidOrder(t *testing.T) {
	e := newEnv(t)
	c := e.container("page", nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := 0; i < 4; i++ {
		_, err := c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": "p"}), nil)
		require.NoError(t, err)
	}
	pager := c.NewQueryItemsPager("SELECT VALUE c.id FROM c", pk, &azcosmos.QueryOptions{PageSizeHint: 2})
	first, err := pager.NextPage(e.ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, len(first.Items))
	_, err = c.DeleteItem(e.ctx, pk, "0", nil)
	require.NoError(t, err)
	_, err = c.CreateItem(e.ctx, pk, mustJSON(t, map[string]any{"id": "late", "pk": "p"}), nil)
	require.NoError(t, err)
	var rest []string
	for pager.More() {
		p, err := pager.NextPage(e.ctx)
		require.NoError(t, err)
		for _, it := range p.Items {
			rest = append(rest, string(it))
		}
	}
	assert.Equal(t, []string{`"2"`, `"3"`, `"late"`}, rest)
}
