package emulator

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEqualityFastPathMatchesGenericComparison compares the byte-level
// evaluation of "path = scalar" with the generic evaluator on random
// documents and literals.
func TestEqualityFastPathMatchesGenericComparison(t *testing.T) {
	e := newEngineStore(t)
	rng := rand.New(rand.NewSource(7))
	scalars := []string{`1`, `1.5`, `12`, `-1`, `0`, `1e21`, `"1"`, `"a"`, `"a\"b"`, `"é"`, `"\u0001"`, `""`, `true`, `false`, `null`, `[1]`, `{"x":1}`}
	var docs []*item
	for i := 0; i < 400; i++ {
		body := fmt.Sprintf(`{"id":"%d","pk":"p","v":%s,"o":{"w":%s,"z":%s}}`, i,
			scalars[rng.Intn(len(scalars))], scalars[rng.Intn(len(scalars))], scalars[rng.Intn(len(scalars))])
		if i%5 == 0 {
			body = fmt.Sprintf(`{"id":"%d","pk":"p","o":%s}`, i, scalars[rng.Intn(len(scalars))])
		}
		docs = append(docs, e.write([]byte(body), nil))
	}
	literals := []string{`1`, `1.0`, `1.5`, `12`, `-1`, `0`, `1e21`, `'1'`, `'a'`, `'a"b'`, `'é'`, `''`, `true`, `false`, `null`, `@p`}
	params := map[string]value{"@p": numberValue(12)}
	for _, path := range []string{"c.v", "c.o.w", "c.o.z", "c.o", "c.missing", "c.o.w.deeper"} {
		for _, lit := range literals {
			for _, op := range []string{"=", "!="} {
				text := fmt.Sprintf("SELECT VALUE c.id FROM c WHERE %s %s %s", path, op, lit)
				q, err := parseQuery(text)
				require.NoError(t, err)
				b := q.where.(binaryExpr)
				require.NotNil(t, b.eq, text)
				slow := b
				slow.eq = nil
				requireSameEvaluation(t, q, params, b, slow, docs)
			}
		}
	}
}
