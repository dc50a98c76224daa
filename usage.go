// Usage: request and RU counters of a provider (Provider.Usage).

package cdb

import (
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Usage is what the provider's Cosmos DB requests have cost since New: every
// response is counted, its request charge (the x-ms-request-charge header
// Cosmos DB puts on every answer, successful or not; see "Find the request
// unit charge" in the Azure Cosmos DB documentation) added up.
type Usage struct {
	// Requests is the number of requests that got an answer (any status).
	Requests int64
	// RequestCharge is the sum of their request charges, in request units
	// (RU), what a serverless account bills and a provisioned one
	// subtracts from its RU/s.
	RequestCharge float64
	// Throttled is the number of answers with status 429 (request rate too
	// large); the provider retried them.
	Throttled int64
	// LockRacesLost is the number of fetches that lost an instance or
	// work-item lock to another dispatcher (of this or another process);
	// the same count as the metric duroxide_cosmosdb_lock_races_lost_total.
	LockRacesLost int64
}

// Usage returns the provider's Cosmos DB usage since New, retries and
// failed requests included. It counts the requests of the client New
// builds (from Endpoint and Key or Credential, with ClientOptions); with a
// ready Config.Client it stays zero.
func (p *Provider) Usage() Usage {
	return Usage{
		Requests:      p.usage.requests.Load(),
		RequestCharge: float64(p.usage.microRU.Load()) / 1e6,
		Throttled:     p.usage.throttled.Load(),
		LockRacesLost: p.usage.lockRacesLost.Load(),
	}
}

// usageCounters are the live counts behind Usage.
type usageCounters struct {
	requests  atomic.Int64
	microRU   atomic.Int64 // millionths of a request unit
	throttled atomic.Int64
	// lockRacesLost counts lost lock races (fetchtrace.go).
	lockRacesLost atomic.Int64
}

// record counts one answer.
func (u *usageCounters) record(resp *http.Response) {
	u.requests.Add(1)
	if ru := requestCharge(resp); ru > 0 {
		u.microRU.Add(int64(math.Round(ru * 1e6)))
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		u.throttled.Add(1)
	}
}

// requestCharge reads a response's x-ms-request-charge, 0 when absent or
// malformed.
func requestCharge(resp *http.Response) float64 {
	ru, err := strconv.ParseFloat(resp.Header.Get("x-ms-request-charge"), 64)
	if err != nil || ru < 0 || math.IsNaN(ru) || math.IsInf(ru, 0) {
		return 0
	}
	return ru
}
