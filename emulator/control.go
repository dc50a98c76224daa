package emulator

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The control endpoint: the request counters and fault injection of the Go
// API, for tests whose services run in other processes (a cdb-emulator
// shared by several service processes, or clients in other languages).
// It lives under ControlPath on the emulator's own address and answers only
// requests that carry the master key as "Authorization: Bearer <key>"
// (plain, not the Cosmos DB signature), so that the data-plane API and its
// authorization are untouched.
//
//	GET    /_emulator/counters     {"Batch": {"requests": 3, "itemsReturned": 0, "requestBytes": 812,
//	                                "responseBytes": 640, "requestCharge": 31.2}, ...}
//	DELETE /_emulator/counters     resets them (204)
//	GET    /_emulator/faults       [{"id": 1, "rule": "op=Batch,kind=TooManyRequests,times=2"}, ...]
//	POST   /_emulator/faults       body: a fault spec (ParseFaultRule), e.g.
//	                               op=Batch,kind=TooManyRequests,retry-after=100ms,times=2
//	                               answers 201 {"id": 1}
//	DELETE /_emulator/faults       removes every rule (204)
//	DELETE /_emulator/faults/{id}  removes one rule (204; 404 when unknown)
//
// Errors are 400 (a bad spec), 401 (no or a wrong key), 404 and 405, each
// with a JSON body {"code": ..., "message": ...} as the service's errors.

// ControlPath is the path prefix of the control endpoint.
const ControlPath = "/_emulator/"

// controlRules are the fault rules added through the control endpoint, by
// id, so that they can be listed and removed.
type controlRules struct {
	mu     sync.Mutex
	nextID int
	byID   map[int]controlRule
}

type controlRule struct {
	spec   string
	remove func()
}

// counterJSON is one operation kind's counters on the control endpoint.
type counterJSON struct {
	Requests      int64   `json:"requests"`
	ItemsReturned int64   `json:"itemsReturned"`
	RequestBytes  int64   `json:"requestBytes"`
	ResponseBytes int64   `json:"responseBytes"`
	RequestCharge float64 `json:"requestCharge"`
}

// serveControl answers a request under ControlPath.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.key)) != 1 {
		controlError(w, http.StatusUnauthorized, "Unauthorized", `the control endpoint needs "Authorization: Bearer <master key>"`)
		return
	}
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, ControlPath), "/")
	switch {
	case path == "counters" && r.Method == http.MethodGet:
		out := map[string]counterJSON{}
		for op, c := range s.Counters() {
			out[string(op)] = counterJSON(c)
		}
		controlJSON(w, http.StatusOK, out)
	case path == "counters" && r.Method == http.MethodDelete:
		s.ResetCounters()
		w.WriteHeader(http.StatusNoContent)
	case path == "faults" && r.Method == http.MethodGet:
		controlJSON(w, http.StatusOK, s.control.list())
	case path == "faults" && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		if err != nil {
			controlError(w, http.StatusBadRequest, "BadRequest", "read the body: "+err.Error())
			return
		}
		spec := strings.TrimSpace(string(body))
		rule, err := ParseFaultRule(spec)
		if err != nil {
			controlError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		id := s.control.add(spec, s.InjectFault(rule))
		controlJSON(w, http.StatusCreated, map[string]int{"id": id})
	case path == "faults" && r.Method == http.MethodDelete:
		s.control.clear()
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(path, "faults/") && r.Method == http.MethodDelete:
		id, err := strconv.Atoi(strings.TrimPrefix(path, "faults/"))
		if err != nil || !s.control.remove(id) {
			controlError(w, http.StatusNotFound, "NotFound", "no fault rule "+strings.TrimPrefix(path, "faults/"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case path == "counters" || path == "faults" || strings.HasPrefix(path, "faults/"):
		controlError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not served on "+r.URL.Path)
	default:
		controlError(w, http.StatusNotFound, "NotFound", "the control endpoint serves "+ControlPath+"counters and "+ControlPath+"faults")
	}
}

func (c *controlRules) add(spec string, remove func()) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[int]controlRule{}
	}
	c.nextID++
	c.byID[c.nextID] = controlRule{spec: spec, remove: remove}
	return c.nextID
}

func (c *controlRules) remove(id int) bool {
	c.mu.Lock()
	r, ok := c.byID[id]
	delete(c.byID, id)
	c.mu.Unlock()
	if ok {
		r.remove()
	}
	return ok
}

func (c *controlRules) clear() {
	c.mu.Lock()
	c.byID = nil
	c.mu.Unlock()
}

// list returns the rules added through the endpoint, oldest first (a rule
// whose Times ran out is still listed until removed).
func (c *controlRules) list() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int, 0, len(c.byID))
	for id := range c.byID {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		out = append(out, map[string]any{"id": id, "rule": c.byID[id].spec})
	}
	return out
}

func controlJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func controlError(w http.ResponseWriter, status int, code, msg string) {
	controlJSON(w, status, map[string]string{"code": code, "message": msg})
}

// faultKindByName returns the FaultKind whose String is name,
// case-insensitively.
func faultKindByName(name string) (FaultKind, bool) {
	for k := FaultTooManyRequests; k <= FaultApplyThenDrop; k++ {
		if strings.EqualFold(k.String(), name) {
			return k, true
		}
	}
	return 0, false
}

// ParseFaultRule parses a fault rule from its text form, comma-separated
// key=value pairs, the form of cdb-emulator's -fault flag and of the
// control endpoint's POST /_emulator/faults:
//
//	kind=TooManyRequests|ServiceUnavailable|RequestTimeout|InternalServerError|Delay|DropConnection|ApplyThenDrop (required)
//	op=<OpKind>            e.g. Batch, CreateItem, Query, ChangeFeed (default: every kind)
//	pk=<partition key>     as FaultRule.PartitionKey
//	id=<item id>           as FaultRule.ItemID
//	times=<n>              fire at most n times (default: unlimited)
//	probability=<0..1>     fire with this probability, seed=<n> for its generator
//	retry-after=<duration> the 429's x-ms-retry-after-ms, e.g. 100ms
//	delay=<duration>       how long Delay holds the request, e.g. 2s
//
// Names are case-insensitive. It returns an error naming the bad pair.
func ParseFaultRule(spec string) (FaultRule, error) {
	var r FaultRule
	kindSet := false
	for _, pair := range strings.Split(spec, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return FaultRule{}, fmt.Errorf("fault rule %q: %q is not key=value", spec, pair)
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		var err error
		switch k {
		case "kind":
			kind, ok := faultKindByName(v)
			if !ok {
				return FaultRule{}, fmt.Errorf("fault rule %q: unknown kind %q", spec, v)
			}
			r.Fault.Kind, kindSet = kind, true
		case "op":
			op, ok := opKindByName(v)
			if !ok {
				return FaultRule{}, fmt.Errorf("fault rule %q: unknown op %q", spec, v)
			}
			r.Op = op
		case "pk":
			r.PartitionKey = &v
		case "id":
			r.ItemID = &v
		case "times":
			r.Times, err = strconv.Atoi(v)
			if err == nil && r.Times < 0 {
				err = fmt.Errorf("negative")
			}
		case "probability":
			r.Probability, err = strconv.ParseFloat(v, 64)
			if err == nil && (r.Probability < 0 || r.Probability > 1) {
				err = fmt.Errorf("outside 0..1")
			}
		case "seed":
			r.Seed, err = strconv.ParseInt(v, 10, 64)
		case "retry-after":
			r.Fault.RetryAfter, err = time.ParseDuration(v)
		case "delay":
			r.Fault.Delay, err = time.ParseDuration(v)
		default:
			return FaultRule{}, fmt.Errorf("fault rule %q: unknown key %q (kind, op, pk, id, times, probability, seed, retry-after, delay)", spec, k)
		}
		if err != nil {
			return FaultRule{}, fmt.Errorf("fault rule %q: %s=%s: %v", spec, k, v, err)
		}
	}
	if !kindSet {
		return FaultRule{}, fmt.Errorf("fault rule %q: kind= is required", spec)
	}
	return r, nil
}

// opKindByName returns the OpKind named name, case-insensitively.
func opKindByName(name string) (OpKind, bool) {
	for _, op := range []OpKind{OpAccount, OpDatabase, OpContainer, OpPKRanges, OpOffer, OpReadItem, OpCreateItem,
		OpReplaceItem, OpUpsertItem, OpDeleteItem, OpPatchItem, OpBatch, OpQuery, OpChangeFeed, OpReadFeed, OpOther} {
		if strings.EqualFold(string(op), name) {
			return op, true
		}
	}
	return "", false
}
