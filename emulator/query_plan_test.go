package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The query plan protocol (query_plan.go), driven as an SDK drives it: ask
// for the plan, run its rewritten query on every partition key range, and
// merge the rows by the plan. The Node SDK scenario "query-plan"
// (emulator/conformance) runs the same protocol through @azure/cosmos.

// nodeQueryFeatures is the supported-query-features header @azure/cosmos
// 4.10.1 sends with a plan request (every QueryFeature it knows).
const nodeQueryFeatures = "NonValueAggregate,Aggregate,Distinct,MultipleOrderBy,OffsetAndLimit,OrderBy,Top,CompositeAggregate,GroupBy,MultipleAggregates,NonStreamingOrderBy,ListAndSetAggregate,CountIf,HybridSearch,WeightedRankFusion,HybridSearchSkipOrderByRewrite"

// planFor asks the emulator for q's plan on container coll, as @azure/cosmos
// asks.
func (e *env) planFor(coll, q string) (int, queryPlan, []byte) {
	e.t.Helper()
	st, _, body := e.raw(http.MethodPost, "dbs/db/colls/"+coll+"/docs", []byte(`{"query":`+strconv.Quote(q)+`}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", queryPlanHeader: "True",
		supportedFeaturesHeader: nodeQueryFeatures})
	var plan queryPlan
	if st == http.StatusOK {
		require.NoError(e.t, json.Unmarshal(body, &plan), "%s", body)
	}
	return st, plan, body
}

// onRange runs query text on one partition key range and returns its rows.
func (e *env) onRange(coll, text, rangeID string) []json.RawMessage {
	e.t.Helper()
	st, _, body := e.raw(http.MethodPost, "dbs/db/colls/"+coll+"/docs", []byte(`{"query":`+strconv.Quote(text)+`}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-partitionkeyrangeid": rangeID})
	require.Equal(e.t, http.StatusOK, st, "%s: %s", text, body)
	var page struct{ Documents []json.RawMessage }
	require.NoError(e.t, json.Unmarshal(body, &page))
	return page.Documents
}

func seedPlanDocs(t *testing.T, e *env) {
	c := e.container("plan", nil)
	colors := []string{"red", "green", "blue"}
	for i := 0; i < 9; i++ {
		doc := fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d,"color":%q}`, i, i, i, colors[i%3])
		_, err := c.CreateItem(e.ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i)), []byte(doc), nil)
		require.NoError(t, err)
	}
}

func TestQueryPlanDescribesTheMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	for _, tc := range []struct {
		query     string
		check     func(t *testing.T, info planInfo)
		rewritten string
	}{
		{"SELECT * FROM c ORDER BY c.n DESC", func(t *testing.T, info planInfo) {
			assert.Equal(t, []string{"Descending"}, info.OrderBy)
			assert.Equal(t, []string{"c.n"}, info.OrderByExpressions)
		}, `SELECT c._rid, [{"item": c.n}] AS orderByItems, c AS payload FROM c WHERE ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n DESC`},
		{"SELECT TOP 2 c.n AS v FROM c WHERE c.n > 1 ORDER BY c.n", func(t *testing.T, info planInfo) {
			require.NotNil(t, info.Top)
			assert.Equal(t, 2, *info.Top)
		}, `SELECT TOP 2 c._rid, [{"item": c.n}] AS orderByItems, {"v": c.n} AS payload FROM c WHERE (c.n > 1) AND ({documentdb-formattableorderbyquery-filter}) ORDER BY c.n`},
		{"SELECT * FROM c OFFSET 2 LIMIT 3", func(t *testing.T, info planInfo) {
			require.NotNil(t, info.Offset)
			require.NotNil(t, info.Limit)
			assert.Equal(t, 2, *info.Offset)
			assert.Equal(t, 3, *info.Limit)
		}, `SELECT * FROM c OFFSET 0 LIMIT 5`},
		{"SELECT DISTINCT VALUE c.color FROM c", func(t *testing.T, info planInfo) {
			assert.Equal(t, "Unordered", info.DistinctType)
			assert.True(t, info.HasSelectValue)
		}, `SELECT DISTINCT VALUE c.color FROM c`},
		{"SELECT VALUE MAX(c.n) FROM c", func(t *testing.T, info planInfo) {
			assert.Equal(t, []string{"Max"}, info.Aggregates)
		}, `SELECT VALUE [{"item": {"max": MAX(c.n), "count": COUNT(c.n)}}] FROM c`},
		{"SELECT c.color, COUNT(1) AS n FROM c GROUP BY c.color", func(t *testing.T, info planInfo) {
			assert.Equal(t, []string{"c.color"}, info.GroupByExpressions)
			assert.Equal(t, []string{"color", "n"}, info.GroupByAliases)
			require.Contains(t, info.GroupByAliasToAggregateType, "color")
			assert.Nil(t, info.GroupByAliasToAggregateType["color"])
			require.NotNil(t, info.GroupByAliasToAggregateType["n"])
			assert.Equal(t, "Count", *info.GroupByAliasToAggregateType["n"])
		}, `SELECT [{"item": c.color}] AS groupByItems, {"color": c.color, "n": {"item": COUNT(1)}} AS payload FROM c GROUP BY c.color`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			st, plan, body := e.planFor("plan", tc.query)
			require.Equal(t, http.StatusOK, st, "%s", body)
			assert.Equal(t, 2, plan.Version)
			require.Len(t, plan.QueryRanges, 1)
			assert.Equal(t, planRange{Min: "", Max: "FF", IsMinInclusive: true}, plan.QueryRanges[0])
			assert.Equal(t, tc.rewritten, plan.QueryInfo.RewrittenQuery)
			tc.check(t, plan.QueryInfo)
		})
	}
}

func TestQueryPlanRewrittenQueriesMergeToTheAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	ranges := []string{"0", "1"}

	// ORDER BY: each range returns its rows sorted with orderByItems; a
	// merge by those items gives the whole order.
	_, plan, _ := e.planFor("plan", "SELECT VALUE c.n FROM c ORDER BY c.n DESC")
	rewritten := plan.QueryInfo.RewrittenQuery
	require.Contains(t, rewritten, orderByFilterPlaceholder)
	firstPage := strings.ReplaceAll(rewritten, orderByFilterPlaceholder, "true") // as an SDK sends it
	var merged []float64
	for _, r := range ranges {
		for _, row := range e.onRange("plan", firstPage, r) {
			var x struct {
				OrderByItems []struct{ Item float64 } `json:"orderByItems"`
				Payload      float64                  `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(row, &x), "%s", row)
			require.Len(t, x.OrderByItems, 1)
			assert.Equal(t, x.Payload, x.OrderByItems[0].Item)
			merged = append(merged, x.Payload)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(merged)))
	assert.Equal(t, []float64{8, 7, 6, 5, 4, 3, 2, 1, 0}, merged)

	// AVG: each range returns its sum and count; their ratio is the mean.
	_, plan, _ = e.planFor("plan", "SELECT VALUE AVG(c.n) FROM c")
	var sum, count float64
	for _, r := range ranges {
		for _, row := range e.onRange("plan", plan.QueryInfo.RewrittenQuery, r) {
			var x []struct {
				Item struct{ Sum, Count float64 }
			}
			require.NoError(t, json.Unmarshal(row, &x), "%s", row)
			require.Len(t, x, 1)
			sum, count = sum+x[0].Item.Sum, count+x[0].Item.Count
		}
	}
	assert.Equal(t, 9.0, count)
	assert.Equal(t, 4.0, sum/count)

	// GROUP BY: rows per group and range, with groupByItems to merge on.
	_, plan, _ = e.planFor("plan", "SELECT c.color, COUNT(1) AS n FROM c GROUP BY c.color")
	counts := map[string]float64{}
	for _, r := range ranges {
		for _, row := range e.onRange("plan", plan.QueryInfo.RewrittenQuery, r) {
			var x struct {
				GroupByItems []struct{ Item string } `json:"groupByItems"`
				Payload      struct {
					Color string
					N     struct{ Item float64 }
				} `json:"payload"`
			}
			require.NoError(t, json.Unmarshal(row, &x), "%s", row)
			require.Len(t, x.GroupByItems, 1)
			assert.Equal(t, x.GroupByItems[0].Item, x.Payload.Color)
			counts[x.Payload.Color] += x.Payload.N.Item
		}
	}
	assert.Equal(t, map[string]float64{"red": 3, "green": 3, "blue": 3}, counts)
}

func TestCrossPartitionRefusalCarriesThePlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	st, h, body := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":"SELECT * FROM c ORDER BY c.n"}`), map[string]string{
		"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True"})
	require.Equal(t, http.StatusBadRequest, st)
	assert.Equal(t, "1004", h.Get("x-ms-substatus"))
	var refusal struct {
		Code                string `json:"code"`
		AdditionalErrorInfo string `json:"additionalErrorInfo"`
	}
	require.NoError(t, json.Unmarshal(body, &refusal), "%s", body)
	var plan queryPlan
	require.NoError(t, json.Unmarshal([]byte(refusal.AdditionalErrorInfo), &plan), "additionalErrorInfo is the plan as a JSON text: %s", body)
	assert.Equal(t, []string{"Ascending"}, plan.QueryInfo.OrderBy)
}

func TestQueryPlanRefusesWhatItCannotPlan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.container("plan", nil)
	for _, q := range []string{
		"SELECT c.id FROM c JOIN t IN c.tags ORDER BY c.n",
		"SELECT VALUE COUNT(1) + 1 FROM c",
		"SELECT COUNT(1) AS n FROM c ORDER BY c.n",
		"SELECT DISTINCT VALUE COUNT(1) FROM c",
	} {
		st, _, body := e.planFor("plan", q)
		assert.Equal(t, http.StatusBadRequest, st, q)
		assert.Contains(t, string(body), "does not plan cross-partition queries with", q)
	}
}

