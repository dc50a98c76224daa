// Package pkheader holds the HTTP pipeline policy that makes the partition
// key header Cosmos DB receives valid JSON (cdb.PartitionKeyHeaderPolicy
// documents why: azcosmos quotes partition keys the Go way, which the
// service refuses for characters outside the Basic Multilingual Plane and a
// few control characters).
package pkheader

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// partitionKeyHeader is the header that carries a request's partition key,
// a JSON array.
const partitionKeyHeader = "x-ms-documentdb-partitionkey"

// Policy re-encodes a request's partition key header as JSON with only
// ASCII characters when it is not JSON; valid headers pass untouched.
type Policy struct{}

// Do re-encodes the request's partition key header when it is not JSON.
func (Policy) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	if v := h.Get(partitionKeyHeader); v != "" && strings.ContainsAny(v, `\`) {
		if fixed, err := jsonPartitionKey(v); err == nil {
			h.Set(partitionKeyHeader, fixed)
		}
	}
	return req.Next()
}

// jsonPartitionKey rewrites a partition key header whose string components
// use Go quoting into JSON with only ASCII characters.
func jsonPartitionKey(h string) (string, error) {
	if !strings.HasPrefix(h, "[") || !strings.HasSuffix(h, "]") {
		return "", fmt.Errorf("not an array: %q", h)
	}
	body := h[1 : len(h)-1]
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(body); {
		c := body[i]
		if c != '"' {
			b.WriteByte(c)
			i++
			continue
		}
		end := i + 1
		for end < len(body) && body[end] != '"' {
			if body[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(body) {
			return "", fmt.Errorf("unterminated string in %q", h)
		}
		s, err := strconv.Unquote(body[i : end+1])
		if err != nil {
			return "", err
		}
		b.WriteString(jsonASCIIString(s))
		i = end + 1
	}
	b.WriteByte(']')
	return b.String(), nil
}

// jsonASCIIString quotes s as a JSON string of ASCII characters only:
// non-ASCII characters and control characters as \u escapes (surrogate
// pairs outside the Basic Multilingual Plane).
func jsonASCIIString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
