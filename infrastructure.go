// Infrastructure: the container's indexing policy and creating the database
// and container at New when asked.

package cdb

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"go.uber.org/zap"
)

// indexingPolicy is the container's indexing policy: DESIGN.md §2.3
// (selective included paths, large blobs excluded, the three composite
// indexes) plus the paths the provider's own queries filter on
// (DESIGN.md §2.3 adds /docType and /lockToken).
func indexingPolicy() *azcosmos.IndexingPolicy {
	included := []string{
		"/type/?", "/instanceId/?", "/dispatchSlot/?", "/visibleAt/?", "/enqueuedAt/?",
		"/lockedUntil/?", "/executionId/?", "/eventId/?", "/status/?", "/sessionId/?",
		"/ownerId/?", "/parentInstanceId/?", "/createdAt/?", "/customStatusVersion/?",
		"/lockToken/?", "/tag/?", "/lastActivity/?", "/updatedAt/?",
	}
	excluded := []string{"/eventData/*", "/workItem/*", "/payload/*", "/output/*", "/customStatus/*", "/deliveries/*", "/entries/*", "/*"}
	pol := &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent}
	for _, p := range included {
		pol.IncludedPaths = append(pol.IncludedPaths, azcosmos.IncludedPath{Path: p})
	}
	for _, p := range excluded {
		pol.ExcludedPaths = append(pol.ExcludedPaths, azcosmos.ExcludedPath{Path: p})
	}
	asc := func(path string) azcosmos.CompositeIndex {
		return azcosmos.CompositeIndex{Path: path, Order: azcosmos.CompositeIndexAscending}
	}
	pol.CompositeIndexes = [][]azcosmos.CompositeIndex{
		{asc("/type"), asc("/dispatchSlot"), asc("/visibleAt"), asc("/enqueuedAt")},
		{asc("/type"), asc("/executionId"), asc("/eventId")},
		{asc("/type"), asc("/status")},
	}
	return pol
}

// ensureInfrastructure creates the database and the container when they are
// missing (DESIGN.md §11). It is New's first
// contact with the account, so its retries (connectRetry) tell errors that
// waiting can heal from those it cannot.
func (p *Provider) ensureInfrastructure(ctx context.Context) error {
	deadline := time.Now().Add(p.cfg.ConnectTimeout)
	err := p.connectRetry(ctx, deadline, func(ctx context.Context, c *azcosmos.Client) error {
		_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: p.cfg.Database}, nil)
		if cosmos.IsStatus(err, http.StatusConflict) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cdb: create database %q at %s: %w", p.cfg.Database, p.cfg.Endpoint, err)
	}
	ttlOn := int32(-1)
	props := azcosmos.ContainerProperties{
		ID: p.cfg.Container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
			Kind: azcosmos.PartitionKeyKindHash, Paths: []string{"/instanceId"}, Version: 2,
		},
		IndexingPolicy: indexingPolicy(),
		// -1: per-item time to live on, with no default expiry, so that
		// only the tombstones of consumed messages expire (queue_documents.go).
		DefaultTimeToLive: &ttlOn,
	}
	err = p.connectRetry(ctx, deadline, func(ctx context.Context, c *azcosmos.Client) error {
		db, err := c.NewDatabase(p.cfg.Database)
		if err != nil {
			return err
		}
		_, err = db.CreateContainer(ctx, props, nil)
		if cosmos.IsStatus(err, http.StatusConflict) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cdb: create container %q: %w", p.cfg.Container, err)
	}
	return nil
}

// Retries of New's first contact: exponential backoff from
// connectBaseDelay, capped at connectMaxDelay, at most connectAttempts
// tries (about 30 s), each try bounded by connectTryTimeout and all of
// them by Config.ConnectTimeout (a hung endpoint that accepts and never
// answers would otherwise hold each try until the SDK's own timeout); an
// unreachable endpoint (refused connection, unknown
// host, unreachable network) gets only unreachableAttempts tries (about
// 1.5 s), and an error no wait can heal (an untrusted or invalid
// certificate, an answer such as 401 or 403) none.
const (
	connectTryTimeout   = 5 * time.Second
	connectBaseDelay    = 500 * time.Millisecond
	connectMaxDelay     = 5 * time.Second
	connectAttempts     = 10
	unreachableAttempts = 3
)