// TestPlanForClientsWithoutCompositeAggregatesHasBareMinMax checks the plan
// the Python SDK 3.x gets in the 400/1004 refusal (it sends no supported
// query features): MIN and MAX partials are the bare values its aggregators
// compare, so SELECT VALUE MAX(c.n) merges to the maximum, not to an object.
func TestPlanForClientsWithoutCompositeAggregatesHasBareMinMax(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	for _, tc := range []struct {
		query string
		want  float64
		merge func(a, b float64) float64
	}{
		{"SELECT VALUE MAX(c.n) FROM c", 8, func(a, b float64) float64 { return max(a, b) }},
		{"SELECT VALUE MIN(c.n) FROM c", 0, func(a, b float64) float64 { return min(a, b) }},
	} {
		st, _, body := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":`+strconv.Quote(tc.query)+`}`), map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True"})
		require.Equal(t, http.StatusBadRequest, st, "%s", body)
		var refusal struct{ AdditionalErrorInfo string }
		require.NoError(t, json.Unmarshal(body, &refusal), "%s", body)
		var plan queryPlan
		require.NoError(t, json.Unmarshal([]byte(refusal.AdditionalErrorInfo), &plan), "%s", body)
		var merged *float64
		for _, r := range []string{"0", "1"} {
			for _, row := range e.onRange("plan", plan.QueryInfo.RewrittenQuery, r) {
				var x []struct{ Item *float64 }
				require.NoError(t, json.Unmarshal(row, &x), "%s", row)
				require.Len(t, x, 1)
				require.NotNil(t, x[0].Item, "a bare number per range, not an object: %s", row)
				if merged == nil {
					merged = x[0].Item
				} else {
					m := tc.merge(*merged, *x[0].Item)
					merged = &m
				}
			}
		}
		require.NotNil(t, merged, tc.query)
		assert.Equal(t, tc.want, *merged, tc.query)

		// With CompositeAggregate declared, the partials carry their count.
		_, plan, _ = e.planFor("plan", tc.query)
		assert.Contains(t, plan.QueryInfo.RewrittenQuery, `"count": COUNT(c.n)`, tc.query)
	}
}

