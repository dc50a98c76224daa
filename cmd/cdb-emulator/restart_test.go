package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/emulator"
	"github.com/duroxide-go/duroxide-cdb/internal/childproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childArgsEnv, set in a test binary's environment, makes it run as the
// command with these arguments (JSON) instead of running the tests: the
// crash test kills such a process.
const childArgsEnv = "CDB_EMULATOR_TEST_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(childArgsEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			fmt.Fprintln(os.Stderr, "cdb-emulator test child:", err)
			os.Exit(2)
		}
		os.Args = append([]string{"cdb-emulator"}, a...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startChild runs the command in a child process with args and returns it
// and the endpoint it serves, once it serves.
func startChild(t *testing.T, args ...string) (*childproc.Child, string) {
	t.Helper()
	// Strong: the tests read their own writes without session tokens.
	a, err := json.Marshal(append([]string{"-consistency", "strong"}, args...))
	require.NoError(t, err)
	child := childproc.Start(t, "^$", childArgsEnv, string(a))
	serving := make(chan string, 1)
	go func() {
		for child.Lines.Scan() {
			if rest, ok := strings.CutPrefix(child.Lines.Text(), "cdb-emulator serving "); ok {
				serving <- strings.Fields(rest)[0]
			}
		}
		close(serving)
	}()
	select {
	case endpoint, ok := <-serving:
		require.True(t, ok, "the child exited before serving")
		return child, endpoint
	case <-time.After(time.Minute):
		t.Fatal("the child did not start serving")
	}
	return nil, ""
}

// hostPort is the host:port of an endpoint URL.
func hostPort(endpoint string) string {
	return strings.TrimSuffix(strings.SplitN(endpoint, "://", 2)[1], "/")
}

// seedContainer creates database "db" and container "c" (partitioned by
// /pk) and writes documents with the given ids.
func seedContainer(t *testing.T, client *azcosmos.Client, ids ...string) *azcosmos.ContainerClient {
	t.Helper()
	ctx := context.Background()
	_, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	require.NoError(t, err)
	db, err := client.NewDatabase("db")
	require.NoError(t, err)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Version: 2}}, nil)
	require.NoError(t, err)
	c, err := db.NewContainer("c")
	require.NoError(t, err)
	writeDocs(t, c, ids...)
	return c
}

func writeDocs(t *testing.T, c *azcosmos.ContainerClient, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := c.CreateItem(context.Background(), azcosmos.NewPartitionKeyString("pk-"+id), []byte(`{"id":"`+id+`","pk":"pk-`+id+`"}`), nil)
		require.NoError(t, err, id)
	}
}

// requireDocs reads each document back and returns the ETag of each.
func requireDocs(t *testing.T, c *azcosmos.ContainerClient, ids ...string) map[string]string {
	t.Helper()
	etags := map[string]string{}
	for _, id := range ids {
		r, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString("pk-"+id), id, nil)
		require.NoError(t, err, id)
		etags[id] = string(r.ETag)
	}
	return etags
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// A graceful restart with -state: the same address, certificate and data;
// the client, which trusted the certificate once, is not re-created.
func TestStateDirKeepsCertificateAndDataAcrossARestart(t *testing.T) {
	state := t.TempDir()
	srv, out, stop := startRun(t, "-addr", "127.0.0.1:0", "-state", state)
	endpoint := srv.Endpoint()
	cert := exported(t, out.String(), "SSL_CERT_FILE")
	assert.Equal(t, filepath.Join(state, "cert.pem"), cert)
	assert.Contains(t, out.String(), "data kept in "+filepath.Join(state, "data"))
	client := sdkClient(t, endpoint, emulator.WellKnownKey, trustingClient(t, cert))
	c := seedContainer(t, client, ids("a", 10)...)
	before := requireDocs(t, c, ids("a", 10)...)
	require.NoError(t, stop())

	srv, _, stop = startRun(t, "-addr", hostPort(endpoint), "-state", state)
	require.Equal(t, endpoint, srv.Endpoint())
	after := requireDocs(t, c, ids("a", 10)...)
	assert.Equal(t, before, after, "documents keep their ETags")
	writeDocs(t, c, ids("b", 10)...)
	requireDocs(t, c, ids("b", 10)...)
	require.NoError(t, stop())
}

// -cert and -cert-key serve a certificate of one's own.
func TestCertFlagsServeTheGivenCertificate(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := emulator.GenerateCertificate()
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	srv, out, stop := startRun(t, "-addr", "127.0.0.1:0", "-cert", certFile, "-cert-key", keyFile)
	defer func() { _ = stop() }()
	assert.Equal(t, certPEM, srv.CertificatePEM())
	assert.Equal(t, certFile, exported(t, out.String(), "SSL_CERT_FILE"))
	seedContainer(t, sdkClient(t, srv.Endpoint(), srv.Key(), trustingClient(t, certFile)))

	bad := &syncBuffer{}
	assert.ErrorContains(t, run(context.Background(), []string{"-addr", "127.0.0.1:0", "-cert", certFile}, bad, nil), "-cert-key")
	assert.ErrorContains(t, run(context.Background(), []string{"-addr", "127.0.0.1:0", "-cert", certFile, "-cert-key", keyFile, "-state", dir}, bad, nil), "-state")
}

// A crash: the process is killed (SIGKILL) right after its last
// acknowledged write, with no chance to write anything, then started again
// on the same address with the same -state. Every acknowledged write
// survives (the write-ahead log holds it); the same client reads them and
// goes on writing. While the first process runs, a second one on the same
// -state is refused, naming the first's pid.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	state := t.TempDir()
	child, endpoint := startChild(t, "-addr", "127.0.0.1:0", "-state", state)
	client := sdkClient(t, endpoint, emulator.WellKnownKey, trustingClient(t, filepath.Join(state, "cert.pem")))
	c := seedContainer(t, client, ids("a", 20)...)
	writeDocs(t, c, "last")

	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-state", state}, &syncBuffer{}, nil)
	require.ErrorIs(t, err, emulator.ErrDataDirInUse)
	assert.ErrorContains(t, err, fmt.Sprintf("process %d", child.PID()))

	require.NoError(t, child.Kill())

	startChild(t, "-addr", hostPort(endpoint), "-state", state)
	requireDocs(t, c, append(ids("a", 20), "last")...)
	writeDocs(t, c, ids("b", 5)...)
	requireDocs(t, c, ids("b", 5)...)
}
