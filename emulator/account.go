package emulator

import (
	"net/http"
	"strconv"
)

// handleAccount answers GET /: the database account, with this server as the
// only (read and write) region, so the SDK's endpoint manager keeps sending
// requests to the address it was given, or the regions of Options.Regions
// (regions.go).
func (s *Server) handleAccount(rq *request) *response {
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	writable, readable := s.locations(scheme, rq.r.Host)
	body := `{"_self":"","id":"localhost","_rid":"localhost","media":"//media/","addresses":"//addresses/","_dbs":"//dbs/",` +
		`"writableLocations":` + writable + `,"readableLocations":` + readable + `,"enableMultipleWriteLocations":` + strconv.FormatBool(s.regions.multiWrite) + `,` +
		`"userReplicationPolicy":{"asyncReplication":false,"minReplicaSetSize":1,"maxReplicasetSize":4},` +
		`"userConsistencyPolicy":{"defaultConsistencyLevel":"` + string(s.consistency) + `"},` +
		`"systemReplicationPolicy":{"minReplicaSetSize":1,"maxReplicasetSize":4},` +
		`"readPolicy":{"primaryReadCoefficient":1,"secondaryReadCoefficient":1},` +
		`"queryEngineConfiguration":"{\"maxSqlQueryInputLength\":262144,\"maxJoinsPerSqlQuery\":5,\"maxLogicalAndPerSqlQuery\":500,\"maxLogicalOrPerSqlQuery\":500,\"maxUdfRefPerSqlQuery\":10,\"maxInExpressionItemsCount\":16000,\"queryMaxInMemorySortDocumentCount\":500,\"maxQueryRequestTimeoutFraction\":0.9,\"sqlAllowNonFiniteNumbers\":false,\"sqlAllowAggregateFunctions\":true,\"sqlAllowSubQuery\":true,\"sqlAllowScalarSubQuery\":true,\"allowNewKeywords\":true,\"sqlAllowLike\":true,\"sqlAllowGroupByClause\":true,\"maxSpatialQueryCells\":12,\"spatialMaxGeometryPointCount\":256,\"sqlDisableOptimizationFlags\":0,\"sqlAllowTop\":true,\"enableSpatialIndexing\":true}"}`
	resp := jsonResponse(http.StatusOK, []byte(body))
	resp.charge = 0
	return resp
}
