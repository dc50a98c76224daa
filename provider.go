// Provider: the type, New (creating the container when asked), Close, and
// the contract's orchestration methods: FetchOrchestrationItem (one
// request when the instance's state is held, the lock batch), AckOrchestrationItem
// (a turn in one transactional batch), RenewOrchestrationItemLock and
// AbandonOrchestrationItem, with the locks this process keeps so that they
// need no read. Each section below starts with what it holds.

package cdb

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/duroxide-go/duroxide-cdb/duroxide"
	"github.com/duroxide-go/duroxide-cdb/internal/candidates"
	"github.com/duroxide-go/duroxide-cdb/internal/changefeed"
	"github.com/duroxide-go/duroxide-cdb/internal/cosmos"
	"github.com/duroxide-go/duroxide-cdb/internal/docs"
	"github.com/duroxide-go/duroxide-cdb/internal/fetchtrace"
	"github.com/duroxide-go/duroxide-cdb/internal/handoff"
	"github.com/duroxide-go/duroxide-cdb/internal/held"
	"github.com/duroxide-go/duroxide-cdb/internal/leases"
	"github.com/duroxide-go/duroxide-cdb/internal/locks"
	"github.com/duroxide-go/duroxide-cdb/internal/pkheader"
	"github.com/duroxide-go/duroxide-cdb/internal/session"
	"github.com/duroxide-go/duroxide-cdb/internal/statuswatch"
	"github.com/duroxide-go/duroxide-cdb/internal/storehealth"
	"go.uber.org/zap"
)

// Provider: the type, New (connecting and starting its goroutines), Close,
// Name, Version and Container.

// ProviderName and ProviderVersion are what Name and Version report.
const (
	ProviderName    = "cosmosdb"
	ProviderVersion = "0.1.0"
)

// Provider is the Cosmos DB provider. It is safe for concurrent use by many
// goroutines. Create it with New; Close stops its reconciler.
type Provider struct {
	cfg Config
	// statusWatches wakes status waits of this process on its acks.
	statusWatches statuswatch.Watches
	client        *azcosmos.Client
	ownClient     bool
	// session is the session container of the client New built
	// (SessionTokenPolicy); nil with a ready Config.Client.
	session *session.Policy
	// held is the history kept decoded between turns (internal/held);
	// nil holds nothing.
	held *held.Histories
	// heldStates is the instance states kept for one-request fetches
	// (internal/held); nil holds nothing.
	heldStates *held.States
	// newClient builds a fresh client when ownClient (see clientFactory).
	newClient func() (*azcosmos.Client, error)
	container *azcosmos.ContainerClient
	log       *zap.Logger
	retry     retrier
	// health is the store's health, which every request reports to
	// (store_health.go, internal/storehealth).
	health *storehealth.Tracker

	orchLeases   LeaseProvider
	workerLeases LeaseProvider
	// leases, with LeasesInContainer, owns this process's share of the
	// slots (internal/leases); nil otherwise.
	leases *leases.Coordinator
	// feed, unless DisableChangeFeedWakeups, reads the change feed
	// (changefeed_wakeups.go); nil otherwise.
	feed *changefeed.Reader

	locks *lockCache
	// usage counts every Cosmos DB answer (metrics.go); metrics records the
	// provider's metrics (metrics.go).
	usage   usageCounters
	metrics *providerMetrics
	// orchPool and workPool are this process's candidates of the two
	// queues (internal/candidates).
	orchPool *candidates.Pool
	workPool *candidates.Pool
	// workWaiters and orchWaiters are the fetches of this process that
	// wait for work, to which acks hand work eagerly (eager_dispatch.go);
	// nil with Config.DisableEagerDispatch. eager counts the hand-overs.
	workWaiters *workWaiters
	orchWaiters *orchWaiters
	eager       eagerCounters
	// fetchTracer, when set (by tests, before the first call), is told
	// every step of every fetch.
	fetchTracer func(fetchtrace.Event)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

var (
	_ duroxide.Provider      = (*Provider)(nil)
	_ duroxide.ProviderAdmin = (*Provider)(nil)
)

// New connects to the account cfg names, creates the database and container
// when they are missing (partition key /instanceId, large partition keys,
// the indexing policy of DESIGN.md §2.3 with the paths this
// provider adds, per-item time to live for tombstones; a 409 means one
// exists), and starts the outbox reconciler and, unless
// DisableChangeFeedWakeups, the change-feed reader. An invalid cfg is an
// error naming every bad field; nothing is contacted then. A change-feed
// reader whose first read fails (after the retries of any read) is logged
// as a warning and left out: the provider then polls as with
// DisableChangeFeedWakeups (Changes returns nil).
//
// Contacting the account is retried with a backoff from 500 ms doubling to
// at most 5 s, each retry logged, at most 10 tries, each try bounded by 5 s
// (a quarter of ConnectTimeout if shorter) and all of them by
// Config.ConnectTimeout (default 40 s, after which New
// returns an error saying it gave up, wrapping the last cause): throttling
// (429, its retry hint honoured), 5xx and timeouts heal by waiting. An
// unreachable endpoint (refused connection, unknown host) gets 3 tries
// (about 1.5 s); an untrusted certificate or a refused key (401, 403) none.
// The error wraps the cause, for errors.As and errors.Is
// (x509.UnknownAuthorityError, *net.DNSError, syscall.ECONNREFUSED,
// *azcore.ResponseError), and says what to check; when ctx ends first it
// wraps both ctx's error and the last cause.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	p := &Provider{
		cfg:          cfg,
		log:          cfg.Logger.Named("cdb"),
		retry:        defaultRetrier.withClosed(stop),
		health:       storehealth.New(cfg.Logger.Named(storeHealthLogger)),
		orchLeases:   cfg.OrchestrationLeases,
		workerLeases: cfg.WorkerLeases,
		locks:        newLockCache(),
		stop:         stop,
	}
	p.orchPool = candidates.New(p.viewLifetime, DispatchSlot, p.nowMs)
	p.workPool = candidates.New(p.viewLifetime, DispatchSlot, p.nowMs)
	if !cfg.DisableEagerDispatch {
		p.workWaiters = handoff.New[workWait, *duroxide.LockedWorkItem]()
		p.orchWaiters = handoff.New[orchWait, *duroxide.OrchestrationItem]()
	}
	if cfg.HeldHistoryEvents > 0 {
		p.held = held.NewHistories(cfg.HeldHistoryEvents)
	}
	if cfg.HeldInstanceStates > 0 {
		p.heldStates = held.NewStates(cfg.HeldInstanceStates)
	}
	p.metrics = newProviderMetrics(cfg.MeterProvider, p)
	p.retry.onRetry = p.metrics.retried
	p.retry.budget = max(cfg.RetryBudget, 0)
	p.retry.health = p.health
	p.retry.reportTries = cfg.Client != nil
	ctx = cosmos.WithCall(ctx, "new")
	inContainer := cfg.Leases == LeasesInContainer && (p.orchLeases == nil || p.workerLeases == nil)
	if p.orchLeases == nil && !inContainer {
		p.orchLeases = NewInMemoryLeaseProvider(cfg.OrchestrationLanes)
	}
	if p.workerLeases == nil && !inContainer {
		p.workerLeases = NewInMemoryLeaseProvider(cfg.WorkerLanes)
	}
	p.client = cfg.Client
	if p.client == nil {
		if p.newClient, err = clientFactory(cfg, p); err != nil {
			return nil, err
		}
		if p.client, err = p.newClient(); err != nil {
			return nil, fmt.Errorf("cdb: create Cosmos DB client: %w", err)
		}
		p.ownClient = true
	}
	if err := p.ensureInfrastructure(ctx); err != nil {
		p.metrics.close()
		p.closeClient()
		return nil, err
	}
	if err := p.checkAccount(); err != nil {
		p.metrics.close()
		p.closeClient()
		return nil, err
	}
	p.container, err = p.client.NewContainer(cfg.Database, cfg.Container)
	if err != nil {
		p.metrics.close()
		p.closeClient()
		return nil, fmt.Errorf("cdb: container client: %w", err)
	}
	if inContainer {
		p.leases = newLeaseCoordinator(p)
		if p.orchLeases == nil {
			p.orchLeases = containerLeases{p.leases.Queue(0)}
		}
		if p.workerLeases == nil {
			p.workerLeases = containerLeases{p.leases.Queue(1)}
		}
	}
	if !cfg.DisableChangeFeedWakeups {
		if err := p.startChangeFeed(ctx); err != nil {
			if ctx.Err() != nil {
				if p.leases != nil {
					p.leases.Close(ctx)
				}
				p.metrics.close()
				p.closeClient()
				return nil, err
			}
			// The wake-ups are an optimisation: an account that refuses
			// change-feed reads (a data-plane role without
			// readChangeFeed, an emulator without the change feed) still
			// gets a working provider, whose fetches poll.
			p.log.Warn("change-feed wake-ups unavailable; waiting fetches poll every LongPollInterval", zap.Error(err))
		}
	}
	p.metrics.registerGauges(p)
	if !cfg.DisableReconciler {
		p.wg.Add(1)
		go p.reconcileLoop()
	}
	return p, nil
}

// fetchStarted notes that a fetch of queue q (0 orchestrations, 1 work
// items) starts and returns the function that notes its end: with
// LeasesInContainer, a Provider claims slots of the queues it fetches from
// (leases.Coordinator.FetchStarted), and the error is that of the claim.
func (p *Provider) fetchStarted(ctx context.Context, q int) (func(), error) {
	if p.leases == nil {
		return func() {}, nil
	}
	return p.leases.FetchStarted(ctx, q)
}

// Ping checks that the provider's container answers, for a readiness probe:
// one request (a read of the container's properties, about 1 RU), tried
// once, no retry, bounded by ctx. It returns nil when the container
// answered, a *duroxide.ProviderError otherwise: wrapping
// ErrContainerNotFound when the container or its database does not exist,
// retryable when the account is unreachable or throttling, permanent
// ("the provider is closed") after Close.
func (p *Provider) Ping(ctx context.Context) error {
	once := p.retry
	once.attempts = 1
	return mapError("ping", once.do(ctx, readRequest, func(ctx context.Context) error {
		_, err := p.container.Read(ctx, nil)
		return err
	}))
}

