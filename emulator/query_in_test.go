package emulator

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInSetMatchesGenericEvaluation compares the set plan of IN lists with
// the generic evaluation (an OR of equalities in three-valued logic) on
// random documents and lists, NOT IN included.
func TestInSetMatchesGenericEvaluation(t *testing.T) {
	e := newEngineStore(t)
	values := []string{`1`, `1.5`, `-0`, `0`, `12`, `"1"`, `"a"`, `"é"`, `""`, `true`, `false`, `null`, `[1]`, `{"x":1}`}
	var docs []*item
	for i, v := range values {
		docs = append(docs, e.write(fmt.Appendf(nil, `{"id":"%d","pk":"p","v":%s}`, i, v), nil))
	}
	docs = append(docs, e.write([]byte(`{"id":"missing","pk":"p"}`), nil))

	literals := []string{`1`, `1.0`, `0`, `-0`, `12`, `'1'`, `'a'`, `'é'`, `''`, `true`, `false`, `null`}
	rng := rand.New(rand.NewSource(3))
	for range 400 {
		n := 1 + rng.Intn(4)
		list := make([]string, n)
		for i := range list {
			list[i] = literals[rng.Intn(len(literals))]
		}
		for _, not := range []string{"", "NOT "} {
			text := fmt.Sprintf("SELECT VALUE c.id FROM c WHERE c.v %sIN (%s)", not, strings.Join(list, ", "))
			q, err := parseQuery(text)
			require.NoError(t, err)
			in := q.where.(inExpr)
			require.NotNil(t, in.set, text)
			slow := in
			slow.set = nil
			requireSameEvaluation(t, q, nil, in, slow, docs)
		}
	}

	// Lists with a parameter or a non-scalar element keep the generic path.
	for _, text := range []string{"SELECT * FROM c WHERE c.v IN (1, @p)", "SELECT * FROM c WHERE c.v IN (1, [1])", "SELECT * FROM c WHERE c.v IN (1, c.w)"} {
		q, err := parseQuery(text)
		require.NoError(t, err)
		require.Nil(t, q.where.(inExpr).set, text)
	}
}

// TestGroupByPlannedExpressions groups by a comparison and by an IN list,
// whose evaluation plans must not stop the select list from matching the
// GROUP BY expressions.
func TestGroupByPlannedExpressions(t *testing.T) {
	e := newEngineStore(t)
	for i := range 6 {
		e.write(fmt.Appendf(nil, `{"id":"%d","pk":"p","a":%d}`, i, i%3), nil)
	}
	for text, want := range map[string]string{
		"SELECT c.a = 1 AS x, COUNT(1) AS n FROM c GROUP BY c.a = 1":             `{"x":false,"n":4},{"x":true,"n":2}`,
		"SELECT c.a IN (1, 2) AS x, COUNT(1) AS n FROM c GROUP BY c.a IN (1, 2)": `{"x":false,"n":2},{"x":true,"n":4}`,
	} {
		q, err := parseQuery(text)
		require.NoError(t, err, text)
		pg, err := q.execute(execInput{docs: e.c.snapshot(nil)}, pageRequest{maxItems: -1})
		require.NoError(t, err, text)
		require.Equal(t, want, string(pg.buf), text)
	}
	_, err := parseQuery("SELECT c.a IN (1, 3) AS x FROM c GROUP BY c.a IN (1, 2)")
	require.Error(t, err, "a different list is not the GROUP BY expression")
}
