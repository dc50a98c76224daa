package emulator

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// offer is the throughput resource of a database or container. The
// emulator stores and echoes it; it never throttles by it.
type offer struct {
	id          string // lower case, so rid-based signatures match
	num         uint32
	resource    string // self link of the database or container
	resourceRID string
	content     value // {"offerThroughput": n} or {"offerAutopilotSettings": {...}}
	etag        uint64
	ts          int64
}

func (o *offer) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"resource":`...)
	buf = appendString(buf, o.resource)
	buf = append(buf, `,"offerType":"Invalid","offerResourceId":`...)
	buf = appendString(buf, o.resourceRID)
	buf = append(buf, `,"offerVersion":"V2","content":`...)
	buf = o.content.appendJSON(buf)
	buf = append(buf, `,"id":`...)
	buf = appendString(buf, o.id)
	buf = append(buf, `,"_rid":`...)
	buf = appendString(buf, o.id)
	buf = append(buf, `,"_self":`...)
	buf = appendString(buf, "offers/"+o.id+"/")
	buf = append(buf, `,"_etag":`...)
	buf = appendString(buf, formatETag(o.etag))
	buf = append(buf, `,"_ts":`...)
	buf = strconv.AppendInt(buf, o.ts, 10)
	return append(buf, '}')
}

// offerContent reads the throughput headers of a create request: manual
// (x-ms-offer-throughput) or autoscale (x-ms-cosmos-offer-autopilot-settings).
// ok is false when neither is set; resp reports a malformed header.
func offerContent(r *http.Request) (value, bool, *response) {
	if h := r.Header.Get("x-ms-offer-throughput"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 400 {
			return undefined, false, badRequest("The offer throughput must be an integer of at least 400.")
		}
		return objectValue([]member{{key: "offerThroughput", val: numberValue(float64(n))}}), true, nil
	}
	if h := r.Header.Get("x-ms-cosmos-offer-autopilot-settings"); h != "" {
		v, err := parseJSON([]byte(h))
		if err != nil || v.k != kObject || v.get("maxThroughput").k != kNumber {
			return undefined, false, badRequest("The autoscale settings header is invalid.")
		}
		return objectValue([]member{{key: "offerAutopilotSettings", val: v}}), true, nil
	}
	return undefined, false, nil
}

// addOffer creates the offer of a resource. The caller holds s.mu.
func (s *Server) addOffer(resource, resourceRID string, content value) {
	n := s.nextResourceNumber()
	id := strings.ToLower(strconv.FormatUint(uint64(n)+1295, 36)) // at least 3 characters
	if s.offers == nil {
		s.offers = make(map[string]*offer)
	}
	s.offers[id] = &offer{id: id, num: n, resource: resource, resourceRID: resourceRID, content: content, etag: s.newETag(), ts: s.unixNow()}
}

// removeOffers deletes the offers of resources whose self link starts with
// prefix (a database and its containers). The caller holds s.mu.
func (s *Server) removeOffers(prefix string) {
	for id, o := range s.offers {
		if strings.HasPrefix(o.resource, prefix) {
			delete(s.offers, id)
		}
	}
}

func (s *Server) offerValues() []value {
	s.mu.RLock()
	os := make([]*offer, 0, len(s.offers))
	for _, o := range s.offers {
		os = append(os, o)
	}
	s.mu.RUnlock()
	sort.Slice(os, func(i, j int) bool { return os[i].num < os[j].num })
	out := make([]value, 0, len(os))
	for _, o := range os {
		v, _ := parseJSON(o.appendJSON(nil))
		out = append(out, v)
	}
	return out
}

func (s *Server) handleQueryOffers(rq *request) *response {
	return s.queryResources(rq, "", "Offers", s.offerValues())
}

func (s *Server) handleListOffers(rq *request) *response {
	return feedResponse(rq, "", "Offers", s.offerValues())
}

func (s *Server) handleReadOffer(rq *request) *response {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.offers[strings.ToLower(rq.segs[1])]
	if o == nil {
		return notFound()
	}
	resp := jsonResponse(http.StatusOK, o.appendJSON(nil))
	resp.setHeader("etag", formatETag(o.etag))
	return resp
}

// handleReplaceOffer changes the throughput of a resource: the body is the
// offer as read, with new content.
func (s *Server) handleReplaceOffer(rq *request) *response {
	v, err := parseJSON(rq.body)
	if err != nil || v.k != kObject {
		return badRequest("The request payload is invalid. Ensure to provide a valid request payload.")
	}
	content := v.get("content")
	if content.k != kObject || (content.get("offerThroughput").k != kNumber && content.get("offerAutopilotSettings").k != kObject) {
		return badRequest("The offer content must set offerThroughput or offerAutopilotSettings.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.offers[strings.ToLower(rq.segs[1])]
	if o == nil {
		return notFound()
	}
	if im := rq.r.Header.Get("If-Match"); im != "" && im != "*" && im != formatETag(o.etag) {
		return preconditionFailed()
	}
	o.content, o.etag, o.ts = content, s.newETag(), s.unixNow()
	s.logOffer(o)
	resp := jsonResponse(http.StatusOK, o.appendJSON(nil))
	resp.setHeader("etag", formatETag(o.etag))
	return resp
}