// Close stops the reconciler and waits for it; intents still pending stay
// in the container and the next provider on it delivers them
// (DESIGN.md §4.5). Long-polling fetches return at once (nil), and
// every call made afterwards, or still retrying, fails with a permanent
// ProviderError ("the provider is closed") without sending a request.
// Close is idempotent and always returns nil.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() {
		if p.feed != nil {
			p.feed.Close()
		}
		if p.leases != nil {
			ctx, cancel := context.WithTimeout(cosmos.WithCall(context.Background(), "close"), p.cfg.LeaseExpiry)
			p.leases.Close(ctx)
			cancel()
		}
		p.workWaiters.Close()
		p.orchWaiters.Close()
		close(p.stop)
		p.wg.Wait()
		p.metrics.close()
		p.closeClient()
	})
	return nil
}

// clientFactory returns the function that builds the provider's azcosmos
// client from cfg: the caller's ClientOptions plus the partition key header
// fix, the session container (p.session), tracing, request accounting, and no azcore retries (the provider
// retries itself). New calls it again to start afresh after a failed first
// contact, which azcosmos would otherwise repeat from its cache for 5
// minutes.
func clientFactory(cfg Config, p *Provider) (func() (*azcosmos.Client, error), error) {
	opts := azcosmos.ClientOptions{}
	if cfg.ClientOptions != nil {
		opts = *cfg.ClientOptions
	}
	if cfg.HTTPClient != nil {
		opts.Transport = cfg.HTTPClient
	}
	p.session = session.NewPolicy()
	opts.PerCallPolicies = append(append([]policy.Policy(nil), opts.PerCallPolicies...), PartitionKeyHeaderPolicy(), p.session, revealPolicy{})
	if cfg.TracerProvider != nil {
		opts.TracingProvider = AzureTracingProvider(cfg.TracerProvider)
	}
	opts.PerRetryPolicies = append(append([]policy.Policy(nil), opts.PerRetryPolicies...), requestPolicy{usage: &p.usage, metrics: p.metrics}, healthPolicy{health: p.health})
	if r := opts.Retry; r.MaxRetries == 0 && r.TryTimeout == 0 && r.RetryDelay == 0 && r.MaxRetryDelay == 0 && r.StatusCodes == nil && r.ShouldRetry == nil {
		opts.Retry = policy.RetryOptions{MaxRetries: -1}
	}
	if cfg.Credential != nil {
		return func() (*azcosmos.Client, error) { return azcosmos.NewClient(cfg.Endpoint, cfg.Credential, &opts) }, nil
	}
	cred, err := azcosmos.NewKeyCredential(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("cdb: create Cosmos DB client: %w", err)
	}
	return func() (*azcosmos.Client, error) { return azcosmos.NewClientWithKey(cfg.Endpoint, cred, &opts) }, nil
}

func (p *Provider) closeClient() {
	if p.ownClient && p.client != nil {
		p.client.Close()
	}
}

// Name returns "cosmosdb".
func (p *Provider) Name() string { return ProviderName }

// DispatchConcurrency returns Config.OrchestrationLanes and WorkerLanes
// after defaults: the lanes each queue's dispatch slots
// are split into (duroxide.DispatchConcurrency). A runtime on this provider
// runs at least that many dispatchers of each kind by default and refuses
// to start with fewer.
func (p *Provider) DispatchConcurrency() (orchestration, worker int) {
	return p.cfg.OrchestrationLanes, p.cfg.WorkerLanes
}

// Version returns the provider's version.
func (p *Provider) Version() string { return ProviderVersion }

// Container returns the container client the provider uses (for tools and
// tests that inspect documents).
func (p *Provider) Container() *azcosmos.ContainerClient { return p.container }

// Logger returns the logger the provider writes to (Config.Logger, or
// DefaultLogger when that was nil), so that the runtime can log through the
// same one: runtime.Options{Logger: slog.New(zapslog.NewHandler(p.Logger().Core()))}
// with go.uber.org/zap/exp/zapslog (README, "Logs, outages and health").
func (p *Provider) Logger() *zap.Logger { return p.cfg.Logger }

// nowMs returns the configured clock in milliseconds since the Unix epoch.
func (p *Provider) nowMs() int64 { return p.cfg.Now().UnixMilli() }

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
func PartitionKeyHeaderPolicy() policy.Policy { return pkheader.Policy{} }

// Infrastructure: the container's indexing policy and creating the database
// and container at New when asked.

