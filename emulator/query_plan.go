package emulator

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// The gateway's query plan protocol. The service does not run a
// cross-partition query that needs results merged across partitions (ORDER
// BY, TOP, OFFSET LIMIT, DISTINCT, GROUP BY, aggregates): it refuses it with
// 400 and substatus 1004, and SDKs that can run such queries ask for its
// plan instead (a query POST with x-ms-cosmos-is-query-plan-request: True).
// The plan, a PartitionedQueryExecutionInfo, says what the SDK must do on
// its side (queryInfo: sort orders, top, offset and limit, distinct,
// aggregates and group-by aliases) and gives the rewritten query the SDK
// sends to each partition key range (x-ms-documentdb-partitionkeyrangeid),
// whose rows carry what the merge needs: orderByItems and payload for ORDER
// BY, groupByItems and payload for GROUP BY, {"item": ...} wrappers for
// aggregates. The formats follow the official SDKs that consume them
// (@azure/cosmos's pipelinedQueryExecutionContext, its endpoint components
// and aggregators); emulator/README.md lists what is served.

// queryPlanHeader marks a request for a query plan.
const queryPlanHeader = "x-ms-cosmos-is-query-plan-request"

// orderByFilterPlaceholder is where an SDK puts its resume filter in a
// rewritten ORDER BY query ("true" on the first page).
const orderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}"

// queryPlan is the PartitionedQueryExecutionInfo of a query.
type queryPlan struct {
	Version     int         `json:"partitionedQueryExecutionInfoVersion"`
	QueryInfo   planInfo    `json:"queryInfo"`
	QueryRanges []planRange `json:"queryRanges"`
}

// planInfo is the queryInfo of a plan. Every field is always present, as
// in the service's answer: arrays empty rather than absent, distinctType
// "None", top/offset/limit and dCountInfo null when the query has none
// (@azure/cosmos reads aggregates.length unguarded, and its typings declare
// groupByAliasToAggregateType, distinctType, hasSelectValue and
// hasNonStreamingOrderBy non-optional).
type planInfo struct {
	DistinctType                string             `json:"distinctType"`
	Top                         *int               `json:"top"`
	Offset                      *int               `json:"offset"`
	Limit                       *int               `json:"limit"`
	OrderBy                     []string           `json:"orderBy"`
	OrderByExpressions          []string           `json:"orderByExpressions"`
	GroupByExpressions          []string           `json:"groupByExpressions"`
	GroupByAliases              []string           `json:"groupByAliases"`
	Aggregates                  []string           `json:"aggregates"`
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	RewrittenQuery              string             `json:"rewrittenQuery"`
	HasSelectValue              bool               `json:"hasSelectValue"`
	// DCountInfo is always null: the emulator plans no DCOUNT, and the
	// service sends null for a query without one.
	DCountInfo             *struct{} `json:"dCountInfo"`
	HasNonStreamingOrderBy bool      `json:"hasNonStreamingOrderBy"`
}

// planRange is an effective-partition-key range of a plan: the whole key
// space, as the emulator does not narrow a query to the ranges its filter
// allows.
type planRange struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

// aggregateTypes maps aggregate functions to the plan's names.
var aggregateTypes = map[string]string{"COUNT": "Count", "SUM": "Sum", "MIN": "Min", "MAX": "Max", "AVG": "Average"}

// supportedFeaturesHeader lists the query features a client's merge code
// supports (@azure/cosmos sends every QueryFeature it knows; the Python SDK
// 3.x sends none).
const supportedFeaturesHeader = "x-ms-cosmos-supported-query-features"

// compositeAggregates reports whether the client declares the
// CompositeAggregate feature: only then does the gateway answer MIN and MAX
// partials as {"min"/"max": ..., "count": ...} objects; older clients (the
// Python SDK 3.x, whose MaxAggregator compares the partials themselves) get
// the bare value, {"item": MAX(...)}.
func compositeAggregates(r *http.Request) bool {
	for _, f := range strings.Split(r.Header.Get(supportedFeaturesHeader), ",") {
		if strings.EqualFold(strings.TrimSpace(f), "CompositeAggregate") {
			return true
		}
	}
	return false
}

// planResponse answers a query plan request for q; composite is
// compositeAggregates of the request.
func planResponse(q *query, params map[string]value, composite bool) *response {
	plan, resp := q.plan(params, composite)
	if resp != nil {
		return resp
	}
	body, _ := json.Marshal(plan)
	return &response{status: http.StatusOK, body: body, charge: 1}
}

