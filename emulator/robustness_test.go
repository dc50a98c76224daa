package emulator

import (
	"math/rand"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGarbageRequestsNeverFail5xx sends malformed bodies and headers to every
// route: each must be answered with a 4xx (or a success), never a 5xx or a
// dropped connection.
func TestGarbageRequestsNeverFail5xx(t *testing.T) {
	e := newEnv(t)
	e.container("c", nil)
	rng := rand.New(rand.NewSource(42))
	bodies := []string{"", "null", "{", "[", `{"id":1}`, `{"id":"x"}`, `[{"operationType":"Create"}]`,
		`[{"operationType":"Patch","id":"x","resourceBody":{"operations":[{"op":"set","path":"/","value":1}]}}]`,
		`{"query":"SELECT * FROM c WHERE"}`, `{"query":""}`, `{"query":"SELECT * FROM c","parameters":[{"name":"x"}]}`,
		`{"operations":[{"op":"move","path":"/a"}]}`, `{"condition":"FROM c WHERE c.x =","operations":[]}`,
		`{"id":"c2","partitionKey":{"paths":["no-slash"]}}`, `{"id":"c3","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash"},"indexingPolicy":{"includedPaths":"x"}}`,
		`{"content":{"offerThroughput":"x"}}`, "\xff\xfe", `{"id":"` + string(make([]byte, 300)) + `"}`}
	paths := []string{"", "dbs", "dbs/db", "dbs/db/colls", "dbs/db/colls/c", "dbs/db/colls/c/docs", "dbs/db/colls/c/docs/x",
		"dbs/db/colls/c/pkranges", "dbs/db/colls/c/docs/x/y", "offers", "offers/zz", "dbs/a%2Fb", "dbs/db/colls/missing/docs"}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	headerSets := []map[string]string{
		{},
		{"x-ms-documentdb-partitionkey": `["x"]`},
		{"x-ms-documentdb-partitionkey": `[`},
		{"x-ms-documentdb-partitionkey": `[{"a":1}]`},
		{"x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True", "x-ms-max-item-count": "abc"},
		{"x-ms-cosmos-is-batch-request": "True", "x-ms-documentdb-partitionkey": `["x"]`},
		{"A-IM": "Incremental Feed", "If-None-Match": `"9999"`, "If-Modified-Since": "garbage"},
		{"x-ms-continuation": "not-a-token", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-partitionkey": `["x"]`},
		{"x-ms-offer-throughput": "-5"},
		{"x-ms-cosmos-offer-autopilot-settings": "{"},
	}
	for i := 0; i < 3000; i++ {
		m := methods[rng.Intn(len(methods))]
		p := paths[rng.Intn(len(paths))]
		b := bodies[rng.Intn(len(bodies))]
		h := headerSets[rng.Intn(len(headerSets))]
		status, _, body := e.raw(m, p, []byte(b), h)
		assert.Less(t, status, 500, "%s /%s %q %v: %s", m, p, b, h, body)
	}
}
