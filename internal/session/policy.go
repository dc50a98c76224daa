package session

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// The headers the policy reads and writes.
const (
	headerSessionToken = "x-ms-session-token"
	// headerContentPath carries the resource id of the container a
	// document response comes from.
	headerContentPath = "x-ms-content-path"
	headerIsQuery     = "x-ms-documentdb-query"
	headerIsQueryPlan = "x-ms-cosmos-is-query-plan-request"
)

// Policy is the azcore pipeline policy that keeps a client's session:
// every response of a container's documents (reads, writes, batches,
// queries, change-feed pages) has its x-ms-session-token recorded in the
// Container, and every read of a container's documents (a point read, a
// read feed or change-feed page, a query page; ReadMany is made of these)
// that does not carry a token of its own is sent the container's tokens.
// Writes carry none: the primary decides them. The policy also keeps the
// account document the client reads from the endpoint (GET /; azcosmos
// reads it before a client's first request), for Account.
//
// One Policy serves one client (all its containers); it belongs in the
// client's ClientOptions.PerCallPolicies. It is safe for concurrent use.
type Policy struct {
	tokens   *Container
	disabled atomic.Bool
	account  atomic.Pointer[Account]
}

// NewPolicy returns a Policy with an empty session container.
func NewPolicy() *Policy { return &Policy{tokens: NewContainer()} }

// Tokens returns the policy's session container.
func (p *Policy) Tokens() *Container { return p.tokens }

// SetDisabled stops (true) or restarts (false) sending tokens on reads;
// responses are still recorded. For tests that show what a read without
// its session token sees.
func (p *Policy) SetDisabled(off bool) { p.disabled.Store(off) }

// Account returns the account document the client last read, or nil when
// none passed through the policy.
func (p *Policy) Account() *Account { return p.account.Load() }

// Do adds the container's session tokens to a read, sends the request, and
// records the response's token (or the account it describes).
func (p *Policy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	parts := strings.Split(strings.Trim(raw.URL.EscapedPath(), "/"), "/")
	coll, docs := containerOf(parts)
	if docs && !p.disabled.Load() && isRead(raw) && raw.Header.Get(headerSessionToken) == "" {
		if h := p.tokens.Header(coll); h != "" {
			raw.Header.Set(headerSessionToken, h)
		}
	}
	resp, err := req.Next()
	if err != nil || resp == nil {
		return resp, err
	}
	switch {
	case docs:
		if h := resp.Header.Get(headerSessionToken); h != "" {
			p.tokens.Record(coll, resp.Header.Get(headerContentPath), h)
		}
	case raw.Method == http.MethodDelete && resp.StatusCode/100 == 2 && len(parts) == 4 && parts[0] == "dbs" && parts[2] == "colls":
		p.tokens.Forget(coll)
	case raw.Method == http.MethodDelete && resp.StatusCode/100 == 2 && len(parts) == 2 && parts[0] == "dbs":
		p.tokens.Forget("dbs/" + parts[1] + "/")
	case raw.Method == http.MethodGet && resp.StatusCode == http.StatusOK && len(parts) == 1 && parts[0] == "":
		p.recordAccount(resp)
	}
	return resp, nil
}

// containerOf returns the container path ("dbs/<db>/colls/<coll>") of a
// request path split at "/", and whether the request is about the
// container's documents (.../docs[/<id>]).
func containerOf(parts []string) (coll string, docs bool) {
	if len(parts) < 4 || parts[0] != "dbs" || parts[2] != "colls" {
		return "", false
	}
	coll = strings.Join(parts[:4], "/")
	return coll, len(parts) >= 5 && parts[4] == "docs"
}

// isRead reports whether a request of a container's documents reads: a
// GET (point read, read feed, change feed) or a query (POST with the
// query header), not a query plan.
func isRead(r *http.Request) bool {
	if r.Method == http.MethodGet {
		return true
	}
	return r.Method == http.MethodPost && strings.EqualFold(r.Header.Get(headerIsQuery), "true") &&
		!strings.EqualFold(r.Header.Get(headerIsQueryPlan), "true")
}

// recordAccount keeps the account document of a GET / response, leaving
// the body readable for the SDK.
func (p *Policy) recordAccount(resp *http.Response) {
	if resp.Body == nil {
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	if a, ok := ParseAccount(body); ok {
		p.account.Store(a)
	}
}

// Account is what the account document (GET / of the endpoint) says of
// the account's regions and consistency.
type Account struct {
	// WritableLocations and ReadableLocations are the regions that take
	// writes and serve reads, in the account's order.
	WritableLocations []Location `json:"writableLocations"`
	ReadableLocations []Location `json:"readableLocations"`
	// EnableMultipleWriteLocations is true when every region of the
	// account takes writes (multi-region writes).
	EnableMultipleWriteLocations bool `json:"enableMultipleWriteLocations"`
	// Consistency is the account's default consistency level ("Strong",
	// "BoundedStaleness", "Session", "ConsistentPrefix", "Eventual").
	Consistency struct {
		DefaultConsistencyLevel string `json:"defaultConsistencyLevel"`
	} `json:"userConsistencyPolicy"`
}

// Location is one region of an account.
type Location struct {
	Name     string `json:"name"`
	Endpoint string `json:"databaseAccountEndpoint"`
}

// ParseAccount decodes an account document; ok is false when body is not
// one.
func ParseAccount(body []byte) (*Account, bool) {
	var a Account
	if err := json.Unmarshal(body, &a); err != nil || (len(a.WritableLocations) == 0 && len(a.ReadableLocations) == 0) {
		return nil, false
	}
	return &a, true
}

// MultiRegionWrites reports whether the account takes writes in more than
// one region: its ETag conditions then hold per region only.
func (a *Account) MultiRegionWrites() bool {
	return a.EnableMultipleWriteLocations && len(a.WritableLocations) > 1
}