// indexingPolicy is the container's indexing policy (DESIGN.md §2.3):
// only the paths the provider's queries filter on (the admin listings'
// /orchestrationName included), large blobs excluded, and the three
// composite indexes. It is set when New creates the container; an
// existing container keeps its own.
func indexingPolicy() *azcosmos.IndexingPolicy {
	included := []string{
		"/type/?", "/instanceId/?", "/dispatchSlot/?", "/visibleAt/?", "/enqueuedAt/?",
		"/lockedUntil/?", "/executionId/?", "/eventId/?", "/status/?", "/sessionId/?",
		"/ownerId/?", "/parentInstanceId/?", "/createdAt/?", "/customStatusVersion/?",
		"/lockToken/?", "/tag/?", "/lastActivity/?", "/updatedAt/?", "/orchestrationName/?",
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
		// only the tombstones of consumed messages expire (queue documents, models.go).
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

// Held locks: what this provider keeps of the locks it holds (orchestration
// and work item), cached by internal/locks so that ack, renew and abandon
// need no read.

// orchLock is what a fetch learned about the instance it locked, kept so
// that the ack, renew and abandon of the same lock need no read: the
// instance document as locked (with the ETag the ack replaces it under),
// the ids of the messages the lock tagged, and the KV documents (with
// the pages no root names, which the ack deletes once it committed).
type orchLock struct {
	instance    string
	lockID      string
	doc         instanceDoc
	messageIDs  []string
	kv          kvState
	lockedUntil int64
	// oldestEnqueuedAt and oldestSeq order the locked messages' instance
	// among the candidates again when the lock is abandoned.
	oldestEnqueuedAt int64
	oldestSeq        string
}

// workerLock is what a work-item fetch learned about the item it locked.
type workerLock struct {
	instance    string
	docID       string
	lockID      string
	etag        string
	sessionID   *string
	lockedUntil int64
	// enqueuedAt, seq and tag put the message back among the candidates
	// in its place when the lock is abandoned.
	enqueuedAt int64
	seq        string
	tag        *string
}

// HeldInstance and HeldUntil let the lock cache (internal/locks) sweep and
// find the locks.
func (l orchLock) HeldInstance() string   { return l.instance }
func (l orchLock) HeldUntil() int64       { return l.lockedUntil }
func (l workerLock) HeldInstance() string { return l.instance }
func (l workerLock) HeldUntil() int64     { return l.lockedUntil }

// lockCache is the cache of the locks this process holds.
type lockCache = locks.Cache[orchLock, workerLock]

func newLockCache() *lockCache { return locks.New[orchLock, workerLock]() }

// Fetch of an orchestration: FetchOrchestrationItem, locking an instance
// with its queue messages, capability filters and failed-fetch release.

const (
	// maxMessagesPerTurn caps the messages one fetch locks, so that the
	// lock batch (instance + one patch per message) and the ack's batch
	// (instance, execution, KV, one delete per message, at least one
	// intent) stay within 100 operations; the rest wait for the next turn.
	maxMessagesPerTurn = 90
	// maxCandidatesPerFetch is how many candidates one fetch attempt tries
	// to lock before it reports no work.
	maxCandidatesPerFetch = 4
	// candidatePageSize is the page size of the candidate query; a fetch
	// reads one non-empty page of candidates.
	candidatePageSize = 200
	// notReadySkipMs is how long an instance whose messages wait for a
	// StartOrchestration, or whose pinned version the filter excludes, is
	// not tried again.
	notReadySkipMs = 1000
)

// jsonNull is a JSON null for patch operations (a nil value would be
// omitted from the operation).
var jsonNull = json.RawMessage("null")

// unknownVersion is the version a fetch reports when none was recorded
// (duroxide's SQLite provider).
const unknownVersion = "unknown"

// FetchOrchestrationItem locks the next instance with visible
// orchestrator-queue messages and returns its turn (DESIGN.md §3.1), or nil when there is none.
//
// Requests: 1 when this process holds the instance's state (it started
// the instance, or acked its last turn, and wrote the messages to take
// since; Config.HeldInstanceStates): the lock batch alone, conditioned on
// the instance document's ETag, which also reads the KV documents and
// returns the locked messages; a write by another process fails it (1
// request lost) and the fetch goes on as below.
//
// Otherwise 2 when the candidate is known and locked at the first try:
//
//  1. a single-partition query returning the instance document, its
//     messages, its KV documents and the history documents of the
//     execution this process last saw current (the first one when it saw
//     none); capability filtering and the QueueMessage-without-instance
//     rule are decided here, before the lock, and the history is decoded
//     only once the lock is held;
//  2. a transactional batch that takes the lock (a patch of the instance
//     document with If-Match on the ETag just read, or the creation of a
//     pending instance document) and tags the visible messages (lock token,
//     lock expiry, attempt count + 1).
//
// Candidates come from this process's candidate pool: the last
// candidate query of the fetch's lease slots, and the messages this
// process wrote since. 1 more request, a cross-partition query of the
// lease's slots for visible, unlocked messages and for locked instances
// (whose messages are then not tried), is made when the pool's view of the
// slots is older than LongPollInterval (10 s while the change-feed reader
// is healthy and hints other processes' messages), or when it offers
// nothing to a fetch that must answer now (a zero poll timeout, or
// the end of the poll timeout without a healthy change feed); a fetch that
// is still waiting trusts an empty, recent view, so messages written by
// other processes are seen within LongPollInterval (ChangeFeedInterval). 1
// more, a history query, when the instance is on another execution than
// the one read with its state (or that read missed events). A candidate
// that cannot be locked (it is locked, its messages wait for a start,
// another process won the race) costs 1 or 2 more requests and the next
// one is tried, up to 4; when the view holds no usable candidate and its
// last query stopped at a full page (200 messages), every page is read.
// With a positive pollTimeout the fetch waits for this process's writes,
// the visibility of a known message, or the next poll (every
// LongPollInterval), until work appears or the timeout passes. An
// undecodable history is returned in HistoryError with the lock held; a
// failure after the lock was taken releases it before the error is
// returned. A fetch never returns a lock that has expired: a lock timeout
// under 1 ms finds nothing, and a turn whose lock expired while it was
// read (a lock timeout shorter than the fetch's requests) is released,
// without counting the attempt, and not returned. A lock batch whose
// answer was lost (a dropped connection, a 408, a 500) costs 1 point read
// of the instance document: the fetch goes on with the lock that landed
// (a held-state batch's lock is released, 1 batch, and the partition
// read), or tries the still free instance again.
//
// While it waits, the fetch can be handed a turn an activity's ack of
// this process locked for it (eager dispatch, DESIGN.md §17): 0 requests
// of its own.
func (p *Provider) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	ctx = cosmos.WithCall(ctx, "fetch_orchestration_item")
	const op = "fetch_orchestration_item"
	if filter != nil && len(filter.SupportedDuroxideVersions) == 0 {
		return nil, nil // supports nothing
	}
	if lockTimeout.Milliseconds() <= 0 {
		return nil, nil // a lock that would have expired on return
	}
	done, err := p.fetchStarted(ctx, 0)
	if err != nil {
		return nil, mapError(op, err)
	}
	defer done()
	poll := p.startPoll(pollTimeout, p.orchPool)
	for {
		final, last := poll.attempt()
		item, err := p.fetchOrchestrationOnce(ctx, lockTimeout, filter, final)
		if err != nil {
			return nil, mapError(op, err)
		}
		if item != nil || last {
			return item, nil
		}
		item, taken, end, err := waitOrTake(ctx, poll, p.orchWaiters, orchWait{lockTimeout: lockTimeout, filter: filter}, p.abandonEagerTurn)
		if taken {
			p.traceFetch(fetchtrace.PollEagerTurn)
			return item, nil
		}
		if end {
			return nil, mapError(op, err)
		}
	}
}

// fetchOrchestrationOnce is one attempt: it tries the candidates of a
// lease's slots, and of other leases when its own has none.
func (p *Provider) fetchOrchestrationOnce(ctx context.Context, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter, final bool) (*duroxide.OrchestrationItem, error) {
	scope := capabilityScope(filter)
	leases := &leaseWalk{leases: p.orchLeases, pool: p.orchPool, scope: scope}
	for {
		lease, v, err := leases.next(ctx)
		if err != nil || lease == nil {
			return nil, err
		}
		p.traceFetch(fetchtrace.OrchAttempt)
		item, err := p.tryOrchCandidates(ctx, lease, v, scope, lockTimeout, filter, final)
		lease.Release()
		if err != nil || item != nil || !leases.elsewhere(v, p.nowMs()) {
			return item, err
		}
	}
}

// tryOrchCandidates tries to lock the candidates of view v of lease's
// slots as the pool's Walk says (candidates.Walk: query when the view is
// stale or offers nothing to a fetch that must answer now, oldest first,
// up to maxCandidatesPerFetch) and returns the turn of the instance it
// locked, nil when none.
func (p *Provider) tryOrchCandidates(ctx context.Context, lease *SlotLease, v *candidates.View, scope string, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter, final bool) (*duroxide.OrchestrationItem, error) {
	walk := p.orchPool.Walk(v, scope, nil, nil, final, maxCandidatesPerFetch)
	for {
		step := walk.Next(p.nowMs())
		switch {
		case step.Refresh:
			if err := p.refreshOrchCandidates(ctx, v, lease, step.All); err != nil {
				return nil, err
			}
		case step.Try:
			item, drop, err := p.tryLockInstance(ctx, step.Candidate, lockTimeout, filter)
			p.orchPool.Release(step.Candidate, drop)
			if err != nil || item != nil {
				return item, err
			}
		default:
			return nil, nil
		}
	}
}

// readOrchState reads, with one single-partition query, the instance
// document, the orchestrator-queue messages, the KV documents and, when
// executionID is not 0, that execution's history documents (unsorted,
// staged ones included), and, when msgID is not empty, document msgID
// whatever it became (a consumed message's tombstone), so that a read
// older than that message can be told (partitionState.holds).
func (p *Provider) readOrchState(ctx context.Context, instance string, executionID, after uint64, msgID string) (partitionState, error) {
	q := "SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending', 'orch_queue', 'kv')"
	var params []azcosmos.QueryParameter
	if msgID != "" {
		q += " OR c.id = @m"
		params = append(params, param("@m", msgID))
	}
	switch {
	case executionID > 0 && after > 0:
		q += " OR (c.type = 'history' AND c.executionId = @e AND c.eventId > @a)"
		params = append(params, param("@e", executionID), param("@a", after))
	case executionID > 0:
		q += " OR (c.type = 'history' AND c.executionId = @e)"
		params = append(params, param("@e", executionID))
	}
	raws, err := p.query(ctx, &instance, q, params, queryOpts{pageSize: -1})
	if err != nil {
		return partitionState{}, err
	}
	return parseState(raws)
}

// compatibleFirstRange applies a capability filter the way duroxide's
// phase 1 does (SQLite's packed comparison): only the first range counts,
// and versions compare by major.minor.patch.
func compatibleFirstRange(filter *duroxide.DispatcherCapabilityFilter, v *pinnedVersion) bool {
	r := filter.SupportedDuroxideVersions[0]
	core := func(x duroxide.Version) duroxide.Version {
		return duroxide.Version{Major: x.Major, Minor: x.Minor, Patch: x.Patch}
	}
	pv := v.ToVersion()
	return pv.Compare(core(r.Min)) >= 0 && pv.Compare(core(r.Max)) <= 0
}

// capabilityScope names the fetches of a capability filter, for the
// candidate pool's skips: an instance one filter excludes is skipped by the
// fetches of that filter only.
func capabilityScope(filter *duroxide.DispatcherCapabilityFilter) string {
	if filter == nil {
		return ""
	}
	return "filter " + fmt.Sprint(filter.SupportedDuroxideVersions)
}

// startOf returns the orchestration name and version of the first
// StartOrchestration or ContinueAsNew message.
func startOf(items []duroxide.WorkItem) (name string, version *string, ok bool) {
	for _, it := range items {
		switch k := it.Kind.(type) {
		case duroxide.StartOrchestrationItem:
			return k.Orchestration, k.Version, true
		case duroxide.ContinueAsNewItem:
			return k.Orchestration, k.Version, true
		}
	}
	return "", nil, false
}

func allQueueMessages(items []duroxide.WorkItem) bool {
	for _, it := range items {
		if _, ok := it.Kind.(duroxide.QueueMessageItem); !ok {
			return false
		}
	}
	return true
}

// tryLockInstance tries to lock candidate c's instance and build its turn;
// it returns nil, and no error, when the instance is not available, with
// drop telling whether the pool should forget the candidate (nothing of it
// is left to lock). When this process holds the instance's state, the lock
// batch built from it is the whole fetch (lockHeldTurn); otherwise, or
// when that batch is refused, the instance's partition is read first.
func (p *Provider) tryLockInstance(ctx context.Context, c candidates.Entry, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (item *duroxide.OrchestrationItem, drop bool, err error) {
	item, drop, tried, err := p.lockHeldTurn(ctx, c, lockTimeout, filter)
	if tried {
		return item, drop, err
	}
	instance := c.Instance
	execHint := max(p.orchPool.Exec(instance), duroxide.InitialExecutionID)
	held, heldRID, heldExec, haveHeld := p.held.Peek(instance)
	if !haveHeld || heldExec != execHint {
		held, haveHeld = nil, false
	}
	p.traceFetch(fetchtrace.OrchStateQuery)
	st, err := p.readOrchState(ctx, instance, execHint, uint64(len(held)), c.ID)
	if err != nil {
		return nil, false, err
	}
	if c.ID != "" && !st.holds(c.ID) {
		// The message that made this a candidate is not in the read:
		// gone (a deletion, an expired tombstone), or the read came from
		// a replica behind its write (no session token: a client
		// without SessionTokenPolicy, a Consistent Prefix or Eventual
		// account). The primary tells: when the message is there, the
		// read knows nothing newer than it and decides nothing (the
		// candidate stays, and the primary's answer brought this
		// process's session up to it for the next try).
		var m docHeader
		_, found, err := p.readDocPrimary(ctx, instance, c.ID, &m)
		if err != nil {
			return nil, false, err
		}
		if found {
			p.traceFetch(fetchtrace.OrchSkipStaleRead)
			return nil, false, nil
		}
	}
	now := p.nowMs()
	if st.inst != nil && st.inst.locked(now) {
		p.traceFetch(fetchtrace.OrchSkipLocked)
		p.orchPool.Lock(instance, st.inst.LockedUntil)
		return nil, false, nil
	}
	var visible []*queueDoc
	for _, m := range st.msgs {
		if m.VisibleAt <= now && m.LockedUntil <= now {
			visible = append(visible, m)
		}
	}
	if len(visible) == 0 {
		p.traceFetch(fetchtrace.OrchSkipNoVisible)
		return nil, true, nil
	}
	rest := len(visible) > maxMessagesPerTurn
	if rest {
		visible = visible[:maxMessagesPerTurn]
	}
	items := p.decodeTurnMessages(instance, visible)
	hasContext := st.inst.hasContext()
	startName, startVersion, hasStart := startOf(items)
	if !hasContext && !hasStart {
		if allQueueMessages(items) {
			p.dropOrphanQueueMessages(ctx, instance, visible)
			return nil, !rest, nil
		}
		p.traceFetch(fetchtrace.OrchSkipNotReady)
		p.orchPool.Skip(instance, now+notReadySkipMs, "")
		return nil, false, nil
	}
	if filter != nil && hasContext && st.inst.PinnedDuroxideVersion != nil && !compatibleFirstRange(filter, st.inst.PinnedDuroxideVersion) {
		p.traceFetch(fetchtrace.OrchSkipFiltered)
		p.orchPool.Skip(instance, now+notReadySkipMs, capabilityScope(filter))
		return nil, false, nil
	}

	lockID := newLockID()
	lockedUntil := now + lockTimeout.Milliseconds()
	var doc instanceDoc
	var ops []batchOp
	if st.inst == nil {
		var op batchOp
		if doc, op, err = pendingLockedDoc(instance, startName, startVersion, duroxide.StartParent(items), lockID, lockedUntil, now); err != nil {
			return nil, false, err
		}
		ops = append(ops, op)
	} else {
		doc = *st.inst
		doc.LockToken, doc.LockedUntil = strp(lockID), lockedUntil
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		ops = append(ops, patchOp(instanceDocID, po, st.inst.ETag))
	}
	attempt := int64(0)
	for _, m := range visible {
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		po.AppendIncrement("/attemptCount", 1)
		ops = append(ops, patchOp(m.ID, po, ""))
		attempt = max(attempt, m.AttemptCount+1)
	}
	p.traceFetch(fetchtrace.OrchLockBatch)
	// A created instance document comes back with its _rid, which the
	// history held after the turn is tied to.
	results, err := p.runBatch(ctx, instance, ops, write, st.inst == nil)
	switch {
	case err == nil:
		doc.ETag = string(results[0].ETag)
		if created, derr := decodeInstanceDoc(results[0].ResourceBody); st.inst == nil && derr == nil {
			doc.RID = created.RID
		}
	case cosmos.IsAmbiguous(err):
		// The lock batch may have committed: it did if the instance
		// document now carries this lock. If it did not, the candidate
		// stays in the pool, to be tried again at once.
		etag, o, rerr := p.readBackOrchLock(ctx, instance, lockID)
		p.logLockReadBack("orchestration lock", instance, instanceDocID, o, lockedUntil, err, rerr)
		if o != lockApplied {
			p.traceFetch(fetchtrace.OrchSkipLockLost)
			return nil, false, nil
		}
		doc.ETag = etag
	default:
		if bf, ok := asBatchFailure(err); ok {
			p.traceFetch(fetchtrace.OrchSkipLockLost)
			if bf.Index == 0 {
				// The instance document changed since it was read:
				// another process locked it (or acked a turn). Its lock
				// holds for a while, or until a candidate query says
				// otherwise.
				p.orchPool.Lock(instance, now+lockTimeout.Milliseconds())
			}
			return nil, false, nil
		}
		return nil, false, err
	}
	item, err = p.finishTurn(ctx, lockedTurn{
		instance: instance, lockID: lockID, lockedUntil: lockedUntil, doc: doc, msgs: visible, items: items, attempt: attempt,
		kv: st.kv, hasContext: hasContext, startName: startName, startVersion: startVersion,
		execHint: execHint, held: held, heldRID: heldRID, history: st.history,
	}, now)
	return item, !rest && item != nil, err
}

// readBackOrchLock reads instance's document after a lock batch (lock
// lockID) whose answer was lost (1 point read), and tells whether the
// batch landed (the batch is transactional: the document carrying the
// lock means its messages carry it too), with the document's ETag when it
// did.
func (p *Provider) readBackOrchLock(ctx context.Context, instance, lockID string) (string, lockOutcome, error) {
	var cur instanceDoc
	etag, found, err := p.readDocPrimary(ctx, instance, instanceDocID, &cur)
	switch {
	case err != nil:
		return "", lockUnknown, err
	case found && cur.LockToken != nil && *cur.LockToken == lockID:
		return etag, lockApplied, nil
	case found && cur.locked(p.nowMs()):
		return "", lockTaken, nil
	}
	return "", lockNotApplied, nil
}

// pendingLockedDoc is the pending instance document a fetch creates, locked,
// for an instance that has none, and its create operation. A
// sub-orchestration's start names its parent (parent), so that a pending
// child is refused by DeleteInstance like a running one and found with its
// parent's tree.
func pendingLockedDoc(instance, startName string, startVersion, parent *string, lockID string, lockedUntil, now int64) (instanceDoc, batchOp, error) {
	doc := instanceDoc{
		ID: instanceDocID, InstanceID: instance, Type: typeInstancePending, DispatchSlot: int(DispatchSlot(instance)),
		OrchestrationName: startName, OrchestrationVersion: startVersion, ParentInstanceID: parent,
		LockToken: strp(lockID), LockedUntil: lockedUntil, CreatedAt: now, UpdatedAt: now,
	}
	body, err := json.Marshal(doc)
	return doc, createOp(instanceDocID, body), err
}

// decodeTurnMessages decodes the work items of a turn's messages; an
// undecodable one is logged and left out (it is consumed with the turn).
func (p *Provider) decodeTurnMessages(instance string, msgs []*queueDoc) []duroxide.WorkItem {
	items := make([]duroxide.WorkItem, 0, len(msgs))
	for _, m := range msgs {
		w, err := decodeWorkItem(m.WorkItem)
		if err != nil {
			p.log.Warn("undecodable orchestrator-queue message; it is consumed with the turn", zap.String("instance", instance), zap.String("id", m.ID), zap.Error(err))
			continue
		}
		items = append(items, w)
	}
	return items
}

// lockedTurn is an instance this fetch locked, with what its turn is
// built from.
type lockedTurn struct {
	instance    string
	lockID      string
	lockedUntil int64
	// doc is the instance document as locked, with the lock batch's ETag.
	doc   instanceDoc
	msgs  []*queueDoc // the locked messages, oldest first
	items []duroxide.WorkItem
	// attempt is the turn's attempt count (the highest of the messages').
	attempt      int64
	kv           kvState
	hasContext   bool
	startName    string
	startVersion *string
	// execHint is the execution whose history was read with the state
	// (history), held the events held for it (nil: none), heldRID the
	// document they belong to.
	execHint uint64
	held     []duroxide.Event
	heldRID  string
	history  []historyDoc
}

// finishTurn builds the turn of an instance this fetch locked and records
// the lock. It returns nil, and no error, when the lock batch's answer was
// lost and it did not land; a failure after the lock was taken releases it
// before the error is returned (the contract: an error means no lock is
// held).
func (p *Provider) finishTurn(ctx context.Context, t lockedTurn, now int64) (*duroxide.OrchestrationItem, error) {
	instance, doc := t.instance, t.doc
	ids := make([]string, len(t.msgs))
	for i, m := range t.msgs {
		ids[i] = m.ID
	}
	p.orchPool.Lock(instance, t.lockedUntil)
	p.orchPool.Unskip(instance)
	for _, id := range ids {
		p.orchPool.LockedMessage(instance, id, t.lockedUntil)
	}
	p.heldStates.Locked(instance, ids)
	token := orchLockToken(instance, t.lockID)

	item := &duroxide.OrchestrationItem{
		Instance: instance, Messages: t.items, LockToken: token,
		AttemptCount: uint32(min(t.attempt, int64(^uint32(0)))),
		KVSnapshot:   kvSnapshot(t.kv.store),
	}
	if t.hasContext {
		item.OrchestrationName = doc.OrchestrationName
		item.Version = unknownVersion
		if doc.OrchestrationVersion != nil {
			item.Version = *doc.OrchestrationVersion
		}
		item.ExecutionID = doc.CurrentExecutionID
		p.orchPool.SetExec(instance, doc.CurrentExecutionID)
		held := t.held
		if held != nil && doc.RID != t.heldRID {
			held = nil // another document: the instance was deleted and started again
		}
		history, herr := p.turnHistory(ctx, instance, &doc, t.execHint, held, t.history)
		switch {
		case herr == nil:
			item.History = history
			if item.OrchestrationName == "" {
				for _, ev := range history {
					if s, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
						item.OrchestrationName, item.Version = s.Name, s.Version
						break
					}
				}
			}
		case isDecodeError(herr):
			msg := "Failed to deserialize history: " + herr.Error()
			p.log.Warn("history deserialization failed; returning the item with history_error", zap.String("instance", instance), zap.Error(herr))
			item.HistoryError = &msg
			item.KVSnapshot = map[string]duroxide.KvEntry{}
		default:
			// Contract: an error means no lock is held.
			p.releaseAfterFailedFetch(instance, t.lockID, ids)
			return nil, herr
		}
	} else {
		item.OrchestrationName = t.startName
		item.Version = unknownVersion
		if t.startVersion != nil {
			item.Version = *t.startVersion
		}
		item.ExecutionID = duroxide.InitialExecutionID
	}
	if p.nowMs() >= t.lockedUntil {
		// The lock expired while the turn was read: never hand it out.
		p.traceFetch(fetchtrace.OrchSkipLockLost)
		p.releaseAfterFailedFetch(instance, t.lockID, ids)
		return nil, nil
	}
	p.locks.PutOrch(token, &orchLock{
		instance: instance, lockID: t.lockID, doc: doc, messageIDs: ids,
		kv: t.kv, lockedUntil: t.lockedUntil,
		oldestEnqueuedAt: t.msgs[0].EnqueuedAt, oldestSeq: t.msgs[0].Seq,
	}, now)
	p.traceFetch(fetchtrace.OrchFound)
	return item, nil
}

// dropOrphanQueueMessages deletes QueueMessage items of an instance that was
// never started: duroxide's contract drops them, with a warning, instead of
// returning them or leaving them queued. Best effort: a failure leaves them
// for the next fetch.
func (p *Provider) dropOrphanQueueMessages(ctx context.Context, instance string, msgs []*queueDoc) {
	p.log.Warn("dropping queue messages enqueued before the orchestration started", zap.String("instance", instance), zap.Int("count", len(msgs)))
	var ops []batchOp
	for _, m := range msgs {
		ops = append(ops, deleteOp(m.ID, m.ETag))
	}
	if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err != nil {
		p.log.Debug("dropping orphan queue messages failed", zap.String("instance", instance), zap.Error(err))
	}
}

// releaseAfterFailedFetch releases a lock a fetch took but cannot return,
// without counting the attempt. Best effort, with its own deadline: if it
// fails, the lock expires.
func (p *Provider) releaseAfterFailedFetch(instance, lockID string, messageIDs []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.releaseOrchLock(ctx, instance, lockID, messageIDs, 0, true); err != nil {
		p.log.Debug("releasing the lock of a failed fetch failed; it will expire", zap.String("instance", instance), zap.Error(err))
	}
	p.orchPool.Unlock(instance)
}

// Fetch of an orchestration this process holds the state of: the lock
// batch alone, built from what this process last wrote to the instance.

// orchMessageLockCondition is the filter predicate a held message's lock
// patch carries: the document is still an orchestrator-queue message (not
// the tombstone an ack left), visible and unlocked at nowMs.
func orchMessageLockCondition(nowMs int64) string {
	n := strconv.FormatInt(nowMs, 10)
	return "FROM c WHERE c.type = '" + typeOrchQueue + "' AND c.visibleAt <= " + n + " AND c.lockedUntil <= " + n
}

// lockHeldTurn locks instance's turn with one request when this process
// holds the instance's state (held.States: it started the instance, or
// acked its last turn, and wrote the messages to take since) and, for an
// instance with an execution, its whole history (held.Histories). The
// request is a transactional batch, with content responses, that
//
//   - patches the lock onto the instance document, If-Match on the held
//     ETag (any write by another process since fails it),
//   - reads the KV tables' roots that exist (an instance whose tables
//     continue in pages is not fetched this way), and
//   - locks each held visible message with a filter predicate that it is
//     still a visible, unlocked orchestrator-queue message,
//
// and its responses are the documents the turn is built from. For an
// instance this process wrote a start to and knows no document of, the
// batch creates the pending instance document instead (refused when one
// exists). tried is
// false, with nothing written, when this process does not hold what the
// batch needs, and when the service refused the batch (the held state is
// then forgotten): the caller reads the partition instead. A batch whose
// answer was lost is read back (1 point read of the instance document):
// a lock that landed is released (1 batch), and tried is false then too;
// only when the read-back fails as well does the fetch give the candidate
// up for this attempt (tried, with nothing returned). The messages
// are those this process wrote and those its candidate queries and the
// change feed showed; one it has not seen yet waits for a later turn.
func (p *Provider) lockHeldTurn(ctx context.Context, c candidates.Entry, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (item *duroxide.OrchestrationItem, drop, tried bool, err error) {
	instance := c.Instance
	now := p.nowMs()
	st, msgs, ok := p.heldStates.Turn(c, now)
	if !ok || st.KVPaged {
		return nil, false, false, nil
	}
	var held []duroxide.Event
	if st.Context {
		if filter != nil && st.Pinned != nil && !compatibleFirstRange(filter, st.Pinned) {
			return nil, false, false, nil // the partition read records the skip
		}
		h, rid, exec, ok := p.held.Peek(instance)
		if !ok || rid == "" || rid != st.RID || exec != st.Exec || uint64(len(h)) != st.Watermark {
			return nil, false, false, nil
		}
		held = h
	}
	start, hasStart := heldStart(msgs)
	if !st.Context && !hasStart {
		return nil, false, false, nil
	}
	msgs = msgs[:min(len(msgs), maxMessagesPerTurn)]

	lockID := newLockID()
	lockedUntil := now + lockTimeout.Milliseconds()
	var first0 *batchOp
	if st.Absent {
		_, op, err := pendingLockedDoc(instance, start.StartName, start.StartVersion, start.StartParent, lockID, lockedUntil, now)
		if err != nil {
			return nil, false, true, err
		}
		first0 = &op
	}
	ops, first, ids := heldLockOps(st, first0, msgs, lockID, lockedUntil, now)
	if !p.heldStates.Claim(instance, st.ETag) {
		// Another lock is being built from the held state (an eager
		// turn, or another fetch): this one would be refused.
		return nil, false, false, nil
	}
	p.traceFetch(fetchtrace.OrchHeldLockBatch)
	results, err := p.runBatch(ctx, instance, ops, write, true)
	if err != nil {
		p.heldStates.Drop(instance)
		if _, ok := asBatchFailure(err); ok {
			p.traceFetch(fetchtrace.OrchHeldRefused)
			return nil, false, false, nil
		}
		if cosmos.IsAmbiguous(err) {
			// The lock may have landed: read it back. The turn cannot be
			// built without the batch's answer, so a lock that landed is
			// released (conditioned on this lock, so nothing else is
			// touched); then, or when it did not land, the fetch goes on
			// by reading the partition, at once.
			_, o, rerr := p.readBackOrchLock(ctx, instance, lockID)
			p.logLockReadBack("orchestration lock (held state)", instance, instanceDocID, o, lockedUntil, err, rerr)
			switch o {
			case lockApplied:
				p.releaseAfterFailedFetch(instance, lockID, ids)
				return nil, false, false, nil
			case lockNotApplied, lockTaken:
				return nil, false, false, nil
			}
			p.releaseAfterFailedFetch(instance, lockID, ids)
			return nil, false, true, nil
		}
		return nil, false, true, err
	}

	t := lockedTurn{instance: instance, lockID: lockID, lockedUntil: lockedUntil, hasContext: st.Context,
		execHint: st.Exec, held: held, heldRID: st.RID}
	if parsed := p.parseHeldLock(&t, results, first); parsed != nil {
		// The service's answer is not what was written: give the lock up.
		p.heldStates.Drop(instance)
		p.releaseAfterFailedFetch(instance, lockID, ids)
		return nil, false, true, parsed
	}
	if !t.hasContext {
		t.startName, t.startVersion, _ = startOf(t.items)
	}
	item, err = p.finishTurn(ctx, t, now)
	return item, item != nil, true, err
}

// heldLockOps are the operations of a held-state lock batch (see
// lockHeldTurn) under lockID until lockedUntil: the instance document's
// lock (a patch with If-Match on st.ETag, or create, the pending
// document's creation), the reads of the KV roots st names, from index 1,
// and the lock of each of msgs (a patch whose filter predicate requires a
// visible, unlocked orchestrator-queue message at nowMs), from index
// first; ids are msgs' ids.
func heldLockOps(st held.State, create *batchOp, msgs []held.Message, lockID string, lockedUntil, nowMs int64) (ops []batchOp, first int, ids []string) {
	if create != nil {
		ops = append(ops, *create)
	} else {
		var po azcosmos.PatchOperations
		po.AppendSet("/lockToken", lockID)
		po.AppendSet("/lockedUntil", lockedUntil)
		ops = append(ops, patchOp(instanceDocID, po, st.ETag))
	}
	if st.KVStore {
		ops = append(ops, readOp(kvStoreDocID))
	}
	if st.KVDelta {
		ops = append(ops, readOp(kvDeltaDocID))
	}
	first = len(ops)
	cond := orchMessageLockCondition(nowMs)
	ids = make([]string, len(msgs))
	for i, m := range msgs {
		var mo azcosmos.PatchOperations
		mo.SetCondition(cond)
		mo.AppendSet("/lockToken", lockID)
		mo.AppendSet("/lockedUntil", lockedUntil)
		mo.AppendIncrement("/attemptCount", 1)
		ops = append(ops, patchOp(m.ID, mo, ""))
		ids[i] = m.ID
	}
	return ops, first, ids
}

// parseHeldLock fills t from the answers of a held-state lock batch laid
// out as heldLockOps lays it out (results[0] the instance document,
// results[1:first] the KV roots, results[first:] the locked messages, in
// any order): the instance document with its new ETag, the KV roots, the
// messages oldest first, their items, and the turn's attempt count. An
// answer that is not what was written (a KV table that continues in
// pages) is an error.
func (p *Provider) parseHeldLock(t *lockedTurn, results []azcosmos.TransactionalBatchResult, first int) error {
	doc, err := decodeInstanceDoc(results[0].ResourceBody)
	if err != nil {
		return err
	}
	t.doc = *doc
	t.doc.ETag = string(results[0].ETag)
	for _, r := range results[1:first] {
		d := &kvDoc{}
		if d.ETag, err = decodeDoc(r.ResourceBody, d); err != nil {
			return err
		}
		if len(d.Pages) > 0 {
			return errKVPageMissing // not as held: the partition is read again
		}
		if d.ID == kvStoreDocID {
			t.kv.store.root = d
		} else {
			t.kv.delta.root = d
		}
	}
	for _, r := range results[first:] {
		m := &queueDoc{}
		if m.ETag, err = decodeDoc(r.ResourceBody, m); err != nil {
			return err
		}
		t.msgs = append(t.msgs, m)
		t.attempt = max(t.attempt, m.AttemptCount) // already counted by the batch
	}
	sort.Slice(t.msgs, func(i, j int) bool { return t.msgs[i].before(t.msgs[j]) })
	t.items = p.decodeTurnMessages(t.instance, t.msgs)
	return nil
}

// heldStart returns the first start message of msgs.
func heldStart(msgs []held.Message) (held.Message, bool) {
	for _, m := range msgs {
		if m.Start {
			return m, true
		}
	}
	return held.Message{}, false
}

// DefaultHeldHistoryEvents is the default of Config.HeldHistoryEvents.
const DefaultHeldHistoryEvents = 200_000

// DefaultHeldInstanceStates is the default of Config.HeldInstanceStates.
const DefaultHeldInstanceStates = 10_000

// heldStateOf is the held state of instance document d as written with
// etag, with its KV tables' roots as written (nil: absent).
func heldStateOf(d *instanceDoc, etag string, kvStore, kvDelta *kvDoc) held.State {
	return held.State{ETag: etag, RID: d.RID, Context: d.hasContext(), Exec: d.CurrentExecutionID,
		Watermark: d.HistoryWatermark, Pinned: d.PinnedDuroxideVersion, KVStore: kvStore != nil, KVDelta: kvDelta != nil,
		KVPaged: (kvStore != nil && len(kvStore.Pages) > 0) || (kvDelta != nil && len(kvDelta.Pages) > 0)}
}

// Ack of an orchestration turn: AckOrchestrationItem validates the turn,
// plans its writes and commits them in one transactional batch.

// ackInput is an AckOrchestrationItem call, validated.
type ackInput struct {
	instance     string
	lockID       string
	executionID  uint64
	events       []duroxide.Event
	eventData    []string
	workerItems  []duroxide.ActivityExecuteItem
	orchItems    []duroxide.WorkItem
	metadata     duroxide.ExecutionMetadata
	cancelled    []duroxide.ScheduledActivityIdentifier
	cancelledSet map[[2]uint64]bool
}

// validateAck checks an ack's arguments before anything is read or written.
func validateAck(op, instance string, executionID uint64, delta []duroxide.Event, workerItems, orchItems []duroxide.WorkItem, md duroxide.ExecutionMetadata, cancelled []duroxide.ScheduledActivityIdentifier) (*ackInput, error) {
	in := &ackInput{instance: instance, executionID: executionID, events: delta, metadata: md, orchItems: orchItems, cancelled: cancelled, cancelledSet: map[[2]uint64]bool{}}
	if executionID == 0 {
		return nil, permanent(op, "execution id must be set by the runtime (got 0)")
	}
	seen := map[uint64]bool{}
	for _, ev := range delta {
		if ev.EventID == 0 {
			return nil, permanent(op, "Failed to append history: event_id must be set by runtime")
		}
		if seen[ev.EventID] {
			return nil, permanent(op, fmt.Sprintf("Failed to append history: duplicate event_id %d in the history delta", ev.EventID))
		}
		seen[ev.EventID] = true
		data, err := encodeEvent(ev)
		if err != nil {
			return nil, permanent(op, err.Error())
		}
		in.eventData = append(in.eventData, data)
	}
	for _, w := range workerItems {
		act, ok := w.Kind.(duroxide.ActivityExecuteItem)
		if !ok {
			return nil, permanent(op, fmt.Sprintf("worker item of type %q is not an ActivityExecute", w.Type()))
		}
		if err := validateInstanceID(op, act.Instance); err != nil {
			return nil, err
		}
		in.workerItems = append(in.workerItems, act)
	}
	for _, o := range orchItems {
		if err := checkOrchestratorItem(o); err != nil {
			return nil, permanent(op, err.Error())
		}
		if err := validateInstanceID(op, o.Instance()); err != nil {
			return nil, err
		}
	}
	for _, c := range cancelled {
		if c.Instance == instance {
			in.cancelledSet[[2]uint64{c.ExecutionID, c.ActivityID}] = true
		}
	}
	return in, nil
}

// checkOrchestratorItem rejects what cannot go on an orchestrator queue.
func checkOrchestratorItem(item duroxide.WorkItem) error {
	if item.Kind == nil {
		return fmt.Errorf("work item has no kind")
	}
	if item.IsForWorker() {
		return errors.New("invalid work item type: ActivityExecute belongs on the worker queue")
	}
	return nil
}

// AckOrchestrationItem commits a turn atomically (DESIGN.md §3.3, duroxide's contract). Requests: 1, a
// transactional batch in the instance's partition that
//
//   - replaces the instance document with If-Match on the ETag of the lock
//     (which validates the lock and releases it: if anything else wrote the
//     document since, the batch fails and nothing is written), with the
//     execution's status and output mirrored on it,
//   - creates or updates the execution document (status, output, pinned
//     version, history watermark),
//   - consumes the messages the fetch tagged (each becomes a tombstone, so
//     that a late repeated create of it cannot bring it back),
//   - upserts the history delta's documents (append-only: existing history
//     is never read),
//   - upserts the KV documents when KV events or the end of the execution
//     changed them (a table's root, and its pages when it outgrew the
//     root),
//   - creates the worker and orchestrator queue documents of this instance
//     (timers invisible until they fire), and
//   - creates outbox intents for the documents of other instances.
//
// The intents are then delivered at once (1 request per document, plus 1
// to delete the intent); a failed delivery is left to the reconciler.
// Cancelled activities are removed afterwards, best effort, a 404 ignored
// (DESIGN.md §3.12); an activity both scheduled and
// cancelled in the turn is never enqueued.
//
// A turn larger than one batch (100 operations, 2 MB) still commits
// atomically: its overflow history is staged first with idempotent
// upserts, invisible above the execution's history watermark, and the
// final batch publishes the watermark; overflow queue documents travel in
// outbox intents of the final batch; KV pages that do not fit are staged
// under new ids, published by the KV roots of the final batch, and the
// pages those no longer name are deleted after the commit (1 request per
// 100, none for KV tables that fit their roots). An event id at or below the watermark
// is a duplicate, a permanent error with nothing written, as is an invalid
// or expired lock token or a document too large for an item. When the
// batch's answer is lost, the instance document (or, when another turn was
// acked since, the tombstone of a consumed message) tells whether it
// committed. Of two acks with one token, only the first succeeds.
//
// With eager dispatch (DESIGN.md §17), the worker-queue messages of the
// final batch that waiting work-item fetches of this process accept (their
// tag filters; no session item) are created locked for them and handed
// over once the batch committed: no request added.
func (p *Provider) AckOrchestrationItem(ctx context.Context, lockToken string, executionID uint64, historyDelta []duroxide.Event, workerItems, orchestratorItems []duroxide.WorkItem, metadata duroxide.ExecutionMetadata, cancelledActivities []duroxide.ScheduledActivityIdentifier) error {
	ctx = cosmos.WithCall(ctx, "ack_orchestration_item")
	const op = "ack_orchestration_item"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	in, err := validateAck(op, instance, executionID, historyDelta, workerItems, orchestratorItems, metadata, cancelledActivities)
	if err != nil {
		return err
	}
	in.lockID = lockID

	now := p.nowMs()
	l, cached := p.locks.Orch(lockToken)
	lock := &l
	if !cached || !l.doc.lockedBy(lockID, now) {
		if lock, err = p.loadOrchLock(ctx, instance, lockID); err != nil {
			return mapError(op, err)
		}
		if lock == nil {
			p.orchLockLost(lockToken, instance)
			return permanent(op, "Invalid lock token")
		}
	}
	var plan turnPlan
	execMissing := false
	// staged remembers the staged batches this ack has written, so that a
	// retry of the final batch (its instance document changed under the
	// lock, typically by the runtime's lock renewal while a large turn
	// was staging) does not write them again (stagedBatches).
	staged := stagedBatches{}
	// planned is the lock the plan was made from; reuse keeps the plan for
	// the next attempt when the reloaded lock differs from it only by a
	// renewal (onlyRenewed).
	var planned *orchLock
	var execIndex int
	reuse := false
	// eager is the first attempt's eager part (activities created locked
	// for this process's waiting work-item fetches), settled before any
	// return: delivered when the batch committed, failed otherwise.
	var eager *eagerWork
	defer func() { eager.failed(true) }()
	for attempt := 0; ; attempt++ {
		now = p.nowMs()
		if !lock.doc.lockedBy(lockID, now) {
			p.orchLockLost(lockToken, instance)
			return permanent(op, "Instance lock expired")
		}
		if !reuse {
			plan, execIndex, err = p.planAck(in, lock, now, execMissing)
			if err != nil {
				return err
			}
			planned = lock
		}
		reuse = false
		send := plan
		if attempt == 0 {
			if eager = p.reserveEagerWork(&plan, now); eager != nil {
				send.final = eager.final
			}
		}
		var final []azcosmos.TransactionalBatchResult
		final, err = p.commitTurn(ctx, instance, send, staged)
		if err == nil {
			// The instance's next fetch can be its lock batch alone.
			plan.held.ETag = string(final[0].ETag)
			p.heldStates.Hold(instance, plan.held, false, nil)
			eager.committed(final)
			break
		}
		if !outcomeUnknown(ctx, err) {
			eager.failed(false) // refused: nothing was written; the next attempt is plain
		}
		p.log.Debug("ack: the turn's batches failed; checking the lock", zap.String("instance", instance), zap.Int("attempt", attempt), zap.Int("staged_batches", len(plan.staged)), zap.Error(err))
		if attempt >= 3 {
			return mapError(op, err)
		}
		if bf, ok := asBatchFailure(err); ok {
			switch {
			case bf.Index == 0 && (bf.Status == http.StatusPreconditionFailed || bf.Status == http.StatusNotFound):
				// The instance document changed since the lock was
				// taken (a renewal by another process, an append) or
				// is gone: read it again and retry if the lock holds.
			case bf.Index == execIndex && bf.Status == http.StatusNotFound:
				execMissing = true
				continue
			case bf.Status == http.StatusConflict:
				return permanent(op, fmt.Sprintf("a document of the turn already exists (%s): %v", bf.ID, bf))
			case bf.Status == http.StatusRequestEntityTooLarge || bf.Status == http.StatusBadRequest:
				return permanent(op, bf.Error())
			default:
				return mapError(op, err)
			}
		} else if cosmos.IsAmbiguous(err) {
			landed, rerr := p.turnLanded(ctx, instance, lockID, lock.messageIDs)
			if rerr != nil {
				return mapError(op, err)
			}
			if landed {
				eager.committed(nil)
				break // the lost answer was a success
			}
			eager.failed(false) // it did not land: the next attempt is plain
		} else {
			return mapError(op, err)
		}
		if lock, err = p.loadOrchLock(ctx, instance, lockID); err != nil {
			return mapError(op, err)
		}
		if lock == nil {
			p.orchLockLost(lockToken, instance)
			return permanent(op, "Instance lock expired or was taken by another dispatcher")
		}
		if !execMissing && onlyRenewed(planned, lock) {
			// The plan stands as it is (its staged batches, written,
			// are skipped); only the instance document's ETag moved.
			plan.final[0].ifMatch = lock.doc.ETag
			reuse = true
		}
	}
	p.locks.DropOrch(lockToken)
	p.held.Extend(instance, lock.doc.RID, executionID, executionID > lock.doc.CurrentExecutionID, lock.doc.HistoryWatermark, sortedByID(historyDelta))
	p.orchPool.SetExec(instance, executionID)
	for _, e := range plan.queued {
		if !eager.isEager(e.ID) {
			p.hint(e)
		}
	}
	p.orchPool.Unlock(instance)
	if statuswatch.Changing(metadata, historyDelta) {
		p.statusWatches.Changed(instance)
	}
	for _, intent := range plan.intents {
		if err := p.deliverIntent(ctx, intent, quickRetrier.withClosed(p.stop)); err != nil {
			p.log.Info("outbox delivery deferred to the reconciler", zap.String("intent", intent.ID), zap.String("instance", instance), zap.Error(err))
		}
	}
	p.removeCancelledActivities(ctx, in)
	p.deleteKVPages(ctx, instance, plan.kvRetired)
	return nil
}

// onlyRenewed reports whether lock b is lock a after renewals alone: the
// same instance document but for its lock expiry and ETag, the same tagged
// messages and KV state. A turn planned from a then commits the same
// documents from b, under b's ETag.
func onlyRenewed(a, b *orchLock) bool {
	if a == nil || b == nil || !slices.Equal(a.messageIDs, b.messageIDs) || !reflect.DeepEqual(a.kv, b.kv) {
		return false
	}
	da, db := a.doc, b.doc
	da.LockedUntil, db.LockedUntil, da.ETag, db.ETag = 0, 0, "", ""
	ja, err1 := json.Marshal(da)
	jb, err2 := json.Marshal(db)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// sortedByID returns events in event id order (a copy when they are not).
func sortedByID(events []duroxide.Event) []duroxide.Event {
	if slices.IsSortedFunc(events, func(a, b duroxide.Event) int { return cmp.Compare(a.EventID, b.EventID) }) {
		return events
	}
	out := slices.Clone(events)
	slices.SortFunc(out, func(a, b duroxide.Event) int { return cmp.Compare(a.EventID, b.EventID) })
	return out
}

// orchLockLost forgets the orchestration lock lockToken of instance, which
// an ack found no longer held (expired, taken, or acked by another
// process): the lock cache drops it and the candidate pool no longer skips
// the instance for it, so that a copy of the instance document in the
// change feed, or the next fetch, is not held back until the lost lock's
// expiry.
func (p *Provider) orchLockLost(lockToken, instance string) {
	p.locks.DropOrch(lockToken)
	p.orchPool.Unlock(instance)
}

// turnLanded tells whether the final batch of the turn acked under lockID,
// whose answer was lost, committed (see turnState). Requests: 1 point
// read, 2 when another turn was acked since.
func (p *Provider) turnLanded(ctx context.Context, instance, lockID string, messageIDs []string) (bool, error) {
	first := ""
	if len(messageIDs) > 0 {
		first = messageIDs[0]
	}
	landed, _, err := p.turnState(ctx, instance, lockID, first)
	return landed, err
}

// turnState tells what became of the turn acked under lockID that consumed
// firstMessage first: landed when its final batch committed (the instance
// document names lockID as the last lock acked or, when another turn has
// been acked since, firstMessage is the tombstone lockID left); held when
// it did not, and lockID still holds the instance's lock, so that it may
// still commit. Neither means it never will: its lock was taken or
// released, which changed the ETag its final batch is conditioned on.
// Requests: 1 point read, 2 when the instance does not name lockID.
func (p *Provider) turnState(ctx context.Context, instance, lockID, firstMessage string) (landed, held bool, err error) {
	var cur instanceDoc
	_, found, err := p.readDocPrimary(ctx, instance, instanceDocID, &cur)
	switch {
	case err != nil:
		return false, false, err
	case found && cur.LastAckedLock == lockID:
		return true, false, nil
	}
	held = found && cur.LockToken != nil && *cur.LockToken == lockID
	if firstMessage == "" {
		return false, held, nil
	}
	var m queueDoc
	_, mfound, err := p.readDocPrimary(ctx, instance, firstMessage, &m)
	if err != nil {
		return false, held, err
	}
	return mfound && m.Type == typeConsumed && m.ConsumedBy == lockID, held, nil
}

// planAck builds the batches of a turn from the lock's view of the instance.
// It returns the plan and the index of the execution document's operation.
func (p *Provider) planAck(in *ackInput, lock *orchLock, nowMs int64, execMissing bool) (turnPlan, int, error) {
	const op = "ack_orchestration_item"
	doc := lock.doc
	md := in.metadata
	current := doc.CurrentExecutionID
	if in.executionID < current {
		return turnPlan{}, 0, permanent(op, fmt.Sprintf("execution %d is older than the instance's current execution %d", in.executionID, current))
	}
	newExec := in.executionID > current
	watermark := doc.HistoryWatermark
	if newExec {
		watermark = 0
	}
	maxEvent := watermark
	for _, ev := range in.events {
		if ev.EventID <= watermark {
			return turnPlan{}, 0, permanent(op, fmt.Sprintf("Failed to append history: duplicate event_id %d for instance '%s' execution %d (history holds events up to %d)", ev.EventID, in.instance, in.executionID, watermark))
		}
		maxEvent = max(maxEvent, ev.EventID)
	}

	// The instance document: metadata, current execution, custom status,
	// lock released.
	doc.LockToken, doc.LockedUntil = nil, 0
	doc.LastAckedLock = in.lockID
	doc.UpdatedAt = nowMs
	if md.OrchestrationName != nil && md.OrchestrationVersion != nil {
		if doc.Type != typeInstance {
			doc.Type = typeInstance
			doc.ParentInstanceID = md.ParentInstanceID
			doc.PendingReason = ""
		}
		doc.OrchestrationName = *md.OrchestrationName
		doc.OrchestrationVersion = md.OrchestrationVersion
	}
	if newExec {
		doc.CurrentExecutionID = in.executionID
		doc.PinnedDuroxideVersion = docs.PinnedFrom(md.PinnedDuroxideVersion)
		doc.Status, doc.CompletedAt = duroxide.StatusRunning, nil
	} else if md.PinnedDuroxideVersion != nil {
		doc.PinnedDuroxideVersion = docs.PinnedFrom(md.PinnedDuroxideVersion)
	}
	doc.HistoryWatermark = maxEvent
	if md.Status != nil {
		doc.Status, doc.CompletedAt = *md.Status, nil
		if *md.Status != duroxide.StatusRunning {
			doc.CompletedAt = &nowMs
		}
	}
	if doc.Type == typeInstance {
		for i := len(in.events) - 1; i >= 0; i-- {
			if cs, ok := in.events[i].Kind.(duroxide.CustomStatusUpdated); ok {
				doc.CustomStatus = cs.Status
				doc.CustomStatusVersion++
				break
			}
		}
	}
	// The execution's status and output after the batch, mirrored on the
	// instance document for GetInstanceInfo.
	execStatus, execOutput, execKnown := duroxide.StatusRunning, (*string)(nil), true
	switch {
	case md.Status != nil:
		execStatus, execOutput = *md.Status, md.Output
	case newExec || execMissing:
	case lock.doc.StatusExecutionID == in.executionID:
		execStatus, execOutput = lock.doc.Status, lock.doc.Output
	default:
		execKnown = false
	}
	doc.StatusExecutionID, doc.Output = statuswatch.Mirror(doc.Status, in.executionID, execStatus, execOutput, execKnown)
	body, err := json.Marshal(doc)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	fixed := []batchOp{replaceOp(instanceDocID, body, lock.doc.ETag)}

	// The execution document.
	execIndex := len(fixed)
	if newExec || execMissing {
		ed := executionDoc{
			ID: executionDocID(in.executionID), InstanceID: in.instance, Type: typeExecution, ExecutionID: in.executionID,
			Status: duroxide.StatusRunning, StartedAt: nowMs, Watermark: maxEvent, Pinned: docs.PinnedFrom(md.PinnedDuroxideVersion),
		}
		if !newExec {
			ed.Pinned = doc.PinnedDuroxideVersion
		}
		if md.Status != nil {
			ed.Status, ed.Output = *md.Status, md.Output
			if *md.Status != duroxide.StatusRunning {
				ed.CompletedAt = &nowMs
			}
		}
		b, err := json.Marshal(ed)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		if newExec {
			fixed = append(fixed, createOp(ed.ID, b))
		} else {
			fixed = append(fixed, upsertOp(ed.ID, b))
		}
	} else {
		var po azcosmos.PatchOperations
		po.AppendSet("/watermark", maxEvent)
		if md.Status != nil {
			po.AppendSet("/status", *md.Status)
			if md.Output != nil {
				po.AppendSet("/output", *md.Output)
			} else {
				po.AppendSet("/output", jsonNull)
			}
			if *md.Status != duroxide.StatusRunning {
				po.AppendSet("/completedAt", nowMs)
			} else {
				po.AppendSet("/completedAt", jsonNull)
			}
		}
		if md.PinnedDuroxideVersion != nil {
			po.AppendSet("/pinnedDuroxideVersion", docs.PinnedFrom(md.PinnedDuroxideVersion))
		}
		fixed = append(fixed, patchOp(executionDocID(in.executionID), po, ""))
	}

	for _, id := range lock.messageIDs {
		fixed = append(fixed, consumeOp(id, in.lockID, ""))
	}
	kv := applyKVEvents(lock.kv.store.entries(), lock.kv.delta.entries(), in.events, in.executionID, uint64(nowMs), isTerminalStatus(md.Status))
	kvw, err := planKVWrites(in.instance, in.lockID, lock.kv, kv, fixed)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	fixed = append(fixed, kvw.final...)

	// Queue documents.
	var queue []queueWrite
	for _, act := range in.workerItems {
		if act.Instance == in.instance && in.cancelledSet[[2]uint64{act.ExecutionID, act.ID}] {
			continue // scheduled and cancelled in the same turn
		}
		d, err := newWorkerDoc(act, nowMs)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		queue = append(queue, d)
	}
	for i, item := range in.orchItems {
		visibleAt := nowMs
		if t, ok := item.Kind.(duroxide.TimerFiredItem); ok {
			visibleAt = int64(min(t.FireAtMs, uint64(1<<62)))
		}
		d, err := newOrchDoc(item, ackQueueDocID(in.lockID, i), nowMs, visibleAt)
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		queue = append(queue, d)
	}

	// History documents.
	history := make([]batchOp, 0, len(in.events))
	for i, ev := range in.events {
		hb, err := json.Marshal(historyDoc{
			ID: historyDocID(in.executionID, ev.EventID), InstanceID: in.instance, Type: typeHistory,
			ExecutionID: in.executionID, EventID: ev.EventID, EventData: in.eventData[i],
		})
		if err != nil {
			return turnPlan{}, 0, permanent(op, err.Error())
		}
		history = append(history, upsertOp(historyDocID(in.executionID, ev.EventID), hb))
	}
	first := ""
	if len(lock.messageIDs) > 0 {
		first = lock.messageIDs[0]
	}
	plan, err := planTurn(in.instance, in.lockID, first, nowMs, fixed, queue, history)
	if err != nil {
		return turnPlan{}, 0, permanent(op, err.Error())
	}
	plan.staged = append(packBatches(kvw.staged), plan.staged...)
	plan.kvRetired = kvw.retired
	plan.held = heldStateOf(&doc, "", kvw.store, kvw.delta)
	return plan, execIndex, nil
}

// commitTurn writes the staged batches that done does not hold (and adds
// them to it), then the final one, whose results it returns.
func (p *Provider) commitTurn(ctx context.Context, instance string, plan turnPlan, done stagedBatches) ([]azcosmos.TransactionalBatchResult, error) {
	for _, ops := range plan.staged {
		key, skippable := stagedKey(ops)
		if skippable && done[key] {
			continue
		}
		if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err != nil {
			return nil, err
		}
		if skippable {
			done[key] = true
		}
	}
	return p.runBatch(ctx, instance, plan.final, write, false)
}

// removeCancelledActivities removes the worker-queue messages of the turn's
// cancelled activities, after the turn committed: a write to a message the
// worker already consumed would fail a batch (404 → 424), so they are not
// part of it (DESIGN.md §3.12). Each becomes a tombstone
// (queue documents, models.go), so that a late repeated create cannot bring the
// cancelled activity back; a message already gone (404) or already a
// tombstone (412) is left alone. Best effort. A worker holding the item
// learns of the cancellation when its lock renewal or ack fails.
func (p *Provider) removeCancelledActivities(ctx context.Context, in *ackInput) {
	for _, c := range in.cancelled {
		if c.Instance == in.instance && in.cancelledSet[[2]uint64{c.ExecutionID, c.ActivityID}] && scheduledInTurn(in, c) {
			continue // never enqueued
		}
		_, err := p.patchDoc(ctx, c.Instance, workerDocID(c.ExecutionID, c.ActivityID), cancelPatch(in.lockID), idempotentWrite)
		if err != nil && !cosmos.IsStatus(err, http.StatusNotFound) && !cosmos.IsStatus(err, http.StatusPreconditionFailed) {
			p.log.Debug("removing a cancelled activity failed", zap.String("instance", c.Instance), zap.Uint64("activity", c.ActivityID), zap.Error(err))
		}
	}
}

func scheduledInTurn(in *ackInput, c duroxide.ScheduledActivityIdentifier) bool {
	for _, a := range in.workerItems {
		if a.Instance == c.Instance && a.ExecutionID == c.ExecutionID && a.ID == c.ActivityID {
			return true
		}
	}
	return false
}

// deleteKVPages deletes KV pages no root names any more, after the turn
// that retired them committed: 1 transactional batch per 100 pages, and
// one delete per page when a batch fails (a page already gone). Best
// effort: a page left behind is retired again by the next turn that reads
// the partition.
func (p *Provider) deleteKVPages(ctx context.Context, instance string, ids []string) {
	for chunk := range slices.Chunk(ids, maxBatchOps) {
		ops := make([]batchOp, len(chunk))
		for i, id := range chunk {
			ops[i] = deleteOp(id, "")
		}
		if _, err := p.runBatch(ctx, instance, ops, idempotentWrite, false); err == nil {
			continue
		}
		for _, id := range chunk {
			if err := p.deleteDoc(ctx, instance, id, ""); err != nil && !cosmos.IsStatus(err, http.StatusNotFound) {
				p.log.Debug("deleting a retired KV page failed; the next turn retires it again", zap.String("instance", instance), zap.String("id", id), zap.Error(err))
			}
		}
	}
}

// Orchestration locks after fetch: RenewOrchestrationItemLock,
// AbandonOrchestrationItem and releasing a lock with its messages.

// loadOrchLock reads what an ack, renew or abandon needs when its lock is
// not in this process's cache (one single-partition query), and returns
// nil when lockID is not the instance's current lock.
//
// A read that does not show lockID may come from a replica behind the
// lock (another process took it: this process's session has not seen
// it): the instance document is then read at the primary, and when the
// lock is there the query is made again (the primary's answer brought
// this process's session token up to it, so the next read is as new), up
// to staleHistoryRereads times.
func (p *Provider) loadOrchLock(ctx context.Context, instance, lockID string) (*orchLock, error) {
	var st partitionState
	for try := 0; ; try++ {
		raws, err := p.query(ctx, &instance,
			"SELECT * FROM c WHERE c.type IN ('instance', 'instance_pending', 'kv') OR (c.type = 'orch_queue' AND c.lockToken = @l)",
			[]azcosmos.QueryParameter{param("@l", lockID)}, queryOpts{})
		if err != nil {
			return nil, err
		}
		if st, err = parseState(raws); err != nil {
			return nil, err
		}
		if st.inst != nil && st.inst.LockToken != nil && *st.inst.LockToken == lockID {
			break
		}
		if try == staleHistoryRereads {
			return nil, nil
		}
		if try == 0 {
			var cur instanceDoc
			_, found, err := p.readDocPrimary(ctx, instance, instanceDocID, &cur)
			if err != nil {
				return nil, err
			}
			if !found || cur.LockToken == nil || *cur.LockToken != lockID {
				return nil, nil
			}
			continue
		}
		if err := sleepCtx(ctx, staleHistoryDelay<<(try-1)); err != nil {
			return nil, err
		}
	}
	l := &orchLock{instance: instance, lockID: lockID, doc: *st.inst, kv: st.kv, lockedUntil: st.inst.LockedUntil}
	for _, m := range st.msgs {
		l.messageIDs = append(l.messageIDs, m.ID)
	}
	return l, nil
}

// lockCondition is the patch filter predicate that holds while lockID is
// the document's lock (and, with nowMs > 0, has not expired).
func lockCondition(lockID string, nowMs int64) string {
	c := "FROM c WHERE c.lockToken = '" + lockID + "'"
	if nowMs > 0 {
		c += " AND c.lockedUntil > " + strconv.FormatInt(nowMs, 10)
	}
	return c
}

// RenewOrchestrationItemLock extends the instance lock to now + extendFor.
// Requests: 1 (a transactional batch: a patch of the instance document
// conditioned by a filter predicate on the lock and its expiry, plus the
// tagged messages' expiry when this process took the lock). A lock that
// expired, was taken by another fetch, or was released is a permanent
// error.
func (p *Provider) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	ctx = cosmos.WithCall(ctx, "renew_orchestration_item_lock")
	const op = "renew_orchestration_item_lock"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	now := p.nowMs()
	until := now + extendFor.Milliseconds()
	var po azcosmos.PatchOperations
	po.SetCondition(lockCondition(lockID, now))
	po.AppendSet("/lockedUntil", until)
	ops := []batchOp{patchOp(instanceDocID, po, "")}
	if l, ok := p.locks.Orch(lockToken); ok {
		for _, id := range l.messageIDs {
			var mo azcosmos.PatchOperations
			mo.AppendSet("/lockedUntil", until)
			ops = append(ops, patchOp(id, mo, ""))
		}
	}
	results, err := p.runBatch(ctx, instance, ops, idempotentWrite, false)
	if bf, ok := asBatchFailure(err); ok && bf.Index == 0 {
		return permanent(op, "Lock token invalid, expired, or already acked")
	}
	if err != nil {
		return mapError(op, err)
	}
	p.locks.UpdateOrch(lockToken, func(l *orchLock) {
		l.doc.LockedUntil, l.lockedUntil, l.doc.ETag = until, until, string(results[0].ETag)
	})
	p.orchPool.Lock(instance, until)
	return nil
}

// AbandonOrchestrationItem releases the instance lock without committing;
// the messages the fetch tagged become visible again after delay (zero: at
// once) and, with ignoreAttempt, their attempt counts go back down by one.
// Requests: 1 transactional batch (a patch of the instance document
// conditioned on the lock, and one patch per tagged message), plus 1 query
// for the tagged messages when another process took the lock (plus 1
// read at the primary and 1 query more when that read is behind the
// lock), plus 1 read at the primary when the batch's answer is lost (did
// it land?). An unknown
// or already released lock is a permanent error; an expired lock no other
// fetch has taken is released normally.
func (p *Provider) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	return p.abandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt, "")
}

