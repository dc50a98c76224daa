package cdb_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cdb "github.com/duroxide-go/duroxide-cdb"
	"github.com/duroxide-go/duroxide-cdb/emulator"
)

// newWithin runs cdb.New with a deadline far beyond what a failure may
// take, so that a returned error is New's own verdict, not the deadline's.
func newWithin(t *testing.T, cfg cdb.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cfg)
	if err == nil {
		_ = p.Close()
		t.Fatal("New succeeded")
	}
	require.False(t, errors.Is(err, context.DeadlineExceeded), "New ran into the deadline instead of failing: %v", err)
	return err
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// A refused connection fails New after a short backoff, with the cause
// reachable through errors.Is and a hint.
func TestNewFailsOnARefusedConnectionWithItsCause(t *testing.T) {
	t.Parallel()
	err := newWithin(t, cdb.Config{Endpoint: "https://" + closedPort(t) + "/", Key: emulator.WellKnownKey})
	assert.True(t, errors.Is(err, syscall.ECONNREFUSED), "cause lost: %v", err)
	assert.Contains(t, err.Error(), "nothing accepts connections at the endpoint")
}

// A certificate the client does not trust fails New at once, with the
// x509 error reachable through errors.As and how to trust the emulator's.
func TestNewFailsOnAnUntrustedCertificateWithItsCause(t *testing.T) {
	t.Parallel()
	emu, err := emulator.Start(emulator.Options{TLS: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	err = newWithin(t, cdb.Config{Endpoint: emu.Endpoint(), Key: emu.Key()}) // a transport that does not trust it
	var unknown x509.UnknownAuthorityError
	assert.True(t, errors.As(err, &unknown), "cause lost: %v", err)
	assert.Contains(t, err.Error(), "-cert-out")
	assert.Zero(t, emu.Counters()[emulator.OpDatabase].Requests, "no request can have been served")
}

// A wrong key fails New at once with the service's 401.
func TestNewFailsOnAWrongKeyWithTheServicesAnswer(t *testing.T) {
	t.Parallel()
	emu, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	wrong := "AAAA" + emu.Key()[4:]
	err = newWithin(t, cdb.Config{Endpoint: emu.Endpoint(), Key: wrong,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: emu.HTTPClient()}}})
	var re *azcore.ResponseError
	require.True(t, errors.As(err, &re), "cause lost: %v", err)
	assert.Equal(t, http.StatusUnauthorized, re.StatusCode)
	assert.Contains(t, err.Error(), "check COSMOS_KEY")
}

// When the caller's deadline ends the retries, the error carries both the
// deadline and the last failure.
func TestNewKeepsTheLastCauseWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	emu, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	emu.InjectFault(emulator.FaultRule{Op: emulator.OpAccount, Fault: emulator.ServiceUnavailable()})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err = cdb.New(ctx, cdb.Config{Endpoint: emu.Endpoint(), Key: emu.Key(),
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: emu.HTTPClient()}}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "deadline lost: %v", err)
	var re *azcore.ResponseError
	require.True(t, errors.As(err, &re), "last cause lost: %v", err)
	assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
}

// An account that fails its first contacts and then answers is reached by
// New's retries: azcosmos's memory of the failed first contact (5 minutes)
// does not keep New failing.
func TestNewConnectsOnceTheEndpointAnswers(t *testing.T) {
	t.Parallel()
	emu, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	emu.InjectFault(emulator.FaultRule{Op: emulator.OpAccount, Times: 2, Fault: emulator.ServiceUnavailable()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cdb.New(ctx, cdb.Config{Endpoint: emu.Endpoint(), Key: emu.Key(),
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: emu.HTTPClient()}}})
	require.NoError(t, err)
	require.NoError(t, p.Close())
}
