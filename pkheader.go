// PartitionKeyHeaderPolicy: the azcore policy that writes the partition key
// header as Cosmos DB expects it.

package cdb

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

// PartitionKeyHeaderPolicy returns an HTTP pipeline policy that makes the
// partition key header valid JSON. azcosmos v1.5.0 writes string partition
// key values with strconv.QuoteToASCII, Go's quoting, which is JSON except
// for characters outside the Basic Multilingual Plane (Go writes \U0001f680
// where JSON needs the surrogate pair \ud83d\ude80) and a few ASCII control
// characters (\a, \v, \x00): for an instance id holding an emoji the
// service answers 400 ("partition key header has an invalid format"). The
// policy re-encodes such headers; valid ones pass untouched.
//
// New adds it to the clients it builds. A ready client passed in
// Config.Client needs it in its ClientOptions.PerCallPolicies for such
// instance ids to work.
func PartitionKeyHeaderPolicy() policy.Policy { return pkHeaderPolicy{} }

type pkHeaderPolicy struct{}

// Do re-encodes the request's partition key header when it is not JSON.
func (pkHeaderPolicy) Do(req *policy.Request) (*http.Response, error) {
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