// abandonOrchestrationItem is AbandonOrchestrationItem that also writes
// reason (when not "") as the pending reason of a pending instance, in the
// same patch of its document (pending instances, admin.go).
func (p *Provider) abandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool, reason string) error {
	ctx = cosmos.WithCall(ctx, "abandon_orchestration_item")
	const op = "abandon_orchestration_item"
	instance, lockID, ok := parseOrchLockToken(lockToken)
	if !ok {
		return permanent(op, "Invalid lock token")
	}
	var ids []string
	again := candidates.Entry{Key: instance, Instance: instance, Slot: DispatchSlot(instance), VisibleAt: p.nowMs() + max(delay, 0).Milliseconds()}
	if l, ok := p.locks.Orch(lockToken); ok {
		ids = l.messageIDs
		again.EnqueuedAt, again.Seq = l.oldestEnqueuedAt, l.oldestSeq
		if !l.doc.pending() {
			reason = "" // only a pending instance keeps a reason
		}
	} else {
		// Another process's lock: its messages, from a read that holds
		// the lock (loadOrchLock), not one behind it that would leave
		// them locked until the lock's expiry. None when the lock is not
		// held: the release batch then fails on the instance document.
		l, err := p.loadOrchLock(ctx, instance, lockID)
		if err != nil {
			return mapError(op, err)
		}
		if l != nil {
			ids = l.messageIDs
		}
	}
	err := p.releaseOrchLockNoting(ctx, instance, lockID, ids, delay, ignoreAttempt, reason)
	if cosmos.IsAmbiguous(err) {
		// The answer was lost: the release landed if the instance
		// document names this lock as the last one released.
		var cur instanceDoc
		if _, found, rerr := p.readDocPrimary(ctx, instance, instanceDocID, &cur); rerr == nil && found && cur.LastReleasedLock == lockID {
			err = nil
		}
	}
	if bf, ok := asBatchFailure(err); ok && bf.Index == 0 {
		return permanent(op, "Invalid lock token")
	}
	if err != nil {
		return mapError(op, err)
	}
	p.locks.DropOrch(lockToken)
	// One hint per released message, so that the instance's entry holds
	// each with its new visibility (Entry.Msgs): a fetch that takes the
	// instance for another message before the delay ends keeps them
	// (Pool.Release), and a waiting fetch wakes when they become visible
	// instead of at the next safety query (HealthyViewLifetime).
	for _, id := range ids {
		again.ID = id
		p.orchPool.Hint(again)
	}
	if len(ids) == 0 {
		p.orchPool.Hint(again)
	}
	p.orchPool.Unlock(instance)
	return nil
}