// TestOrderByContinuationSurvivesTheResumeFilter checks what @azure/cosmos
// 4.10 does to resume a cross-partition ORDER BY (enableQueryControl): it
// sends the plan's query with the filter placeholder replaced by a resume
// filter ("c.n > 1") together with the range's continuation, which the
// service accepts.
func TestOrderByContinuationSurvivesTheResumeFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedPlanDocs(t, e)
	_, plan, _ := e.planFor("plan", "SELECT VALUE c.n FROM c ORDER BY c.n")
	page := func(filter, token string) ([]json.RawMessage, string) {
		h := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True",
			"x-ms-documentdb-partitionkeyrangeid": "0", "x-ms-max-item-count": "2"}
		if token != "" {
			h["x-ms-continuation"] = token
		}
		text := strings.ReplaceAll(plan.QueryInfo.RewrittenQuery, orderByFilterPlaceholder, filter)
		st, hdr, body := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":`+strconv.Quote(text)+`}`), h)
		require.Equal(t, http.StatusOK, st, "%s", body)
		var p struct{ Documents []json.RawMessage }
		require.NoError(t, json.Unmarshal(body, &p))
		return p.Documents, hdr.Get("x-ms-continuation")
	}
	first, token := page("true", "")
	require.Len(t, first, 2)
	require.NotEmpty(t, token)
	rest, _ := page("c.n > 1", token)
	require.NotEmpty(t, rest)
	var x struct{ Payload float64 }
	require.NoError(t, json.Unmarshal(rest[0], &x))
	assert.Equal(t, 2.0, x.Payload)

	// An ordered DISTINCT resumes after its last sort keys too, whether the
	// resume filter keeps the last value (>=) or not (>).
	_, plan, _ = e.planFor("plan", "SELECT DISTINCT VALUE c.color FROM c ORDER BY c.color")
	first, token = page("true", "")
	var colors []string
	for _, row := range first {
		var x struct{ Payload string }
		require.NoError(t, json.Unmarshal(row, &x))
		colors = append(colors, x.Payload)
	}
	require.Equal(t, []string{"blue", "green"}, colors)
	require.NotEmpty(t, token)
	for _, filter := range []string{`c.color >= "green"`, `c.color > "green"`, "true"} {
		rest, next := page(filter, token)
		require.Len(t, rest, 1, filter)
		var x struct{ Payload string }
		require.NoError(t, json.Unmarshal(rest[0], &x))
		assert.Equal(t, "red", x.Payload, filter)
		assert.Empty(t, next, filter)
	}

	// Another query's token is still refused.
	h := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True",
		"x-ms-documentdb-partitionkeyrangeid": "0", "x-ms-continuation": token}
	st, _, body := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":"SELECT * FROM c ORDER BY c.id"}`), h)
	assert.Equal(t, http.StatusBadRequest, st, "%s", body)
}

// planShapes are query shapes with the plan fields that set them apart;
// TestQueryPlanCarriesEveryFieldForEachShape checks every other field keeps
// the service's default.
var planShapes = []struct {
	query    string
	distinct string
	top      any
	offset   any
	limit    any
	orderBy  int
	groupBy  int
	aggs     int
	aliases  int
	value    bool
}{
	{query: "SELECT * FROM c", distinct: "None"},
	{query: "SELECT c.id, c.n FROM c WHERE c.n > 2", distinct: "None"},
	{query: "SELECT VALUE c.n FROM c WHERE c.color = 'red'", distinct: "None", value: true},
	{query: "SELECT TOP 3 * FROM c", distinct: "None", top: 3.0},
	{query: "SELECT * FROM c OFFSET 1 LIMIT 2", distinct: "None", offset: 1.0, limit: 2.0},
	{query: "SELECT * FROM c ORDER BY c.n DESC", distinct: "None", orderBy: 1},
	{query: "SELECT TOP 2 VALUE c.n FROM c ORDER BY c.n", distinct: "None", top: 2.0, orderBy: 1, value: true},
	{query: "SELECT VALUE c.n FROM c ORDER BY c.n OFFSET 1 LIMIT 2", distinct: "None", offset: 1.0, limit: 2.0, orderBy: 1, value: true},
	{query: "SELECT DISTINCT VALUE c.color FROM c", distinct: "Unordered", value: true},
	{query: "SELECT DISTINCT c.color FROM c ORDER BY c.color", distinct: "Ordered", orderBy: 1},
	{query: "SELECT VALUE COUNT(1) FROM c", distinct: "None", aggs: 1, value: true},
	{query: "SELECT VALUE MAX(c.n) FROM c", distinct: "None", aggs: 1, value: true},
	{query: "SELECT COUNT(1) AS k, AVG(c.n) AS a FROM c", distinct: "None", aliases: 2},
	{query: "SELECT c.color, COUNT(1) AS k FROM c GROUP BY c.color", distinct: "None", groupBy: 1, aliases: 2},
	{query: "SELECT VALUE c.color FROM c GROUP BY c.color", distinct: "None", groupBy: 1, value: true},
}

