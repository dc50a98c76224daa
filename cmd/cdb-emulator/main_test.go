package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a goroutine-safe output sink for run.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startRun runs the command in the background and returns its server.
func startRun(t *testing.T, args ...string) (*emulator.Server, *syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	readyCh := make(chan *emulator.Server, 1)
	errCh := make(chan error, 1)
	// Strong unless args say otherwise (a later flag wins): these tests
	// read their own writes without session tokens, whatever
	// CDB_EMULATOR_CONSISTENCY says.
	args = append([]string{"-consistency", "strong"}, args...)
	go func() { errCh <- run(ctx, args, out, func(s *emulator.Server) { readyCh <- s }) }()
	select {
	case srv := <-readyCh:
		stop := func() error {
			cancel()
			select {
			case err := <-errCh:
				return err
			case <-time.After(5 * time.Second):
				t.Fatal("run did not return after cancellation")
				return nil
			}
		}
		t.Cleanup(func() { cancel() })
		return srv, out, stop
	case err := <-errCh:
		cancel()
		t.Fatalf("run failed: %v", err)
	case <-time.After(5 * time.Second):
		cancel()
		t.Fatal("run did not start")
	}
	return nil, nil, nil
}

// trustingClient returns an HTTP client that trusts the PEM certificate in
// certFile, as an application configures it.
func trustingClient(t *testing.T, certFile string) *http.Client {
	t.Helper()
	pemBytes, err := os.ReadFile(certFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pemBytes), "no certificate in %s", certFile)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// sdkClient returns an azcosmos client for endpoint signing with key over
// transport, closed when the test ends.
func sdkClient(t *testing.T, endpoint, key string, transport *http.Client) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: transport}})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// TestQuickstartOverTLS runs azcosmos's README quickstart (create database,
// container, item, read, replace, patch, query, delete) against the command's
// HTTPS server, trusting its certificate through the client's transport.
func TestQuickstartOverTLS(t *testing.T) {
	certFile := filepath.Join(t.TempDir(), "emulator.pem")
	srv, out, stop := startRun(t, "-addr", "127.0.0.1:0", "-cert-out", certFile)
	endpoint := srv.Endpoint()
	require.True(t, strings.HasPrefix(endpoint, "https://127.0.0.1:"), endpoint)
	assert.Contains(t, out.String(), endpoint)

	// Trust the certificate the way an application would: from the PEM file.
	ctx := context.Background()
	client := sdkClient(t, endpoint, emulator.WellKnownKey, trustingClient(t, certFile))
	cred, err := azcosmos.NewKeyCredential(emulator.WellKnownKey)
	require.NoError(t, err)

	const dbName, containerName = "quickstart", "aContainer"
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: dbName}, nil)
	require.NoError(t, err)
	database, err := client.NewDatabase(dbName)
	require.NoError(t, err)
	throughput := azcosmos.NewManualThroughputProperties(400)
	_, err = database.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     containerName,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/id"}},
	}, &azcosmos.CreateContainerOptions{ThroughputProperties: &throughput})
	require.NoError(t, err)

	container, err := client.NewContainer(dbName, containerName)
	require.NoError(t, err)
	pk := azcosmos.NewPartitionKeyString("1")
	marshalled, err := json.Marshal(map[string]string{"id": "1", "value": "2"})
	require.NoError(t, err)
	_, err = container.CreateItem(ctx, pk, marshalled, nil)
	require.NoError(t, err)

	itemResponse, err := container.ReadItem(ctx, pk, "1", nil)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(itemResponse.Value, &body))
	assert.Equal(t, "2", body["value"])

	body["value"] = "3"
	marshalledReplace, err := json.Marshal(body)
	require.NoError(t, err)
	_, err = container.ReplaceItem(ctx, pk, "1", marshalledReplace, nil)
	require.NoError(t, err)

	patch := azcosmos.PatchOperations{}
	patch.AppendAdd("/newField", "newValue")
	patch.AppendRemove("/value")
	_, err = container.PatchItem(ctx, pk, "1", patch, nil)
	require.NoError(t, err)

	pager := container.NewQueryItemsPager("SELECT * FROM c WHERE c.newField = @v", pk,
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@v", Value: "newValue"}}})
	var found int
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		found += len(page.Items)
	}
	assert.Equal(t, 1, found)

	_, err = container.DeleteItem(ctx, pk, "1", nil)
	require.NoError(t, err)

	// A client that does not trust the certificate cannot connect.
	untrusted, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Timeout: 2 * time.Second},
		Retry:     policyNoRetry(),
	}})
	require.NoError(t, err)
	defer untrusted.Close()
	// (The SDK retries certificate errors with back-off; do not wait for it.)
	shortCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = untrusted.CreateDatabase(shortCtx, azcosmos.DatabaseProperties{ID: "x"}, nil)
	assert.Error(t, err)

	require.NoError(t, stop())
	assert.Contains(t, out.String(), "shutting down")
	goneCtx, cancelGone := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelGone()
	_, err = container.ReadItem(goneCtx, pk, "1", nil)
	assert.Error(t, err, "the server is gone after shutdown")
}