// releaseOrchLock clears lockID from the instance document (conditioned on
// it still being the lock, and recording it as the last lock released) and
// from messageIDs, in one batch. A lost answer is an *cosmos.AmbiguousError.
func (p *Provider) releaseOrchLock(ctx context.Context, instance, lockID string, messageIDs []string, delay time.Duration, ignoreAttempt bool) error {
	return p.releaseOrchLockNoting(ctx, instance, lockID, messageIDs, delay, ignoreAttempt, "")
}

// releaseOrchLockNoting is releaseOrchLock that also sets the instance
// document's pending reason to reason when reason is not "".
func (p *Provider) releaseOrchLockNoting(ctx context.Context, instance, lockID string, messageIDs []string, delay time.Duration, ignoreAttempt bool, reason string) error {
	now := p.nowMs()
	var po azcosmos.PatchOperations
	po.SetCondition(lockCondition(lockID, 0))
	po.AppendSet("/lockToken", jsonNull)
	po.AppendSet("/lockedUntil", 0)
	po.AppendSet("/lastReleasedLock", lockID)
	if reason != "" {
		po.AppendSet("/pendingReason", reason)
	}
	ops := []batchOp{patchOp(instanceDocID, po, "")}
	for _, id := range messageIDs {
		var mo azcosmos.PatchOperations
		mo.SetCondition(lockCondition(lockID, 0))
		mo.AppendSet("/lockToken", jsonNull)
		mo.AppendSet("/lockedUntil", 0)
		if delay > 0 {
			mo.AppendSet("/visibleAt", now+delay.Milliseconds())
		}
		if ignoreAttempt {
			mo.AppendIncrement("/attemptCount", -1)
		}
		ops = append(ops, patchOp(id, mo, ""))
	}
	_, err := p.runBatch(ctx, instance, ops, write, false)
	if bf, ok := asBatchFailure(err); ok && bf.Index > 0 && (bf.Status == http.StatusPreconditionFailed || bf.Status == http.StatusNotFound) {
		// A message is no longer ours (or gone): release the instance alone.
		_, err = p.runBatch(ctx, instance, ops[:1], write, false)
	}
	return err
}

// ReportsStoreHealth returns true: the provider logs its store's outages
// itself (duroxide.StoreHealthReporter), at the first failed request of
// any call with its cause, then the 2nd, 4th, 8th ... failure, and
// "store reachable again" with the outage's length once a request
// succeeded, so a runtime on it logs its failed fetches at Debug only.
func (p *Provider) ReportsStoreHealth() bool { return true }
