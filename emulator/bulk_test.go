package emulator

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bulkStatuses sends a non-atomic batch as the JavaScript SDK's bulk does
// (no partition key header, one per operation) and returns the answer's
// status and each operation's.
func bulkStatuses(t *testing.T, e *env, continueOnError string, ops []map[string]any) (int, []int) {
	t.Helper()
	status, _, body := e.raw(http.MethodPost, "dbs/db/colls/c/docs", mustJSON(t, ops), map[string]string{
		"x-ms-cosmos-is-batch-request":        "True",
		"x-ms-cosmos-batch-atomic":            "False",
		"x-ms-cosmos-batch-continue-on-error": continueOnError,
		"x-ms-documentdb-partitionkeyrangeid": "0",
	})
	var results []struct {
		StatusCode int `json:"statusCode"`
	}
	require.NoError(t, json.Unmarshal(body, &results), string(body))
	out := make([]int, len(results))
	for i, r := range results {
		out[i] = r.StatusCode
	}
	return status, out
}

func TestNonAtomicBatchRunsEachOperationOnItsOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.container("c", nil)
	create := func(id, pk string) map[string]any {
		return map[string]any{"operationType": "Create", "partitionKey": `["` + pk + `"]`, "resourceBody": map[string]any{"id": id, "pk": pk}}
	}
	status, codes := bulkStatuses(t, e, "true", []map[string]any{create("a", "p"), create("a", "p"), create("b", "q")})
	assert.Equal(t, http.StatusMultiStatus, status)
	assert.Equal(t, []int{201, 409, 201}, codes, "the duplicate fails alone; the others stay applied")
	assert.Len(t, e.queryValues(c, "SELECT VALUE c.id FROM c", "q"), 1)

	// Without continue-on-error, the operations after the first failure do not run.
	status, codes = bulkStatuses(t, e, "false", []map[string]any{create("c", "p"), create("a", "p"), create("d", "q")})
	assert.Equal(t, http.StatusMultiStatus, status)
	assert.Equal(t, []int{201, 409, 424}, codes)
	assert.Empty(t, e.queryValues(c, "SELECT VALUE c.id FROM c WHERE c.id = 'd'", "q"))

	status, codes = bulkStatuses(t, e, "true", []map[string]any{create("e", "p")})
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, []int{201}, codes)
}