// TestQueryPlanCarriesEveryFieldForEachShape checks the plan's JSON, as
// @azure/cosmos 4.10.1 reads it (queryIterator reads aggregates.length
// unguarded; its typings declare groupByAliasToAggregateType, distinctType,
// hasSelectValue and hasNonStreamingOrderBy non-optional), against the
// service's shape: every field present for every query shape, arrays empty
// rather than absent or null, top/offset/limit and dCountInfo null when
// unused, and the 400/1004 refusal carrying the same plan.
func TestQueryPlanCarriesEveryFieldForEachShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	arrays := []string{"orderBy", "orderByExpressions", "groupByExpressions", "groupByAliases", "aggregates"}
	for _, s := range planShapes {
		st, _, body := e.planFor("plan", s.query)
		require.Equal(t, http.StatusOK, st, "%s: %s", s.query, body)
		var plan map[string]any
		require.NoError(t, json.Unmarshal(body, &plan), s.query)
		assert.Equal(t, 2.0, plan["partitionedQueryExecutionInfoVersion"], s.query)
		ranges, ok := plan["queryRanges"].([]any)
		require.True(t, ok && len(ranges) > 0, "%s: queryRanges %v", s.query, plan["queryRanges"])
		for _, r := range ranges {
			assert.Equal(t, map[string]any{"min": "", "max": "FF", "isMinInclusive": true, "isMaxInclusive": false}, r, s.query)
		}
		info, ok := plan["queryInfo"].(map[string]any)
		require.True(t, ok, "%s: queryInfo %v", s.query, plan["queryInfo"])
		for _, k := range []string{"distinctType", "top", "offset", "limit", "orderBy", "orderByExpressions", "groupByExpressions",
			"groupByAliases", "aggregates", "groupByAliasToAggregateType", "rewrittenQuery", "hasSelectValue", "dCountInfo", "hasNonStreamingOrderBy"} {
			assert.Contains(t, info, k, s.query)
		}
		for _, k := range arrays {
			_, isArray := info[k].([]any)
			assert.True(t, isArray, "%s: %s is %#v, want an array", s.query, k, info[k])
		}
		_, isObject := info["groupByAliasToAggregateType"].(map[string]any)
		assert.True(t, isObject, "%s: groupByAliasToAggregateType %#v", s.query, info["groupByAliasToAggregateType"])
		assert.Equal(t, s.distinct, info["distinctType"], s.query)
		assert.Equal(t, s.top, info["top"], s.query)
		assert.Equal(t, s.offset, info["offset"], s.query)
		assert.Equal(t, s.limit, info["limit"], s.query)
		assert.Nil(t, info["dCountInfo"], s.query)
		assert.Equal(t, false, info["hasNonStreamingOrderBy"], s.query)
		assert.Equal(t, s.value, info["hasSelectValue"], s.query)
		assert.NotEmpty(t, info["rewrittenQuery"], s.query)
		assert.Len(t, info["orderBy"], s.orderBy, s.query)
		assert.Len(t, info["orderByExpressions"], s.orderBy, s.query)
		assert.Len(t, info["groupByExpressions"], s.groupBy, s.query)
		assert.Len(t, info["aggregates"], s.aggs, s.query)
		assert.Len(t, info["groupByAliases"], s.aliases, s.query)
		assert.Len(t, info["groupByAliasToAggregateType"], s.aliases, s.query)

		// The refusal of the same query sent without a plan carries the same
		// plan; a query that needs none is served.
		st, h, refusal := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":`+strconv.Quote(s.query)+`}`), map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True",
			supportedFeaturesHeader: nodeQueryFeatures})
		if st == http.StatusOK {
			continue
		}
		require.Equal(t, http.StatusBadRequest, st, "%s: %s", s.query, refusal)
		assert.Equal(t, "1004", h.Get("x-ms-substatus"), s.query)
		var errBody struct {
			AdditionalErrorInfo string `json:"additionalErrorInfo"`
		}
		require.NoError(t, json.Unmarshal(refusal, &errBody), s.query)
		assert.JSONEq(t, string(body), errBody.AdditionalErrorInfo, s.query)
	}
}

// TestCrossPartitionQueryTheEmulatorCannotPlanSaysSo checks that a
// cross-partition query the emulator cannot plan is refused with the
// emulator's own message, not a 400/1004 without a plan (which the SDKs
// would surface as the gateway's "first chance exception").
func TestCrossPartitionQueryTheEmulatorCannotPlanSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PhysicalPartitions: 2})
	seedPlanDocs(t, e)
	st, h, body := e.raw(http.MethodPost, "dbs/db/colls/plan/docs", []byte(`{"query":"SELECT c.color, COUNT(1) AS k FROM c GROUP BY c.color ORDER BY c.color"}`),
		map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-query-enablecrosspartition": "True"})
	require.Equal(t, http.StatusBadRequest, st, "%s", body)
	assert.Empty(t, h.Get("x-ms-substatus"), "not the 1004 that asks for a plan")
	assert.Contains(t, string(body), "does not plan cross-partition queries with ORDER BY with GROUP BY or aggregates")
}
