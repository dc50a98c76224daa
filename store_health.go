// Store health: the one tracker of a Provider (internal/storehealth) that
// every request reports to, the pipeline policies that report each try
// and keep azcosmos from retrying transport failures itself, and which
// answers count as the store failing.

package cdb

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/storehealth"
)

// healthPolicy is the per-try pipeline policy of the clients New builds:
// it reports every try to the provider's store health (a try that got no
// answer, or an answer that says the store cannot serve it, fails; any
// other answer succeeds; a try whose caller gave up reports nothing), and
// hides a try's transport failure from azcosmos's own retries, which
// would otherwise send it four more times a second apart (the provider
// retries itself: revealPolicy, internal/cosmos).
type healthPolicy struct{ health *storehealth.Tracker }

// Do sends the request and reports its outcome.
func (hp healthPolicy) Do(req *policy.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := req.Next()
	ctx := req.Raw().Context()
	if err != nil {
		if ctx.Err() == nil {
			hp.health.Failed(cosmos.CallOf(ctx), err)
		}
		return resp, cosmos.HideFromSDK(err)
	}
	if storeRefused(req.Raw(), resp) {
		hp.health.Failed(cosmos.CallOf(ctx), runtime.NewResponseError(resp))
	} else {
		hp.health.Succeeded(sent)
	}
	return resp, nil
}

// revealPolicy is the per-call pipeline policy that makes the transport
// failures healthPolicy hid visible again (errors.Is, errors.As) once the
// SDK's retry loop is behind them.
type revealPolicy struct{}

// Do sends the request and reveals its error.
func (revealPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	return resp, cosmos.Reveal(err)
}

// storeRefused reports whether resp says that the store cannot serve the
// request, as opposed to an answer about what it asked (a missing
// document, a conflict, a failed precondition): 400 (the store refuses
// what the provider sends: an incompatible store or a bug), 401 and 403
// (the key or the identity), a missing database or container (404 with
// substatus 1003, or a 404 reading the container itself), 408 and every
// 5xx. Throttling (429) is the store serving at its limit: it has its own
// metric, and is not an outage.
func storeRefused(req *http.Request, resp *http.Response) bool {
	switch code := resp.StatusCode; {
	case code == http.StatusBadRequest, code == http.StatusUnauthorized, code == http.StatusForbidden,
		code == http.StatusRequestTimeout, code >= 500:
		return true
	case code == http.StatusNotFound:
		if resp.Header.Get("x-ms-substatus") == "1003" {
			return true
		}
		segs := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
		return len(segs) <= 4 && req.Method == http.MethodGet
	}
	return false
}

// storeRefusedError is storeRefused for an error the SDK returned: an
// *azcore.ResponseError whose answer says the store cannot serve.
func storeRefusedError(err error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil || re.RawResponse.Request == nil {
		return false
	}
	return storeRefused(re.RawResponse.Request, re.RawResponse)
}
