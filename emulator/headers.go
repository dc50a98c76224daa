package emulator

import (
	"net/http"
	"strings"
)

// wireHeaderName is the name a response header goes out under. The service
// sends its own headers (x-ms-*, etag, lsn) in lower case, and some SDKs look
// them up case-sensitively: a canonical "Etag" or "X-Ms-Continuation" makes
// them lose ETags and continuation tokens silently. HTTP's framing headers
// (Content-Type, Content-Length, Date, Location, ...) keep their canonical form,
// which Go's server needs to recognize them; every client reads those
// case-insensitively. Go's server writes map keys as they are, without
// canonicalizing.
func wireHeaderName(k string) string {
	switch http.CanonicalHeaderKey(k) {
	case "Content-Type", "Content-Length", "Content-Encoding", "Date", "Location",
		"Retry-After", "Transfer-Encoding", "Connection", "Cache-Control", "Allow":
		return http.CanonicalHeaderKey(k)
	}
	return strings.ToLower(k)
}