// connectRetry runs fn, a database or container creation, with the
// retries above, logging each one. A client the provider built is rebuilt
// before each retry: azcosmos v1.5.0 remembers a failed first contact with
// the account (its account-properties refresh) for 5 minutes and would
// answer every retry from that memory. The error wraps
// the last failure (errors.As finds *x509.UnknownAuthorityError,
// *net.DNSError, *azcore.ResponseError, syscall.ECONNREFUSED ...) and, when
// ctx ended first, ctx's error too.
func (p *Provider) connectRetry(ctx context.Context, deadline time.Time, fn func(context.Context, *azcosmos.Client) error) error {
	delay := connectBaseDelay
	var answered error // the last failure that was an answer, not ctx's end
	for attempt := 1; ; attempt++ {
		err := tryWithin(ctx, min(connectTryTimeout, p.cfg.ConnectTimeout/4, time.Until(deadline)), p.client, fn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// A try cut short by ctx's end says nothing new: report the
			// last real cause with it.
			if answered != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				err = answered
			}
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), mapError("new", err))
		}
		answered = err
		if !time.Now().Before(deadline.Add(-connectBaseDelay)) {
			return fmt.Errorf("gave up after %s (Config.ConnectTimeout) and %d tries: %w",
				p.cfg.ConnectTimeout, attempt, mapError("new", err))
		}
		limit, hint := connectAttemptsFor(err)
		if attempt >= limit {
			if hint != "" {
				return fmt.Errorf("%w (%s)", mapError("new", err), hint)
			}
			return mapError("new", err)
		}
		if ra := retryAfter(err); ra > delay {
			delay = ra
		}
		p.log.Warn("cannot reach Cosmos DB yet; retrying", zap.String("endpoint", p.cfg.Endpoint),
			zap.Int("attempt", attempt), zap.Duration("delay", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), mapError("new", err))
		case <-time.After(min(delay, time.Until(deadline))):
		}
		delay = min(delay*2, connectMaxDelay)
		if p.ownClient {
			if c, cerr := p.newClient(); cerr == nil {
				p.client.Close()
				p.client = c
			}
		}
	}
}

// connectAttemptsFor returns how many tries New's first contact gets for
// err, and a hint for the user when the error cannot heal by waiting.
func connectAttemptsFor(err error) (int, string) {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		dns       *net.DNSError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &invalid), errors.As(err, &hostname):
		return 1, "the endpoint's TLS certificate is not trusted: for a local emulator, trust the certificate it wrote (cdb-emulator -cert-out; SSL_CERT_FILE) or use its plain HTTP mode"
	case cosmos.IsStatus(err, http.StatusUnauthorized) || cosmos.IsStatus(err, http.StatusForbidden):
		return 1, "the account refused the credentials: check COSMOS_KEY or the identity's data-plane role"
	case errors.As(err, &dns):
		return unreachableAttempts, "the endpoint's host name does not resolve: check COSMOS_ENDPOINT"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return unreachableAttempts, "nothing accepts connections at the endpoint: check COSMOS_ENDPOINT, or start the emulator"
	}
	if code, ok := cosmos.StatusCode(err); ok && !isRetryableStatus(code) {
		return 1, ""
	}
	if errors.Is(err, context.Canceled) {
		return 1, ""
	}
	return connectAttempts, ""
}

// tryWithin runs fn once with a context of timeout and returns its error,
// or a timeout error as soon as the timeout passes even if fn has not
// returned: the SDK's first contact with an account (its account-properties
// read) does not always stop at its context's deadline, and a hung endpoint
// would hold it for a minute. fn then finishes in the background.
func tryWithin(ctx context.Context, timeout time.Duration, c *azcosmos.Client, fn func(context.Context, *azcosmos.Client) error) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- fn(tctx, c) }()
	select {
	case err := <-errc:
		return err
	case <-tctx.Done():
		select {
		case err := <-errc: // fn returned as the timeout passed
			return err
		default:
			return fmt.Errorf("no answer within %s: %w", timeout.Round(time.Millisecond), tctx.Err())
		}
	}
}