// crossPartitionNotServable is the gateway's answer to a cross-partition
// query it cannot serve, with q's plan in additionalErrorInfo; composite is
// compositeAggregates of the request. A query the emulator cannot plan gets
// the plan's own refusal (400, saying what is not planned) instead: a 1004
// without a plan would only make the SDKs surface the gateway's "first
// chance exception" text.
func crossPartitionNotServable(q *query, params map[string]value, composite bool) *response {
	plan, bad := q.plan(params, composite)
	if bad != nil {
		return bad
	}
	resp := errorResponse(http.StatusBadRequest, 1004,
		"The provided cross partition query can not be directly served by the gateway. This is a first chance (internal) exception that all newer clients will know how to handle gracefully. This exception is traced, but unless you see it bubble up as an exception (which only happens on older SDK clients), then you can safely ignore this message.")
	b, _ := json.Marshal(plan)
	resp.errInfo = string(b)
	return resp
}

// plan builds q's query plan, or refuses a query the emulator cannot plan
// with 400 and a message saying so. composite selects the MIN and MAX
// partials (compositeAggregates).
func (q *query) plan(params map[string]value, composite bool) (queryPlan, *response) {
	info := planInfo{DistinctType: "None", OrderBy: []string{}, OrderByExpressions: []string{}, GroupByExpressions: []string{},
		GroupByAliases: []string{}, Aggregates: []string{}, GroupByAliasToAggregateType: map[string]*string{}}
	plan := queryPlan{Version: 2, QueryRanges: []planRange{{Min: "", Max: "FF", IsMinInclusive: true}}}
	ev := &evaluator{params: params, names: q.aliases}
	skip, take, err := q.countLimits(ev)
	if err != nil {
		return plan, queryErrorResponse(err)
	}
	if q.top != nil {
		info.Top = &take
	}
	limits := ""
	if q.offset != nil {
		info.Offset, info.Limit = &skip, &take
		// Each range returns up to offset + limit rows; the SDK skips.
		limits = " OFFSET 0 LIMIT " + strconv.Itoa(skip+take)
	}
	if q.distinct {
		info.DistinctType = "Unordered"
		if len(q.orderBy) > 0 {
			info.DistinctType = "Ordered"
		}
	}
	info.HasSelectValue = q.value != nil
	head := "SELECT "
	if q.distinct {
		head += "DISTINCT "
	}
	if q.top != nil {
		head += "TOP " + strconv.Itoa(take) + " "
	}
	where := ""
	if q.src.where != "" {
		where = " WHERE " + q.src.where
	}
	grouped := q.hasAgg || len(q.groupBy) > 0
	switch {
	case grouped && len(q.orderBy) > 0:
		return plan, notPlanned("ORDER BY with GROUP BY or aggregates")
	case grouped && (q.distinct || q.top != nil || q.offset != nil):
		return plan, notPlanned("DISTINCT, TOP or OFFSET LIMIT with GROUP BY or aggregates")
	case grouped:
		rewritten, resp := q.groupedQuery(&info, composite)
		if resp != nil {
			return plan, resp
		}
		info.RewrittenQuery = rewritten + " " + q.src.from + where
		if len(q.groupBy) > 0 {
			info.RewrittenQuery += " GROUP BY " + strings.Join(q.src.groupBy, ", ")
		}
	case len(q.orderBy) > 0:
		alias, ok := q.containerAlias()
		if !ok {
			return plan, notPlanned("ORDER BY over JOIN or an iterated FROM source")
		}
		items := make([]string, len(q.orderBy))
		order := make([]string, len(q.orderBy))
		for i, o := range q.orderBy {
			items[i] = `{"item": ` + q.src.orderBy[i] + `}`
			info.OrderBy = append(info.OrderBy, "Ascending")
			order[i] = q.src.orderBy[i]
			if o.desc {
				info.OrderBy[i], order[i] = "Descending", order[i]+" DESC"
			}
		}
		info.OrderByExpressions = append(info.OrderByExpressions, q.src.orderBy...)
		rid := alias + "._rid, "
		if q.distinct {
			rid = ""
		}
		filter := " WHERE (" + orderByFilterPlaceholder + ")"
		if q.src.where != "" {
			filter = " WHERE (" + q.src.where + ") AND (" + orderByFilterPlaceholder + ")"
		}
		info.RewrittenQuery = head + rid + "[" + strings.Join(items, ", ") + "] AS orderByItems, " + q.payload(alias) + " AS payload " +
			q.src.from + filter + " ORDER BY " + strings.Join(order, ", ") + limits
	default:
		// TOP, OFFSET LIMIT, DISTINCT (or nothing): each range runs the
		// query itself, with the offset folded into the limit.
		info.RewrittenQuery = head + q.selectList() + " " + q.src.from + where + limits
	}
	plan.QueryInfo = info
	return plan, nil
}

