package emulator

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// indexTestScalars are the values the random documents hold: scalars whose
// texts differ but may compare equal (1 and 1.0 are stored the same), and
// objects and arrays no scalar equals.
var indexTestScalars = []string{`1`, `1.0`, `12`, `-0`, `0`, `1e21`, `"1"`, `"a"`, `"a\"b"`, `"é"`, `"\u00e9"`, `""`, `true`, `false`, `null`, `[1]`, `{"x":1}`}

// randomIndexDoc returns a document of partition pk with random top-level
// properties t, s and f (each sometimes missing, the last key winning when
// t is repeated).
func randomIndexDoc(rng *rand.Rand, id, pk string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"pk":%q`, id, pk)
	for _, k := range []string{"t", "s", "f"} {
		if rng.Intn(6) > 0 {
			fmt.Fprintf(&b, `,%q:%s`, k, indexTestScalars[rng.Intn(len(indexTestScalars))])
		}
	}
	if rng.Intn(10) == 0 {
		fmt.Fprintf(&b, `,"t":%s`, indexTestScalars[rng.Intn(len(indexTestScalars))])
	}
	b.WriteString(`,"n":{"t":"a"}}`)
	return b.String()
}

// runAllPages runs q over docs page by page (pageSize documents, following
// continuations as the gateway hands them out) and returns every result.
func runAllPages(t *testing.T, q *query, docs func() []*item, params map[string]value, pageSize int) []string {
	t.Helper()
	var out []string
	token := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "paging must end")
		pg, err := q.execute(execInput{docs: docs()}, pageRequest{params: params, maxItems: pageSize, token: token, eager: true})
		require.NoError(t, err, q.text)
		if len(pg.buf) > 0 {
			out = append(out, string(pg.buf))
		}
		if pg.next == "" {
			return out
		}
		token = pg.next
	}
}

// TestIndexedQueriesMatchFullScans runs random queries over a container
// under random creates, replaces and deletes, cross-partition and scoped
// to one logical partition, each time both on the equality index's
// candidates and on every document (of the partition), page by page, and
// requires the same results; it also requires the index to have narrowed
// many scans, so that the comparison is not vacuous.
func TestIndexedQueriesMatchFullScans(t *testing.T) {
	e := newEngineStore(t)
	c := e.c
	rng := rand.New(rand.NewSource(11))
	live := map[string]*item{}
	write := func() {
		id := fmt.Sprint(rng.Intn(300))
		pk := fmt.Sprint("p", rng.Intn(7))
		key := pk + "/" + id
		prev := live[key]
		if prev != nil && rng.Intn(4) == 0 {
			e.remove(prev)
			delete(live, key)
			return
		}
		live[key] = e.write([]byte(randomIndexDoc(rng, id, pk)), prev)
	}
	lits := []string{`1`, `1.0`, `12`, `0`, `-0`, `1e21`, `'1'`, `'a'`, `'a"b'`, `'é'`, `''`, `true`, `false`, `null`, `@p`, `@q`}
	params := map[string]value{"@p": numberValue(12), "@q": stringValue("a")}
	lit := func() string { return lits[rng.Intn(len(lits))] }
	cond := func() string {
		prop := []string{"c.t", "c.s", "c.f"}[rng.Intn(3)]
		if rng.Intn(3) == 0 {
			return fmt.Sprintf("%s IN (%s, %s)", prop, lit(), lit())
		}
		return fmt.Sprintf("%s = %s", prop, lit())
	}
	narrowed, narrowedInPart, planned := 0, 0, 0
	for round := 0; round < 300; round++ {
		for range 20 {
			write()
		}
		var where string
		switch rng.Intn(5) {
		case 0:
			where = cond()
		case 1:
			where = cond() + " AND " + cond()
		case 2:
			where = "(" + cond() + " OR " + cond() + ") AND NOT IS_NULL(c.id)"
		case 3:
			where = cond() + " AND (c.n.t = 'a' OR " + cond() + ")"
		default:
			where = "(" + cond() + " AND c.pk != 'p3') OR " + cond()
		}
		text := "SELECT * FROM c WHERE " + where
		if rng.Intn(2) == 0 {
			text = "SELECT c.id, c.t FROM c WHERE " + where
		}
		q, err := parseQuery(text)
		require.NoError(t, err)
		plan := q.indexPlan(params, false)
		require.NotNil(t, plan, text)
		planned++
		c.prepareIndexes(plan, nil)
		indexed := func() []*item { return c.querySnapshot(nil, plan) }
		if len(indexed()) < c.count {
			narrowed++
		}
		full := func() []*item { return c.snapshot(nil) }
		size := []int{-1, 1, 3, 100}[rng.Intn(4)]
		require.Equal(t, runAllPages(t, q, full, params, size), runAllPages(t, q, indexed, params, size), "%s (page size %d)", text, size)
		// The same query scoped to one logical partition: the index's
		// candidates of that partition, or its documents.
		for _, it := range live {
			key := it.part.key
			inPart := func() []*item { return c.querySnapshot(&key, plan) }
			if len(inPart()) < len(c.parts[key].byID) {
				narrowedInPart++
			}
			part := func() []*item { return c.snapshot(&key) }
			require.Equal(t, runAllPages(t, q, part, params, size), runAllPages(t, q, inPart, params, size), "%s in partition %s (page size %d)", text, key, size)
			break
		}
	}
	require.Greater(t, narrowed, planned/2, "the index narrowed most scans")
	require.Greater(t, narrowedInPart, planned/4, "the index narrowed scans of one partition too")
	// The indexes hold exactly the live documents.
	for key, ix := range c.eqIdx {
		n := 0
		for text, list := range ix.byValue {
			require.NotEmpty(t, list)
			for i, it := range list {
				require.True(t, c.live(it), "indexed documents are live")
				got, ok := it.scalarText(key)
				require.True(t, ok)
				require.Equal(t, text, string(got))
				if i > 0 {
					require.Less(t, list[i-1].seq, it.seq, "rid order")
				}
			}
			n += len(list)
		}
		want := 0
		for _, it := range c.all {
			if it != nil {
				if _, ok := it.scalarText(key); ok {
					want++
				}
			}
		}
		require.Equal(t, want, n, "every live document with a scalar %s is indexed once", key)
	}
}

// TestIndexPlanOnlyWhenSafe lists the queries the index must not serve:
// their results or errors could depend on documents it would skip.
func TestIndexPlanOnlyWhenSafe(t *testing.T) {
	params := map[string]value{"@p": stringValue("a"), "@arr": arrayValue([]value{numberValue(1)})}
	for text, want := range map[string]bool{
		"SELECT * FROM c WHERE c.type = 'a'":                       true,
		"SELECT * FROM c WHERE c.type = @p AND c.x > 1":            true,
		"SELECT * FROM c WHERE c.type IN ('a', 'b') OR c.slot = 3": true,
		"SELECT * FROM root r WHERE r.type = 'a'":                  true,
		"SELECT * FROM c":                                                               false,
		"SELECT * FROM c WHERE c.type != 'a'":                                           false,
		"SELECT * FROM c WHERE NOT (c.type = 'a')":                                      false,
		"SELECT * FROM c WHERE c.type NOT IN ('a')":                                     false,
		"SELECT * FROM c WHERE c.type = 'a' OR c.x > 1":                                 false,
		"SELECT * FROM c WHERE c.n.type = 'a'":                                          false,
		"SELECT * FROM c WHERE c._ts = 1":                                               false,
		"SELECT * FROM c WHERE c.type = @missing":                                       false,
		"SELECT * FROM c WHERE c.type = 'a' AND c.x = @missing":                         false,
		"SELECT * FROM c WHERE c.type = @arr":                                           false,
		"SELECT * FROM c WHERE c.type = 'a' AND EXISTS(SELECT VALUE 1 FROM x IN c.arr)": false,
		"SELECT VALUE c.id FROM c JOIN x IN c.arr WHERE c.type = 'a'":                   false,
		"SELECT VALUE x FROM x IN c.arr WHERE x = 1":                                    false,
	} {
		q, err := parseQuery(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, q.indexPlan(params, false) != nil, text)
	}
}

// TestIndexedCrossPartitionQueriesThroughTheSDK keeps an index current
// through every kind of write the SDK makes (create, upsert, replace,
// patch, delete, transactional batch) and checks the cross-partition
// results after each.
func TestIndexedCrossPartitionQueriesThroughTheSDK(t *testing.T) {
	e := newEnv(t)
	c := e.container("idx", nil)
	ids := func(q string) string {
		items, _, err := queryAll(e.ctx, c, q, azcosmos.NewPartitionKey(), nil)
		require.NoError(t, err)
		return string(joinItems(items))
	}
	pk := func(s string) azcosmos.PartitionKey { return azcosmos.NewPartitionKeyString(s) }
	const q = "SELECT VALUE c.id FROM c WHERE c.type = 'queue' AND c.slot IN (1, 2)"
	for i := range 6 {
		_, err := c.CreateItem(e.ctx, pk(fmt.Sprint("p", i%3)), []byte(fmt.Sprintf(`{"id":"m%d","pk":"p%d","type":"queue","slot":%d}`, i, i%3, i%4)), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, `"m1","m2","m5"`, ids(q), "slots 1 and 2 of m0..m5")

	_, err := c.ReplaceItem(e.ctx, pk("p2"), "m2", []byte(`{"id":"m2","pk":"p2","type":"history","slot":2}`), nil)
	require.NoError(t, err)
	_, err = c.UpsertItem(e.ctx, pk("p0"), []byte(`{"id":"m3","pk":"p0","type":"queue","slot":1}`), nil)
	require.NoError(t, err)
	_, err = c.PatchItem(e.ctx, pk("p0"), "m0", func() azcosmos.PatchOperations {
		var p azcosmos.PatchOperations
		p.AppendSet("/slot", 2)
		return p
	}(), nil)
	require.NoError(t, err)
	_, err = c.DeleteItem(e.ctx, pk("p2"), "m5", nil)
	require.NoError(t, err)
	assert.Equal(t, `"m0","m1","m3"`, ids(q), "m2 changed type, m0 moved to slot 2, m3 was a new document, m5 was deleted")

	b := c.NewTransactionalBatch(pk("p1"))
	b.DeleteItem("m1", nil)
	b.CreateItem([]byte(`{"id":"m7","pk":"p1","type":"queue","slot":1}`), nil)
	r, err := c.ExecuteTransactionalBatch(e.ctx, b, nil)
	require.NoError(t, err)
	require.True(t, r.Success)
	failed := c.NewTransactionalBatch(pk("p1"))
	failed.CreateItem([]byte(`{"id":"m8","pk":"p1","type":"queue","slot":1}`), nil)
	failed.CreateItem([]byte(`{"id":"m7","pk":"p1","type":"queue","slot":1}`), nil)
	r, err = c.ExecuteTransactionalBatch(e.ctx, failed, nil)
	require.NoError(t, err)
	require.False(t, r.Success, "m7 exists: nothing of the batch is applied")
	assert.Equal(t, `"m0","m3","m7"`, ids(q))
	assert.Equal(t, `"m2"`, ids("SELECT VALUE c.id FROM c WHERE c.type = 'history'"))
}
