package emulator

import (
	"math/rand"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// FaultKind selects what an injected fault does to a matching request.
type FaultKind int

const (
	// FaultTooManyRequests answers 429 (substatus 3200) with
	// x-ms-retry-after-ms set from Fault.RetryAfter. The request is not applied.
	FaultTooManyRequests FaultKind = iota + 1
	// FaultServiceUnavailable answers 503. The request is not applied.
	FaultServiceUnavailable
	// FaultRequestTimeout answers 408. The request is not applied.
	FaultRequestTimeout
	// FaultInternalServerError answers 500. The request is not applied.
	FaultInternalServerError
	// FaultDelay waits Fault.Delay (or until the client gives up), then
	// serves the request normally.
	FaultDelay
	// FaultDropConnection closes the connection without applying the request
	// or answering it.
	FaultDropConnection
	// FaultApplyThenDrop applies the request, then closes the connection
	// instead of answering: the ambiguous outcome of a real network failure.
	FaultApplyThenDrop
)

// String returns the name of the fault kind.
func (k FaultKind) String() string {
	switch k {
	case FaultTooManyRequests:
		return "TooManyRequests"
	case FaultServiceUnavailable:
		return "ServiceUnavailable"
	case FaultRequestTimeout:
		return "RequestTimeout"
	case FaultInternalServerError:
		return "InternalServerError"
	case FaultDelay:
		return "Delay"
	case FaultDropConnection:
		return "DropConnection"
	case FaultApplyThenDrop:
		return "ApplyThenDrop"
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is what happens to a request a FaultRule matches.
type Fault struct {
	// Kind selects the fault.
	Kind FaultKind
	// RetryAfter is sent as x-ms-retry-after-ms with FaultTooManyRequests,
	// rounded to whole milliseconds; zero sends "0".
	RetryAfter time.Duration
	// Delay is how long FaultDelay holds the request before serving it.
	Delay time.Duration
}

// TooManyRequests returns a 429 fault whose answer asks the client to wait
// retryAfter (sent as x-ms-retry-after-ms).
func TooManyRequests(retryAfter time.Duration) Fault {
	return Fault{Kind: FaultTooManyRequests, RetryAfter: retryAfter}
}

// ServiceUnavailable returns a 503 fault.
func ServiceUnavailable() Fault { return Fault{Kind: FaultServiceUnavailable} }

// RequestTimeout returns a 408 fault.
func RequestTimeout() Fault { return Fault{Kind: FaultRequestTimeout} }

// InternalServerError returns a 500 fault.
func InternalServerError() Fault { return Fault{Kind: FaultInternalServerError} }

// Delay returns a fault that holds the request for d, then serves it.
func Delay(d time.Duration) Fault { return Fault{Kind: FaultDelay, Delay: d} }

// DropConnection returns a fault that closes the connection unanswered,
// without applying the request.
func DropConnection() Fault { return Fault{Kind: FaultDropConnection} }

// ApplyThenDrop returns a fault that applies the request and then closes
// the connection unanswered.
func ApplyThenDrop() Fault { return Fault{Kind: FaultApplyThenDrop} }

// response returns the error answer of a status fault.
func (f *Fault) response() *response {
	switch f.Kind {
	case FaultTooManyRequests:
		resp := errorResponse(http.StatusTooManyRequests, 3200,
			"Message: {\"Errors\":[\"Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. Learn more: http://aka.ms/cosmosdb-error-429\"]}")
		resp.setHeader("x-ms-retry-after-ms", strconv.FormatInt(f.RetryAfter.Milliseconds(), 10))
		return resp
	case FaultServiceUnavailable:
		return errorResponse(http.StatusServiceUnavailable, 0, "Service is currently unavailable. More info: https://aka.ms/cosmosdb-tsg-service-unavailable")
	case FaultRequestTimeout:
		return errorResponse(http.StatusRequestTimeout, 0, "Request timed out. More info: https://aka.ms/cosmosdb-tsg-request-timeout")
	default:
		return errorResponse(http.StatusInternalServerError, 0, "Unknown server error occurred when processing this request.")
	}
}

// FaultRule selects requests to inject a fault into. A request matches when
// every set field matches; rules are tried in the order they were injected
// and the first one that fires wins.
type FaultRule struct {
	// Op is the operation kind to match; empty matches every kind.
	Op OpKind
	// PartitionKey, when set, matches requests whose partition key header
	// holds this value. It may be a plain string ("order-1"), the JSON text of
	// one value ("\"order-1\"", "42") or of the whole key ("[\"order-1\"]").
	// Requests without a partition key (cross-partition queries, account and
	// container operations) never match a rule that sets it.
	PartitionKey *string
	// ItemID, when set, matches requests on that document id (for a batch:
	// when any of its operations names it).
	ItemID *string
	// Times limits the rule to its next Times firings, after which it is
	// removed; 0 means unlimited.
	Times int
	// Probability, when in (0, 1), makes a matching request fire with that
	// probability, drawn from a generator seeded with Seed so runs repeat.
	// 0 (or >= 1) fires on every match.
	Probability float64
	// Seed seeds the generator used with Probability.
	Seed int64
	// Fault is what a firing does.
	Fault Fault
}

type faultEntry struct {
	rule      FaultRule
	pks       []string // canonical partition key texts the rule accepts
	remaining int
	rng       *rand.Rand
}

type faultSet struct {
	mu    sync.Mutex
	rules []*faultEntry
}

// InjectFault adds a rule and returns a function that removes it (safe to
// call more than once, and after the rule expired on its own).
func (s *Server) InjectFault(r FaultRule) (remove func()) {
	e := &faultEntry{rule: r, remaining: r.Times}
	if r.Probability > 0 && r.Probability < 1 {
		e.rng = rand.New(rand.NewSource(r.Seed))
	}
	if r.PartitionKey != nil {
		e.pks = faultPartitionKeys(*r.PartitionKey)
	}
	s.faults.mu.Lock()
	s.faults.rules = append(s.faults.rules, e)
	s.faults.mu.Unlock()
	return func() {
		s.faults.mu.Lock()
		s.faults.removeLocked(e)
		s.faults.mu.Unlock()
	}
}

// ClearFaults removes every fault rule.
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	s.faults.rules = nil
	s.faults.mu.Unlock()
}

func (fs *faultSet) removeLocked(e *faultEntry) {
	for i, x := range fs.rules {
		if x == e {
			fs.rules = append(fs.rules[:i:i], fs.rules[i+1:]...)
			return
		}
	}
}

// faultPartitionKeys lists the canonical partition key texts a rule's
// PartitionKey may stand for.
func faultPartitionKeys(text string) []string {
	out := []string{canonicalPK([]value{stringValue(text)})}
	if v, err := parseJSON([]byte(text)); err == nil {
		if v.k == kArray {
			out = append(out, canonicalPK(v.elems()))
		} else {
			out = append(out, canonicalPK([]value{v}))
		}
	}
	return out
}

// match returns the fault to apply to rq, or nil.
func (fs *faultSet) match(rq *request) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.rules) == 0 {
		return nil
	}
	var reqPK string
	var reqPKOK bool
	for _, e := range fs.rules {
		r := &e.rule
		if r.Op != "" && r.Op != rq.op {
			continue
		}
		if r.PartitionKey != nil {
			if !reqPKOK {
				if rq.pkHeader == "" {
					continue
				}
				comps, err := parsePKHeader(rq.pkHeader)
				if err != nil {
					continue
				}
				reqPK, reqPKOK = canonicalPK(comps), true
			}
			hit := false
			for _, pk := range e.pks {
				if pk == reqPK {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
		}
		if r.ItemID != nil {
			hit := false
			for _, id := range rq.itemIDs {
				if id == *r.ItemID {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
		}
		if e.rng != nil && e.rng.Float64() >= r.Probability {
			continue
		}
		f := r.Fault
		if r.Times > 0 {
			e.remaining--
			if e.remaining <= 0 {
				fs.removeLocked(e)
			}
		}
		return &f
	}
	return nil
}