func TestPlainHTTPAndCustomKey(t *testing.T) {
	const key = "c2VjcmV0LWtleS1mb3ItdGVzdHM="
	srv, _, stop := startRun(t, "-addr", "127.0.0.1:0", "-http", "-key", key)
	require.True(t, strings.HasPrefix(srv.Endpoint(), "http://"))
	assert.Equal(t, key, srv.Key())
	cred, err := azcosmos.NewKeyCredential(key)
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, nil)
	require.NoError(t, err)
	defer client.Close()
	_, err = client.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	require.NoError(t, stop())
}

func TestBadFlags(t *testing.T) {
	out := &syncBuffer{}
	assert.Error(t, run(context.Background(), []string{"-nope"}, out, nil))
	assert.Error(t, run(context.Background(), []string{"-key", "not base64!", "-http", "-addr", "127.0.0.1:0"}, out, nil))
	assert.Error(t, run(context.Background(), []string{"extra"}, out, nil))
	assert.ErrorContains(t, run(context.Background(), []string{"-partitions", "0", "-http", "-addr", "127.0.0.1:0"}, out, nil), "-partitions")
	assert.ErrorContains(t, run(context.Background(), []string{"-latency", "5", "-http", "-addr", "127.0.0.1:0"}, out, nil), "-latency")
	assert.ErrorContains(t, run(context.Background(), []string{"-consistency", "linearizable", "-http", "-addr", "127.0.0.1:0"}, out, nil), "-consistency")
	assert.ErrorContains(t, run(context.Background(), []string{"-replica-lag", "-1s", "-http", "-addr", "127.0.0.1:0"}, out, nil), "-replica-lag")
}

// TestLatencyFlagServesRequests checks that an emulator started with
// -latency answers as usual.
func TestLatencyFlagServesRequests(t *testing.T) {
	srv, _, stop := startRun(t, "-addr", "127.0.0.1:0", "-http", "-latency", "1ms±1ms")
	defer stop()
	resp, err := srv.HTTPClient().Get(srv.Endpoint())
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "an unsigned request is refused after the simulated latency")
}

// TestPartitionsFlag checks that -partitions gives new containers that
// many feed ranges, as the SDK reads them.
func TestPartitionsFlag(t *testing.T) {
	srv, _, stop := startRun(t, "-addr", "127.0.0.1:0", "-http", "-partitions", "3")
	cred, err := azcosmos.NewKeyCredential(srv.Key())
	require.NoError(t, err)
	client, err := azcosmos.NewClientWithKey(srv.Endpoint(), cred, nil)
	require.NoError(t, err)
	defer client.Close()
	ctx := context.Background()
	_, err = client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("c")
	require.NoError(t, err)
	frs, err := c.ReadFeedRanges(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, frs, 3)
	require.NoError(t, stop())
}

func policyNoRetry() policy.RetryOptions { return policy.RetryOptions{MaxRetries: -1} }

func TestConsistencyAndReplicaLagFlags(t *testing.T) {
	t.Parallel()
	srv, out, stop := startRun(t, "-http", "-addr", "127.0.0.1:0", "-consistency", "session", "-replica-lag", "20ms")
	assert.Equal(t, emulator.ConsistencySession, srv.Consistency())
	assert.Equal(t, 20*time.Millisecond, srv.ReplicaLag())
	assert.Contains(t, out.String(), "consistency: Session, replica lag 20ms")
	require.NoError(t, stop())
}
