package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exported returns the value of "export NAME=value" in the start-up text.
func exported(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*export ` + name + `='?([^'\s]+)'?`).FindStringSubmatch(out)
	require.NotNil(t, m, "no export line for %s in:\n%s", name, out)
	return m[1]
}

// The start-up text gives lines a client can export and use as they are:
// with only the printed endpoint, key and certificate file, an azcosmos
// client reaches the emulator over HTTPS.
func TestStartupPrintsExportLinesThatWork(t *testing.T) {
	t.Parallel()
	_, out, stop := startRun(t, "-addr", "127.0.0.1:0")
	defer func() { _ = stop() }()
	text := out.String()
	endpoint, key, cert := exported(t, text, "COSMOS_ENDPOINT"), exported(t, text, "COSMOS_KEY"), exported(t, text, "SSL_CERT_FILE")
	assert.Equal(t, cert, exported(t, text, "NODE_EXTRA_CA_CERTS"))
	assert.Equal(t, cert, exported(t, text, "REQUESTS_CA_BUNDLE"))
	assert.Contains(t, text, "/_emulator/counters")

	client := sdkClient(t, endpoint, key, trustingClient(t, cert))
	_, err := client.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
}

// control sends one request to the control endpoint.
func control(t *testing.T, endpoint, key, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(endpoint, "/")+"/_emulator/"+path, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Another process injects a fault and reads the counters through the
// control endpoint; the fault reaches a real client.
func TestControlEndpointInjectsFaultsAndReadsCounters(t *testing.T) {
	t.Parallel()
	srv, _, stop := startRun(t, "-addr", "127.0.0.1:0", "-http")
	defer func() { _ = stop() }()
	ep, key := srv.Endpoint(), srv.Key()

	code, _ := control(t, ep, "", http.MethodGet, "counters", "")
	assert.Equal(t, http.StatusUnauthorized, code, "no key")
	code, body := control(t, ep, key, http.MethodPost, "faults", "op=Database,kind=TooManyRequests,retry-after=10ms,times=1")
	require.Equal(t, http.StatusCreated, code, body)
	code, body = control(t, ep, key, http.MethodPost, "faults", "kind=Nope")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, `unknown kind`)

	cred, err := azcosmos.NewKeyCredential(key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(ep, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policyNoRetry()}})
	require.NoError(t, err)
	defer client.Close()
	ctx := context.Background()
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusTooManyRequests, re.StatusCode)
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err, "the rule fired once")

	code, body = control(t, ep, key, http.MethodGet, "counters", "")
	require.Equal(t, http.StatusOK, code)
	var counters map[string]struct {
		Requests int64 `json:"requests"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &counters))
	assert.Equal(t, int64(2), counters["Database"].Requests)

	code, _ = control(t, ep, key, http.MethodDelete, "counters", "")
	assert.Equal(t, http.StatusNoContent, code)
	assert.Empty(t, srv.Counters())
	code, body = control(t, ep, key, http.MethodGet, "faults", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"rule":"op=Database,kind=TooManyRequests,retry-after=10ms,times=1"`)
	code, _ = control(t, ep, key, http.MethodDelete, "faults/1", "")
	assert.Equal(t, http.StatusNoContent, code)
	code, _ = control(t, ep, key, http.MethodDelete, "faults/1", "")
	assert.Equal(t, http.StatusNotFound, code)
}

// -fault injects a rule from the start.
func TestFaultFlagInjectsFromTheStart(t *testing.T) {
	t.Parallel()
	srv, out, stop := startRun(t, "-addr", "127.0.0.1:0", "-http", "-fault", "op=Database,kind=ServiceUnavailable,times=1")
	defer func() { _ = stop() }()
	assert.Contains(t, out.String(), "1 fault rule(s) injected")
	cred, err := azcosmos.NewKeyCredential(srv.Key())
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policyNoRetry()}})
	require.NoError(t, err)
	defer client.Close()
	_, err = client.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "db"}, nil)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
	assert.ErrorContains(t, run(context.Background(), []string{"-fault", "op=Nope,kind=Delay"}, out, nil), "unknown op")
}