// groupedQuery returns the select part of the rewritten query of an
// aggregate or GROUP BY query and fills info's aggregate fields.
func (q *query) groupedQuery(info *planInfo, composite bool) (string, *response) {
	groupItems := make([]string, len(q.src.groupBy))
	for i, g := range q.src.groupBy {
		groupItems[i] = `{"item": ` + g + `}`
	}
	info.GroupByExpressions = append(info.GroupByExpressions, q.src.groupBy...)
	groupBy := "SELECT [" + strings.Join(groupItems, ", ") + "] AS groupByItems, "
	if q.value != nil {
		if call, ok := q.value.(callExpr); ok && isAggregate(call.name) {
			info.Aggregates = append(info.Aggregates, aggregateTypes[call.name])
			wrapped := "[" + aggregatePartial(call.name, q.src.value, composite) + "]"
			if len(q.groupBy) == 0 {
				return "SELECT VALUE " + wrapped, nil
			}
			return groupBy + wrapped + " AS payload", nil
		}
		if hasAggregate(q.value) {
			return "", notPlanned("an aggregate inside a larger SELECT VALUE expression")
		}
		return groupBy + q.src.value + " AS payload", nil
	}
	members := make([]string, len(q.items))
	unnamed := 0
	for i, it := range q.items {
		name := selectItemName(it, &unnamed)
		info.GroupByAliases = append(info.GroupByAliases, name)
		text := q.src.items[i]
		if call, ok := it.e.(callExpr); ok && isAggregate(call.name) {
			t := aggregateTypes[call.name]
			info.GroupByAliasToAggregateType[name] = &t
			text = aggregatePartial(call.name, text, composite)
		} else if hasAggregate(it.e) {
			return "", notPlanned("an aggregate inside a larger select expression")
		} else {
			info.GroupByAliasToAggregateType[name] = nil
		}
		members[i] = strconv.Quote(name) + ": " + text
	}
	return groupBy + "{" + strings.Join(members, ", ") + "} AS payload", nil
}

// aggregatePartial is the per-range form of aggregate call text (e.g.
// "MAX(c.n)") that the SDK's aggregators merge: {"item": ...} holds the
// count or sum; MIN and MAX carry their count when composite (else they are
// the bare value), AVG its sum and count.
func aggregatePartial(name, call string, composite bool) string {
	args := call[strings.IndexByte(call, '(')+1 : strings.LastIndexByte(call, ')')]
	switch {
	case (name == "MIN" || name == "MAX") && !composite:
		return `{"item": ` + call + `}`
	case name == "MIN":
		return `{"item": {"min": MIN(` + args + `), "count": COUNT(` + args + `)}}`
	case name == "MAX":
		return `{"item": {"max": MAX(` + args + `), "count": COUNT(` + args + `)}}`
	case name == "AVG":
		return `{"item": {"sum": SUM(` + args + `), "count": COUNT(` + args + `)}}`
	}
	return `{"item": ` + call + `}`
}

// containerAlias returns the alias of q's documents when FROM is a plain
// container source without JOINs.
func (q *query) containerAlias() (string, bool) {
	if q.from == nil || q.from.e != nil || q.from.sub != nil || q.from.iterate || len(q.joins) > 0 {
		return "", false
	}
	return q.from.alias, true
}

// payload is the expression of what q returns for one document, as an
// ORDER BY plan's payload: the document for *, the VALUE expression, or an
// object of the select items under their names.
func (q *query) payload(alias string) string {
	switch {
	case q.star:
		return alias
	case q.value != nil:
		return q.src.value
	}
	members := make([]string, len(q.items))
	unnamed := 0
	for i, it := range q.items {
		members[i] = strconv.Quote(selectItemName(it, &unnamed)) + ": " + q.src.items[i]
	}
	return "{" + strings.Join(members, ", ") + "}"
}

// selectList is q's select list as written (without DISTINCT and TOP).
func (q *query) selectList() string {
	switch {
	case q.star:
		return "*"
	case q.value != nil:
		return "VALUE " + q.src.value
	}
	parts := make([]string, len(q.items))
	for i, it := range q.items {
		parts[i] = q.src.items[i]
		if it.alias != "" {
			parts[i] += " AS " + it.alias
		}
	}
	return strings.Join(parts, ", ")
}

// notPlanned refuses a cross-partition query the emulator cannot plan.
func notPlanned(what string) *response {
	return badRequest("The emulator does not plan cross-partition queries with " + what + "; give a partition key, or see the emulator's README for what is served.")
}
