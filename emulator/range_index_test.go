package emulator

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRangeIndexedPartitionQueriesMatchScans runs random queries with
// range filters (c.e > @a, c.e BETWEEN 3 AND 9, 4 <= c.e, combined with
// equalities) scoped to one logical partition, under random creates,
// replaces and deletes, each time both on the index's candidates and on
// every document of the partition, page by page, and requires the same
// results; the range indexes must hold exactly the partition's documents
// with a number there, and must have narrowed many scans.
func TestRangeIndexedPartitionQueriesMatchScans(t *testing.T) {
	t.Parallel()
	e := newEngineStore(t)
	c := e.c
	rng := rand.New(rand.NewSource(5))
	live := map[string]*item{}
	vals := []string{`1`, `2`, `2.5`, `3`, `7`, `9`, `12`, `-1`, `0`, `-0`, `1e3`, `"3"`, `"a"`, `true`, `null`, `[3]`, `{"e":3}`}
	write := func() {
		id := fmt.Sprint(rng.Intn(200))
		pk := fmt.Sprint("p", rng.Intn(3))
		key := pk + "/" + id
		prev := live[key]
		if prev != nil && rng.Intn(4) == 0 {
			e.remove(prev)
			delete(live, key)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%q,"pk":%q,"t":%q`, id, pk, []string{"h", "q", "i"}[rng.Intn(3)])
		for _, k := range []string{"e", "x"} {
			if rng.Intn(5) > 0 {
				fmt.Fprintf(&b, `,%q:%s`, k, vals[rng.Intn(len(vals))])
			}
		}
		b.WriteString("}")
		live[key] = e.write([]byte(b.String()), prev)
	}
	params := map[string]value{"@a": numberValue(3), "@s": stringValue("3"), "@t": stringValue("h")}
	bound := func() string {
		return []string{"3", "@a", "0", "-1", "2.5", "12", "@s", "'a'", "1000"}[rng.Intn(9)]
	}
	cond := func() string {
		prop := []string{"c.e", "c.x"}[rng.Intn(2)]
		switch rng.Intn(4) {
		case 0:
			return fmt.Sprintf("%s %s %s", prop, []string{">", ">=", "<", "<="}[rng.Intn(4)], bound())
		case 1:
			return fmt.Sprintf("%s %s %s", bound(), []string{">", ">=", "<", "<="}[rng.Intn(4)], prop)
		case 2:
			return fmt.Sprintf("%s BETWEEN %s AND %s", prop, bound(), bound())
		}
		return "c.t = " + []string{"'h'", "'q'", "@t"}[rng.Intn(3)]
	}
	narrowed := 0
	const rounds = 300
	for range rounds {
		for range 15 {
			write()
		}
		var where string
		switch rng.Intn(4) {
		case 0:
			where = cond()
		case 1:
			where = cond() + " AND " + cond()
		case 2:
			where = "c.t IN ('i', 'q') OR (c.t = 'h' AND " + cond() + ")"
		default:
			where = "(" + cond() + " OR " + cond() + ") AND c.id != '7'"
		}
		q, err := parseQuery("SELECT * FROM c WHERE " + where)
		require.NoError(t, err)
		key := fmt.Sprintf(`["p%d"]`, rng.Intn(3))
		if c.parts[key] == nil {
			continue
		}
		plan := q.indexPlan(params, true)
		c.prepareIndexes(plan, &key)
		indexed := func() []*item { return c.querySnapshot(&key, plan) }
		if len(indexed()) < len(c.parts[key].byID) {
			narrowed++
		}
		full := func() []*item { return c.snapshot(&key) }
		size := []int{-1, 1, 4, 100}[rng.Intn(4)]
		require.Equal(t, runAllPages(t, q, full, params, size), runAllPages(t, q, indexed, params, size), "%s in %s (page size %d)", where, key, size)
	}
	require.Greater(t, narrowed, rounds/4, "the indexes narrowed many scans")
	for key, p := range c.parts {
		require.NotEmpty(t, p.ranges, "partition %s has range indexes", key)
		for prop, rx := range p.ranges {
			n := 0
			for i, en := range rx.entries {
				if i > 0 {
					require.Negative(t, rangeCmp(rx.entries[i-1].n, rx.entries[i-1].seq, en.n, en.seq), "ordered by number, then rid")
				}
				if en.it == nil {
					continue
				}
				require.True(t, c.live(en.it) && en.it.part == p, "indexed documents are live and of the partition")
				got, ok := en.it.numberAt(prop)
				require.True(t, ok)
				require.Equal(t, got, en.n)
				n++
			}
			want := 0
			for _, it := range p.byID {
				if _, ok := it.numberAt(prop); ok {
					want++
				}
			}
			require.Equal(t, want, n, "every document of %s with a number at %s is indexed once", key, prop)
		}
	}
}

// TestSinglePartitionPlanBuildsNoEqualityIndex: a single-partition query's
// plan keeps only the equality leaves whose index exists (a conjunction
// drops the others, a disjunction with one gives no plan), so that such a
// query never adds an index every write of the container would pay for;
// its range leaves stay.
func TestSinglePartitionPlanBuildsNoEqualityIndex(t *testing.T) {
	t.Parallel()
	e := newEngineStore(t)
	c := e.c
	e.write([]byte(`{"id":"a","pk":"p","t":"h","x":3,"e":4}`), nil)
	params := map[string]value{}
	plan := func(where string) *indexPlan {
		q, err := parseQuery("SELECT * FROM c WHERE " + where)
		require.NoError(t, err)
		return q.indexPlan(params, true).withEqIndexes(c)
	}
	require.Nil(t, plan("c.t = 'h'"), "no index exists yet")
	q, err := parseQuery("SELECT * FROM c WHERE c.t = 'x'")
	require.NoError(t, err)
	c.prepareIndexes(q.indexPlan(params, false), nil) // a cross-partition query builds it
	p := plan("c.t IN ('i', 'q') OR (c.t = 'h' AND c.x = 3 AND c.e > 2)")
	require.NotNil(t, p)
	require.Equal(t, []string{"t"}, p.keys())
	require.Equal(t, []string{"e"}, p.rangeKeys())
	require.Nil(t, plan("c.x = 3 OR c.t = 'h'"))
	require.Nil(t, plan("c.x = 3"))
	key := `["p"]`
	c.prepareIndexes(p, &key)
	require.Nil(t, c.eqIdx["x"], "no index on x was built")
	require.NotNil(t, c.parts[key].ranges["e"], "the range index of the partition was")
}
