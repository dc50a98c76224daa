package emulator

import (
	"net/http"
	"strings"
)

// runBulk executes a non-atomic batch: the request the JavaScript and .NET
// SDKs send for bulk operations (x-ms-cosmos-batch-atomic: false, usually
// with a partition key per operation and x-ms-documentdb-partitionkeyrangeid
// instead of a partition key header). Each operation is its own transaction
// with its own LSN and its own result; a failure does not undo the others.
// With x-ms-cosmos-batch-continue-on-error: true (the SDKs' default) every
// operation runs; otherwise the operations after the first failure are not
// run and answer 424 Failed Dependency. The answer is 200 when every
// operation succeeded and 207 Multi-Status otherwise, with one entry per
// operation in order. Sources: @azure/cosmos ClientContext.bulk (headers
// x-ms-cosmos-batch-atomic and x-ms-cosmos-batch-continue-on-error) and
// Microsoft.Azure.Cosmos's BatchAsyncContainerExecutor (non-atomic server
// batches for bulk).
func (s *Server) runBulk(rq *request, c *container, ops []batchOp, keys []string, docs []*preparedDoc, patches []*patchSpec, early []*response) *response {
	continueOnError := !strings.EqualFold(rq.r.Header.Get("x-ms-cosmos-batch-continue-on-error"), "false")
	plans := make([]plan, len(ops))
	ran := make([]bool, len(ops))
	anyFailed := false
	c.mu.Lock()
	lastLSN := c.lsn
	for i, op := range ops {
		if anyFailed && !continueOnError {
			break
		}
		lsn := c.lsn + 1
		v := &view{c: c}
		p := s.planBatchOp(v, op, keys[i], docs[i], patches[i], early[i], lsn)
		if p.fail == nil {
			s.commit(c, []plan{p}, lsn)
			if c.lsn == lsn {
				lastLSN = lsn
			}
		} else {
			anyFailed = true
		}
		p.charge = planCharge(c.index, p)
		plans[i], ran[i] = p, true
	}
	var rng string
	if rq.pkHeader != "" {
		rng = c.rangeOfKey(keys[0]).id
	} else if id := rq.r.Header.Get("x-ms-documentdb-partitionkeyrangeid"); id != "" {
		rng = id[strings.LastIndexByte(id, ',')+1:]
	}
	c.mu.Unlock()

	minimal := strings.EqualFold(rq.r.Header.Get("Prefer"), "return=minimal")
	buf := make([]byte, 0, 256*len(ops))
	buf = append(buf, '[')
	items := 0
	total := 0.0
	for i := range ops {
		if i > 0 {
			buf = append(buf, ',')
		}
		if !ran[i] {
			buf = append(buf, `{"statusCode":424,"requestCharge":0}`...)
			continue
		}
		var n int
		buf, n = appendOpResult(buf, plans[i], minimal)
		items += n
		total += plans[i].charge
	}
	buf = append(buf, ']')
	status := http.StatusOK
	if anyFailed {
		status = http.StatusMultiStatus
	}
	return &response{status: status, body: buf, items: items, charge: total, lsn: lastLSN, rng: rng, owner: c}
}
