package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	cdb "github.com/duroxide-go/duroxide-cdb"
)

// session is one command's connection and output settings. The provider is
// opened on first use, so that a command refuses bad arguments before it
// contacts Cosmos DB.
type session struct {
	flags commonFlags
	io    cmdIO
	p     *cdb.Provider
}

// provider returns the provider on the session's container, connecting on
// the first call. Every failure to connect is an exitConnect error saying
// what to check.
func (s *session) provider(ctx context.Context) (*cdb.Provider, error) {
	if s.p != nil {
		return s.p, nil
	}
	opts, err := s.clientOptions()
	if err != nil {
		return nil, err
	}
	database, container := s.flags.database, s.flags.container
	if database == "" {
		database = cdb.DefaultDatabase
	}
	if container == "" {
		container = cdb.DefaultContainer
	}
	if err := s.probe(ctx, opts, database, container); err != nil {
		return nil, err
	}
	// New builds its own client from the same options (adding the
	// provider's policies: Usage counts the requests for -v).
	p, err := cdb.New(ctx, cdb.Config{Endpoint: s.flags.endpoint, Key: s.flags.key, ClientOptions: opts,
		Database: database, Container: container, DisableReconciler: true})
	if err != nil {
		return nil, connectf("open the provider on %s/%s: %v", database, container, err)
	}
	s.p = p
	return p, nil
}

// close closes the provider the session opened and, with -v, reports what
// its Cosmos DB requests cost.
func (s *session) close() {
	if s.p == nil {
		return
	}
	_ = s.p.Close()
	if s.flags.verbose {
		u := s.p.Usage()
		fmt.Fprintf(s.io.stderr, "cdb-admin: %d Cosmos DB requests, %.2f RU\n", u.Requests, u.RequestCharge)
	}
}

// clientOptions checks the connection flags and builds the azcosmos client
// options from them: the TLS settings and no SDK retries (a dead endpoint
// fails at once; the provider retries what is safe itself).
func (s *session) clientOptions() (*azcosmos.ClientOptions, error) {
	f := s.flags
	if f.endpoint == "" {
		return nil, connectf("no Cosmos DB endpoint: set %s or pass -endpoint (a local cdb-emulator: -endpoint https://127.0.0.1:8081/ -ca-cert its -cert-out file)", cdb.EnvEndpoint)
	}
	u, err := url.Parse(f.endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, connectf("the endpoint %q is not an http(s) URL (check -endpoint or %s)", f.endpoint, cdb.EnvEndpoint)
	}
	if f.key == "" {
		return nil, connectf("no account key: set %s or pass -key (cdb-emulator uses the official emulator's well-known key unless started with -key)", cdb.EnvKey)
	}
	if _, err := azcosmos.NewKeyCredential(f.key); err != nil {
		return nil, connectf("the account key is not valid base64 (check -key or %s): %v", cdb.EnvKey, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.insecure} //nolint:gosec // opt-in for local emulators
	if f.caCert != "" {
		pem, err := os.ReadFile(f.caCert)
		if err != nil {
			return nil, connectf("read -ca-cert: %v", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, connectf("-ca-cert %s holds no PEM certificate", f.caCert)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: tr},
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}}, nil
}

// probe reads the database and the container with a client of its own, so
// that a wrong endpoint, key or name is reported as such (and the
// provider, which creates missing ones, never creates a container here).
func (s *session) probe(ctx context.Context, opts *azcosmos.ClientOptions, database, container string) error {
	endpoint := s.flags.endpoint
	cred, err := azcosmos.NewKeyCredential(s.flags.key)
	if err != nil {
		return connectf("the account key is not valid base64 (check -key or %s): %v", cdb.EnvKey, err)
	}
	client, err := azcosmos.NewClientWithKey(endpoint, cred, opts)
	if err != nil {
		return connectf("create the Cosmos DB client: %v", err)
	}
	defer client.Close()
	db, err := client.NewDatabase(database)
	if err != nil {
		return connectf("database %q: %v", database, err)
	}
	if _, err := db.Read(ctx, nil); err != nil {
		return probeError(err, endpoint, fmt.Sprintf("database %q", database), "-database or "+cdb.EnvDatabase)
	}
	c, err := db.NewContainer(container)
	if err != nil {
		return connectf("container %q: %v", container, err)
	}
	if _, err := c.Read(ctx, nil); err != nil {
		return probeError(err, endpoint, fmt.Sprintf("container %q in database %q", container, database), "-container or "+cdb.EnvContainer)
	}
	return nil
}

// probeError turns the failure to read what (a database or container) into
// an exitConnect error that says what to check.
func probeError(err error, endpoint, what, setting string) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch re.StatusCode {
		case http.StatusNotFound:
			return connectf("%s not found at %s (check %s)", what, endpoint, setting)
		case http.StatusUnauthorized, http.StatusForbidden:
			return connectf("%s refused the key (HTTP %d): check -key or %s", endpoint, re.StatusCode, cdb.EnvKey)
		}
		return connectf("read %s at %s: HTTP %d %s", what, endpoint, re.StatusCode, re.ErrorCode)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return connectf("%s did not answer within -timeout (is the account or cdb-emulator running?)", endpoint)
	}
	hint := "is the endpoint right and the account or cdb-emulator running?"
	if strings.Contains(err.Error(), "certificate") {
		hint = "the server's certificate is not trusted: pass -ca-cert with cdb-emulator's -cert-out file, or -insecure for a local emulator"
	}
	return connectf("cannot reach Cosmos DB at %s: %v (%s)", endpoint, err, hint)
}
